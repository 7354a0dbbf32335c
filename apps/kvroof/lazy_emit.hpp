// SPDX-License-Identifier: MIT
#pragma once
// emit() with each output built only when it is asked for: the text unless
// --json, the JSON with --json, the markdown with --report.

#include <string>

#include "scenario_flags.hpp"

namespace kvroof::cli {

template <class Text, class Json, class Markdown>
void emit_lazy(const OutputOptions& out, const Text& text, const Json& json_text, const Markdown& markdown) {
    const std::string md = out.report.empty() ? std::string() : std::string(markdown());
    const std::string shown = out.json ? std::string(json_text()) : std::string(text());
    emit(out, out.json ? std::string() : shown, out.json ? shown : std::string(), md);
}

}  // namespace kvroof::cli
