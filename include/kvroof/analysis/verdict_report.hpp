// SPDX-License-Identifier: MIT
#pragma once
// Everything `kvroof verdict` shows, computed once: the resolved inputs and
// their derived quantities, the verdict itself, and the optional point at a
// given overlap inside the band. Renderers format this and compute nothing.

#include <optional>

#include "kvroof/analysis/ladder.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/analysis/verdict.hpp"

namespace kvroof {

struct VerdictReport {
    ScenarioFacts facts;
    Verdict verdict;
    std::optional<ServingPoint> at_ov;  // at the verdict's f and a given ov, when asked for
    std::optional<ServingPoint> base_at_ov;  // f = 0 at that ov: its gain's baseline (parked reloads overlap too)
    std::vector<LadderRung> levers;  // each lever alone, best first (single_levers)
};

[[nodiscard]] inline VerdictReport verdict_report(const Scenario& sc, const VerdictOptions& opt = {},
                                                  std::optional<double> ov_point = std::nullopt) {
    VerdictReport r;
    r.verdict = make_verdict(sc, opt);  // checks the scenario first
    const PreparedScenario ps(sc);
    r.facts = scenario_facts(ps);
    if (ov_point) {
        r.at_ov = evaluate(ps, r.verdict.f, *ov_point);
        r.base_at_ov = evaluate(ps, 0.0, *ov_point);
    }
    r.levers = single_levers(sc, r.verdict);
    return r;
}

}  // namespace kvroof
