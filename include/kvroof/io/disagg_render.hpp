// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof disagg` (analysis/disagg.hpp): text ending with a
// DISAGG line, JSON, markdown. They format a DisaggStudy and compute nothing.

#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/disagg.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct DisaggReport {
    DisaggStudy study;
    ScenarioFacts facts;
};

[[nodiscard]] DisaggReport disagg_report(const Scenario& sc);
[[nodiscard]] std::string disagg_line(const DisaggReport& r);
[[nodiscard]] std::string disagg_body_markdown(const DisaggReport& r);
[[nodiscard]] std::string render_disagg_text(const DisaggReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json disagg_json(const DisaggReport& r, const BuiltScenario& built);
[[nodiscard]] std::string render_disagg_markdown(const DisaggReport& r, const BuiltScenario& built);

}  // namespace kvroof::io
