// SPDX-License-Identifier: MIT
// The offload question at a given load keeps the SLOs first (analysis/point_study.hpp).
#include <algorithm>
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/point_study.hpp"
#include "sim_support.hpp"

namespace kvroof {
using test::bench_scenario;

TEST_CASE("at a given load the VERDICT keeps the SLOs first: infeasible where no f keeps them", "[point]") {
    // Llama-3.1-8B on one H100, ISL 2000 / OSL 500, batch 100: find the best ITL any f reaches with perfect overlap.
    Scenario s = bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 500);
    s.policy.slo_tpot.reset();
    const PreparedScenario ps(s);
    const LoadSpec load = test::point_load(LoadMode::batch, 100);
    const double itl0 = operating_point(ps, load, 0.0, 1.0).itl;
    double best_itl = itl0;
    for (int i = 1; i <= 100; ++i) {
        const OperatingPoint p = operating_point(ps, load, i * kPointFStep, 1.0);
        if (p.fits) best_itl = std::min(best_itl, p.itl);
    }
    REQUIRE(best_itl < itl0);  // offloading a little shortens this step
    // An SLO between the two: only an offloaded point keeps it, so the pipelined end takes it, whatever its throughput.
    s.policy.slo_tpot = Seconds(0.5 * (best_itl + itl0));
    const PointStudy kept = point_study(s, load);
    CHECK_FALSE(within_slos(kept.baseline.optimistic));
    CHECK(within_slos(kept.pipelined));
    CHECK(kept.pipelined.f > 0);
    CHECK(kept.gain_pipelined == kUnbounded);
    CHECK(kept.kind != VerdictKind::infeasible);
    CHECK(kept.kind != VerdictKind::keep_on_gpu);
    // An SLO below every f's ITL: no f keeps it, and the VERDICT says so rather than recommending a point that breaks it.
    s.policy.slo_tpot = Seconds(0.99 * best_itl);
    const PointStudy none = point_study(s, load);
    CHECK(none.kind == VerdictKind::infeasible);
    CHECK_FALSE(within_slos(none.at_f.optimistic));
    // Batch 250 fits only offloaded, at an ITL far over the default 50 ms SLO: infeasible, not OFFLOAD.
    const Scenario d = bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 500);
    const PointStudy big = point_study(d, test::point_load(LoadMode::batch, 250));
    REQUIRE(big.smallest_f_that_fits);
    CHECK(big.at_f.optimistic.itl > 0.05);
    CHECK(big.kind == VerdictKind::infeasible);
    // No SLO: the same load is an offload verdict again.
    Scenario free = d;
    free.policy.slo_tpot.reset();
    CHECK(point_study(free, test::point_load(LoadMode::batch, 250)).kind == VerdictKind::offload);
}

TEST_CASE("a given f is judged against f = 0: breaking the SLOs it keeps is no gain, not fitting is no SLO question", "[point]") {
    const Scenario d = bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 500);
    // Batch 60: f = 0 keeps the 50 ms SLO, f = 0.5 (its CPU share read every step) does not: keep the KV on the GPU.
    const PointStudy half = point_study(d, test::point_load(LoadMode::batch, 60), 0.5);
    REQUIRE(within_slos(half.baseline.conservative));
    REQUIRE(half.at_f.conservative.fits);
    CHECK_FALSE(within_slos(half.at_f.optimistic));
    CHECK(half.gain_bankable == 0.0);
    CHECK(half.kind == VerdictKind::keep_on_gpu);
    // Batch 250 at f = 0.05, no SLO: the point does not fit (only from f = 0.17), which is not an SLO breaking.
    Scenario free = d;
    free.policy.slo_tpot.reset();
    const PointStudy small = point_study(free, test::point_load(LoadMode::batch, 250), 0.05);
    REQUIRE_FALSE(small.at_f.optimistic.fits);
    CHECK(small.kind != VerdictKind::infeasible);
}

TEST_CASE("infeasible because the engine runs every request that fits: the largest --max-seqs that keeps the SLOs", "[point]") {
    // Qwen3-30B-A3B on two H100 PCIe with 96 GB each, ISL 100,000 / OSL 4,000, 32 clients: f = 0 admits every
    // request whose KV fits, and their steps break the 50 ms TPOT SLO (more HBM admits more: 80 GB kept it).
    Scenario s = test::bench_scenario("h100-pcie", "qwen3-30b-a3b", 100000, 4000, 2);
    s.hardware.gpu.hbm_capacity = gigabytes(96);
    LoadSpec load = test::point_load(LoadMode::concurrency, 32);
    const PointStudy st = point_study(s, load);
    REQUIRE(st.kind == VerdictKind::infeasible);
    REQUIRE(st.slo_cap);
    const double n = st.slo_max_seqs;
    CHECK(n == std::floor(n));
    CHECK(n < st.baseline.conservative.running);
    CHECK(within_slos(*st.slo_cap));
    // It is the largest: one more running request breaks the TPOT SLO; following the advice keeps the SLOs.
    const PreparedScenario ps(s);
    load.max_seqs = n + 1;
    CHECK_FALSE(operating_point(ps, load, 0.0, 0.0).within_slo_tpot);
    load.max_seqs = n;
    const PointStudy capped = point_study(s, load);
    CHECK(capped.kind != VerdictKind::infeasible);
    CHECK(capped.baseline.conservative.throughput == Approx(st.slo_cap->throughput).epsilon(1e-12));
    CHECK_FALSE(capped.slo_cap);
    // A fixed batch has no admission to cap.
    const PointStudy batch = point_study(s, test::point_load(LoadMode::batch, 32));
    CHECK_FALSE(batch.slo_cap);
}

TEST_CASE("a chosen f at which the point fits at neither end is DOES NOT FIT there, not KEEP KV ON GPU", "[point]") {
    // Llama-3.1-8B on an RTX 4090 at ISL 129,000: f = 0 fits no request; at --f 0.3 neither end fits either. The
    // study said KEEP KV ON GPU (no end offloads a fitting point) beside "f=0 does not fit".
    const Scenario s = test::bench_scenario("rtx-4090", "llama-3.1-8b", 129000, 500);
    const LoadSpec load = test::point_load(LoadMode::concurrency, 4);
    const PointStudy st = point_study(s, load, 0.3);
    REQUIRE_FALSE(st.baseline.conservative.fits);
    REQUIRE(st.smallest_f_that_fits);
    CHECK(*st.smallest_f_that_fits > 0.3);
    CHECK(st.kind == VerdictKind::does_not_fit);
    // At an f that fits, the question is the SLOs again, not fitting.
    CHECK(point_study(s, load, 0.8).kind != VerdictKind::does_not_fit);
}

}  // namespace kvroof
