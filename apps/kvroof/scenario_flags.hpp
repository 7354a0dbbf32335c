// SPDX-License-Identifier: MIT
#pragma once
// The scenario flags shared by every analysis subcommand.

#include <CLI/CLI.hpp>

#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::cli {

// Adds --hardware, --model, --workload, --mix and every hardware and policy knob.
void add_scenario_flags(CLI::App& app, io::ScenarioInputs& in);

// Adds --json and --report FILE.md.
struct OutputOptions {
    bool json = false;
    std::string report;
};
void add_output_flags(CLI::App& app, OutputOptions& out);

// Prints `text` (or `json_text`) to stdout and writes `markdown` atomically to
// --report when given.
void emit(const OutputOptions& out, const std::string& text, const std::string& json_text, const std::string& markdown);

}  // namespace kvroof::cli
