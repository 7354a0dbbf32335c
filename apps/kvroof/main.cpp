// SPDX-License-Identifier: MIT
// kvroof: does moving KV cache and a fraction of decode attention from GPU HBM
// to CPU DRAM raise output tokens/s? Exit codes: 0 ok, 2 bad input, 1 other.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof_git_revision.hpp"

namespace {
// Every subcommand, in --help order (commands.hpp says how to add one).
constexpr kvroof::cli::Setup kSubcommands[] = {
    kvroof::cli::setup_verdict, kvroof::cli::setup_mix,    kvroof::cli::setup_presets,  kvroof::cli::setup_prefill,
    kvroof::cli::setup_layers,  kvroof::cli::setup_sweep,  kvroof::cli::setup_report,   kvroof::cli::setup_parallel,
    kvroof::cli::setup_ladder,  kvroof::cli::setup_disagg, kvroof::cli::setup_compare,  kvroof::cli::setup_sim,
    kvroof::cli::setup_trace,   kvroof::cli::setup_probe,  kvroof::cli::setup_validate, kvroof::cli::setup_completion,
    kvroof::cli::setup_help,
};

int run(int argc, char** argv) {
    // Ctrl-C, kill or a closed terminal removes the temporaries of writes in flight.
    kvroof::io::install_temp_cleanup_on_signals();
    CLI::App app{"kvroof — closed-form model of LLM serving with KV/attention offload to CPU DRAM"};
    app.set_version_flag("-V,--version", std::string("kvroof ") + KVROOF_VERSION + " (git " + KVROOF_GIT_REVISION + ")");
    app.footer(
        "Examples:\n"
        "  kvroof verdict                                   # gb200, llama-3.1-70b bf16, codex workload\n"
        "  kvroof verdict --gpus 1 --cpus-per-gpu 4 --workload \"s_cached=16000,a_append=2000,o_output=400\" --sparse 0.1\n"
        "  kvroof verdict --hardware h100-sxm --model llama-3.1-8b --json\n"
        "  kvroof mix --mix \"long:0.7,short:0.3\" --cpus-per-gpu 1\n"
        "  kvroof prefill                                   # κ_crit of the same default scenario as verdict\n"
        "  kvroof prefill --table seed                      # the κ_crit table of the KV-offloading bottlenecks paper\n"
        "  kvroof layers --table seed                       # the measured layer-offload budget table\n"
        "  kvroof sweep --grid \"sparse=0.1,1\" --grid \"f=0:1:0.05\"\n"
        "  kvroof sim --concurrency 64                      # discrete-event simulation beside the closed form\n"
        "  kvroof trace calls.jsonl --out classes.json      # workload classes of a request trace, for --mix\n"
        "  kvroof report                                    # regenerate outputs/\n"
        "  kvroof presets");
    app.require_subcommand(1);
    std::vector<std::pair<const CLI::App*, kvroof::cli::Action>> actions;
    for (const kvroof::cli::Setup setup : kSubcommands) {
        kvroof::cli::Action action = setup(app);
        actions.emplace_back(app.get_subcommands([](CLI::App*) { return true; }).back(), std::move(action));
    }
    try {
        app.parse(argc, argv);
        for (const auto& a : actions)
            if (a.first->parsed()) a.second();
        return 0;
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "kvroof: error: %s (see --help)\n", e.what());
        return 2;
    } catch (const kvroof::InputError& e) {
        std::fprintf(stderr, "kvroof: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvroof: failed: %s\n", e.what());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "kvroof: failed: unknown error\n");
        return 1;
    }
}
}  // namespace

// Nothing escapes: even building the command line (an allocation failure) ends in one line and exit 1.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (...) {
        std::fprintf(stderr, "kvroof: failed: unknown error\n");
        return 1;
    }
}
