// SPDX-License-Identifier: MIT
#pragma once
// Renderers for a verdict and for the concurrent-mix band table: terminal
// text (ending with the VERDICT line), JSON and markdown. Each formats one
// result struct and computes nothing, so the same result gives byte-identical
// output; each is called only for the output that was asked for.

#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/mix_table.hpp"
#include "kvroof/analysis/verdict_report.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

// `built` supplies what the user typed (overrides, the workload label) for the echo.
[[nodiscard]] std::string verdict_line(const VerdictReport& r);
[[nodiscard]] std::string render_verdict_text(const VerdictReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json verdict_json(const VerdictReport& r, const BuiltScenario& built);
// `command`: the command line shown as the source (empty: kvroof verdict with the scenario's flags).
[[nodiscard]] std::string render_verdict_markdown(const VerdictReport& r, const BuiltScenario& built,
                                                  const std::string& command = "");

[[nodiscard]] std::string render_mix_text(const MixTable& t, const BuiltScenario& built);
[[nodiscard]] nlohmann::json mix_json(const MixTable& t, const BuiltScenario& built);
[[nodiscard]] std::string render_mix_markdown(const MixTable& t, const BuiltScenario& built);

// Shared pieces.
[[nodiscard]] nlohmann::json point_json(const ServingPoint& p);
[[nodiscard]] nlohmann::json inputs_json(const BuiltScenario& b, const ScenarioFacts& facts);

}  // namespace kvroof::io
