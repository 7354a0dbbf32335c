// SPDX-License-Identifier: MIT
#pragma once
// Trace files of `kvroof trace` (docs/trace.md): JSON Lines or CSV, one call a
// line with session_id, timestamp_s, [end_s,] input_tokens, cached_tokens,
// output_tokens; and the classes file (a mix file, io/mix_file.hpp) it writes.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/analysis/trace_classes.hpp"
#include "kvroof/analysis/trace_synth.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof::io {

enum class TraceFormat { jsonl, csv };

// The format a path's extension names: ".csv" is CSV, anything else JSON Lines.
[[nodiscard]] TraceFormat trace_format_of(std::string_view path) noexcept;

// The calls of a trace's text; a bad line is an InputError "`where`: line N: 'field' ...".
[[nodiscard]] std::vector<TraceCall> parse_trace_text(std::string_view where, std::string_view text, TraceFormat format);
// The same for a file (`where` is "`flag` `path`").
[[nodiscard]] std::vector<TraceCall> read_trace_file(std::string_view flag, std::string_view path);

// A trace as JSON Lines, in the generic schema (times to the millisecond).
[[nodiscard]] std::string trace_jsonl(const std::vector<TraceCall>& calls);

// The classes as a mix file: loadable by --mix FILE.json, by --workload
// (one class) and by --synthesize. `source` goes into each class's note.
[[nodiscard]] nlohmann::ordered_json classes_mix_json(const TraceClasses& t, std::string_view source);
// The same classes as the Mix a mix file of them reads back as.
[[nodiscard]] Mix classes_mix(const TraceClasses& t, std::string_view source);

// The statistics of a classes file (mix file schema, every class with
// calls_per_session); calls, seed and spread are left at their defaults.
[[nodiscard]] SynthSpec load_synth_spec(std::string_view flag, std::string_view path);

}  // namespace kvroof::io
