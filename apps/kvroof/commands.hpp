// SPDX-License-Identifier: MIT
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace kvroof::cli {
// Each subcommand registers itself on `app` and returns the action to run
// after parsing when it was selected.
using Action = std::function<void()>;
Action setup_verdict(CLI::App& app);
Action setup_mix(CLI::App& app);
Action setup_presets(CLI::App& app);
Action setup_prefill(CLI::App& app);
Action setup_layers(CLI::App& app);
Action setup_sweep(CLI::App& app);
Action setup_report(CLI::App& app);
}  // namespace kvroof::cli
