// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof sim`: text (first line the SIM: summary), JSON and
// markdown, each beside the closed form. They format a SimReport and compute
// nothing.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/analysis/sim.hpp"
#include "kvroof/analysis/sim_sweep.hpp"
#include "kvroof/io/plot.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct SimReport {
    SimResult sim;
    ScenarioFacts facts;
};

[[nodiscard]] SimReport sim_report(const Scenario& sc, const SimSpec& spec);

[[nodiscard]] std::string sim_summary_line(const SimResult& r);
[[nodiscard]] std::string render_sim_text(const SimReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json sim_report_json(const SimReport& r, const BuiltScenario& built);
// `plot`: the SVG's path as the markdown should link it (empty: none).
// `command`: the command line to show as the report's source (empty: kvroof sim with the scenario's flags alone).
[[nodiscard]] std::string render_sim_markdown(const SimReport& r, const BuiltScenario& built, const std::string& plot = "",
                                              const std::string& command = "");

// HBM used / capacity and each link direction's busy share over the run's windows.
[[nodiscard]] PlotSpec sim_plot(const SimResult& r, const std::string& title);

// One scenario of outputs/sim_vs_closed_form.md (configs/report.json "sim_vs_closed_form").
struct SimSweepPage {
    std::string name, description, command;  // command: the `kvroof sim` line of one row, less its load
    SimSweep sweep;
};

// outputs/sim_vs_closed_form.md: per scenario a table of the sweep and a paragraph from its facts.
[[nodiscard]] std::string sim_vs_closed_form_markdown(const std::string& description, const std::vector<SimSweepPage>& pages);

}  // namespace kvroof::io
