// SPDX-License-Identifier: MIT
// The simulator's preemption (--preempt): a pair of calls that fit at their
// prompts but not at their peaks, recompute against swap, and the optimistic
// admission equal to the peak one when every call fits at its peak.
#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"
#include "kvroof/analysis/sim.hpp"
#include "sim_support.hpp"

namespace kvroof {
namespace {

// Llama-3.1-8B on an H200 whose HBM leaves 10 GB for KV (~76k tokens of 128 KiB),
// one class of A = 30 % and O = 40 % of that: one call fits at its peak (70 %),
// two fit at their prompts (60 %), not at their peaks (140 %).
struct Pair {
    Scenario sc;
    double A = 0, O = 0, kv = 0, link_bw = 0;
};

Pair tight_pair() {
    Pair p;
    p.sc = test::bench_scenario("h200", "llama-3.1-8b", 1, 1);
    {
        const PreparedScenario ps(p.sc);
        p.sc.hardware.gpu.hbm_reserve = Bytes(p.sc.hardware.gpu.hbm_reserve.raw() + ps.hbm_free_bytes() - 10e9);
    }
    const PreparedScenario ps(p.sc);
    p.kv = ps.mc.kv_gpu_per_token.raw();
    p.link_bw = ps.sys.link_bandwidth.raw();
    const double tokens = std::floor(ps.hbm_free_bytes() / p.kv);
    p.A = std::floor(0.3 * tokens);
    p.O = std::floor(0.4 * tokens);
    p.sc.mix.entries[0].cls.a_append = p.A;
    p.sc.mix.entries[0].cls.o_output = p.O;
    return p;
}

SimSpec pair_spec(Preempt mode) {
    SimSpec s = test::closed_loop(2, 2, GapDist::deterministic);
    s.warmup = 0;
    s.preempt = mode;
    return s;
}

}  // namespace

TEST_CASE("two calls that fit at their prompts but not at their peaks: exactly one preemption, tokens conserved", "[sim]") {
    const Pair p = tight_pair();
    REQUIRE(p.A > 20000);
    // Peak reservation: the two calls never run together, nothing is preempted.
    const SimResult none = simulate(p.sc, pair_spec(Preempt::none));
    REQUIRE(none.feasible);
    CHECK(none.max_running == 1);
    CHECK(none.preemptions == 0);
    // Prompt reservation: both run; when their KV outgrows HBM the newer one is
    // preempted, and it waits for the older one to finish (it cannot fit beside it again).
    const SimResult r = simulate(p.sc, pair_spec(Preempt::recompute));
    CHECK(r.max_running == 2);
    CHECK(r.preemptions == 1);
    CHECK(r.swaps == 0);
    // It was decoding: it prefills its held KV and its last output token again, at most its peak.
    CHECK(r.recomputed_tokens > p.A);
    CHECK(r.recomputed_tokens <= p.A + p.O);
    CHECK(r.output_tokens == 2 * p.O);
    CHECK(r.expected_output_tokens == 2 * p.O);
    CHECK(r.prefill_tokens == 2 * p.A + r.recomputed_tokens);
    CHECK(r.measured_calls == 2);
    CHECK(std::abs(r.littles_law_error()) < 1e-9);
    CHECK(r.hbm_used <= r.hbm_capacity);
}

TEST_CASE("swap moves the preempted call's KV over the link, D2H then H2D, and nothing is prefilled again", "[sim]") {
    const Pair p = tight_pair();
    const SimResult rec = simulate(p.sc, pair_spec(Preempt::recompute));
    const SimResult r = simulate(p.sc, pair_spec(Preempt::swap));
    REQUIRE(rec.preemptions == 1);
    CHECK(r.preemptions == 1);
    CHECK(r.swaps == 1);
    CHECK(r.recomputed_tokens == 0);
    CHECK(r.prefill_tokens == 2 * p.A);
    CHECK(r.output_tokens == 2 * p.O);
    // Both runs are the same up to the preemption: the call held what the recompute prefilled
    // again less its last output token, (1 − f)·kv bytes each (f = 0), at the link's rate each way.
    const double held = rec.recomputed_tokens - 1;
    CHECK(r.swapped_bytes == Approx(held * p.kv).epsilon(1e-12));
    CHECK(r.d2h.busy == Approx(r.swapped_bytes / p.link_bw).epsilon(1e-9));
    CHECK(r.h2d.busy == Approx(r.swapped_bytes / p.link_bw).epsilon(1e-9));
    CHECK(r.d2h.transfers == 1);
    CHECK(r.h2d.transfers == 1);
    CHECK(std::abs(r.littles_law_error()) < 1e-9);
    // Swapping ~4 GB at the link's rate costs less than prefilling ~28k tokens again.
    CHECK(r.sim_time < rec.sim_time);
}

TEST_CASE("prompt admission is peak admission when every call fits at its peak: the same run, no preemption", "[sim]") {
    const Scenario sc = test::bench_scenario("h200", "llama-3.1-8b", 2048, 256);
    SimSpec s = test::closed_loop(64, 3000);
    const SimResult none = simulate(sc, s);
    for (const Preempt mode : {Preempt::recompute, Preempt::swap}) {
        s.preempt = mode;
        const SimResult r = simulate(sc, s);
        CHECK(r.preemptions == 0);
        CHECK(r.throughput == none.throughput);
        CHECK(r.ttft.p99 == none.ttft.p99);
        CHECK(r.itl.mean == none.itl.mean);
        CHECK(r.events == none.events);
    }
}

TEST_CASE("under memory pressure, preemption admits more calls and keeps Little's law and the token counts", "[sim]") {
    // ISL 8,000 / OSL 4,000 on Llama-3.1-8B/H200: 78 calls fit at their peak, 128 clients ask.
    const Scenario sc = test::bench_scenario("h200", "llama-3.1-8b", 8000, 4000);
    SimSpec s = test::closed_loop(128, 2000, GapDist::deterministic);
    const SimResult none = simulate(sc, s);
    CHECK(none.preemptions == 0);
    for (const Preempt mode : {Preempt::recompute, Preempt::swap}) {
        s.preempt = mode;
        const SimResult r = simulate(sc, s);
        INFO(name(mode));
        CHECK(r.max_running > none.max_running);
        CHECK(r.preemptions > 0);
        CHECK((mode == Preempt::swap) == (r.swapped_bytes > 0));
        CHECK(r.output_tokens == r.expected_output_tokens);
        CHECK(r.prefill_tokens == r.expected_prefill_tokens + r.recomputed_tokens);
        CHECK(std::abs(r.littles_law_error()) < 0.015);
        CHECK(r.hbm_used <= r.hbm_capacity);
    }
}

}  // namespace kvroof
