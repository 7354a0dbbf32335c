// SPDX-License-Identifier: MIT
#pragma once
// `kvroof compare`: the same question for several scenarios side by side
// (H100 vs H200 vs B200 for one workload, or any knob's values). Each
// scenario gets the full verdict (verdict.hpp) and each lever alone
// (ladder.hpp's single_levers, as `kvroof verdict` lists them); the comparison
// adds the per-GPU view, so rows with different GPU counts compare fairly, and
// the per-user view (a user's tokens/s, 1 / the inter-token time they see).

#include <string>
#include <utility>
#include <vector>

#include "kvroof/analysis/ladder.hpp"
#include "kvroof/analysis/verdict.hpp"

namespace kvroof {

struct CompareRow {
    std::string label;  // "hardware=h200, gpus=2"
    Scenario scenario;
    Verdict verdict;
    // Output tokens/s of every replica together (the verdict's are one replica's: × dp), at f = 0, ov = 0
    // and at each end's best f.
    double baseline_total = 0, best_conservative_total = 0, best_optimistic_total = 0;
    double baseline_per_gpu = 0;  // output tokens/s per GPU at f = 0, ov = 0
    double best_per_gpu = 0;  // the same at the best bankable f (ov = 0)
    double baseline_per_user = 0;  // output tokens/s one user sees at f = 0, ov = 0: 1 / tpot_observed (0: nothing served)
    std::vector<LadderRung> levers;  // each lever alone, best first (empty: none applies)
};

struct CompareStudy {
    std::vector<CompareRow> rows;  // in the order given
    std::size_t best = 0;  // the row with the most tokens/s per GPU at its bankable best
};

[[nodiscard]] inline CompareStudy compare_study(const std::vector<std::pair<std::string, Scenario>>& scenarios) {
    CompareStudy s;
    for (const auto& [label, sc] : scenarios) {
        CompareRow r;
        r.verdict = make_verdict(sc);
        const double g = replica_gpus(sc.hardware), dp = sc.hardware.deployment.dp;
        r.baseline_total = r.verdict.baseline.conservative.throughput * dp;
        r.best_conservative_total = r.verdict.best_conservative.throughput * dp;
        r.best_optimistic_total = r.verdict.best_optimistic.throughput * dp;
        r.baseline_per_gpu = r.verdict.baseline.conservative.throughput / g;
        r.best_per_gpu = std::max(r.baseline_per_gpu, r.verdict.best_conservative.throughput / g);
        const ServingPoint& b = r.verdict.baseline.conservative;
        r.baseline_per_user = b.throughput > 0 && b.tpot_observed > 0 ? 1.0 / b.tpot_observed : 0.0;
        r.levers = single_levers(sc, r.verdict);
        r.label = label;
        r.scenario = sc;
        s.rows.push_back(std::move(r));
    }
    for (std::size_t i = 1; i < s.rows.size(); ++i)
        if (s.rows[i].best_per_gpu > s.rows[s.best].best_per_gpu) s.best = i;
    return s;
}

}  // namespace kvroof
