// SPDX-License-Identifier: MIT
#pragma once
// Formatting helpers shared by the serving renderers (verdict, mix, report).
// Private to src/render and src/report.cpp.

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io::render {

inline nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
inline std::string fmt_batch(double b) { return std::isfinite(b) ? fmt::format("{:.2f}", b) : "unbounded"; }
// A gain over a baseline that serves nothing is undefined, not infinite; where neither serves there is none (NaN).
inline std::string fmt_gain(double g) {
    if (std::isnan(g)) return "—";
    return std::isfinite(g) ? fmt::format("{:.2f}×", g) : "— (f=0 serves nothing)";
}
// The same in a table cell: "∞×" where only the point serves, "—" where neither does.
inline std::string fmt_gain_cell(double g) {
    if (std::isnan(g)) return "—";
    return std::isfinite(g) ? fmt::format("{:.2f}×", g) : "∞×";
}
inline std::string fmt_ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }
// A step or ITL where a batch runs, else none ("—"): an infeasible point has no step to show.
inline std::string fmt_ms_if(bool runs, double s) { return runs ? fmt_ms(s) : std::string("—"); }

// The echo of the resolved inputs (hardware, model, workload, policy, overrides).
[[nodiscard]] std::string inputs_text(const BuiltScenario& b, const ScenarioFacts& facts);
// The overrides as the command line gave them: ` --flag "value"` each.
[[nodiscard]] inline std::string overrides_echo(const BuiltScenario& b) {
    std::string s;
    for (const auto& [k, v] : b.overrides) s += fmt::format(" {} \"{}\"", k, v);
    return s;
}
// One serving point, one line.
[[nodiscard]] std::string point_summary(const ServingPoint& p);

}  // namespace kvroof::io::render
