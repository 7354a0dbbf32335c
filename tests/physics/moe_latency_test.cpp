// SPDX-License-Identifier: MIT
// The MoE layers' fixed latency: every forward pass pays moe_layers · α_moe on
// the GPU path (routing, top-k, the expert kernels' floor), beyond the expert
// weights it reads; a dense model pays nothing. Checked by hand on the tiny
// model (tests/test_support.hpp) made MoE: 2 layers, 4 experts, top-2.
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/point_step.hpp"
#include "kvroof/analysis/serving.hpp"
#include "kvroof/physics/call_demand.hpp"

using namespace kvroof;

namespace {
ModelSpec tiny_moe(int first_dense_layers) {
    ModelSpec m = test::tiny_model();
    m.experts = 4;
    m.experts_active = 2;
    m.moe_intermediate = 8;
    m.first_dense_layers = first_dense_layers;
    return m;
}

SystemRates rates_with(double alpha) {
    SystemRates s = test::round_rates();
    s.moe_layer_latency = alpha;
    return s;
}
}  // namespace

TEST_CASE("a pass pays the MoE layers' fixed latency once, whatever its tokens", "[moe]") {
    const ModelConstants moe = model_constants(tiny_moe(0), PolicySpec{});
    CHECK(moe.moe_layers == 2.0);
    CHECK(moe_floor_per_pass(moe, rates_with(0.5), 1.0) == 1.0);  // 2 layers · 0.5 s
    CHECK(moe_floor_per_pass(moe, rates_with(0.5), 1000.0) == 1.0);
    CHECK(moe_floor_per_pass(moe, rates_with(0.5), 0.0) == 0.0);  // no pass, no latency
    // A dense first layer has no experts: one MoE layer left.
    CHECK(model_constants(tiny_moe(1), PolicySpec{}).moe_layers == 1.0);
    CHECK(moe_floor_per_pass(model_constants(tiny_moe(1), PolicySpec{}), rates_with(0.5), 1.0) == 0.5);
    // A dense model pays nothing.
    const ModelConstants dense = model_constants(test::tiny_model(), PolicySpec{});
    CHECK(dense.moe_layers == 0.0);
    CHECK(moe_floor_per_pass(dense, rates_with(0.5), 1.0) == 0.0);
}

TEST_CASE("a prefill pass adds the MoE latency to its GPU operand", "[moe]") {
    const ModelConstants mc = model_constants(tiny_moe(0), PolicySpec{});
    const CallClass c{"c", 100, 10, 5, Seconds(0)};
    const PrefillDemand without = prefill_demand(mc, rates_with(0.0), PolicySpec{}, c);
    const PrefillDemand with = prefill_demand(mc, rates_with(0.25), PolicySpec{}, c);
    CHECK(with.gpu_part - without.gpu_part == Approx(0.5).epsilon(1e-12));  // 2 layers · 0.25 s
    CHECK(with.ttft - without.ttft == Approx(0.5).epsilon(1e-12));  // f = 0: nothing to overlap it with
    CHECK(with.gpu_compute == without.gpu_compute);  // not a FLOP or a byte
    CHECK(with.gpu_hbm == without.gpu_hbm);
}

TEST_CASE("the default scenario's decode step gains moe_layers times the latency for a MoE model only", "[moe]") {
    // Llama-3.1-70B (dense) keeps its step; the same scenario with the tiny MoE model gains 2 · α.
    Scenario s = test::default_scenario();
    const PreparedScenario dense(s);
    CHECK(dense.moe_step_latency == 0.0);
    s.model = tiny_moe(0);
    s.hardware.gpu.moe_layer_latency = Seconds(27e-6);
    const PreparedScenario with(s);
    CHECK(with.moe_step_latency == Approx(2 * 27e-6).epsilon(1e-12));
    Scenario s0 = s;
    s0.hardware.gpu.moe_layer_latency = Seconds(0.0);
    const PreparedScenario without(s0);
    CHECK(without.moe_step_latency == 0.0);
    // The fluid step: g0 carries it, so the step at any batch is 2 · α longer at f = 0.
    const detail::BatchShape a = detail::batch_shape(with, mix_demand(with, 0.0), 0.0);
    const detail::BatchShape b = detail::batch_shape(without, mix_demand(without, 0.0), 0.0);
    for (double batch : {1.0, 8.0, 256.0})
        CHECK(detail::shape_at(with, a.shape, batch).step(batch) - detail::shape_at(without, b.shape, batch).step(batch) ==
              Approx(2 * 27e-6).epsilon(1e-9));
    // The operating point's step, from the same content: the same 2 · α.
    detail::StepContent content;
    content.decode_tokens = 4;
    CHECK(detail::step_time(with, content, 0.0, 0.0) - detail::step_time(without, content, 0.0, 0.0) ==
          Approx(2 * 27e-6).epsilon(1e-9));
    // The fluid model's TTFT operands carry it once per prefill pass, at f = 0 and on the lines in f.
    for (double f : {0.0, 0.5}) {
        const MixDemand mw = mix_demand(with, f), mo = mix_demand(without, f);
        CHECK(mw.pre[0].moe_floor == Approx(2 * 27e-6).margin(1e-15));
        CHECK(mw.pre[0].gpu_part - mo.pre[0].gpu_part == Approx(2 * 27e-6).margin(1e-12));
        CHECK(mw.ttft_gpu - mo.ttft_gpu == Approx(2 * 27e-6).margin(1e-12));  // Σ p over the classes: Σ p = 1
    }
    // At ov = 1 it is GPU-path time: an offloaded path longer than the GPU's hides it.
    content.cpu_d = 1.0;
    CHECK(detail::step_time(with, content, 0.5, 1.0) == detail::step_time(without, content, 0.5, 1.0));
}

TEST_CASE("the routed experts' GEMMs are charged at their own efficiency", "[moe]") {
    // Tiny MoE: each expert 3 · hidden 4 · 8 = 96 weights; 2 MoE layers, top-2: 2 · 2 · 2 · 96 = 768 FLOP per token.
    ModelConstants mc = model_constants(tiny_moe(0), PolicySpec{});
    CHECK(mc.routed_linear_per_token.raw() == 768.0);
    const double before = mc.linear_per_token.raw();
    charge_moe_gemms(mc, 2.0);  // at half eta-compute, each expert FLOP costs two
    CHECK(mc.linear_per_token.raw() - before == 768.0);
    charge_moe_gemms(mc, 1.0);  // the same efficiency: nothing changes
    CHECK(mc.linear_per_token.raw() - before == 768.0);
    CHECK(model_constants(test::tiny_model(), PolicySpec{}).routed_linear_per_token.raw() == 0.0);

    // Through the scenario: 0 (the default) is eta-compute; eta-compute / 2 adds the experts' FLOP once more.
    Scenario s = test::default_scenario();
    s.model = tiny_moe(0);
    const PreparedScenario base(s);
    s.hardware.gpu.eta_moe_gemm = s.hardware.gpu.eta_compute;
    CHECK(PreparedScenario(s).mc.linear_per_token.raw() == base.mc.linear_per_token.raw());
    s.hardware.gpu.eta_moe_gemm = s.hardware.gpu.eta_compute / 2;
    const PreparedScenario half(s);
    CHECK(half.mc.linear_per_token.raw() - base.mc.linear_per_token.raw() ==
          Approx(base.mc.routed_linear_per_token.raw()).epsilon(1e-12));
    // A dense model has no routed experts: the knob changes nothing.
    Scenario d = test::default_scenario();
    const PreparedScenario dense(d);
    d.hardware.gpu.eta_moe_gemm = 0.05;
    CHECK(PreparedScenario(d).mc.linear_per_token.raw() == dense.mc.linear_per_token.raw());
    // A bad value is refused naming the knob; 0 is allowed.
    d.hardware.gpu.eta_moe_gemm = 1.5;
    CHECK_THROWS_WITH(d.hardware.check_validity(), Catch::Contains("eta-moe-gemm"));
    d.hardware.gpu.eta_moe_gemm = 0.0;
    CHECK_NOTHROW(d.hardware.check_validity());
}
