// SPDX-License-Identifier: MIT
#pragma once
// Trace files of `kvroof trace` (docs/trace.md): JSON Lines or CSV, one call a
// line with session_id, timestamp_s, [end_s,] input_tokens, cached_tokens,
// output_tokens; a conversations file (a JSON array of ShareGPT-shaped
// sessions, the schema of Inferact/codex_swebenchpro_traces); and the classes
// file (a mix file, io/mix_file.hpp) it writes.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/analysis/trace_classes.hpp"
#include "kvroof/analysis/trace_synth.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof::io {

enum class TraceFormat { jsonl, csv, conversations };
[[nodiscard]] constexpr const char* name(TraceFormat f) noexcept {
    return f == TraceFormat::csv ? "csv" : f == TraceFormat::conversations ? "conversations" : "jsonl";
}

// Token counts of a conversations file are its texts' UTF-8 bytes over this: OpenAI's rule of thumb of about four
// characters of English text per token (docs/trace.md).
inline constexpr double kDefaultBytesPerToken = 4.0;

// The format a path's extension names: ".csv" is CSV, anything else JSON Lines.
[[nodiscard]] TraceFormat trace_format_of(std::string_view path) noexcept;
// The format of a trace's text: a conversations file where its first character that is not white space is '['
// (a JSON Lines line is an object), else the extension's.
[[nodiscard]] TraceFormat trace_format_of(std::string_view path, std::string_view text) noexcept;

// The calls of a trace's text; a bad line is an InputError "`where`: line N: 'field' ...". bytes_per_token applies
// to a conversations file (parse_conversations_text below).
[[nodiscard]] std::vector<TraceCall> parse_trace_text(std::string_view where, std::string_view text, TraceFormat format,
                                                      double bytes_per_token = kDefaultBytesPerToken);
// A conversations file's calls (src/trace_conversations.cpp): the sessions are its array's elements (trial-1,
// trial-2, ...), each {"conversations": [{"from": ROLE, "value": TEXT}, ...]}; every prompt-side message (human,
// user, system, tool, ...) since the last response is the next call's new input and a response (gpt, assistant)
// ends the call. Input: all the session's text before the response; cached: all of it before the new input;
// output: the response; tokens = UTF-8 bytes / bytes_per_token, rounded (input and output at least 1). The file has
// no times: every call's start_s is -1 (no idle gap is measured).
[[nodiscard]] std::vector<TraceCall> parse_conversations_text(std::string_view where, std::string_view text,
                                                              double bytes_per_token);
// A trace file of any format (`where` is "`flag` `path`"); bytes_per_token applies to a conversations file.
struct TraceFile {
    std::vector<TraceCall> calls;
    TraceFormat format = TraceFormat::jsonl;
};
[[nodiscard]] TraceFile read_trace(std::string_view flag, std::string_view path, double bytes_per_token = kDefaultBytesPerToken);
// Its calls.
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
