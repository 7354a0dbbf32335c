// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof ladder` (analysis/ladder.hpp): the rungs as a table
// ending with a LADDER line, JSON, markdown. They format a LadderStudy and
// compute nothing.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kvroof/analysis/ladder.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/io/plot.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct LadderReport {
    LadderStudy study;
    ScenarioFacts facts;  // of the scenario as given: the echo of the inputs
};

[[nodiscard]] LadderReport ladder_report(const Scenario& sc, const LadderOptions& o);

// What a rung adds ("tensor parallel over 2 GPUs") and the flag that adds it ("--gpus 2").
[[nodiscard]] std::string rung_label(const LadderRung& r);
// A rung's flag; `group` names the tensor-parallel group's flag as the user did (group_flag), so the flags copy
// back onto their command line (--tp 2 --gpus 4 is refused: the two must agree).
[[nodiscard]] std::string rung_flag(const LadderRung& r, std::string_view group = "--gpus");
// "--tp" where the user set the group with --tp, else "--gpus".
[[nodiscard]] std::string_view group_flag(const BuiltScenario& built);
[[nodiscard]] std::string ladder_line(const LadderStudy& s, std::string_view group = "--gpus");
[[nodiscard]] std::string ladder_table_markdown(const LadderStudy& s);
[[nodiscard]] std::string render_ladder_text(const LadderReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json ladder_json(const LadderReport& r, const BuiltScenario& built);
[[nodiscard]] std::string render_ladder_markdown(const LadderReport& r, const BuiltScenario& built);
// The rungs top to bottom, tok/s per GPU at both band ends on a log axis.
[[nodiscard]] PlotSpec ladder_plot(const LadderStudy& s, const std::string& title);

}  // namespace kvroof::io
