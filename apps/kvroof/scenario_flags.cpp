// SPDX-License-Identifier: MIT
#include "scenario_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "kvroof/analysis/point_step.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parse.hpp"

namespace kvroof::cli {

std::string with_default(std::string_view help, std::string_view absent) { return fmt::format("{} [default: {}]", help, absent); }

std::string knob_help(const Knob& k, std::string_view also) {
    std::string h(k.help);
    if (!k.bare.empty()) h += fmt::format(" [{}]", k.bare);
    std::string def(k.fallback.empty() ? k.shown_default : k.fallback);
    if (def.empty()) return h;  // a row without a default: tests/cli/help_defaults.sh fails on it
    // A default that comes from a preset also shows the embedded default's value ("from --hardware; gb200: 0.5").
    if (k.access.get && def.rfind("from --hardware", 0) == 0) {
        static const Scenario base = io::build_scenario(io::ScenarioInputs{}).scenario;
        const double bare = io::bare_si(k);
        def = fmt::format("{}; {}: {:g}", def, knob("hardware").fallback, k.access.get(base) / bare);
    }
    if (!also.empty()) def = fmt::format("{}; {}", def, also);
    return with_default(h, def);
}

void add_renamed_flag(CLI::App& app, const char* old_flag, std::string_view knob_name, std::string_view how) {
    const std::string msg =
        fmt::format("{}: now {}, the knob's one name in every subcommand ({})", old_flag, knob(knob_name).flag(), how);
    app.add_option_function<std::string>(old_flag, [msg](const std::string&) { throw InputError(msg); })->group("");
}

void add_text_option(CLI::App& app, const char* flag, std::optional<std::string>& t, const char* type, const std::string& group,
                     std::string_view help, std::string_view absent) {
    app.add_option_function<std::string>(
           flag, [&t](const std::string& v) { t = v; }, with_default(help, absent))
        ->type_name(type)
        ->group(group);
}

std::string default_prefill_chunk() { return fmt::format("{:g}", LoadSpec{}.chunk); }

void add_scenario_flags(CLI::App& app, io::ScenarioInputs& in) {
    for (const Knob& k : knobs()) {
        if (k.grid_only) continue;
        const Knob* kp = &k;
        app.add_option_function<std::string>(
               k.flag(), [&in, kp](const std::string& v) { in.set(*kp, v); }, knob_help(k))
            ->type_name(k.type == KnobType::text ? "TEXT" : "VALUE")
            ->group(std::string(k.group));
    }
}

namespace {
double whole_tokens(const char* flag, const std::string& text, double lo) {
    const double v = io::parse_number(flag, text);
    if (!(v >= lo) || v > limits::kMaxTokens || v != std::floor(v))
        throw InputError(
            fmt::format("{}: must be a whole number of tokens in [{:g}, {:g}], got '{}'", flag, lo, limits::kMaxTokens, text));
    return v;
}
}  // namespace

void add_benchmark_workload_flags(CLI::App& app, BenchmarkWorkloadText& w, const std::string& group) {
    add_text_option(app, "--isl", w.isl, "N", group,
                    "input tokens per request (with --osl: one class replacing --workload, no idle gap)",
                    "none: --workload's classes");
    add_text_option(app, "--osl", w.osl, "N", group, "output tokens per request (with --isl)", "none: --workload's classes");
    add_text_option(app, "--prefix", w.prefix, "N", group, "tokens of the input already cached (prefix hit)", "0");
}

namespace {
// The class --isl/--osl/--prefix describe, each checked; none when none is given.
std::optional<CallClass> benchmark_class(const BenchmarkWorkloadText& w) {
    if (!w.isl && !w.osl && !w.prefix) return std::nullopt;
    if (!w.isl || !w.osl)
        throw InputError(fmt::format("{}: needs both --isl and --osl", w.isl ? "--isl" : w.osl ? "--osl" : "--prefix"));
    const double isl = whole_tokens("--isl", *w.isl, 1), osl = whole_tokens("--osl", *w.osl, 1);
    const double prefix = w.prefix ? whole_tokens("--prefix", *w.prefix, 0) : 0.0;
    if (prefix > isl) throw InputError(fmt::format("--prefix: must be <= --isl ({:g}), got '{}'", isl, *w.prefix));
    CallClass c;
    c.name = "benchmark";
    c.s_cached = prefix;
    c.a_append = isl - prefix;
    c.o_output = osl;
    return c;
}
}  // namespace

void apply_benchmark_workload(const BenchmarkWorkloadText& w, const io::ScenarioInputs& in, io::BuiltScenario& built) {
    const std::optional<CallClass> c = benchmark_class(w);
    if (!c) return;
    if (in.given("workload") || in.given("mix"))
        throw InputError(fmt::format("--isl: replaces --{}; give one of them", in.given("mix") ? "mix" : "workload"));
    built.scenario.mix = Mix{{MixEntry{*c, 1.0}}};
    built.workload_label = fmt::format("isl={:g},osl={:g},prefix={:g}", c->s_cached + c->a_append, c->o_output, c->s_cached);
}

std::optional<std::string> benchmark_workload(const BenchmarkWorkloadText& w) {
    const std::optional<CallClass> c = benchmark_class(w);
    if (!c) return std::nullopt;
    return fmt::format("s_cached={:g},a_append={:g},o_output={:g},idle_gap=0s", c->s_cached, c->a_append, c->o_output);
}

void add_load_flags(CLI::App& app, io::LoadText& t, const std::string& group, std::string_view absent,
                    std::string_view prefill_absent) {
    auto add = [&](const char* flag, std::optional<std::string>& v, std::string_view help, std::string_view none) {
        add_text_option(app, flag, v, "N", group, help, none);
    };
    add("--batch", t.batch, "fixed decode batch: B sequences decoding together, each replaced when it finishes", absent);
    add("--concurrency", t.concurrency,
        "C closed-loop clients, each sending its next request when the last completes; max: as many as fit in memory "
        "(an offline benchmark submitting every request at once)",
        absent);
    add("--request-rate", t.rate, "requests per second arriving (open loop), as vLLM's serving benchmark --request-rate", absent);
    add("--prefill", t.prefill, "chunked (into the decode steps, as vLLM/SGLang/TRT-LLM) or separate passes", prefill_absent);
    add("--prefill-chunk", t.chunk, "prefill tokens per step at most (chunked; per micro-batch in a pipeline)",
        default_prefill_chunk());
    add("--max-seqs", t.max_seqs,
        "most requests the engine runs at once (vLLM --max-num-seqs, TensorRT-LLM max_batch_size); more queue", "no limit");
    add("--requests", t.requests,
        "requests in the benchmark's run, per replica (vLLM --num-prompts): never more running; with --request-rate the "
        "throughput is over the run, its arrivals and the drain of the last; with --concurrency max they run in one wave",
        "steady state");
}

void print_warnings(const io::BuiltScenario& b, bool group_chosen, const std::string& label) {
    std::vector<std::string> all = b.warnings;
    for (auto& w : io::context_warnings(b.scenario)) all.push_back(std::move(w));
    if (!group_chosen) {
        // Named as the user gave the group: --tp or --gpus.
        const bool tp = std::any_of(b.overrides.begin(), b.overrides.end(), [](const auto& o) { return o.first == "--tp"; });
        for (auto& w : io::tensor_parallel_warnings(b.scenario, tp ? "--tp" : "--gpus")) all.push_back(std::move(w));
    }
    const std::string prefix = label.empty() ? "" : label + ": ";
    for (const auto& w : all) std::fprintf(stderr, "kvroof: warning: %s%s\n", prefix.c_str(), w.c_str());
}

io::BuiltScenario build_scenario_warning(const io::ScenarioInputs& in, bool group_chosen) {
    io::BuiltScenario b = io::build_scenario(in);
    print_warnings(b, group_chosen);
    return b;
}

io::BuiltScenario build_scenario_warning(const io::ScenarioInputs& in, const BenchmarkWorkloadText& bench, bool group_chosen) {
    io::BuiltScenario b = io::build_scenario(in);
    apply_benchmark_workload(bench, in, b);
    print_warnings(b, group_chosen);
    return b;
}

void check_distinct_outputs(std::initializer_list<std::pair<std::string_view, std::string_view>> outputs) {
    namespace fs = std::filesystem;
    const auto resolved = [](std::string_view p) {
        std::error_code ec;
        // A link whose target does not exist yet is followed as the writer follows it (weakly_canonical leaves it
        // as it is): --out t.csv --meta link.csv, link.csv -> t.csv, had both write t.csv, the meta lost.
        const fs::path at = io::follow_links(fs::absolute(fs::path(p)), ec);
        const fs::path c = fs::weakly_canonical(at, ec);
        return ec ? at.lexically_normal() : c;
    };
    // Written directly, not replaced: standard output, a device (/dev/null), a pipe. Two flags may share those.
    const auto shared_sink = [](std::string_view p) {
        std::error_code ec;
        const fs::file_status st = fs::status(fs::path(p), ec);
        return p.empty() || p == "-" || (!ec && fs::exists(st) && !fs::is_regular_file(st));
    };
    for (auto a = outputs.begin(); a != outputs.end(); ++a)
        for (auto b = std::next(a); b != outputs.end(); ++b) {
            if (shared_sink(a->second) || shared_sink(b->second)) continue;
            if (resolved(a->second) == resolved(b->second))
                throw InputError(fmt::format("{} and {}: both name '{}'; give each its own file", a->first, b->first, b->second));
        }
}

void check_outputs_spare_inputs(std::initializer_list<std::pair<std::string_view, std::string_view>> outputs,
                                std::initializer_list<std::pair<std::string_view, std::string_view>> inputs) {
    namespace fs = std::filesystem;
    for (const auto& out : outputs)
        for (const auto& in : inputs) {
            std::error_code ec;
            if (out.second.empty() || in.second.empty() || !fs::is_regular_file(fs::path(in.second), ec)) continue;
            if (fs::equivalent(fs::path(out.second), fs::path(in.second), ec) && !ec)
                throw InputError(fmt::format("{} and {}: both name '{}'; writing would replace the input, so give another file",
                                             out.first, in.first, out.second));
        }
}

void check_svg_path(const std::string& plot) {
    const std::string ext = plot.size() >= 4 ? plot.substr(plot.size() - 4) : "";
    if (ext != ".svg" && ext != ".SVG")
        throw InputError(fmt::format("--plot: draws SVG, so the file must end in .svg, got '{}'", plot));
}

void add_output_flags(CLI::App& app, OutputOptions& out) {
    app.add_flag("--json", out.json, "print one JSON object with every number instead of the text report")->group("Output");
    app.add_option("--report", out.report, with_default("also write the report as markdown to FILE (atomically)", "none"))
        ->type_name("FILE.md")
        ->group("Output");
}

void emit(const OutputOptions& out, const std::string& text, const std::string& json_text, const std::string& markdown) {
    if (!out.report.empty()) io::write_file_atomic(out.report, markdown);
    const std::string& s = out.json ? json_text : text;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}

std::optional<int> parse_threads(const std::optional<std::string>& text, int max) {
    if (!text) return std::nullopt;
    const double t = io::parse_number("--threads", *text);
    if (!(t >= 1 && t <= max) || t != std::floor(t))
        throw InputError(fmt::format("--threads: must be a whole number in [1, {}], got '{}'", max, *text));
    return static_cast<int>(t);
}

}  // namespace kvroof::cli
