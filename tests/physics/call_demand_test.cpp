// SPDX-License-Identifier: MIT
// Per-token decode demand, per-call prefill demand and the roofline ceiling,
// checked by hand on the tiny model (tests/test_support.hpp):
//   KV per token     2 layers · 1 KV head · dim 2 · K and V · 2 B      = 16 B
//   parameters       per layer 48 attention + 96 MLP = 144; ×2 + 40 embedding + 40 LM head = 368
//   linear FLOP      2 · (368 − 40 embedding)                           = 656 per token
//   attention FLOP   4 · 2 heads · dim 2 · 2 layers                     = 32 per key
//   streamed weights (368 − 40 gathered embedding) · 2 B                = 656 B per step
//   link per token   query 2 layers · 4 · 2 B = 16 B down; output 8 B + fp32 max/sum 16 B per layer = 48 B up
// The system rates are round numbers set directly, so every figure below is
// a quotient a reader can redo.

#include "kvroof/physics/call_demand.hpp"

#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/ceiling.hpp"

using namespace kvroof;

using test::round_rates;

TEST_CASE("the tiny model's constants check by hand", "[call_demand]") {
    const ModelConstants mc = model_constants(test::tiny_model(), PolicySpec{});
    CHECK(mc.kv_per_token.raw() == 16);
    CHECK(mc.linear_per_token.raw() == 656);
    CHECK(mc.attn_decode_per_key == 32);
    CHECK(mc.attn_prefill_per_key == 32);
    CHECK(mc.weights.raw() == 736);
    CHECK(mc.weights_read(1.0).raw() == 656);
    CHECK(mc.weights_read(1000.0).raw() == 656);  // dense: the batch does not change the weight read
    CHECK(mc.link_per_token.d2h.raw() == 16);
    CHECK(mc.link_per_token.h2d.raw() == 48);
}

TEST_CASE("elementwise traffic per token: two fused add-norms per layer, the MLP activation, the expert sum", "[call_demand]") {
    // Tiny model, 16-bit: per layer 8h = 32 (norms and residuals) and 3I = 24 (gated MLP: its
    // 96 weights over h = 4); 2 layers: 2 B · 2 · (32 + 24) = 224 B.
    const ModelSpec tiny = test::tiny_model();
    CHECK(model_constants(tiny, PolicySpec{}).act_bytes_per_token == 224);
    // Two GPUs: each runs the norms (64 elements a GPU, 128 together), the activations are split: 2 · (128 + 48) = 352 B.
    CHECK(model_constants(tiny, PolicySpec{}, 2).act_bytes_per_token == 352);
    // Mixtral-shaped MoE, 32 layers of h = 4096, 8 experts of I = 14336, top-2: per layer 8h, the
    // two experts' activations 2 · 3I and their sum (2 + 1)·h; 2 B · 32 · (32768 + 86016 + 12288).
    ModelSpec moe = tiny;
    moe.layers = 32;
    moe.hidden = 4096;
    moe.heads = 32;
    moe.kv_heads = 8;
    moe.head_dim = 128;
    moe.intermediate = 14336;
    moe.experts = 8;
    moe.experts_active = 2;
    moe.moe_intermediate = 14336;
    CHECK(model_constants(moe, PolicySpec{}).act_bytes_per_token == 2.0 * 32 * (32768 + 86016 + 12288));
}

TEST_CASE("decode demand per token splits by f, one line of the header per figure", "[call_demand]") {
    const ModelConstants mc = model_constants(test::tiny_model(), PolicySpec{});
    PolicySpec p;
    p.f = 0.25;
    const DecodeDemand d = decode_demand(mc, round_rates(), p, 100.0);
    CHECK(d.gpu_compute == Approx((656 + 0.75 * 32 * 100) / 1e6));  // linear + (1−f)·attn
    CHECK(d.gpu_hbm == Approx(0.75 * 101 * 16 / 1e3));  // (1−f)·(S + 1)·kv
    CHECK(d.cpu_compute == Approx(0.25 * 32 * 100 / 1e5));  // f·attn
    CHECK(d.cpu_dram == Approx(0.25 * 101 * 16 / 1e2));  // f·(S + 1)·kv
    CHECK(d.link_d2h == Approx((16 + 0.25 * 16) / 10.0));  // query + f of the new token's KV
    CHECK(d.link_h2d == Approx(48 / 10.0));  // partial outputs and softmax statistics

    SECTION("sparse attention reads only its share of the context") {
        p.sparse = 0.1;
        const DecodeDemand s = decode_demand(mc, round_rates(), p, 100.0);
        CHECK(s.cpu_dram == Approx(0.25 * (0.1 * 100 + 1) * 16 / 1e2));
        CHECK(s.cpu_compute == Approx(0.25 * 0.1 * 32 * 100 / 1e5));
    }
    SECTION("without offload the CPU and the link do nothing") {
        p.f = 0;
        const DecodeDemand z = decode_demand(mc, round_rates(), p, 100.0);
        CHECK(z.cpu_compute == 0);
        CHECK(z.cpu_dram == 0);
        CHECK(z.link_d2h == 0);
        CHECK(z.link_h2d == 0);
        CHECK(z.gpu_hbm == Approx(101 * 16 / 1e3));
    }
}

TEST_CASE("append-prefill demand: reload, attend in place, TTFT", "[call_demand]") {
    const ModelConstants mc = model_constants(test::tiny_model(), PolicySpec{});
    PolicySpec p;
    p.f = 0.25;
    p.r = 0.5;
    const CallClass c{"c", 100, 10, 5, Seconds(0)};
    const PrefillDemand q = prefill_demand(mc, round_rates(), p, c);
    // f·S_c = 25 cached tokens live in DRAM: r = 0.5 of them reloaded, 12.5 attended in place.
    CHECK(q.link_h2d == Approx((12.5 * 16 + 10 * 48) / 10.0));  // reload + partial outputs of the A queries
    CHECK(q.link_d2h == Approx((0.25 * 10 * 16 + 10 * 16) / 10.0));  // f of the new KV + the A queries
    // GPU-visible keys: A·(S_c − 12.5) + A²/2 = 875 + 50.
    CHECK(q.gpu_compute == Approx((10 * 656 + 32 * 925) / 1e6));
    CHECK(q.gpu_hbm == Approx((656 + 110 * 16) / 1e3));  // one weight read + the context's KV
    CHECK(q.cpu_compute == Approx(32 * 10 * 12.5 / 1e5));
    CHECK(q.cpu_dram == Approx(12.5 * 16 / 1e2));
    CHECK(q.link_park_save == 0);
    CHECK(q.gpu_part == Approx(2.416));
    CHECK(q.offload_part == Approx(2.0 + 68.0));  // max(CPU compute, DRAM) + max(H2D, D2H)
    CHECK(q.ttft == Approx(2.416 + 70.0));  // ov = 0: serialised

    SECTION("parking moves the GPU share out after the call and back before the next") {
        p.idle = IdlePolicy::park;
        const PrefillDemand k = prefill_demand(mc, round_rates(), p, c);
        CHECK(k.link_park_save == Approx(75 * 16 / 10.0));
        CHECK(k.link_h2d == Approx(q.link_h2d + 75 * 16 / 10.0));
    }
    SECTION("ov = 1 hides the shorter operand") {
        p.ov = 1;
        CHECK(prefill_demand(mc, round_rates(), p, c).ttft == Approx(70.0));
    }
}

TEST_CASE("the roofline ceiling of one class checks by hand", "[ceiling]") {
    Scenario s = test::default_scenario();
    s.model = test::tiny_model();
    s.policy = PolicySpec{};
    s.mix.entries = {MixEntry{CallClass{"c", 100, 10, 5, Seconds(0)}, 1.0}};
    HardwareSpec& h = s.hardware;
    h.deployment.gpus = 1;
    h.gpu.flops = FlopPerSecond(2e6);  // η = 0.5 below: 1e6 effective
    h.gpu.hbm_bandwidth = BytesPerSecond(2e3);
    h.gpu.eta_compute = h.gpu.eta_mem = 0.5;
    const Ceiling c = throughput_ceiling(PreparedScenario(s));
    // Per call: prefill (0.04016 s compute, 2.416 s HBM) + 5 tokens at S = 110
    // (0.004176 s compute, 1.776 s HBM each); HBM binds: 5 / (2.416 + 5·1.776).
    CHECK(c.gpu_compute_s == Approx(0.04016 + 5 * 0.004176));
    CHECK(c.gpu_hbm_s == Approx(2.416 + 5 * 1.776));
    CHECK(c.binding == Resource::gpu_hbm);
    CHECK(c.throughput == Approx(5 / 11.296));
}

TEST_CASE("spec checks reject what the ranges exclude, naming the field", "[spec]") {
    HardwareSpec h = test::default_scenario().hardware;
    h.gpu.eta_mem = 1e-320;  // denormal: not a valid efficiency
    CHECK_THROWS_WITH(h.check_validity(), Catch::Contains("eta-mem"));
    h = test::default_scenario().hardware;
    h.gpu.hbm_reserve = h.gpu.hbm_capacity;
    CHECK_THROWS_WITH(h.check_validity(), Catch::Contains("hbm-reserve: must be < hbm-cap"));
    h = test::default_scenario().hardware;
    h.deployment.gpus = 0;
    CHECK_THROWS_AS(h.check_validity(), InputError);

    ModelSpec m = test::tiny_model();
    m.heads = 3;  // 3 query heads cannot share 2 KV heads evenly
    m.kv_heads = 2;
    CHECK_THROWS_WITH(m.check_validity(), Catch::Contains("multiple of kv_heads"));
    m = test::tiny_model();
    m.experts = 4;
    m.experts_active = 5;
    m.moe_intermediate = 8;
    CHECK_THROWS_WITH(m.check_validity(), Catch::Contains("experts_active"));

    Mix mix;
    mix.entries = {MixEntry{CallClass{"a", 1, 1, 1, Seconds(0)}, 0.5}, MixEntry{CallClass{"b", 1, 1, 1, Seconds(0)}, 0.4}};
    CHECK_THROWS_WITH(mix.check_validity(), Catch::Contains("sum to 1"));
    PolicySpec p;
    p.sparse = 0;
    CHECK_THROWS_WITH(p.check_validity(), Catch::Contains("sparse"));
}

TEST_CASE("link_time: full duplex up to the measured share when both directions run at once", "[link]") {
    CHECK(link_time(1.0, 0.0, 0.5) == 1.0);  // one direction: its own time
    CHECK(link_time(1.0, 1.0, 1.0) == 1.0);  // ideal full duplex
    CHECK(link_time(1.0, 1.0, 0.5) == 2.0);  // each direction at half rate: half duplex
    CHECK(link_time(1.0, 0.2, 0.72) == 1.0);  // a light reverse stream fits in the shared limit
    CHECK(link_time(1.0, 1.0, 0.72) == Approx(2.0 / 1.44));
    CHECK(link_time(0.3, 0.9, 0.75) == Approx(0.9).epsilon(1e-15));  // 1.2 / 1.5 = 0.8 < 0.9
}
