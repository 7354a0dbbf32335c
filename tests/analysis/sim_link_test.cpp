// SPDX-License-Identifier: MIT
// The simulator's link as FIFO queues per direction, and its timeline: waits
// checkable by hand, utilisation = busy time / horizon, Little's law and
// conservation with calls waiting for their reload, determinism.
#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"
#include "kvroof/analysis/sim.hpp"
#include "sim_support.hpp"

namespace kvroof {
namespace {

// One class on the 8B model on one H200, parking idle sessions: each call
// reloads its s_cached tokens before its prefill and saves them after.
Scenario parked(double cached, double append, double output, double idle) {
    io::ScenarioInputs in;
    in.set("hardware", "h200");
    in.set("model", "llama-3.1-8b");
    in.set("idle", "park");
    Scenario s = io::build_scenario(in).scenario;
    CallClass c;
    c.name = "turn";
    c.s_cached = cached;
    c.a_append = append;
    c.o_output = output;
    c.idle_gap = Seconds(idle);
    s.mix = Mix{{MixEntry{c, 1.0}}};
    return s;
}

using test::closed_loop;

}  // namespace

TEST_CASE("link server: N transfers queued at once, the k-th waits (k-1) R/W and the link is busy N R/W", "[sim][link]") {
    SimTimeline tl;
    LinkServer s(SimTimeline::h2d);
    const double d = 0.25;  // R / W
    for (int k = 1; k <= 4; ++k) CHECK(s.submit(0.0, d, tl, true, true) == Approx(k * d));
    CHECK(s.busy == Approx(4 * d));
    CHECK(s.wait_sum == Approx((0 + 1 + 2 + 3) * d));
    CHECK(s.wait.summary().mean == Approx(1.5 * d));
    CHECK(s.wait.summary().p99 == Approx(3 * d).epsilon(1e-3));
    // A transfer whose data is not there yet starts when it is, and later ones queue behind it.
    CHECK(s.submit(0.5, d, tl, true, true, 2.0) == Approx(2.0 + d));
    CHECK(s.submit(1.0, d, tl, true, true) == Approx(2.0 + 2 * d));
    // Over a horizon of 4 s the link was busy 6 R/W: utilisation 6·0.25 / 4, and the timeline adds to the same.
    double sum = 0;
    for (const auto& b : tl.bins) sum += b[SimTimeline::h2d];
    CHECK(sum == Approx(6 * d));
    CHECK(s.busy / 4.0 == Approx(0.375));
    // A transfer that found the link free waited 0, reported as 0 (not the histogram's 1 µs floor).
    LinkServer idle(SimTimeline::d2h);
    (void)idle.submit(1.0, d, tl, true, true);
    CHECK(idle.wait.summary().p50 == 0);
    CHECK(idle.wait.summary().p99 == 0);
}

TEST_CASE("timeline: windows double when the run outgrows them, keeping every integral", "[sim][link]") {
    SimTimeline tl;
    tl.add(SimTimeline::hbm, 0.0, 0.1, 2.0);  // 100 windows of 1 ms
    tl.add(SimTimeline::hbm, 0.1, 1.0, 1.0);  // needs 1000: the width doubles twice, to 4 ms
    CHECK(tl.width == Approx(4e-3));
    CHECK(tl.bins.size() == 250);
    double sum = 0;
    for (const auto& b : tl.bins) sum += b[SimTimeline::hbm];
    CHECK(sum == Approx(0.2 + 0.9));
    CHECK(tl.bins[0][SimTimeline::hbm] == Approx(2.0 * 4e-3));
    CHECK(tl.bins[249][SimTimeline::hbm] == Approx(1.0 * 4e-3));
}

TEST_CASE("parked sessions all calling at t = 0: the k-th reload waits (k-1) R/W on the H2D queue", "[sim][link]") {
    const double cached = 8192;
    const Scenario sc = parked(cached, 256, 16, 5.0);
    const PreparedScenario ps(sc);
    const double d = cached * ps.mc.kv_gpu_per_token.raw() / ps.sys.link_bandwidth.raw();  // R / W at f = 0
    const double save = cached * ps.mc.kv_per_token.raw() / ps.sys.link_bandwidth.raw();
    SimSpec spec = closed_loop(4, 4, GapDist::deterministic);
    spec.warmup = 0;
    detail::SimEngine e(ps, spec);
    e.run(0.0);  // every client's first call at t = 0
    REQUIRE(e.h2d.transfers == 4);
    CHECK(e.h2d.busy == Approx(4 * d));  // f = 0: no step traffic on the link
    CHECK(e.h2d.wait_sum == Approx(6 * d));  // 0 + 1 + 2 + 3
    CHECK(e.h2d.wait.summary().mean == Approx(1.5 * d));
    CHECK(e.d2h.transfers == 4);
    CHECK(e.d2h.busy == Approx(4 * save));
    // The last call cannot prefill before its reload ends at 4 R/W.
    CHECK(e.tally.ttft.summary().p99 > 4 * d);
    CHECK(e.output_tokens == 4 * 16);
    CHECK(e.prefill_tokens == 4 * 256);
}

TEST_CASE("with the link as queues, Little's law holds, tokens are conserved and a seed gives one run", "[sim][link]") {
    const Scenario sc = parked(30000, 1000, 200, 2.0);
    SimSpec s = closed_loop(32, 3000, GapDist::exponential);
    const SimResult a = simulate(sc, s);
    REQUIRE(a.feasible);
    REQUIRE(a.measured_calls > 1000);
    CHECK(a.h2d.transfers > 1000);
    CHECK(std::abs(a.littles_law_error()) < 0.015);
    CHECK(a.output_tokens == a.expected_output_tokens);
    CHECK(a.prefill_tokens == a.expected_prefill_tokens);
    CHECK(a.h2d.utilisation > 0);
    CHECK(a.h2d.utilisation <= 1.0 + 1e-9);
    for (const SimSample& t : a.timeline) {
        CHECK(t.hbm <= 1.0 + 1e-9);
        CHECK(t.h2d <= 1.0 + 1e-9);
        CHECK(t.d2h <= 1.0 + 1e-9);
    }
    CHECK(a.timeline.size() >= 128);
    const SimResult b = simulate(sc, s);
    CHECK(b.h2d.wait.p99 == a.h2d.wait.p99);
    CHECK(b.timeline.back().h2d == a.timeline.back().h2d);
    CHECK(b.events == a.events);
    s.seed = 2;
    CHECK(simulate(sc, s).h2d.wait.mean != a.h2d.wait.mean);
}

TEST_CASE("a saturated link queue is named as the gap's mechanism", "[sim][link]") {
    // Long cached prefixes reloaded every call with short idle gaps: the H2D queue, not the steps, sets the pace.
    const Scenario sc = parked(120000, 200, 50, 0.5);
    const SimResult r = simulate(sc, closed_loop(64, 2000, GapDist::deterministic));
    REQUIRE(r.feasible);
    INFO("gap " << r.gap_throughput << " wait " << r.h2d.wait.mean << " H2D busy " << r.h2d.utilisation);
    CHECK(r.h2d.utilisation > 0.9);
    CHECK(std::abs(r.gap_throughput) > 0.1);
    CHECK(r.mechanism == SimGap::link_queue);
}

TEST_CASE("hold, no offload: the link stays idle and its queue costs nothing", "[sim][link]") {
    const SimResult r = simulate(test::default_scenario(), closed_loop(8, 500, GapDist::exponential));
    CHECK(r.h2d.busy == 0);
    CHECK(r.d2h.busy == 0);
    CHECK(r.link_stall == 0);
    CHECK(r.loading == 0);
}

}  // namespace kvroof
