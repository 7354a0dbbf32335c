// SPDX-License-Identifier: MIT
#pragma once
// `kvroof verdict --solve KNOB --target …` (analysis/solve.hpp): the request
// read from its flags' text, and the answer as a SOLVE line (text), JSON and
// markdown. The renderers format a SolveResult and compute nothing.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kvroof/analysis/solve.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct SolveText {
    std::string knob;  // --solve
    std::optional<std::string> target, target_gain, range;  // --target, --target-gain, --range
};

// The request in SI, the range defaulting to [value / 64, value · 64] around the
// scenario's own value within the knob's bounds. Throws InputError naming the flag.
[[nodiscard]] SolveSpec solve_spec(const SolveText& t, const Scenario& sc);

[[nodiscard]] std::string solve_line(const SolveResult& r);
[[nodiscard]] std::string render_solve_text(const SolveResult& r);
[[nodiscard]] nlohmann::json solve_json(const SolveResult& r, const BuiltScenario& built);
// `command`: the command line shown as the source (empty: kvroof verdict --solve with the scenario's flags).
[[nodiscard]] std::string render_solve_markdown(const SolveResult& r, const BuiltScenario& built,
                                                const std::string& command = "");

}  // namespace kvroof::io
