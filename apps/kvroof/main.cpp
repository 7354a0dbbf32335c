// SPDX-License-Identifier: MIT
// kvroof: does moving KV cache and a fraction of decode attention from GPU HBM
// to CPU DRAM raise output tokens/s? Exit codes: 0 ok, 2 bad input, 1 other.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof_git_revision.hpp"

namespace {
struct Subcommand {
    std::string_view name;  // as its setup registers it (checked)
    kvroof::cli::Setup setup;
};
// Every subcommand, in --help order (commands.hpp says how to add one).
constexpr Subcommand kSubcommands[] = {
    {"verdict", kvroof::cli::setup_verdict},   {"mix", kvroof::cli::setup_mix},
    {"presets", kvroof::cli::setup_presets},   {"prefill", kvroof::cli::setup_prefill},
    {"layers", kvroof::cli::setup_layers},     {"sweep", kvroof::cli::setup_sweep},
    {"report", kvroof::cli::setup_report},     {"parallel", kvroof::cli::setup_parallel},
    {"ladder", kvroof::cli::setup_ladder},     {"disagg", kvroof::cli::setup_disagg},
    {"compare", kvroof::cli::setup_compare},   {"sim", kvroof::cli::setup_sim},
    {"trace", kvroof::cli::setup_trace},       {"probe", kvroof::cli::setup_probe},
    {"validate", kvroof::cli::setup_validate}, {"completion", kvroof::cli::setup_completion},
    {"help", kvroof::cli::setup_help},
};

// The one subcommand to build when the command line starts with its name and
// it needs no sibling (help and completion list them all); else every one.
// Building only that one halves the start-up of a one-shot run: the others'
// flags, help defaults and embedded data are never decoded.
std::span<const Subcommand> to_build(int argc, char** argv) {
    if (argc >= 2) {
        const std::string_view first = argv[1];
        for (const Subcommand& s : kSubcommands)
            if (s.name == first && first != "help" && first != "completion") return {&s, 1};
    }
    return kSubcommands;
}

std::string& invocation_text() {
    static std::string s;
    return s;
}
}  // namespace

void kvroof::cli::set_invocation(int argc, char** argv) {
    std::string s = "kvroof";
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        // Where the outputs go is not how they were made: a report is the same wherever it is written.
        bool skip = false;
        for (const std::string_view f : {"--report", "--out", "--plot", "--meta"}) {
            if (a == f) ++i, skip = true;  // and its value
            skip = skip || (a.size() > f.size() && a.substr(0, f.size()) == f && a[f.size()] == '=');
        }
        if (skip) continue;
        const bool plain = !a.empty() && a.find_first_not_of(
                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789_./=:,+-@%") == std::string_view::npos;
        s += ' ';
        if (plain) {
            s += a;
            continue;
        }
        s += '\'';
        for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
        s += '\'';
    }
    invocation_text() = std::move(s);
}

const std::string& kvroof::cli::invocation() { return invocation_text(); }

namespace {
// Every flag that names an output (a file, or report's folder) must name one: '' is an error, not "not given".
void require_named_outputs(CLI::App& app) {
    const CLI::Validator named(
        [](const std::string& v) {
            return v.find_first_not_of(" \t") == std::string::npos ? fmt::format("must name a file, got '{}'", v) : std::string();
        },
        "");
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        for (const char* flag : {"--out", "--report", "--plot", "--csv", "--meta"})
            if (CLI::Option* o = sub->get_option_no_throw(flag)) o->check(named);
}

int run(int argc, char** argv) {
    kvroof::cli::set_invocation(argc, argv);
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
    for (const Subcommand& s : to_build(argc, argv)) {
        kvroof::cli::Action action = s.setup(app);
        const CLI::App* sub = app.get_subcommands([](CLI::App*) { return true; }).back();
        if (sub->get_name() != s.name)
            throw std::logic_error(fmt::format("subcommand table: '{}' registers '{}'", s.name, sub->get_name()));
        actions.emplace_back(sub, std::move(action));
    }
    require_named_outputs(app);
    // A first word that is no subcommand and no option: name it and the subcommands (CLI11 would only say one is required).
    if (argc >= 2 && argv[1][0] != '-' &&
        std::none_of(std::begin(kSubcommands), std::end(kSubcommands), [&](const Subcommand& s) { return s.name == argv[1]; })) {
        std::string names;
        for (const Subcommand& s : kSubcommands) names += (names.empty() ? "" : ", ") + std::string(s.name);
        std::fprintf(stderr, "kvroof: error: unknown subcommand '%s'; one of: %s\n", kvroof::one_line(argv[1]).c_str(),
                     names.c_str());
        return 2;
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
        std::fprintf(stderr, "kvroof: error: %s (see --help)\n", kvroof::one_line(e.what()).c_str());
        return 2;
    } catch (const kvroof::InputError& e) {
        std::fprintf(stderr, "kvroof: error: %s\n", e.what());  // InputError: one line already
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvroof: failed: %s\n", kvroof::one_line(e.what()).c_str());
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
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvroof: failed: %s\n", kvroof::one_line(e.what()).c_str());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "kvroof: failed: unknown error\n");
        return 1;
    }
}
