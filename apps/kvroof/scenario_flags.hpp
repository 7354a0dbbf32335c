// SPDX-License-Identifier: MIT
#pragma once
// The scenario flags shared by every analysis subcommand.

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kvroof/io/load_text.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::cli {

// Adds one flag per scenario knob of the table (spec/knobs.hpp), its help and
// default from the row; a given flag sets `in`.
void add_scenario_flags(CLI::App& app, io::ScenarioInputs& in);
// A knob's --help line: its help, [bare unit], [default: …]; `also` extends
// the default ("--table seed: h100-sxm").
[[nodiscard]] std::string knob_help(const Knob& k, std::string_view also = {});

// Every option's --help line ends the same way: its help, then what the option
// is when not given — a value ("[default: 2048]") or what absence means
// ("[default: optimised]", "[default: none: --workload's classes]"). knob_help writes
// a knob row's this way; tests/cli/help_defaults.sh checks every subcommand.
[[nodiscard]] std::string with_default(std::string_view help, std::string_view absent);

// Adds a text option that fills `t`: its value's type name ("N", "FILE"), --help
// group, and its help line with what it is when not given (with_default).
void add_text_option(CLI::App& app, const char* flag, std::optional<std::string>& t, const char* type, const std::string& group,
                     std::string_view help, std::string_view absent);

// --threads N given as text: a whole number in [1, max]; empty when not given.
[[nodiscard]] std::optional<int> parse_threads(const std::optional<std::string>& text, int max);

// Adds a text option that fills `inputs->*field` and records (flag, value) in
// `inputs->given`, so a report can say which flags produced it.
template <class Inputs>
void add_recorded_option(CLI::App& app, const std::shared_ptr<Inputs>& inputs, const char* flag,
                         std::optional<std::string> Inputs::*field, std::string_view help, std::string_view absent) {
    app.add_option_function<std::string>(
           flag,
           [inputs, flag, field](const std::string& v) {
               (*inputs).*field = v;
               inputs->given.emplace_back(flag, v);
           },
           with_default(help, absent))
        ->type_name("VALUE");
}

// Adds the knob table's flag of one knob to a subcommand that reads only some
// knobs (prefill, layers): its name, help, unit and default from the row (`also`
// extends the default); a given flag sets `inputs->scenario` and is recorded in
// `inputs->given`.
template <class Inputs>
void add_knob_option(CLI::App& app, const std::shared_ptr<Inputs>& inputs, std::string_view name, std::string_view also = {}) {
    const Knob* k = &knob(name);
    app.add_option_function<std::string>(
           k->flag(),
           [inputs, k](const std::string& v) {
               inputs->scenario.set(*k, v);
               inputs->given.emplace_back(k->flag(), v);
           },
           knob_help(*k, also))
        ->type_name(k->type == KnobType::text ? "TEXT" : "VALUE");
}

// A flag this subcommand once spelled otherwise, kept out of --help: given, it
// fails naming the knob's one name, so no bare number silently changes unit.
void add_renamed_flag(CLI::App& app, const char* old_flag, std::string_view knob_name, std::string_view how);

// Adds `--table seed` (prefill, layers: a paper's table and scenario instead of
// verdict's default); records it in `inputs->given` and returns where its text
// lands, for the action to parse (io::parse_table_switch).
template <class Inputs>
std::shared_ptr<std::optional<std::string>> add_table_switch(CLI::App& app, const std::shared_ptr<Inputs>& inputs,
                                                             std::string_view help) {
    auto table = std::make_shared<std::optional<std::string>>();
    app.add_option_function<std::string>(
           "--table",
           [inputs, table](const std::string& v) {
               *table = v;
               inputs->given.emplace_back("--table", v);
           },
           with_default(help, "none"))
        ->type_name("seed");
    return table;
}

// The default of --prefill-chunk, from the engine's own (LoadSpec::chunk): "2048".
[[nodiscard]] std::string default_prefill_chunk();

// --isl/--osl/--prefix: one class in a benchmark's words, replacing --workload.
struct BenchmarkWorkloadText {
    std::optional<std::string> isl, osl, prefix;
};
void add_benchmark_workload_flags(CLI::App& app, BenchmarkWorkloadText& w, const std::string& group);
// Replaces the built scenario's mix with that one class (prefix = cached input
// tokens, no idle gap) when any of the three is given.
void apply_benchmark_workload(const BenchmarkWorkloadText& w, const io::ScenarioInputs& in, io::BuiltScenario& built);

// --prefill-chunk and --max-seqs as numbers, each within its range (operating_point.hpp's limits).
using io::max_seqs;
using io::prefill_chunk;

// --batch, --concurrency, --request-rate, --prefill, --prefill-chunk and
// --max-seqs into `t` (parsed by io::parse_load), under `group`; `absent` says
// what no load means, `prefill_absent` what no --prefill means.
void add_load_flags(CLI::App& app, io::LoadText& t, const std::string& group, std::string_view absent,
                    std::string_view prefill_absent);
// The one class --isl/--osl/--prefix describe, as a --workload value
// ("s_cached=P,a_append=I-P,o_output=O,idle_gap=0s"), or none when none is given.
[[nodiscard]] std::optional<std::string> benchmark_workload(const BenchmarkWorkloadText& w);

// Adds --json and --report FILE.md.
struct OutputOptions {
    bool json = false;
    std::string report;
};
// build_scenario, with each warning of the inputs (BuiltScenario::warnings, and
// a workload longer than the model's context window) on stderr.
// group_chosen: the command picks the tensor-parallel group itself (parallel, ladder), so --gpus is not one.
[[nodiscard]] io::BuiltScenario build_scenario_warning(const io::ScenarioInputs& in, bool group_chosen = false);
// The same with --isl/--osl/--prefix applied first (apply_benchmark_workload).
[[nodiscard]] io::BuiltScenario build_scenario_warning(const io::ScenarioInputs& in, const BenchmarkWorkloadText& bench,
                                                       bool group_chosen = false);
void add_output_flags(CLI::App& app, OutputOptions& out);
// The built scenario's warnings, its workload's and (unless the command picks the group) its tensor-parallel
// group's, each on stderr as "kvroof: warning: [label: ]text".
void print_warnings(const io::BuiltScenario& b, bool group_chosen, const std::string& label = "");

// --plot writes SVG: a path that names another format (x.png) is refused, not filled with SVG.
void check_svg_path(const std::string& plot);

// Two output flags naming one file would keep only the one written last: refused, naming both. Each entry is
// {flag, path}; an empty path (not given), "-" (standard output) and what is written directly rather than replaced
// (a device such as /dev/null, a pipe) are skipped.
void check_distinct_outputs(std::initializer_list<std::pair<std::string_view, std::string_view>> outputs);
// Throws when an output (flag, path) names the same existing file as an input: writing it would replace the input.
void check_outputs_spare_inputs(std::initializer_list<std::pair<std::string_view, std::string_view>> outputs,
                                std::initializer_list<std::pair<std::string_view, std::string_view>> inputs);

// Prints `text` (or `json_text`) to stdout and writes `markdown` atomically to
// --report when given.
void emit(const OutputOptions& out, const std::string& text, const std::string& json_text, const std::string& markdown);

}  // namespace kvroof::cli
