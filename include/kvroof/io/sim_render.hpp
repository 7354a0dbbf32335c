// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof sim`: text (first line the SIM: summary), JSON and
// markdown, each beside the closed form. They format a SimReport and compute
// nothing.

#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/analysis/sim.hpp"
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
[[nodiscard]] std::string render_sim_markdown(const SimReport& r, const BuiltScenario& built);

}  // namespace kvroof::io
