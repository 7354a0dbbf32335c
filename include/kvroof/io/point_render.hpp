// SPDX-License-Identifier: MIT
#pragma once
// Renderers of the offload question at a fixed operating point (--batch or
// --concurrency): terminal text ending with the VERDICT line, JSON, markdown.
// They format a PointStudy and compute nothing.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvroof/analysis/point_study.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct PointReport {
    PointStudy study;
    ScenarioFacts facts;
};

[[nodiscard]] PointReport point_report(const Scenario& sc, const LoadSpec& load, std::optional<double> fixed_f);

[[nodiscard]] std::string point_verdict_line(const PointStudy& s);
[[nodiscard]] std::string render_point_text(const PointReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json point_report_json(const PointReport& r, const BuiltScenario& built);
[[nodiscard]] std::string render_point_markdown(const PointReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json operating_point_json(const OperatingPoint& p);
// The efficiency flags the user moved (--eta…, --step-overhead, --moe-layer-latency, --calibration): the stated
// error of outputs/accuracy.md is for the defaults, so with any of them it does not apply.
[[nodiscard]] std::vector<std::string> efficiency_flags(const BuiltScenario& built);

}  // namespace kvroof::io
