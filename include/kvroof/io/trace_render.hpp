// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof trace`: text (first line the TRACE: summary), JSON and
// markdown of the classes found in a trace. They format and compute nothing.

#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/trace_classes.hpp"
#include "kvroof/io/trace_io.hpp"

namespace kvroof::io {

struct TraceReport {
    TraceClasses classes;
    TraceFormat format = TraceFormat::jsonl;
    double bytes_per_token = 0;  // a conversations file's, else 0
    std::string trace;  // the trace file, as given
    std::string out;  // the classes file written, or empty
};

[[nodiscard]] std::string trace_summary_line(const TraceClasses& t);
[[nodiscard]] std::string render_trace_text(const TraceReport& r);
[[nodiscard]] nlohmann::ordered_json trace_report_json(const TraceReport& r);
[[nodiscard]] std::string render_trace_markdown(const TraceReport& r);

}  // namespace kvroof::io
