// SPDX-License-Identifier: MIT
#pragma once
// The concurrent-mix band table: both ends of the band (ov = 0 and 1) at each
// f of a grid, the best f at each end, and optionally at one more overlap.

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/analysis/verdict.hpp"

namespace kvroof {

// f = 0, step, 2·step, … below 1, then 1 itself: every grid ends at full offload, whether or not the
// step divides 1 (0.3 gave 0, 0.3, 0.6, 0.9 and no 1; a step that divides it gives the same points as before).
[[nodiscard]] inline std::vector<double> f_grid(double step) {
    std::vector<double> fs;
    const int n = static_cast<int>(std::ceil(1.0 / step - 1e-9));
    fs.reserve(static_cast<std::size_t>(n) + 1);
    for (int i = 0; i < n; ++i) fs.push_back(i * step);
    fs.push_back(1.0);
    return fs;
}

// f = k / divisions for k = 0 … divisions (exact decimal points for 10, 100).
[[nodiscard]] inline std::vector<double> f_divisions(int divisions) {
    std::vector<double> fs;
    for (int k = 0; k <= divisions; ++k) fs.push_back(k / static_cast<double>(divisions));
    return fs;
}

[[nodiscard]] inline std::vector<Band> band_grid(const PreparedScenario& ps, const std::vector<double>& fs) {
    std::vector<Band> rows;
    rows.reserve(fs.size());
    for (double f : fs) rows.push_back(band(ps, f));
    return rows;
}

struct MixTable {
    ScenarioFacts facts;
    std::vector<double> fs;
    std::vector<Band> rows;  // one per f
    Band baseline;  // f = 0
    ServingPoint best_conservative, best_optimistic;
    std::optional<ServingPoint> at_ov;  // best f at a given ov, if asked for
    std::optional<ServingPoint> base_at_ov;  // f = 0 at that ov: its gain's baseline
};

[[nodiscard]] inline MixTable make_mix_table(const Scenario& sc, double step, std::optional<double> ov) {
    sc.check_validity();
    const PreparedScenario ps(sc);
    MixTable t;
    t.facts = scenario_facts(ps);
    t.baseline = band(ps, 0.0);
    t.fs = f_grid(step);
    t.rows = band_grid(ps, t.fs);
    const auto best = optimise_f_band(ps);
    t.best_conservative = best[0];
    t.best_optimistic = best[1];
    if (ov) {
        t.at_ov = optimise_f(ps, *ov);
        t.base_at_ov = evaluate(ps, 0.0, *ov);
    }
    return t;
}

}  // namespace kvroof
