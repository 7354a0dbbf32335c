// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof compare` (analysis/compare.hpp): a table ending with a
// COMPARE line, JSON, markdown. They format a CompareStudy and compute nothing.

#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/compare.hpp"

namespace kvroof::io {

[[nodiscard]] std::string compare_line(const CompareStudy& s);
[[nodiscard]] std::string render_compare_text(const CompareStudy& s, const std::string& base_flags);
[[nodiscard]] nlohmann::json compare_json(const CompareStudy& s, const std::string& base_flags);
[[nodiscard]] std::string render_compare_markdown(const CompareStudy& s, const std::string& base_flags);

}  // namespace kvroof::io
