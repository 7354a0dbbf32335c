// SPDX-License-Identifier: MIT
// `kvroof disagg`: GPUs prefill, CPU sockets decode; each figure against its equation.
#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"
#include "kvroof/analysis/disagg.hpp"
#include "kvroof/analysis/gpu_disagg.hpp"
#include "kvroof/io/scenario_builder.hpp"

using namespace kvroof;

namespace {
Scenario default_without_slo() {
    io::ScenarioInputs in;
    in.set("slo-tpot", "none");
    return io::build_scenario(in).scenario;  // GB200, Llama-3.1-70B bf16, codex
}

// Llama-3.1-70B on 8 H100s under `workload`.
Scenario h100x8_70b(const char* workload) {
    io::ScenarioInputs in;
    in.set("hardware", "h100-sxm");
    in.set("gpus", "8");
    in.set("model", "llama-3.1-70b");
    in.set("workload", workload);
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("the CPU decode engine: its step by hand, and its batch fills the socket's DRAM", "[disagg]") {
    const Scenario sc = default_without_slo();
    const DisaggStudy s = disagg_study(sc);
    REQUIRE(s.weights_fit_dram);
    CHECK(s.cpu_batch_limit == Resource::dram_capacity);
    const PreparedScenario ps(sc);
    const auto& e = sc.mix.entries.front().cls;  // codex: one class
    const double S = e.context() + 0.5 * e.o_output, kv = ps.mc.kv_per_token.raw();
    const double bw = sc.hardware.host.dram_bandwidth.raw() * sc.hardware.host.eta_dram;
    const double b = s.cpu_batch;
    // DRAM-bound: the weights once plus every sequence's KV, plus the step overhead.
    CHECK_FALSE(s.cpu_compute_bound);
    CHECK(s.cpu_step == Approx(ps.mc.weights_read(1.0).raw() / bw + b * (S + 1) * kv / bw + 1.5e-3).epsilon(1e-9));
    // Footprint: weights + the decoding sessions' KV + the idle ones' (b/(O·step) calls/s, each idle for its gap).
    const double idle = e.idle_gap.raw();
    const double footprint = ps.mc.weights.raw() + kv * S * (b + b / (e.o_output * s.cpu_step) * idle);
    CHECK(footprint == Approx(sc.hardware.host.memory.raw()).epsilon(1e-9));
    CHECK(s.cpu_calls_per_s == Approx(b / (e.o_output * s.cpu_step)).epsilon(1e-12));
}

TEST_CASE("the GPU prefill feed and the pipeline: min of the two, balanced at c*", "[disagg]") {
    const Scenario sc = default_without_slo();
    const DisaggStudy s = disagg_study(sc);
    const PreparedScenario ps(sc);
    CHECK(s.baseline == evaluate(ps, 0.0, 0.0).throughput);
    PolicySpec pol = sc.policy;
    pol.f = 0;
    const auto& cls = sc.mix.entries.front().cls;
    CHECK(s.prefill_gpu_s == Approx(prefill_demand(ps.mc, ps.sys, pol, cls).gpu_part).epsilon(1e-12));
    CHECK(s.gpu_calls_per_s == Approx(1.0 / std::max(s.prefill_gpu_s, s.prefill_link_s)).epsilon(1e-12));
    const double O = cls.o_output;
    CHECK(s.max_throughput == Approx(O * s.gpu_calls_per_s).epsilon(1e-12));
    // At c* the CPU pool matches the feed; below it the CPUs bind, above it the GPU.
    CHECK(disagg_at(s, s.balance_cpus_per_gpu, O).throughput == Approx(s.max_throughput).epsilon(1e-9));
    CHECK(disagg_at(s, 0.5 * s.balance_cpus_per_gpu, O).cpu_bound);
    CHECK_FALSE(disagg_at(s, 2.0 * s.balance_cpus_per_gpu, O).cpu_bound);
    // More CPUs never lower throughput.
    for (std::size_t i = 1; i < s.curve.size(); ++i) CHECK(s.curve[i].throughput >= s.curve[i - 1].throughput);
    // The machine's own ratio (GB200: half a Grace per GPU).
    CHECK(s.at_machine.cpus_per_gpu == 0.5);
    CHECK(s.at_machine.throughput == Approx(0.5 * s.cpu_calls_per_s * O).epsilon(1e-12));
}

TEST_CASE("the prefill feed's reload brings up every copy of the KV the group holds (MLA at TP8: eight)", "[disagg]") {
    // DeepSeek-V3's latent is held whole by each of the 8 GPUs, so each GPU's own link carries all of a call's
    // cached KV, as `kvroof prefill` charges it: the pooled links take 8 copies, not one (taking one overstated
    // the feed up to 8x).
    const Scenario sc = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("model", "deepseek-v3");
        in.set("weight-dtype", "fp8");
        in.set("gpus", "8");
        in.set("c2c-bw", "30");
        in.set("workload", "s_cached=64000,a_append=1000,o_output=400");
    });
    const PreparedScenario ps(sc);
    REQUIRE(ps.mc.kv_gpu_per_token.raw() == Approx(8.0 * ps.mc.kv_per_token.raw()).epsilon(1e-12));
    const DisaggStudy s = disagg_study(sc);
    const auto& cls = sc.mix.entries.front().cls;
    const double kv = ps.mc.kv_per_token.raw(), link = 8 * 30e9;  // eta-link 1: 8 GPUs x 30 GB/s
    const double up = kv_tokens_held(ps.mc, cls.s_cached) * 8.0 * kv / link, down = cls.a_append * kv / link;
    CHECK(s.prefill_link_s == Approx(link_time(up, down, ps.sys.link_bidir)).epsilon(1e-12));
    // By hand: each GPU moves the whole cached latent, 64,000 tokens of it, over its own 30 GB/s link.
    CHECK(up == Approx(64000.0 * kv / 30e9).epsilon(1e-12));
}

TEST_CASE("GPUs whose HBM cannot hold the weights prefill nothing", "[disagg]") {
    // 141 GB of bf16 Llama-3.1-70B on one H100 (78 GB usable): the feed was 0.555 calls/s and 288 tok/s at the balance.
    io::ScenarioInputs in;
    in.set("hardware", "h100-sxm");
    const DisaggStudy s = disagg_study(io::build_scenario(in).scenario);
    CHECK_FALSE(s.weights_fit_gpu);
    CHECK(s.gpu_calls_per_s == 0.0);
    CHECK(s.max_throughput == 0.0);
    CHECK(s.at_machine.throughput == 0.0);
    for (const DisaggPoint& p : s.curve) CHECK(p.throughput == 0.0);
    CHECK_FALSE(std::isfinite(s.balance_cpus_per_gpu));  // no balance (null), not 0 sockets per GPU
    CHECK_FALSE(s.prefill_meets_ttft);
    // Four of them hold it and a 68k-token codex call (312 GB usable; two would hold the weights, not the call's 22 GB).
    in.set("gpus", "4");
    const DisaggStudy two = disagg_study(io::build_scenario(in).scenario);
    CHECK(two.weights_fit_gpu);
    CHECK(two.gpu_calls_per_s > 0.0);
}

TEST_CASE("a CPU batch of an MoE model reads the experts it routes to, not all of them", "[disagg]") {
    // Qwen3-30B-A3B (128 experts, 8 routed per token) on one Grace: one sequence's step reads the dense part,
    // 8/128 of the routed experts, its KV and the overhead. It used to read every expert at any batch: 156 ms
    // for about 31, so the 50 ms SLO "no batch met".
    io::ScenarioInputs in;
    in.set("model", "qwen3-30b-a3b");
    const Scenario sc = io::build_scenario(in).scenario;
    const DisaggStudy s = disagg_study(sc);
    const PreparedScenario ps(sc);
    const auto& e = sc.mix.entries.front().cls;
    const double S = e.context() + 0.5 * e.o_output, kv = ps.mc.kv_per_token.raw();
    const double bw = sc.hardware.host.dram_bandwidth.raw() * sc.hardware.host.eta_dram;
    const double one = ps.mc.weights_read(1.0).raw();
    CHECK(one < 0.2 * ps.mc.weights_read(kUnbounded).raw());  // a small share of the 30.5 B parameters
    CHECK(s.cpu_step_one == Approx(one / bw + (S + 1) * kv / bw + 1.5e-3).epsilon(1e-9));
    CHECK(s.cpu_step_one == Approx(0.031).epsilon(0.05));  // by hand: 14.0 ms of weights, 15.5 of KV, 1.5
    // So the SLO holds, at the batch whose step is 50 ms with that batch's own expert reads.
    CHECK(s.cpu_meets_slo);
    CHECK(s.cpu_batch_limit == Resource::slo_tpot);
    CHECK(s.cpu_batch > 1);
    CHECK(s.cpu_step == Approx(0.050).epsilon(1e-9));
}

TEST_CASE("a socket whose DRAM cannot hold the weights cannot decode, an SLO no CPU step meets is flagged", "[disagg]") {
    io::ScenarioInputs in;
    in.set("cpu-mem", "100GB");  // 141 GB of bf16 Llama-3.1-70B weights
    const DisaggStudy s = disagg_study(io::build_scenario(in).scenario);
    CHECK_FALSE(s.weights_fit_dram);
    CHECK(s.cpu_calls_per_s == 0.0);
    const DisaggStudy slo = disagg_study(io::build_scenario(io::ScenarioInputs{}).scenario);  // SLO TPOT 50 ms
    CHECK_FALSE(slo.cpu_meets_slo);
    CHECK(slo.cpu_step_one > 0.050);
    // Twice the DRAM bandwidth meets the SLO only at a fluid batch below one (one sequence's step is still over
    // 50 ms): that is no SLO met either, not a batch of 0.2 at a sixth of the throughput of the slower machine.
    in = io::ScenarioInputs{};
    in.set("model", "llama-3.1-8b");
    in.set("cpu-dram-bw", "200GB/s");
    const DisaggStudy slow = disagg_study(io::build_scenario(in).scenario);
    in.set("cpu-dram-bw", "400GB/s");
    const DisaggStudy fast = disagg_study(io::build_scenario(in).scenario);
    CHECK(fast.cpu_step_one > 0.050);
    CHECK_FALSE(fast.cpu_meets_slo);
    CHECK(fast.cpu_calls_per_s >= slow.cpu_calls_per_s);
    // A TTFT SLO below one call's prefill is flagged, as the baseline is held to it.
    CHECK(slow.prefill_meets_ttft);
    in.set("slo-ttft", "1ms");
    const DisaggStudy ttft = disagg_study(io::build_scenario(in).scenario);
    CHECK_FALSE(ttft.prefill_meets_ttft);
    CHECK(ttft.prefill_latency_s > 0.001);
}

TEST_CASE("GPU pools: each pool's rate from its own step, the split that balances them, against aggregated", "[disagg]") {
    const Scenario sc = h100x8_70b("s_cached=0,a_append=2000,o_output=500,idle_gap=0");
    const LoadSpec load;
    const GpuDisaggStudy s = gpu_disagg_study(sc, load);
    for (const PoolSplit& p : s.splits)
        CHECK(sc.hardware.deployment.gpus / p.tp >= 2);  // a prefill and a decode instance at least
    REQUIRE_FALSE(s.splits.empty());
    const PoolSplit& b = s.splits.front();
    REQUIRE(b.feasible);
    // The prefill instance: a step of 2048 prefill tokens and no decode, 2048 / 2000 requests started per step.
    Scenario g = sc;
    g.hardware.deployment.gpus = b.tp;
    const PreparedScenario ps(g);
    const detail::PointInputs pre = detail::pool_inputs(ps, true, load);
    CHECK(pre.sum_pD == 0.0);
    const double x_p = 2048.0 / 2000.0;
    CHECK(b.prefill_step == Approx(detail::step_time(ps, pre, 0.0, 0.0, x_p, detail::StepPrefill::mean)).epsilon(1e-12));
    CHECK(b.prefill_rps == Approx(x_p / b.prefill_step).epsilon(1e-12));
    const bool prefill_bound = b.prefill_instances * b.prefill_rps < b.decode_instances * b.decode_rps;
    if (prefill_bound) {
        // Fed less than it serves, each decode instance runs its share: its batch over its step is that share's
        // tokens (D = O − 1 = 499 decode steps a request, O = 500 tokens).
        CHECK(b.decode_batch / 499.0 / b.decode_step * 500.0 * b.decode_instances == Approx(b.throughput).epsilon(1e-9));
    } else if (b.decode_limit == Resource::hbm_capacity) {
        // The decode instance at its memory limit: the decoding KV fills free HBM.
        const double kv_tokens = b.decode_batch * (2000 + 0.5 * 500);
        CHECK(kv_tokens * ps.mc.kv_gpu_per_token.raw() == Approx(ps.hbm_free_bytes()).epsilon(1e-9));
    }
    // Throughput = O · min(P·λp, D·λd), and no other split of the instances does better.
    const int n = sc.hardware.deployment.gpus / b.tp;
    CHECK(b.prefill_instances + b.decode_instances == n);
    const auto tput = [&](int p) { return 500.0 * std::min(p * b.prefill_rps, (n - p) * b.decode_rps); };
    CHECK(b.throughput == Approx(tput(b.prefill_instances)).epsilon(1e-12));
    for (int p = 1; p < n; ++p) CHECK(tput(p) <= b.throughput * (1 + 1e-12));
    CHECK(b.per_gpu == Approx(b.throughput / 8));
    // Aggregated: kvroof parallel's best on the same GPUs.
    const ParallelStudy agg = parallel_study(sc, load);
    REQUIRE(s.aggregated_ok);
    CHECK(s.aggregated.per_gpu == agg.deployments.front().points[static_cast<std::size_t>(agg.deployments.front().best)].per_gpu);
}

TEST_CASE("GPU pools: idle sessions hold their KV between calls, in HBM (hold) or the hosts' DRAM (park)", "[disagg]") {
    // Llama-3.1-70B on 8 H100s, a 300 s gap between calls: each idle session keeps S + O = 68,500 tokens.
    const Scenario sc = h100x8_70b("s_cached=64000,a_append=4000,o_output=500,idle_gap=300s");
    const LoadSpec load;
    Scenario no_gap = sc;
    no_gap.mix.entries.front().cls.idle_gap = Seconds(0.0);
    const GpuDisaggStudy s = gpu_disagg_study(sc, load), free_of_idle = gpu_disagg_study(no_gap, load);
    REQUIRE_FALSE(s.splits.empty());
    const PoolSplit& b = s.splits.front();
    REQUIRE(b.feasible);
    CHECK(b.idle_bound);
    CHECK(b.decode_limit == Resource::hbm_capacity);
    // Hold: λ·300 s·68,500 tokens of idle KV and the decoding sequences' B·(S + O/2) fill the instances' free HBM.
    Scenario g = sc;
    g.hardware.deployment.gpus = b.tp;
    const PreparedScenario ps(g);
    const double kv = ps.mc.kv_gpu_per_token.raw(), rps = b.throughput / 500.0, n = 8.0 / b.tp;
    const double idle_bytes = rps * 300.0 * 68500.0 * kv;
    const double decoding_bytes = b.decode_instances * b.decode_batch * (68000.0 + 250.0) * kv;
    CHECK(idle_bytes + decoding_bytes == Approx(n * ps.hbm_free_bytes()).epsilon(1e-6));
    // By hand: the idle KV alone bounds λ to 2 × 171.2 GB / (300 s · 68,500 · 327,680 B) = 0.0508 requests/s.
    CHECK(rps < n * ps.hbm_free_bytes() / (300.0 * 68500.0 * kv));
    CHECK(b.per_gpu < free_of_idle.splits.front().per_gpu);
    // The aggregated clients hold the same idle KV: the pools no longer read several times the aggregated.
    REQUIRE(s.aggregated_ok);
    CHECK(b.per_gpu < 1.5 * s.aggregated.per_gpu);
    // Park: the idle KV moves to the hosts' DRAM, which holds 2 × 0.25·4 sockets × 500 GB = 1 TB.
    Scenario parked = sc;
    parked.policy.idle = IdlePolicy::park;
    const GpuDisaggStudy p = gpu_disagg_study(parked, load);
    REQUIRE_FALSE(p.splits.empty());
    const PoolSplit& q = p.splits.front();
    Scenario pg = parked;
    pg.hardware.deployment.gpus = q.tp;
    const PreparedScenario pps(pg);
    if (q.idle_bound) {
        CHECK(q.decode_limit == Resource::dram_capacity);
        CHECK(q.throughput / 500.0 * 300.0 * 68500.0 * pps.mc.kv_per_token.raw() ==
              Approx((8.0 / q.tp) * pps.sys.cpu_memory.raw()).epsilon(1e-6));
    }
    CHECK(q.throughput / 500.0 * 300.0 * 68500.0 * pps.mc.kv_per_token.raw() <=
          (8.0 / q.tp) * pps.sys.cpu_memory.raw() * (1 + 1e-9));
}

TEST_CASE("GPU pools: the KV crosses NVLink within one domain, the scale-out network beyond it, PCIe without NVLink",
          "[disagg]") {
    // Llama-3.1-70B, 2,000 prompt tokens a request (S = 2,000), KV 327,680 B per token: 655.36 MB a request.
    const double bytes = 2000.0 * 327680.0;
    const LoadSpec load;
    const auto first = [&](const Scenario& sc) {
        const GpuDisaggStudy s = gpu_disagg_study(sc, load);
        REQUIRE_FALSE(s.splits.empty());
        return s.splits.front();
    };
    Scenario sc = h100x8_70b("s_cached=0,a_append=2000,o_output=500,idle_gap=0");
    const HardwareSpec& hw = sc.hardware;
    const PoolSplit inside = first(sc);  // 8 GPUs in one 8-GPU NVLink domain
    CHECK(inside.transfer == Approx(bytes / (inside.tp * hw.gpu.eta_nvlink * hw.gpu.nvlink_bandwidth.raw())).epsilon(1e-12));
    sc.hardware.gpu.nvlink_domain = 4;  // two domains of four: the NICs, 50 GB/s each, and one network latency
    const PoolSplit across = first(sc);
    CHECK(across.transfer == Approx(bytes / (across.tp * hw.net.bandwidth.raw()) + hw.net.latency.raw()).epsilon(1e-12));
    sc.hardware.gpu.nvlink_domain = 8;
    sc.hardware.gpu.nvlink_bandwidth = BytesPerSecond(0.0);  // no NVLink, one domain: peer to peer over the host link
    const PoolSplit pcie = first(sc);
    CHECK(pcie.transfer == Approx(bytes / (pcie.tp * hw.link.eta * hw.link.bandwidth.raw())).epsilon(1e-12));
}
