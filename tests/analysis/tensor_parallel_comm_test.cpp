// SPDX-License-Identifier: MIT
// Tensor parallelism's costs in the serving and operating-point analyses: two
// all-reduces per layer per pass, and KV replicated where GPUs outnumber KV
// heads (GQA) or hold the whole latent (MLA).
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
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("KV copies in HBM: one per KV head up to the head count, replicated beyond, MLA's latent on every GPU", "[tp]") {
    const ModelSpec qwen = io::load_model("--model", "qwen3-235b-a22b");  // 4 KV heads
    REQUIRE(qwen.kv_heads == 4);
    CHECK(kv_replication(qwen, 1) == 1.0);
    CHECK(kv_replication(qwen, 2) == 1.0);
    CHECK(kv_replication(qwen, 4) == 1.0);
    CHECK(kv_replication(qwen, 3) == 1.5);  // ⌈4/3⌉ = 2 heads on each of 3 GPUs: 6 held for 4
    CHECK(kv_replication(qwen, 8) == 2.0);  // each of 8 GPUs holds 1 of the 4 heads
    const ModelSpec llama = io::load_model("--model", "llama-3.1-70b");  // 8 KV heads
    CHECK(kv_replication(llama, 8) == 1.0);
    CHECK(kv_replication(llama, 16) == 2.0);
    const ModelSpec dsv3 = io::load_model("--model", "deepseek-v3");  // MLA
    CHECK(kv_replication(dsv3, 8) == 8.0);

    // Capacity follows: Qwen3-235B on 8 H200s holds half the sessions it would with sharded heads.
    const Scenario s = on("h200", "qwen3-235b-a22b", 8);
    const PreparedScenario ps(s);
    const ScenarioFacts facts = scenario_facts(ps);
    CHECK(facts.kv_replication == 2.0);
    const ClassFit& c = facts.classes.front();
    CHECK(c.hbm_sessions == Approx(facts.hbm_free.raw() / (2.0 * c.session_kv.raw())).epsilon(1e-12));
    CHECK(ps.mc.kv_gpu_per_token.raw() == 2.0 * ps.mc.kv_per_token.raw());
}

TEST_CASE("the all-reduce terms of the step by hand: g0 = 2L·α, gx = 2L·hidden·2 B·2(t−1)/t / (η·NVLink)", "[tp]") {
    Scenario s = on("h100-sxm", "llama-3.1-70b", 4);  // 80 layers, hidden 8192; preset α 5 µs, η 0.8, 450 GB/s
    const PreparedScenario ps(s);
    CHECK(ps.tp_step_latency == Approx(160 * 5e-6).epsilon(1e-12));
    const double per_token = 160 * 8192 * 2.0 * (2.0 * 3 / 4) / (0.8 * 450e9);
    CHECK(tp_comm_per_token(ps.mc, ps.sys) == Approx(per_token).epsilon(1e-12));
    CHECK(tp_comm_per_pass(ps.mc, ps.sys, 10) == Approx(160 * 5e-6 + 10 * per_token).epsilon(1e-12));
    CHECK(tp_comm_per_pass(ps.mc, ps.sys, 0) == 0.0);
    // The serving step carries them on the GPU path.
    const detail::BatchShape bs = detail::batch_shape(ps, mix_demand(ps, 0.0), 0.0);
    CHECK(bs.shape.g0 == ps.tp_step_latency);
    CHECK(bs.shape.gx == Approx(per_token).epsilon(1e-12));
    // Without NVLink the all-reduce runs over the host link (L40S: 26.1 GB/s measured Gen4, η 0.77).
    const Scenario l40s = on("l40s", "llama-3.1-8b", 2);  // 32 layers, hidden 4096
    const PreparedScenario pcie(l40s);
    CHECK(tp_comm_per_token(pcie.mc, pcie.sys) == Approx(64 * 4096 * 2.0 * 1.0 / (0.77 * 26.1e9)).epsilon(1e-12));
}

TEST_CASE("a group beyond the NVLink domain all-reduces hierarchically: NVLink inside, the network between domains", "[tp]") {
    // 16 H100s in domains of 8 (k = 2), default network 50 GB/s and 14 us: inside 2·7/8 over 0.8 x 450 GB/s,
    // between the domains each GPU's 1/8 shard 2·(1/2) over its NIC; α 5 us plus 2(k − 1) = 2 network steps.
    const Scenario s = on("h100-sxm", "llama-3.1-70b", 16);
    REQUIRE(s.hardware.gpu.nvlink_domain == 8);
    const PreparedScenario ps(s);
    CHECK(ps.sys.allreduce_s_per_byte == Approx(2.0 * 7 / 8 / (0.8 * 450e9) + 2.0 * 0.5 / (8 * 50e9)).epsilon(1e-12));
    CHECK(ps.sys.allreduce_latency == Approx(5e-6 + 2 * 14e-6).epsilon(1e-12));
    CHECK(ps.tp_step_latency == Approx(160 * 33e-6).epsilon(1e-12));
    // Within the domain nothing changes: 8 GPUs are the plain ring.
    const Scenario eight = on("h100-sxm", "llama-3.1-70b", 8);
    CHECK(PreparedScenario(eight).sys.allreduce_s_per_byte == 2.0 * 7 / 8 / (0.8 * 450e9));
    // A domain of one GPU (GH200): the whole all-reduce crosses the network, 2(t − 1)/t of the message.
    const Scenario gh = on("gh200", "llama-3.1-70b", 2);
    REQUIRE(gh.hardware.gpu.nvlink_domain == 1);
    const PreparedScenario pg(gh);
    CHECK(pg.sys.allreduce_s_per_byte == Approx(2.0 * 0.5 / gh.hardware.net.bandwidth.raw()).epsilon(1e-12));
    CHECK(pg.sys.allreduce_latency == Approx(2 * gh.hardware.net.latency.raw()).epsilon(1e-12));
}

TEST_CASE("one GPU has no all-reduce: the fabric's figures change nothing there, and only TP numbers elsewhere", "[tp]") {
    Scenario a = on("h100-sxm", "llama-3.1-8b", 1);
    Scenario b = a;
    b.hardware.gpu.nvlink_bandwidth = BytesPerSecond(1e3);
    b.hardware.gpu.allreduce_latency = Seconds(1e-3);
    const PreparedScenario pa(a), pb(b);
    CHECK(pb.tp_step_latency == 0.0);
    CHECK(pb.kv_replication == 1.0);
    for (double f : {0.0, 0.5}) {
        CHECK(evaluate(pa, f, 0.0).throughput == evaluate(pb, f, 0.0).throughput);
        CHECK(evaluate(pa, f, 0.0).tpot == evaluate(pb, f, 0.0).tpot);
    }
    // At 4 GPUs a faster fabric raises throughput, a slower one lowers it.
    Scenario t = on("h100-sxm", "llama-3.1-70b", 4);
    Scenario fast = t, slow = t;
    fast.hardware.gpu.nvlink_bandwidth = t.hardware.gpu.nvlink_bandwidth * 4.0;
    fast.hardware.gpu.allreduce_latency = t.hardware.gpu.allreduce_latency / 4.0;
    slow.hardware.gpu.nvlink_bandwidth = t.hardware.gpu.nvlink_bandwidth / 4.0;
    const double base = optimise_f(PreparedScenario(t), 0.0).throughput;
    CHECK(optimise_f(PreparedScenario(fast), 0.0).throughput > base);
    CHECK(optimise_f(PreparedScenario(slow), 0.0).throughput < base);
}

TEST_CASE("the operating point reports the all-reduce in its step, at TP1 it is zero", "[tp][point]") {
    LoadSpec load;
    load.mode = LoadMode::batch;
    load.value = 16;
    load.prefill = PrefillMode::separate;
    const Scenario one = on("h100-sxm", "llama-3.1-70b", 1), four = on("h100-sxm", "llama-3.1-70b", 4);
    CHECK(operating_point(PreparedScenario(one), load, 0.0, 0.0).step_allreduce == 0.0);
    const PreparedScenario ps(four);
    const OperatingPoint p = operating_point(ps, load, 0.0, 0.0);
    CHECK(p.step_allreduce == Approx(tp_comm_per_pass(ps.mc, ps.sys, 16)).epsilon(1e-12));
    // It is part of the bare step, which is otherwise the TP1 step's roofline over 4 GPUs.
    CHECK(p.step_bare > p.step_allreduce);
}
