// SPDX-License-Identifier: MIT
// Pipeline stages beyond the serving model: the simulator charges the same
// cycle as the closed form, and both disaggregated architectures run their
// GPUs as pipelines (analysis/pipeline.hpp's pipelined_pass).
#include <catch2/catch.hpp>
#include <string>

#include "kvroof/analysis/disagg.hpp"
#include "kvroof/analysis/gpu_disagg.hpp"
#include "kvroof/analysis/sim.hpp"
#include "sim_support.hpp"

using namespace kvroof;

namespace {
// One class in a benchmark's words (no idle gap) on tp x pp GPUs of `hardware`.
Scenario staged(const char* hardware, const char* model, int tp, int pp, double isl, double osl) {
    return test::bench_scenario(hardware, model, isl, osl, tp, pp);
}
}  // namespace

TEST_CASE("sim with pipeline stages: the limiting case agrees with the closed form's cycle within 2 percent", "[sim][pp]") {
    // Every cycle carries the same content: A = chunk and C = pp·O clients, so each of the pp micro-batches
    // takes one request's chunk a cycle with its own budget (cycle_budget); the closed form is exact, as at pp = 1.
    // With one budget a cycle, the simulated throughput would be about 1/pp of the closed form's.
    for (const int pp : {2, 4}) {
        const Scenario sc = staged("h200", "llama-3.1-8b", 1, pp, 2048, 256);
        const SimResult r = simulate(sc, test::closed_loop(256 * pp, 6000 * pp, GapDist::deterministic));
        INFO("pp " << pp);
        REQUIRE(r.feasible);
        CHECK(r.closed.step_bare > 0);
        CHECK(r.throughput == Approx(r.closed.throughput).epsilon(0.02));
        CHECK(r.itl.mean == Approx(r.closed.itl).epsilon(0.02));
        CHECK(r.batch == Approx(r.closed.batch).epsilon(0.02));
        // Per GPU: over the pipeline's pp GPUs.
        CHECK(r.throughput_per_gpu == Approx(r.throughput / pp).epsilon(1e-12));
        CHECK(std::abs(r.littles_law_error()) < 0.015);
    }
}

TEST_CASE("sim with pipeline stages and parked sessions: each stage's link moves its share, Little's law holds", "[sim][pp]") {
    Scenario one = staged("h200", "llama-3.1-8b", 1, 1, 2048, 256), two = staged("h200", "llama-3.1-8b", 1, 2, 2048, 256);
    for (Scenario* s : {&one, &two}) {
        s->hardware.link.eta_bidir = 1;  // each direction at its full rate whatever the other does: busy = bytes / rate
        s->mix.entries[0].cls.s_cached = 8192;
        s->mix.entries[0].cls.idle_gap = Seconds(2.0);
        s->policy.idle = IdlePolicy::park;
    }
    const SimSpec spec = test::closed_loop(64, 3000, GapDist::deterministic);
    const SimResult a = simulate(one, spec), b = simulate(two, spec);
    REQUIRE(a.feasible);
    REQUIRE(b.feasible);
    CHECK(std::abs(b.littles_law_error()) < 0.02);
    REQUIRE(a.h2d.transfers > 0);
    REQUIRE(b.h2d.transfers > 0);
    // The same reload over 2 links in parallel (32 layers: ι = 1) takes half the busy time each.
    CHECK(b.h2d.busy / b.h2d.transfers == Approx(0.5 * a.h2d.busy / a.h2d.transfers).epsilon(1e-9));
}

TEST_CASE("CPU-decode disagg with pipeline stages: the feed is the busiest stage's share of a prefill plus one send",
          "[disagg][pp]") {
    // Llama-3.1-70B, 80 layers: pp 2 splits them evenly (ι = 1); pp 3 holds 27 in the busiest stage.
    const Scenario flat = staged("h100-sxm", "llama-3.1-70b", 2, 1, 4000, 500);
    const DisaggStudy a = disagg_study(flat);
    for (const int pp : {2, 3}) {
        const Scenario sc = staged("h100-sxm", "llama-3.1-70b", 2, pp, 4000, 500);
        const PreparedScenario ps(sc);
        const DisaggStudy b = disagg_study(sc);
        INFO("pp " << pp);
        CHECK(b.gpus == 2 * pp);
        const double share = ps.pipe.imbalance / pp;  // ι/pp
        CHECK(share == Approx(pp == 2 ? 0.5 : 27.0 / 80).epsilon(1e-12));
        CHECK(b.prefill_gpu_s == Approx(share * a.prefill_gpu_s + prefill_transfer(ps.pipe, 4000) / (pp - 1)).epsilon(1e-12));
        CHECK(b.prefill_link_s == Approx(share * a.prefill_link_s).epsilon(1e-12));
        CHECK(b.gpu_calls_per_s == Approx(1.0 / std::max(b.prefill_gpu_s, b.prefill_link_s)).epsilon(1e-12));
        // One socket's decode engine does not depend on the GPUs.
        CHECK(b.cpu_calls_per_s == a.cpu_calls_per_s);
    }
}

TEST_CASE("GPU-pool disagg with pipeline stages: instances of tp x pp GPUs, prefill chunks pipelined", "[disagg][pp]") {
    LoadSpec load;
    const Scenario sc = staged("h100-sxm", "llama-3.1-70b", 16, 2, 4000, 500);
    const GpuDisaggStudy s = gpu_disagg_study(sc, load);
    CHECK(s.pp == 2);
    REQUIRE_FALSE(s.splits.empty());
    for (const PoolSplit& p : s.splits) {
        INFO("tp " << p.tp);
        CHECK(p.pp == 2);
        CHECK(16 / (p.tp * 2) >= 2);
        if (!(p.throughput > 0)) continue;
        CHECK((p.prefill_instances + p.decode_instances) * p.tp * 2 == 16);
        // A chunk's trip is longer than the pipeline's time per chunk: prefill_rps > x_p / trip.
        CHECK(p.prefill_rps * p.prefill_step > load.chunk / 4000.0);
    }
    // The aggregated side is parallel's own search, pipelines included.
    CHECK(s.aggregated_ok);
    Scenario odd = sc;
    odd.hardware.deployment.pp = 3;
    CHECK_THROWS_WITH(gpu_disagg_study(odd, load), Catch::Equals("pp: must divide gpus (16, both pools' GPUs), got 3"));
}
