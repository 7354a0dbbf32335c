// SPDX-License-Identifier: MIT
#pragma once
// The subcommands. Adding one: its file apps/kvroof/<name>.cpp defining
// `Action setup_<name>(CLI::App&)` (which adds the subcommand, its flags and
// help, and returns what to run when it was selected), one declaration below,
// one entry in main.cpp's kSubcommands (its name and setup), and nothing in
// CMakeLists.txt (sources are globbed).

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace kvroof::cli {
using Action = std::function<void()>;
using Setup = Action (*)(CLI::App&);
Action setup_verdict(CLI::App& app);
Action setup_mix(CLI::App& app);
Action setup_presets(CLI::App& app);
Action setup_prefill(CLI::App& app);
Action setup_layers(CLI::App& app);
Action setup_sweep(CLI::App& app);
Action setup_report(CLI::App& app);
Action setup_parallel(CLI::App& app);
Action setup_ladder(CLI::App& app);
Action setup_disagg(CLI::App& app);
Action setup_compare(CLI::App& app);
Action setup_sim(CLI::App& app);
Action setup_trace(CLI::App& app);
Action setup_probe(CLI::App& app);
Action setup_validate(CLI::App& app);
Action setup_completion(CLI::App& app);
Action setup_help(CLI::App& app);

// The command line as given, "kvroof" and each argument (shell-quoted where it needs it), less where the
// outputs go (--report, --out, --plot, --meta and their values): a report's reproduce line. Set once by
// main before parsing.
void set_invocation(int argc, char** argv);
[[nodiscard]] const std::string& invocation();
}  // namespace kvroof::cli
