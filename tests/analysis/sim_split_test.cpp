// SPDX-License-Identifier: MIT
// The simulator's dynamic GPU/CPU split: the step's f against a hand value,
// f = 0 when offloading cannot shorten a step, and never worse than the
// static f's in a deterministic closed loop.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"
#include "kvroof/analysis/sim.hpp"
#include "sim_support.hpp"

namespace kvroof {
namespace {

// Decode lines of one token at context 0 whose GPU reads `hbm` s of KV at f = 0 and whose
// CPU reads `dram` s at f = 1, linear in between; no link traffic, no attention FLOP.
detail::SplitLines hand_lines(double lin, double hbm, double dram, double f_max) {
    detail::SplitLines l;
    l.f_max = f_max;
    for (auto [f, out] : {std::pair{0.0, &l.zero}, std::pair{0.5, &l.half}, std::pair{1.0, &l.one}}) {
        out->d0.gpu_compute = lin;  // the GEMM's seconds, which the step charges once: no attention FLOP
        out->d0.gpu_hbm = (1 - f) * hbm;
        out->d0.cpu_dram = f * dram;
    }
    return l;
}

}  // namespace

TEST_CASE("dynamic split, by hand: at ov = 1 the step's f balances the GPU path and the CPU path", "[sim][split]") {
    // One decoding token at context 0 on Llama-3.1-8B/H200: the GPU path is G + 10 ms·(1 − f)
    // (G: the GEMMs, the weights read once), the offloaded path k0 + 30 ms·f (k0: the per-layer
    // round trips). At ov = 1 the step is the larger of the two, shortest where they meet:
    // f = (G + 10 ms − k0) / 40 ms.
    const Scenario sc = test::bench_scenario("h200", "llama-3.1-8b", 2048, 256);
    const PreparedScenario ps(sc);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    const double G = std::max(lin, ps.weight_time(1.0)), k0 = ps.offload_step_latency;
    REQUIRE(G > 1e-3);  // 16 GB of weights at ~4.8 TB/s: a few ms
    REQUIRE(k0 < 1e-3);
    const double hand = (G + 0.010 - k0) / 0.040;
    const detail::StepContent none;  // no prefill in the step
    REQUIRE(hand > 0.1);
    REQUIRE(hand < 0.9);
    const detail::Split s = detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 1.0), none, 1, 0, lin, 1.0);
    CHECK(s.f == Approx(hand).margin(1e-4));  // the search's bracket: 7e-5 of the ceiling
    CHECK(s.content.attn_m == Approx(0.010 * (1 - s.f)).margin(1e-12));
    CHECK(s.content.cpu_d == Approx(0.030 * s.f).margin(1e-12));
    CHECK(s.content.decode_tokens == 1);
    // The ceiling below the balance: the step falls all the way to it, so it takes the ceiling.
    CHECK(detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 0.5 * hand), none, 1, 0, lin, 1.0).f == 0.5 * hand);
    // At ov = 0 the paths add up: 10 ms·(1 − f) + k0 + 30 ms·f only grows with f, so f = 0.
    CHECK(detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 1.0), none, 1, 0, lin, 0.0).f == 0);
    // Nothing decoding: nothing to split.
    CHECK(detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 1.0), none, 0, 0, lin, 1.0).f == 0);
}

TEST_CASE("dynamic split from the previous step's f: the search's own answer, whether the hint holds or not", "[sim][split]") {
    // The by-hand step above: a hint at the minimum is kept (its neighbours a bracket away are no
    // shorter), a hint elsewhere fails that check and the golden section runs as without one.
    const Scenario sc = test::bench_scenario("h200", "llama-3.1-8b", 2048, 256);
    const PreparedScenario ps(sc);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    const double hand = (std::max(lin, ps.weight_time(1.0)) + 0.010 - ps.offload_step_latency) / 0.040;
    const detail::StepContent none;
    const detail::SplitLines l = hand_lines(lin, 0.010, 0.030, 1.0);
    const detail::Split cold = detail::choose_split(ps, l, none, 1, 0, lin, 1.0);
    REQUIRE(cold.interior == cold.f);
    for (const double hint : {cold.f, 0.9, 0.5 * hand, 1.0, 1e-6}) {
        INFO("hint " << hint);
        const detail::Split warm = detail::choose_split(ps, l, none, 1, 0, lin, 1.0, hint);
        CHECK(warm.f == cold.f);
        CHECK(warm.f == Approx(hand).margin(1e-4));
    }
    // The ceiling below the balance and ov = 0: the same ends with a hint at them.
    const detail::SplitLines low = hand_lines(lin, 0.010, 0.030, 0.5 * hand);
    CHECK(detail::choose_split(ps, low, none, 1, 0, lin, 1.0, 0.5 * hand).f == 0.5 * hand);
    const detail::Split zero = detail::choose_split(ps, l, none, 1, 0, lin, 0.0);
    CHECK(detail::choose_split(ps, l, none, 1, 0, lin, 0.0, zero.interior).f == 0);
}

TEST_CASE("dynamic split with the CPU far slower than the GPU: every step picks f = 0, the run is static f = 0's",
          "[sim][split]") {
    // Llama-3.1-8B/H200 with a quarter Xeon socket: ~47 GB/s of DRAM against ~4.8 TB/s of HBM, ov = 0.
    // Moving attention to the CPU only lengthens a step, so the policy keeps all of it on the GPU.
    const Scenario sc = test::bench_scenario("h200", "llama-3.1-8b", 2048, 256);
    SimSpec fixed = test::closed_loop(64, 2000, GapDist::deterministic);
    SimSpec dynamic = fixed;
    dynamic.f = 1;
    dynamic.f_policy = FPolicy::dynamic;
    const SimResult a = simulate(sc, fixed), b = simulate(sc, dynamic);
    REQUIRE(b.feasible);
    CHECK(b.f_split.mean == 0);
    CHECK(b.f_split.p90 == 0);
    CHECK(b.throughput == a.throughput);
    CHECK(b.itl.mean == a.itl.mean);
    CHECK(b.ttft.p99 == a.ttft.p99);
    CHECK(b.steps == a.steps);
    CHECK(b.closed.throughput == a.closed.throughput);  // the closed form at the mean f, 0
    CHECK(b.cpu_utilisation == 0);
    // Its prefills' KV still goes to DRAM for the f share: each call's copy on D2H, outside the steps.
    CHECK(b.d2h.busy > 0);
    CHECK(a.d2h.busy == 0);
}

TEST_CASE("dynamic split on GB200 at ov = 1: no worse than any static f, Little's law and tokens still hold", "[sim][split]") {
    // Llama-3.1-70B on GB200 with its Grace (~435 GB/s of DRAM): the weights' read (~17 ms a step)
    // leaves the GPU path longer than the CPU path at small f, so a share of the attention moves.
    const Scenario sc = test::bench_scenario("gb200", "llama-3.1-70b", 2048, 256);
    SimSpec spec = test::closed_loop(64, 1500, GapDist::deterministic);
    spec.ov = 1;
    double worst = 1e300, best = 0;
    for (const double f : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        spec.f = f;
        const SimResult r = simulate(sc, spec);
        REQUIRE(r.feasible);
        INFO("static f " << f << ": " << r.throughput << " tok/s");
        worst = std::min(worst, r.throughput);
        best = std::max(best, r.throughput);
    }
    spec.f = 1;
    spec.f_policy = FPolicy::dynamic;
    const SimResult d = simulate(sc, spec);
    REQUIRE(d.feasible);
    INFO("dynamic: " << d.throughput << " tok/s, f mean " << d.f_split.mean);
    CHECK(d.throughput >= worst);
    CHECK(d.f_split.mean > 0);
    CHECK(d.f_split.mean < 1);
    CHECK(d.f_split.p10 <= d.f_split.p50);
    CHECK(d.f_split.p50 <= d.f_split.p90);
    CHECK(d.cpu_utilisation > 0);
    CHECK(std::abs(d.littles_law_error()) < 0.015);
    CHECK(d.output_tokens == d.expected_output_tokens);
    CHECK(d.prefill_tokens == d.expected_prefill_tokens);
}

}  // namespace kvroof
