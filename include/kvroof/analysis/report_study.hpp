// SPDX-License-Identifier: MIT
#pragma once
// The numbers behind `kvroof report`'s serving pages, each from one scenario:
// a verdict with the band on an f grid (concurrent_mix.md), every
// intermediate quantity of one scenario (MODEL_WALKTHROUGH.md), a roofline
// ceiling against the no-offload point (throughput_ceiling.md), and the best
// gains a plot sweeps over. Scenarios are built by the caller.

#include <vector>

#include "kvroof/analysis/ceiling.hpp"
#include "kvroof/analysis/mix_table.hpp"
#include "kvroof/analysis/verdict_report.hpp"

namespace kvroof {

// A verdict and both ends of the band at each f of `fs` (no rows when the
// scenario does not fit).
struct BandTable {
    VerdictReport report;
    std::vector<double> fs;
    std::vector<Band> rows;
};

[[nodiscard]] inline BandTable band_table(const Scenario& sc, const std::vector<double>& fs) {
    BandTable t;
    t.report = verdict_report(sc);
    if (t.report.verdict.kind == VerdictKind::does_not_fit) return t;
    const PreparedScenario ps(sc);
    t.fs = fs;
    t.rows = band_grid(ps, fs);
    return t;
}

// Every number of the walkthrough of one scenario at f = 0, ov = 0.
struct Walkthrough {
    ScenarioFacts facts;
    Verdict verdict;  // baseline.conservative is the point walked through
    Bytes weights_streamed;  // one step's weight read at batch 1
    Flop linear_per_token;  // linear FLOP per token (work: without ModelConstants::gemm_charge)
    Flop attention_at_context;  // decode attention FLOP of one token at the first class's S
    Seconds weight_read;  // w = weights_read(B) / HBM bandwidth at the baseline batch
    Seconds compute_per_sequence;  // linear FLOP per token, charged, / GPU FLOP/s
    std::vector<ResourceSeconds> per_resource;  // of the baseline point
};

[[nodiscard]] inline Walkthrough walkthrough(const Scenario& sc) {
    Walkthrough w;
    w.verdict = make_verdict(sc);
    const PreparedScenario ps(sc);
    w.facts = scenario_facts(ps);
    const ServingPoint& p = w.verdict.baseline.conservative;
    const double context = sc.mix.entries.front().cls.context();
    w.weights_streamed = ps.mc.weights_read(1);
    w.linear_per_token = ps.mc.linear_work();
    w.attention_at_context = Flop(decode_attention_flop(ps.mc, context, 1.0));
    w.weight_read = Seconds(ps.mc.weights_read(p.batch).raw() / ps.sys.hbm_bandwidth.raw());
    w.compute_per_sequence = Seconds(ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw());
    w.per_resource = per_resource_seconds(p);
    return w;
}

// The roofline ceiling of a scenario and its no-offload point (f = 0, ov = 0).
struct CeilingRow {
    Ceiling ceiling;
    ServingPoint baseline;
};

[[nodiscard]] inline CeilingRow ceiling_row(const Scenario& sc) {
    sc.check_validity();
    const PreparedScenario ps(sc);
    return {throughput_ceiling(ps), evaluate(ps, 0.0, 0.0)};
}

// Both ends of the band at each f of `fs` (a plot's curve).
[[nodiscard]] inline std::vector<Band> band_grid(const Scenario& sc, const std::vector<double>& fs) {
    sc.check_validity();
    const PreparedScenario ps(sc);
    return band_grid(ps, fs);
}

// The no-offload point (f = 0, ov = 0) of a scenario.
[[nodiscard]] inline ServingPoint baseline_point(const Scenario& sc) {
    sc.check_validity();
    const PreparedScenario ps(sc);
    return evaluate(ps, 0.0, 0.0);
}

// The best gain over no offload at each end of the band.
struct BestGains {
    double conservative = 1, optimistic = 1;
};

[[nodiscard]] inline BestGains best_gains(const Verdict& v) noexcept {
    return {gain(v.best_conservative, v.baseline.conservative), gain(v.best_optimistic, v.baseline.optimistic)};
}

}  // namespace kvroof
