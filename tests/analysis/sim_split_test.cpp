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
    // (G: the GEMMs, the weights read once, and the elementwise kernels' traffic), the offloaded
    // path k0 + 30 ms·f (k0: the per-layer round trips). At ov = 1 the step is the larger of the
    // two, shortest where they meet: f = (G + 10 ms − k0) / 40 ms.
    const Scenario sc = test::bench_scenario("h200", "llama-3.1-8b", 2048, 256);
    const PreparedScenario ps(sc);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    const double act = ps.mc.act_bytes_per_token / ps.sys.hbm_bandwidth.raw();
    const double G = std::max(lin, ps.weight_time(1.0)) + act, k0 = ps.offload_step_latency;
    REQUIRE(G > 1e-3);  // 16 GB of weights at ~4.8 TB/s: a few ms
    REQUIRE(k0 < 1e-3);
    const double hand = (G + 0.010 - k0) / 0.040;
    const detail::StepContent none;  // no prefill in the step
    REQUIRE(hand > 0.1);
    REQUIRE(hand < 0.9);
    const detail::Split s = detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 1.0), none, 1, 0, {}, lin, 1.0);
    CHECK(s.f == Approx(hand).margin(1e-12));  // exact: where the two paths cross
    CHECK(s.content.attn_m == Approx(0.010 * (1 - s.f)).margin(1e-12));
    CHECK(s.content.cpu_d == Approx(0.030 * s.f).margin(1e-12));
    CHECK(s.content.decode_tokens == 1);
    // The ceiling below the balance: the step falls all the way to it, so it takes the ceiling.
    CHECK(detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 0.5 * hand), none, 1, 0, {}, lin, 1.0).f == 0.5 * hand);
    // At ov = 0 the paths add up: 10 ms·(1 − f) + k0 + 30 ms·f only grows with f, so f = 0.
    CHECK(detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 1.0), none, 1, 0, {}, lin, 0.0).f == 0);
    // Nothing decoding: nothing to split.
    CHECK(detail::choose_split(ps, hand_lines(lin, 0.010, 0.030, 1.0), none, 0, 0, {}, lin, 1.0).f == 0);
}

TEST_CASE("split memo: a decode-only step's split is choose_split's to the bit and a step is solved once", "[sim][split]") {
    // Llama-3.1-70B on GB200 at ov = 1, the lines the engine reads: each step's split from the memo
    // equals choose_split's field by field, whether it was solved now or kept. Four slots: a key's
    // slot is (context + n) mod 4, so contexts 100,000 and 100,004 at n = 1 share one.
    const Scenario sc = test::bench_scenario("gb200", "llama-3.1-70b", 2048, 256);
    const PreparedScenario ps(sc);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    const PolicySpec pol = sc.policy;
    const detail::SplitLines l = detail::split_lines(ps, pol, 1.0);
    detail::SplitMemo memo(4);
    const auto same = [&](double n, double context) {
        INFO("n " << n << ", context " << context);
        const detail::Split direct = detail::choose_split(ps, l, detail::StepContent{}, n, context, {}, lin, 1.0);
        const detail::SplitMemo::Kept& k = memo.split(ps, l, detail::StepContent{}, n, context, {}, lin, 1.0);
        const detail::Split& kept = k.split;
        CHECK(k.time_bin == LogHistogram::index(kept.time));
        CHECK(kept.f == direct.f);
        CHECK(kept.time == direct.time);
        CHECK(kept.time == detail::step_time(ps, kept.content, kept.f, 1.0));
        for (double detail::StepContent::*m :
             {&detail::StepContent::decode_tokens, &detail::StepContent::prefill_tokens, &detail::StepContent::attn_c,
              &detail::StepContent::attn_m, &detail::StepContent::cpu_c, &detail::StepContent::cpu_d, &detail::StepContent::h2d,
              &detail::StepContent::d2h})
            CHECK(kept.content.*m == direct.content.*m);
        return memo.solved;
    };
    CHECK(same(1, 100000) == 1);
    CHECK(same(1, 100001) == 2);
    CHECK(same(1, 100000) == 2);  // kept
    CHECK(same(5, 100000) == 3);  // the same context at another n: another step, in the same slot
    CHECK(same(2, 100001) == 4);  // another slot
    CHECK(same(1, 100004) == 5);  // the slot of 100,000 at n = 1 (and 5)
    CHECK(same(1, 100000) == 6);  // evicted: solved again
    CHECK(same(1, 100001) == 6);
    // A step that holds a prefill chunk besides its decoding calls is solved, not kept.
    detail::StepContent chunk;
    chunk.prefill_tokens = 2048;
    chunk.attn_c = 0.01;
    const detail::SplitMemo::Kept& with_chunk = memo.split(ps, l, chunk, 1, 100000, {}, lin, 1.0);
    CHECK(with_chunk.split.f == detail::choose_split(ps, l, chunk, 1, 100000, {}, lin, 1.0).f);
    CHECK(with_chunk.time_bin == detail::SplitMemo::kNoBin);
    CHECK(memo.solved == 6);
    REQUIRE(memo.decode_only(ps, l, 1, 100000, {}, lin, 1.0).split.f >
            0);  // the GPU path is longer at f = 0: some attention moves
}

TEST_CASE("dynamic split in a pipeline: the group's share is split as the whole step would be", "[sim][split]") {
    // The by-hand lines on a 2-stage pipeline: each group runs 1/m of the step, stretched by σ
    // and with transfers that do not depend on f, so the balance point stays where the group's
    // GPU path (its GEMMs at 1/m of the tokens) meets its offloaded path.
    const Scenario sc = test::bench_scenario("gb200", "llama-3.1-70b", 2048, 256, 2, 2);
    const PreparedScenario ps(sc);
    REQUIRE(ps.pipe.pp == 2);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    const detail::StepContent none;
    const detail::SplitLines l = hand_lines(lin, 0.010, 0.030, 1.0);
    const double n = 8;  // eight tokens: m = min(8, micro-batches) groups share the step
    const detail::Split s = detail::choose_split(ps, l, none, n, 0, {}, lin, 1.0);
    const double m = std::clamp(n, 1.0, ps.pipe.microbatches);
    const detail::GemmTerms g = detail::gemm_terms(ps, n / m);
    const double G = std::max(g.gemm_c, g.gemm_m) + g.act + g.moe + g.tp + g.ep;
    const double hand = (G + n * 0.010 / m - ps.offload_step_latency) / (n * 0.040 / m);
    INFO("m " << m << ", G " << G << " s, hand f " << hand);
    REQUIRE(hand > 0);
    REQUIRE(hand < 1);
    CHECK(s.f == Approx(hand).margin(1e-12));
    // And no f on a grid gives a shorter step_time: the pipeline's own terms do not move the minimum.
    const double t = detail::step_time(ps, s.content, s.f, 1.0);
    for (int i = 0; i <= 1000; ++i) {
        detail::StepContent c = none;
        const double f = i / 1000.0;
        detail::add_decode(c, f > 0 ? l.one : l.zero, n, 0, lin);
        if (f > 0) {
            detail::StepContent half = none;
            detail::add_decode(half, l.half, n, 0, lin);
            c = detail::content_at(half, c, c, f);
        }
        CHECK(t <= detail::step_time(ps, c, f, 1.0) * (1 + 1e-12));
    }
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

TEST_CASE("exact split: no f on a dense grid of 10,000 gives a shorter step, over random step contents", "[sim][split]") {
    // shortest_split takes the minimum at the step's kinks and where its two paths cross; a
    // brute-force scan of (0, f_max] must never beat it. Random lines in f for every field (rising,
    // falling or flat), random ov and ceilings, on one GPU, a pipeline (its group share) and a
    // link whose two directions share a bidirectional limit.
    const Scenario one_sc = test::bench_scenario("h200", "llama-3.1-8b", 2048, 256);
    const Scenario piped_sc = test::bench_scenario("gb200", "llama-3.1-70b", 2048, 256, 2, 2);
    const Scenario pcie_sc = test::bench_scenario("h100-pcie", "llama-3.1-8b", 2048, 256);
    const PreparedScenario one_gpu(one_sc), piped(piped_sc), pcie(pcie_sc);
    REQUIRE(pcie.sys.link_bidir < 1.0);  // the shared-term kinks are exercised
    REQUIRE(piped.pipe.pp == 2);
    SimRng rng(20261203);
    int interior = 0;
    for (int trial = 0; trial < 600; ++trial) {
        const PreparedScenario& ps = trial % 3 == 0 ? one_gpu : trial % 3 == 1 ? piped : pcie;
        detail::StepContent half, one;
        half.decode_tokens = one.decode_tokens = 1 + std::floor(64 * rng.uniform());
        half.prefill_tokens = one.prefill_tokens = rng.uniform() < 0.5 ? 0.0 : std::floor(2048 * rng.uniform());
        for (double detail::StepContent::*m :
             {&detail::StepContent::attn_c, &detail::StepContent::attn_m, &detail::StepContent::cpu_c,
              &detail::StepContent::cpu_d, &detail::StepContent::h2d, &detail::StepContent::d2h}) {
            const double at0 = rng.uniform() < 0.2 ? 0.0 : 0.02 * rng.uniform(),
                         at1 = rng.uniform() < 0.2 ? at0 : 0.02 * rng.uniform();
            one.*m = at1;
            half.*m = 0.5 * (at0 + at1);
        }
        const double u = rng.uniform();
        const double ov = u < 0.25 ? 0.0 : u < 0.5 ? 1.0 : rng.uniform();
        const double f_max = rng.uniform() < 0.3 ? 1.0 : 0.05 + 0.95 * rng.uniform();
        const auto time = [&](double f) { return detail::step_time(ps, detail::content_at(half, one, one, f), f, ov); };
        const detail::StepContent h = detail::group_share(ps.pipe, half), o = detail::group_share(ps.pipe, one);
        const detail::GemmTerms g = detail::gemm_terms(ps, h.decode_tokens + h.prefill_tokens);
        const double f = detail::shortest_split(ps, g, h, o, ov, f_max).f;
        INFO("trial " << trial << " ov " << ov << " f_max " << f_max << " f " << f);
        REQUIRE(f > 0);
        REQUIRE(f <= f_max);
        const double t = time(f);
        double dense = kUnbounded;
        for (int i = 1; i <= 10000; ++i) dense = std::min(dense, time(f_max * i / 10000.0));
        CHECK(t <= dense * (1 + 1e-12));
        if (f > 1e-6 * f_max && f < f_max) ++interior;
    }
    CHECK(interior > 100);  // the minimum lies inside, not only at an end, in many trials
}

TEST_CASE("dynamic split in a pipeline at f = 0: a call's prefill chunk rides in one micro-batch, as under the static policy",
          "[sim][split]") {
    // Llama-3.1-70B on TP4 x PP2 H100s, 2,000/500, three deterministic clients. With a ceiling of
    // f = 0 every step's split is f = 0, so the run must be the static f = 0 run to the bit. Before
    // the dynamic policy charged whole pieces it split each 2,000-token chunk over the micro-batches:
    // TTFT 69 ms where the static policy's is 136 ms.
    const Scenario sc = test::bench_scenario("h100-sxm", "llama-3.1-70b", 2000, 500, 4, 2);
    REQUIRE(PreparedScenario(sc).pipe.pp == 2);
    SimSpec fixed = test::closed_loop(3, 300, GapDist::deterministic);
    SimSpec dynamic = fixed;
    dynamic.f_policy = FPolicy::dynamic;
    const SimResult a = simulate(sc, fixed), b = simulate(sc, dynamic);
    REQUIRE(a.feasible);
    REQUIRE(b.feasible);
    INFO("TTFT P50 static " << a.ttft.p50 * 1e3 << " ms, dynamic " << b.ttft.p50 * 1e3 << " ms");
    CHECK(a.ttft.p50 > 0.120);  // the chunk's trip through both stages, about 136 ms
    CHECK(b.ttft.p50 == a.ttft.p50);
    CHECK(b.ttft.mean == a.ttft.mean);
    CHECK(b.itl.mean == a.itl.mean);
    CHECK(b.throughput == a.throughput);
    CHECK(b.steps == a.steps);
}

}  // namespace kvroof
