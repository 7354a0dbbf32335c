// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof parallel` (analysis/parallel_study.hpp): the ranked
// deployments and the Pareto frontier as text ending with a VERDICT line,
// JSON, markdown, a CSV of every point, and the frontier's plot. They format a
// ParallelStudy and compute nothing.

#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/parallel_study.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/io/plot.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct ParallelReport {
    ParallelStudy study;
    ScenarioFacts facts;  // of one GPU: the echo of the inputs
};

// The study of built.scenario (its --gpus is the total) at `load`'s chunk and max_seqs.
[[nodiscard]] ParallelReport parallel_report(const Scenario& sc, const LoadSpec& load);

// "TP8 x DP9", "TP8 EP8 x DP9", "ADP8 EP8 x DP9" (data-parallel attention), "TP8 PP3 x DP3" (pipeline stages).
[[nodiscard]] std::string deployment_label(const Deployment& d);
[[nodiscard]] std::string parallel_verdict_line(const ParallelStudy& s);
[[nodiscard]] std::string render_parallel_text(const ParallelReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json parallel_json(const ParallelReport& r, const BuiltScenario& built);
[[nodiscard]] std::string render_parallel_markdown(const ParallelReport& r, const BuiltScenario& built);
// The two tables alone, as markdown.
[[nodiscard]] std::string parallel_ranking_markdown(const ParallelStudy& s);
[[nodiscard]] std::string parallel_frontier_markdown(const ParallelStudy& s);
// One row per point of every deployment; `scenario` names the study in its first column.
[[nodiscard]] std::string parallel_csv_header();
[[nodiscard]] std::string parallel_csv_rows(const ParallelStudy& s, const std::string& scenario);
// Tokens/s per GPU against tokens/s per user: each deployment's points and the frontier.
[[nodiscard]] PlotSpec parallel_plot(const ParallelStudy& s, const std::string& title);

}  // namespace kvroof::io
