// SPDX-License-Identifier: MIT
// Expert parallelism's costs: per MoE layer per pass an all-to-all dispatch
// and combine of hidden · 2 B · top-k per token, the share (e−1)/e leaving each
// GPU over NVLink inside the NVLink domain and over the network beyond it, and
// the busiest GPU's expert work λ times the mean.
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/operating_point.hpp"
#include "kvroof/analysis/optimise_f.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/io/presets.hpp"

using namespace kvroof;

namespace {
Scenario on(const char* hardware, const char* model, int gpus) {
    io::ScenarioInputs in;
    in.set("hardware", hardware);
    in.set("model", model);
    in.set("gpus", std::to_string(gpus));
    in.set("weight-dtype", "fp8");  // DeepSeek-V3's own: 671 GB fits 8 GPUs
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("EP traffic for DeepSeek-V3 at EP 72 by hand", "[ep]") {
    // DeepSeek-V3: hidden 7168, 61 layers of which the first 3 dense (58 MoE), top-8 of 256 experts.
    // One all-to-all moves 7168 · 2 B · 8 = 114,688 B per token (BF16 for dispatch and combine, as
    // charged: DeepEP dispatches FP8, 7168 · 1 B · 8 = 57,344 B plus scales, so dispatch is
    // overstated ≈2×); a dispatch and a combine per MoE layer: 2 · 114,688 = 229,376 B per token per
    // layer, 116 all-to-alls = 13,303,808 B per pass.
    Scenario s = on("gb200", "deepseek-v3", 72);  // NVLink 900 GB/s per direction, η 0.70, α 6 µs, domain 72
    s.hardware.deployment.ep = 72;
    s.hardware.deployment.expert_imbalance = 1.0;  // routing balanced: this case checks the structural term alone
    s.hardware.check_validity();
    const PreparedScenario ps(s);
    CHECK(ps.mc.alltoalls_per_pass == 116.0);
    CHECK(ps.mc.alltoall_bytes_per_token == 114688.0);
    CHECK(2.0 * ps.mc.alltoall_bytes_per_token == 229376.0);
    // 72 does not divide 256: 256 = 3 · 72 + 40, so 40 GPUs hold 4 experts and 32 hold 3. The busiest
    // holds 4 where the mean is 256/72 = 3.556: load 4 · 72 / 256 = 1.125. It receives 1.125 times the
    // mean's tokens (uniform routing), so its all-to-all bytes and routed FLOP are 1.125 times the mean.
    CHECK(ps.mc.expert_load == 1.125);
    // Inside one NVL72 domain 71/72 of it leaves each GPU, all over NVLink; each of the 72 GPUs sends
    // the bytes of its B/72 sequences: per sequence 13,303,808 · (71/72) / (0.7 · 900e9) / 72 =
    // 2.892e-7 s per pass at an even split, × 1.125 = 3.254e-7 s on the busiest GPU; the α of the
    // 116 all-to-alls, 116 · 6 µs = 696 µs per step, does not depend on the bytes.
    const double even = 13'303'808.0 * (71.0 / 72.0) / (0.7 * 900e9) / 72.0, per_seq = 1.125 * even;
    CHECK(even == Approx(2.892e-7).epsilon(1e-3));
    CHECK(per_seq == Approx(3.254e-7).epsilon(1e-3));
    CHECK(ep_comm_per_token(ps.mc, ps.sys) == Approx(per_seq).epsilon(1e-12));
    CHECK(ps.ep_step_latency == Approx(116 * 6e-6).epsilon(1e-12));
    CHECK(ep_comm_per_pass(ps.mc, ps.sys, 100) == Approx(116 * 6e-6 + 100 * per_seq).epsilon(1e-12));
    CHECK(ep_comm_per_pass(ps.mc, ps.sys, 0) == 0.0);
    // They ride the step's GPU lines: g0 gains the α, gx the bytes (g0 also holds the
    // 58 MoE layers' fixed latency, 58 · 27 µs = 1.566 ms).
    const detail::BatchShape bs = detail::batch_shape(ps, mix_demand(ps, 0.0), 0.0);
    CHECK(ps.moe_step_latency == Approx(58 * 27e-6).epsilon(1e-12));
    CHECK(bs.shape.g0 == Approx(ps.tp_step_latency + 116 * 6e-6 + 58 * 27e-6).epsilon(1e-12));
    CHECK(bs.shape.gx == Approx(tp_comm_per_token(ps.mc, ps.sys) + per_seq).epsilon(1e-12));
    // A prefill's all-to-alls count in its per-call demand on every f, not only at f = 0
    // (mix_demand reads f > 0 off the mix's lines).
    for (double f : {0.0, 0.5}) {
        const MixDemand md = mix_demand(ps, f);
        double expected = 0;
        for (std::size_t i = 0; i < s.mix.entries.size(); ++i) expected += s.mix.entries[i].weight * md.pre[i].ep_comm;
        CHECK(expected > 0);
        CHECK(md.per_call_prefill[Resource::ep_alltoall] == Approx(expected).epsilon(1e-12));
    }
    // Memory: the routed experts are 58 · 256 · 3 · 7168 · 2048 = 653,908,770,816 weights, FP8 1 B each;
    // holding 4 on every GPU instead of the mean adds 0.125 of them, 81,738,596,352 B to the group.
    CHECK(ps.mc.weights_uneven == 81'738'596'352.0);
    CHECK(ps.mc.weights_routed.raw() == 653'908'770'816.0 * 1.125);
    // Compute: the routed FLOP per token, 2 · 58 · 8 · 3 · 7168 · 2048, gains 0.125 of itself.
    Scenario s8 = s;
    s8.hardware.deployment.ep = 8;  // divides 256: even
    const PreparedScenario p8(s8);
    CHECK(ps.mc.linear_per_token.raw() - p8.mc.linear_per_token.raw() ==
          Approx(0.125 * 2.0 * 58 * 8 * 3.0 * 7168 * 2048).epsilon(1e-12));
    CHECK(ps.mc.weights.raw() - p8.mc.weights.raw() == 81'738'596'352.0);

    // The same EP 72 over HGX-sized NVLink domains of 8: 7/72 stays on NVLink, 64/72 crosses the
    // 50 GB/s network (400 Gb/s NDR), which binds: 13,303,808 · (64/72) / 50e9 / 72 = 3.285e-6 s at an
    // even split, 3.696e-6 s on the busiest GPU; each all-to-all waits for the network's α (14 µs, NCCL's network step).
    s.hardware.gpu.nvlink_domain = 8;
    const PreparedScenario pn(s);
    const double net = 1.125 * 13'303'808.0 * (64.0 / 72.0) / 50e9 / 72.0;
    CHECK(net == Approx(3.696e-6).epsilon(1e-3));
    CHECK(ep_comm_per_token(pn.mc, pn.sys) == Approx(net).epsilon(1e-12));
    CHECK(pn.ep_step_latency == Approx(116 * 14e-6).epsilon(1e-12));
}

TEST_CASE("an EP degree dividing the routed experts is bit-identical to even sharding", "[ep]") {
    // E = 256 over e = 8 (or 2, 4, 64): no extra expert on any GPU; every figure is what the even
    // formulas give, compared with ==, not Approx: the expert load is exactly 1 and adds nothing.
    for (int e : {2, 4, 8, 64}) {
        INFO(e);
        Scenario s = on("gb200", "deepseek-v3", 64);
        s.hardware.deployment.ep = e;
        s.hardware.deployment.expert_imbalance = 1.5;
        const PreparedScenario ps(s);
        const WeightBytes w = weight_bytes_by_group(s.model, s.policy.weight_dtype);
        const ParamCounts pc = param_counts(s.model);
        CHECK(ps.mc.expert_load == 1.0);
        CHECK(ps.mc.weights_uneven == 0.0);
        CHECK(ps.mc.weights.raw() == w.total);
        CHECK(ps.mc.weights_routed.raw() == w.routed);
        // Plus the FP8 checkpoint's BF16 GEMMs (LM head, routers) at the BF16 peak: charge_bf16_gemms.
        const double bf16_extra = (gemm_peak(s.hardware, gemm_dtype(s.policy)).raw() / s.hardware.gpu.flops.raw() - 1.0) *
                                  ps.mc.bf16_linear_per_token.raw();
        CHECK(ps.mc.linear_per_token.raw() == linear_flop_per_token(s.model).raw() +
                                                  0.5 * (2.0 * pc.moe_layers * s.model.experts_active * pc.per_expert) +
                                                  bf16_extra);
        CHECK(ep_comm_per_token(ps.mc, ps.sys) ==
              ps.mc.alltoalls_per_pass * ps.mc.alltoall_bytes_per_token * ps.sys.alltoall_s_per_byte);
        CHECK(ep_comm_per_pass(ps.mc, ps.sys, 7) ==
              ps.mc.alltoalls_per_pass *
                  (ps.sys.alltoall_latency + 7 * ps.mc.alltoall_bytes_per_token * ps.sys.alltoall_s_per_byte));
    }
    CHECK(expert_load(256, 1) == 1.0);
    CHECK(expert_load(128, 6) == 132.0 / 128.0);  // 128 over 6: 2 GPUs hold 22, 4 hold 21
    CHECK(expert_load(8, 3) == 9.0 / 8.0);  // Mixtral over 3: 3, 3, 2
}

TEST_CASE("expert load imbalance scales the routed experts' FLOP and the all-to-all bytes by λ", "[ep]") {
    Scenario s = on("gb200", "deepseek-v3", 8);
    s.hardware.deployment.ep = 8;
    s.hardware.deployment.expert_imbalance = 1.0;
    const PreparedScenario even(s);
    s.hardware.deployment.expert_imbalance = 1.5;
    const PreparedScenario skew(s);
    // Routed FLOP per token: 2 · 58 layers · 8 experts · 3 · 7168 · 2048 (gate, up, down).
    const double routed = 2.0 * 58 * 8 * 3.0 * 7168 * 2048;
    CHECK(skew.mc.linear_per_token.raw() - even.mc.linear_per_token.raw() == Approx(0.5 * routed).epsilon(1e-9));
    CHECK(ep_comm_per_token(skew.mc, skew.sys) == Approx(1.5 * ep_comm_per_token(even.mc, even.sys)).epsilon(1e-12));
    CHECK(evaluate(skew, 0.0, 0.0).throughput <= evaluate(even, 0.0, 0.0).throughput);
}

TEST_CASE("the default expert imbalance is TensorRT-LLM's measured 1.115, charged by hand on DeepSeek-V3 at EP 8", "[ep]") {
    // TensorRT-LLM tech blog 4, Table 1: DeepSeek-R1 at EP 36 with EPLB (288 slots), the hottest rank's
    // routed tokens exceed the mean by 0.115 on average over layers and decode steps (2.564 without EPLB).
    CHECK(HardwareSpec{}.deployment.expert_imbalance == 1.115);
    Scenario s = on("gb200", "deepseek-v3", 8);
    s.hardware.deployment.ep = 8;  // divides 256: the structural term is 1, λ is all
    const PreparedScenario measured(s);
    s.hardware.deployment.expert_imbalance = 1.0;
    const PreparedScenario balanced(s);
    // Routed FLOP per token 2 · 58 · 8 · 3 · 7168 · 2048 = 40,869,298,176; the busiest GPU does 0.115 more:
    // 4,699,969,290 FLOP per token.
    CHECK(measured.mc.linear_per_token.raw() - balanced.mc.linear_per_token.raw() == Approx(4'699'969'290.24).epsilon(1e-9));
    // All-to-all: 7/8 of 13,303,808 B per pass over NVLink (0.7 · 900 GB/s) from each of 8 GPUs' share,
    // 2.3097e-6 s per sequence balanced, × 1.115 = 2.5753e-6 s on the busiest GPU; the α does not move.
    const double even = 13'303'808.0 * (7.0 / 8.0) / (0.7 * 900e9) / 8.0;
    CHECK(even == Approx(2.3097e-6).epsilon(1e-4));
    CHECK(ep_comm_per_token(balanced.mc, balanced.sys) == Approx(even).epsilon(1e-12));
    CHECK(ep_comm_per_token(measured.mc, measured.sys) == Approx(1.115 * even).epsilon(1e-12));
    CHECK(measured.ep_step_latency == balanced.ep_step_latency);
    CHECK(evaluate(measured, 0.0, 0.0).throughput <= evaluate(balanced, 0.0, 0.0).throughput);
}

TEST_CASE("EP 1 reproduces today's numbers exactly: the EP figures change nothing there", "[ep]") {
    for (const char* model : {"deepseek-v3", "qwen3-235b-a22b", "llama-3.1-70b"}) {
        INFO(model);
        const Scenario a = on("h200", model, 8);
        Scenario b = a;
        b.hardware.deployment.expert_imbalance = 3.0;
        b.hardware.net.bandwidth = BytesPerSecond(1e3);
        b.hardware.net.latency = Seconds(1e-3);
        const PreparedScenario pa(a), pb(b);
        CHECK(pb.ep_step_latency == 0.0);
        CHECK(ep_comm_per_token(pb.mc, pb.sys) == 0.0);
        CHECK(pb.mc.linear_per_token.raw() == pa.mc.linear_per_token.raw());
        for (double f : {0.0, 0.5})
            for (double ov : {0.0, 1.0}) {
                const ServingPoint x = evaluate(pa, f, ov), y = evaluate(pb, f, ov);
                CHECK(x.throughput == y.throughput);
                CHECK(x.tpot == y.tpot);
                CHECK(x.ttft == y.ttft);
                CHECK(y.util_sec[Resource::ep_alltoall] == 0.0);
                CHECK(y.timeline_share[Resource::ep_alltoall] == 0.0);
            }
    }
    // A dense model has no MoE layer: EP = gpus moves nothing either.
    const Scenario d = on("h200", "llama-3.1-70b", 8);
    Scenario e = d;
    e.hardware.deployment.ep = 8;
    CHECK(evaluate(PreparedScenario(e), 0.0, 0.0).throughput == evaluate(PreparedScenario(d), 0.0, 0.0).throughput);
}

TEST_CASE("EP's all-to-alls carry time on their own resource, and a slow network makes them bind", "[ep]") {
    Scenario s = on("h200", "deepseek-v3", 8);
    s.hardware.deployment.ep = 8;
    s.hardware.gpu.nvlink_domain = 1;  // every GPU its own domain: all 7/8 over the network
    s.hardware.net.bandwidth = BytesPerSecond(1e8);  // 0.1 GB/s
    s.hardware.deployment.attention_dp = 1;  // no tensor-parallel all-reduce on the network beside them
    const ServingPoint p = evaluate(PreparedScenario(s), 0.0, 0.0);
    CHECK(p.util_sec[Resource::ep_alltoall] > 0.0);
    CHECK(p.binding == Resource::ep_alltoall);
    // Tensor-parallel attention over the same 8 separate domains: its all-reduces cross the slow network too, and bind.
    s.hardware.deployment.attention_dp = 0;
    CHECK(evaluate(PreparedScenario(s), 0.0, 0.0).binding == Resource::tp_allreduce);
    // An EP degree that does not divide the group is refused, naming the knob.
    s.hardware.deployment.ep = 3;
    CHECK_THROWS_WITH(s.hardware.check_validity(), Catch::Contains("ep: must divide gpus (8), got 3"));
}

TEST_CASE("an operating point's step is bound by the collectives only when they outweigh the GPU's own work", "[ep][point]") {
    // DeepSeek-V3 FP8 on 8 H200s, EP 8, one sequence: a weight read of about 1.2 ms, the MoE layers' fixed
    // 58 x 27 us = 1.57 ms, all-reduces 0.65 ms and all-to-alls 0.59 ms. The MoE latency is GPU time with the
    // roofline's, so the 1.24 ms of collectives do not set the step: HBM does (they did, before).
    Scenario s = on("h200", "deepseek-v3", 8);
    s.hardware.deployment.ep = 8;
    LoadSpec load;
    load.mode = LoadMode::batch;
    load.value = 1;
    const PreparedScenario ps(s);
    const OperatingPoint p = operating_point(ps, load, 0.0, 0.0);
    CHECK(p.step_allreduce > 0.5e-3);
    CHECK(p.binding == Resource::gpu_hbm);
    // The all-to-alls are shown beside the all-reduces (step_alltoall; they were in the step but shown nowhere).
    // With prefill apart, the decode step is one pass over the one sequence: 116 all-to-alls (58 MoE layers, dispatch
    // and combine); chunked, the replacement's prefill tokens ride in it too, so it is longer.
    LoadSpec apart = load;
    apart.prefill = PrefillMode::separate;
    const OperatingPoint q = operating_point(ps, apart, 0.0, 0.0);
    CHECK(q.step_alltoall == Approx(ep_comm_per_pass(ps.mc, ps.sys, 1.0)).epsilon(1e-12));
    CHECK(q.step_alltoall == Approx(0.59e-3).epsilon(0.02));
    CHECK(p.step_alltoall > q.step_alltoall);
    s.hardware.deployment.ep = 1;
    CHECK(operating_point(PreparedScenario(s), load, 0.0, 0.0).step_alltoall == 0.0);
}
