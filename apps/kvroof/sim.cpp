// SPDX-License-Identifier: MIT
// `kvroof sim`: the discrete-event simulation of a scenario at a load, beside the closed form.
#include <cmath>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/io/parse.hpp"
#include "kvroof/io/sim_render.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
constexpr double kDefaultClients = 32;
constexpr double kMaxSeed = 9007199254740992.0;  // 2^53: every whole number up to it reads back exactly

struct SimOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    BenchmarkWorkloadText bench;
    std::optional<std::string> concurrency, rate, chunk, max_seqs, f, f_policy, ov, calls, seed, warmup, gaps, preempt;
    std::string plot;  // FILE.svg: HBM and link use over time
};

double whole(const char* flag, const std::string& text, double lo, double hi) {
    const double v = io::parse_number(flag, text);
    if (!(v >= lo && v <= hi) || v != std::floor(v))
        throw InputError(fmt::format("{}: must be a whole number in [{:.0f}, {:.0f}], got '{}'", flag, lo, hi, text));
    return v;
}

double fraction(const char* flag, const std::string& text, double hi) {
    const double v = io::parse_number(flag, text);
    check::in_range(flag, v, 0.0, hi);
    return v;
}

GapDist gap_dist(const std::string& text) {
    for (const GapDist d : {GapDist::exponential, GapDist::deterministic, GapDist::lognormal})
        if (text == name(d)) return d;
    throw InputError(fmt::format("--gap-dist: must be exponential, deterministic or lognormal, got '{}'", text));
}

FPolicy f_policy(const std::string& text) {
    for (const FPolicy p : {FPolicy::fixed, FPolicy::dynamic})
        if (text == name(p)) return p;
    throw InputError(fmt::format("--f-policy: must be static or dynamic, got '{}'", text));
}

Preempt preempt(const std::string& text) {
    for (const Preempt p : {Preempt::none, Preempt::recompute, Preempt::swap})
        if (text == name(p)) return p;
    throw InputError(fmt::format("--preempt: must be none, recompute or swap, got '{}'", text));
}

SimSpec sim_spec(const SimOptionsText& o) {
    if (o.concurrency && o.rate) throw InputError("--concurrency: give one of --concurrency, --request-rate");
    SimSpec s;
    s.load.mode = o.rate ? LoadMode::request_rate : LoadMode::concurrency;
    s.load.value = kDefaultClients;
    if (o.concurrency) s.load.value = whole("--concurrency", *o.concurrency, 1, limits::kMaxSimClients);
    if (o.rate) {
        s.load.value = io::parse_number("--request-rate", *o.rate);
        check::above_up_to("--request-rate", s.load.value, 0.0, limits::kMaxLoad);
    }
    if (o.chunk) s.load.chunk = prefill_chunk(*o.chunk);
    if (o.max_seqs) s.load.max_seqs = max_seqs(*o.max_seqs);
    if (o.f) s.f = fraction("--f", *o.f, 1.0);
    if (o.f_policy) s.f_policy = f_policy(*o.f_policy);
    if (o.ov) s.ov = fraction("--ov", *o.ov, 1.0);
    if (o.calls) s.calls = whole("--calls", *o.calls, 1, limits::kMaxSimCalls);
    if (o.seed) s.seed = static_cast<std::uint64_t>(whole("--seed", *o.seed, 0, kMaxSeed));
    if (o.warmup) s.warmup = fraction("--warmup", *o.warmup, 0.9);
    if (o.gaps) s.gaps = gap_dist(*o.gaps);
    if (o.preempt) s.preempt = preempt(*o.preempt);
    return s;
}

void run_sim(const SimOptionsText& o) {
    check_distinct_outputs({{"--plot", o.plot}, {"--report", o.output.report}});
    io::BuiltScenario built = io::build_scenario(o.scenario);
    apply_benchmark_workload(o.bench, o.scenario, built);
    const SimSpec spec = sim_spec(o);
    print_warnings(built, false);
    if (!o.plot.empty()) check_svg_path(o.plot), (void)io::find_gnuplot();  // fails here, before the first byte
    const io::SimReport r = io::sim_report(built.scenario, spec);
    // The plot appears with the report or not at all; the report links it relative to itself.
    std::unique_ptr<io::AtomicFile> svg;
    std::string link;
    if (!o.plot.empty() && r.sim.feasible) {
        svg = std::make_unique<io::AtomicFile>(o.plot);
        io::render_svg(io::sim_plot(r.sim, fmt::format("kvroof sim: {} on {}, HBM and link over time", built.scenario.model.name,
                                                       built.scenario.hardware.name)),
                       *svg);
        namespace fs = std::filesystem;
        const fs::path dir = fs::absolute(fs::path(o.output.report.empty() ? "." : o.output.report)).parent_path();
        link = fs::absolute(fs::path(o.plot)).lexically_relative(dir).generic_string();
    }
    emit_lazy(
        o.output, [&] { return io::render_sim_text(r, built); }, [&] { return io::sim_report_json(r, built).dump(2) + "\n"; },
        [&] { return io::render_sim_markdown(r, built, link, invocation()); });
    if (svg) svg->commit();
}
}  // namespace

Action setup_sim(CLI::App& app) {
    auto o = std::make_shared<SimOptionsText>();
    CLI::App* sub = app.add_subcommand(
        "sim",
        "discrete-event simulation of the scenario at a load (continuous batching, chunked prefill, HBM admission), "
        "beside the closed form");
    sub->footer(
        "Examples:\n"
        "  kvroof sim                                       # codex on gb200, 32 clients, 20000 calls\n"
        "  kvroof sim --concurrency 64 --gap-dist lognormal --seed 7\n"
        "  kvroof sim --hardware h200 --model llama-3.1-8b --isl 2048 --osl 256 --concurrency 256 --gap-dist deterministic\n"
        "  kvroof sim --request-rate 0.05 --calls 5000 --json\n"
        "  kvroof sim --f 0.3 --ov 0.5 --idle park --report sim.md --plot sim.svg\n"
        "  kvroof sim --f 1 --f-policy dynamic --ov 1\n"
        "  kvroof sim --hardware h200 --model llama-3.1-8b --isl 8000 --osl 4000 --concurrency 64 --preempt recompute");
    add_scenario_flags(*sub, o->scenario);
    auto add = [&](const char* flag, std::optional<std::string>& t, const char* type, std::string_view help,
                   std::string_view absent) { add_text_option(*sub, flag, t, type, "Simulation", help, absent); };
    const SimSpec def;
    add("--concurrency", o->concurrency, "N", "C closed-loop clients, each sending its next call after its idle gap",
        fmt::format("{:g}", kDefaultClients));
    add("--request-rate", o->rate, "R", "calls per second arriving (open loop) instead of clients", "none: closed-loop clients");
    add_benchmark_workload_flags(*sub, o->bench, "Simulation");
    add("--prefill-chunk", o->chunk, "N", "prefill tokens per step at most (per micro-batch in a pipeline)",
        default_prefill_chunk());
    add("--max-seqs", o->max_seqs, "N", "most calls running at once; more wait in the queue", "no limit");
    add("--f", o->f, "X", "offload fraction: the CPU's share of each call's KV and decode attention", fmt::format("{:g}", def.f));
    add("--f-policy", o->f_policy, "NAME",
        "static: every step offloads f; dynamic: each step offloads the share in [0, f] that makes it shortest (the two paths "
        "balanced), the whole KV kept in HBM",
        name(def.f_policy));
    add("--ov", o->ov, "X", "overlap of the offloaded path with the GPU's work, in [0, 1]", fmt::format("{:g}", def.ov));
    add("--calls", o->calls, "N", "calls to simulate; the run ends when all have completed", fmt::format("{:g}", def.calls));
    add("--seed", o->seed, "N", "seed of the random draws (classes, gaps, arrivals)", fmt::format("{}", def.seed));
    add("--warmup", o->warmup, "X", "share of the calls, first completed, left out of the statistics, in [0, 0.9]",
        fmt::format("{:g}", def.warmup));
    add("--gap-dist", o->gaps, "NAME",
        "idle gaps (closed loop) and interarrival times (open loop) around their mean: exponential, deterministic, or "
        "lognormal (idle gaps: each class's own shape where its file gives a gap median and P99, as kvroof trace writes "
        "them, else the codex shape, median 5.2 s and P99 81.4 s; scaled to the class's mean)",
        name(def.gaps));
    add("--preempt", o->preempt, "NAME",
        "none: a call is admitted when its peak KV (S + O tokens) fits, and never preempted; recompute or swap: admitted "
        "when its prompt fits (as vLLM), the newest running call is preempted when decode outgrows HBM, its KV dropped and "
        "prefilled again (recompute) or moved to CPU DRAM over the link and back (swap)",
        name(def.preempt));
    sub->add_option("--plot", o->plot,
                    with_default("also draw HBM used and each link direction's busy share over time to FILE.svg (needs "
                                 "gnuplot)",
                                 "none"))
        ->type_name("FILE.svg")
        ->group("Output");
    add_output_flags(*sub, o->output);
    return [o] { run_sim(*o); };
}

}  // namespace kvroof::cli
