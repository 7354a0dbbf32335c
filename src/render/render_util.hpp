// SPDX-License-Identifier: MIT
#pragma once
// Formatting helpers shared by the serving renderers (verdict, mix, report).
// Private to src/render and src/report.cpp.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/pipeline.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/analysis/verdict.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io::render {

// The chunk budget in words: a step's, or a pipeline's per micro-batch and per cycle (detail::cycle_budget).
inline std::string chunk_budget_text(double chunk, const Scenario& sc) {
    const Pipeline p = pipeline_of(sc.hardware, sc.model);
    if (p.pp <= 1) return fmt::format("{:g} tokens per step", chunk);
    return fmt::format("{:g} tokens per micro-batch, {:g} a cycle", chunk, detail::cycle_budget(p, chunk));
}

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
// An offload fraction: `decimals` decimals, or three significant digits where
// those would read 0 or 1 for an f strictly between (a session that fits only
// from f = 1.2e-06 offloads something; "f=0.00" would say it does not).
// `unit`, when given, gets the value of the text's last digit.
inline std::string fmt_f(double f, int decimals = 2, double* unit = nullptr) {
    const double half = 0.5 * std::pow(10.0, -decimals);  // what rounds to 0 or to 1 at that many decimals
    if (f > 0 && f < half) {
        std::string t = fmt::format("{:.3g}", f);
        if (unit) *unit = std::pow(10.0, std::floor(std::log10(std::stod(t))) - 2);
        return t;
    }
    int shown = decimals;
    std::string t = fmt::format("{:.{}f}", f, shown);
    while (f < 1 && t[0] == '1' && shown < 9) t = fmt::format("{:.{}f}", f, ++shown);  // below 1: as many as not to read 1
    if (unit) *unit = std::pow(10.0, -shown);
    return t;
}
// f as a --f value or a threshold ("needs f >= …"): fmt_f's text, one unit
// of its last digit higher where the text rounded below `at_least` (the least
// f at which one session fits), so the flag never asks for an f that fits nothing.
inline std::string f_flag(double f, double at_least = 0, int decimals = 2) {
    double unit = 0;
    const std::string t = fmt_f(f, decimals, &unit);
    const double shown = std::stod(t);
    return shown >= at_least ? t : fmt_f(std::max(shown + unit, at_least), decimals);
}
// An f a verdict shows: where it sits at or above the least f at which a session fits, the text is rounded up
// to one that fits (f_flag), so running it as --f fits; a chosen f below that is shown as chosen.
inline std::string shown_f(const Verdict& v, double f, int decimals = 2) {
    const double fits_from = v.smallest_f_that_fits.value_or(0.0);
    return f_flag(f, f >= fits_from ? fits_from : 0.0, decimals);
}
inline std::string fmt_ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }
// A step or ITL where a batch runs, else none ("—"): an infeasible point has no step to show, a run of
// one-token requests no inter-token latency (NaN).
inline std::string fmt_ms_if(bool runs, double s) { return runs && std::isfinite(s) ? fmt_ms(s) : std::string("—"); }

// The echo of the resolved inputs (hardware, model, workload, policy, overrides).
// `group` false where a study picks the deployments (kvroof parallel, disagg --arch gpu-pools): --gpus is every GPU.
[[nodiscard]] std::string inputs_text(const BuiltScenario& b, const ScenarioFacts& facts, bool group = true);
// The overrides as the command line gave them: ` --flag "value"` each.
[[nodiscard]] inline std::string overrides_echo(const BuiltScenario& b) {
    std::string s;
    for (const auto& [k, v] : b.overrides) s += fmt::format(" {} \"{}\"", k, v);
    return s;
}
// One serving point, one line.
[[nodiscard]] std::string point_summary(const ServingPoint& p);
// "VERDICT: DOES NOT FIT at the chosen f=…" with both of one session's shares and the f that fits.
[[nodiscard]] std::string chosen_f_misfit_line(const Verdict& v, const ScenarioFacts& facts);

}  // namespace kvroof::io::render
