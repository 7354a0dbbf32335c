// SPDX-License-Identifier: MIT
#pragma once
// Renderers for a verdict and for the concurrent-mix band table: terminal
// text (ending with the VERDICT line), JSON and markdown. Pure functions of
// their inputs, so the same inputs give byte-identical output.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvroof/analysis/verdict.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct RenderContext {
    const BuiltScenario* built = nullptr;
    std::optional<double> ov_point;  // --ov: also show this point inside the band
};

[[nodiscard]] std::string verdict_line(const Verdict& v, const Scenario& sc);
[[nodiscard]] std::string render_verdict_text(const Verdict& v, const RenderContext& ctx);
[[nodiscard]] nlohmann::json verdict_json(const Verdict& v, const RenderContext& ctx);
[[nodiscard]] std::string render_verdict_markdown(const Verdict& v, const RenderContext& ctx);

// The concurrent-mix band table: one row per f on a grid, both ends of the band.
struct MixTable {
    std::vector<double> fs;
    std::vector<Band> rows;
    Band baseline;
    ServingPoint best_conservative, best_optimistic;
    std::optional<ServingPoint> at_ov;  // best f at --ov, if given
};
[[nodiscard]] MixTable make_mix_table(const Scenario& sc, double step, std::optional<double> ov);
[[nodiscard]] std::string render_mix_text(const MixTable& t, const RenderContext& ctx);
[[nodiscard]] nlohmann::json mix_json(const MixTable& t, const RenderContext& ctx);
[[nodiscard]] std::string render_mix_markdown(const MixTable& t, const RenderContext& ctx);

// Shared pieces.
[[nodiscard]] nlohmann::json point_json(const ServingPoint& p);
[[nodiscard]] nlohmann::json inputs_json(const BuiltScenario& b);

}  // namespace kvroof::io
