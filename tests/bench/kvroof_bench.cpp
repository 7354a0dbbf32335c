// SPDX-License-Identifier: MIT
// Throughput of the core: one concurrent-mix evaluation (in full, and its
// throughput alone), one band at f, the f* search at both band ends, and one full verdict
// (f optimised at both ends of the band, parking baseline included).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "kvroof/analysis/ladder.hpp"
#include "kvroof/analysis/parallel_study.hpp"
#include "kvroof/analysis/point_study.hpp"
#include "kvroof/analysis/sim.hpp"
#include "kvroof/analysis/verdict.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/io/sweep.hpp"

namespace {
kvroof::Scenario scenario(const char* mix) {
    kvroof::io::ScenarioInputs in;
    if (mix) in.set("mix", mix);
    return kvroof::io::build_scenario(in).scenario;
}

// kvroof sim: one run of 20,000 calls per iteration; counters give events,
// calls and steps per second (the goal: >= 5 M events/s, 20,000 calls < 1 s).
void run_sim(benchmark::State& state, const kvroof::Scenario& s, const kvroof::SimSpec& spec) {
    double events = 0, steps = 0, calls = 0;
    for (auto _ : state) {
        const kvroof::SimResult r = kvroof::simulate(s, spec);
        events += r.events;
        steps += r.steps;
        calls += r.calls;
        benchmark::DoNotOptimize(r.throughput);
    }
    state.counters["events/s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
    state.counters["calls/s"] = benchmark::Counter(calls, benchmark::Counter::kIsRate);
    state.counters["steps/s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
}

void BM_Sim(benchmark::State& state, const char* hardware, const char* model, double clients, double f) {
    kvroof::io::ScenarioInputs in;
    in.set("hardware", hardware);
    in.set("model", model);
    in.set("idle", "park");
    kvroof::SimSpec spec;
    spec.load.value = clients;
    spec.f = f;
    run_sim(state, kvroof::io::build_scenario(in).scenario, spec);
}
BENCHMARK_CAPTURE(BM_Sim, codex_h200_llama8b_C64, "h200", "llama-3.1-8b", 64, 0.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Sim, codex_gb200_llama70b_C32_f07, "gb200", "llama-3.1-70b", 32, 0.7)->Unit(benchmark::kMillisecond);

// `kvroof sim`'s default scenario (GB200, Llama-3.1-70B, the codex call, 32
// clients whose idle sessions hold their KV): about one call decodes at a
// time, so 20,000 calls take 10.4 M steps, the slowest of the common runs;
// static f, and the dynamic split at both ends of the overlap band.
void BM_SimDefault(benchmark::State& state, double f, kvroof::FPolicy policy, double ov) {
    kvroof::SimSpec spec;
    spec.load.value = 32;
    spec.f = f;
    spec.f_policy = policy;
    spec.ov = ov;
    run_sim(state, scenario(nullptr), spec);
}
BENCHMARK_CAPTURE(BM_SimDefault, static_f0, 0.0, kvroof::FPolicy::fixed, 0.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimDefault, dynamic_ov0, 1.0, kvroof::FPolicy::dynamic, 0.0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimDefault, dynamic_ov1, 1.0, kvroof::FPolicy::dynamic, 1.0)->Unit(benchmark::kMillisecond);

// One evaluation per iteration, f sweeping [0, 1] so no point is cached.
void evaluate_loop(benchmark::State& state, const kvroof::Scenario& s) {
    const kvroof::PreparedScenario ps(s);
    double f = 0.0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(kvroof::evaluate(ps, f, 0.0));
        f = f >= 1.0 ? 0.0 : f + 0.01;
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_MixEvaluation(benchmark::State& state) {
    evaluate_loop(state, scenario(state.range(0) == 1 ? nullptr : "long:0.5,mid:0.3,short:0.2"));
}
BENCHMARK(BM_MixEvaluation)->Arg(1)->Arg(3)->ArgName("classes");

void BM_MixEvaluationMoE(benchmark::State& state) {
    kvroof::io::ScenarioInputs in;
    in.set("model", "qwen3-235b-a22b");
    in.set("gpus", "4");  // 470 GB of bf16 weights need four 186 GB GPUs
    evaluate_loop(state, kvroof::io::build_scenario(in).scenario);
}
BENCHMARK(BM_MixEvaluationMoE);

// The optimiser's unit of work: throughput alone (no attribution, only the ceilings that bind).
void BM_MixThroughput(benchmark::State& state) {
    const kvroof::Scenario s = scenario(nullptr);
    const kvroof::PreparedScenario ps(s);
    double f = 0.0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(kvroof::throughput(ps, kvroof::mix_demand(ps, f), 0.0));
        f = f >= 1.0 ? 0.0 : f + 0.01;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MixThroughput);

// One band at f, both ends in full: what each row of a sweep with an f axis
// computes (f sweeping [0, 1] in steps that revisit no point for 10^6 rows).
void BM_Band(benchmark::State& state) {
    const kvroof::Scenario s = scenario(state.range(0) == 1 ? nullptr : "long:0.5,mid:0.3,short:0.2");
    const kvroof::PreparedScenario ps(s);
    double f = 0.0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(kvroof::band(ps, f));
        f = f >= 1.0 ? 0.0 : f + 0.000001;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Band)->Arg(1)->Arg(3)->ArgName("classes");

// The same band with only the batch ceilings that bind solved (band_row).
void BM_BandRow(benchmark::State& state) {
    const kvroof::Scenario s = scenario(nullptr);
    const kvroof::PreparedScenario ps(s);
    double f = 0.0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(kvroof::band_row(ps, f));
        f = f >= 1.0 ? 0.0 : f + 0.000001;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BandRow);

// f* at both ends of the band, the bulk of a verdict.
void BM_OptimiseBand(benchmark::State& state) {
    const kvroof::Scenario s = scenario(nullptr);
    const kvroof::PreparedScenario ps(s);
    for (auto _ : state) benchmark::DoNotOptimize(kvroof::optimise_f_band(ps));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OptimiseBand);

void BM_FullVerdict(benchmark::State& state) {
    const kvroof::Scenario s = scenario(nullptr);
    for (auto _ : state) benchmark::DoNotOptimize(kvroof::make_verdict(s));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FullVerdict);

// One operating point per iteration (range: 0 batch, 1 concurrency, 2 concurrency max), f sweeping [0, 1].
void BM_OperatingPoint(benchmark::State& state) {
    const kvroof::Scenario s = scenario(nullptr);
    const kvroof::PreparedScenario ps(s);
    kvroof::LoadSpec load;
    load.mode = state.range(0) == 0   ? kvroof::LoadMode::batch
                : state.range(0) == 1 ? kvroof::LoadMode::concurrency
                                      : kvroof::LoadMode::saturate;
    load.value = 4;
    double f = 0.0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(kvroof::operating_point(ps, load, f, 0.0));
        f = f >= 1.0 ? 0.0 : f + 0.01;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OperatingPoint)->Arg(0)->Arg(1)->Arg(2)->ArgName("load");

// The offload question at one concurrency: 101 f × both ends of the band.
void BM_PointStudy(benchmark::State& state) {
    const kvroof::Scenario s = scenario(nullptr);
    kvroof::LoadSpec load;
    load.value = 4;
    for (auto _ : state) benchmark::DoNotOptimize(kvroof::point_study(s, load));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PointStudy);

// kvroof parallel: every TP x DP deployment of 8 H100s for Llama-3.1-70B, each at its load ladder and SLO edge.
void BM_ParallelStudy(benchmark::State& state) {
    kvroof::io::ScenarioInputs in;
    in.set("hardware", "h100-sxm");
    in.set("gpus", "8");
    in.set("model", "llama-3.1-70b");
    in.set("workload", "s_cached=0,a_append=2000,o_output=500,idle_gap=0");
    const kvroof::Scenario s = kvroof::io::build_scenario(in).scenario;
    for (auto _ : state) benchmark::DoNotOptimize(kvroof::parallel_study(s, kvroof::LoadSpec{}));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParallelStudy);

// kvroof ladder on the default scenario with up to 2 GPUs.
void BM_Ladder(benchmark::State& state) {
    const kvroof::Scenario s = scenario(nullptr);
    kvroof::LadderOptions o;
    o.max_gpus = 2;
    for (auto _ : state) benchmark::DoNotOptimize(kvroof::ladder_study(s, o));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ladder);
}  // namespace

// Sweep rows through the whole pipeline (grid decode, both band ends, CSV
// formatting, ordered multi-threaded output) into a sink that discards them.
// Each row evaluates the mix model twice (ov = 0 and ov = 1).
void BM_SweepRows(benchmark::State& state) {
    kvroof::io::SweepSpec spec;
    spec.axes.push_back(kvroof::io::parse_grid_entry("f=0:1:0.000001"));  // 1,000,001 points
    spec.threads = static_cast<int>(state.range(0));
    kvroof::io::validate_sweep(spec);
    std::size_t bytes = 0;
    for (auto _ : state) kvroof::io::run_sweep(spec, [&](std::string_view t) { bytes += t.size(); });
    benchmark::DoNotOptimize(bytes);
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kvroof::io::sweep_points(spec)));
    state.counters["mix_evals_per_s"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(kvroof::io::sweep_points(spec)),
                           benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepRows)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

// Sweep rows without an f axis, each a full verdict: the time per row minus
// BM_FullVerdict's is what the sweep adds (assembling the point through the
// knob table, formatting, writing). And rows with an f axis in either order.
void BM_SweepGrid(benchmark::State& state, std::vector<const char*> grid) {
    kvroof::io::SweepSpec spec;
    for (const char* g : grid) spec.axes.push_back(kvroof::io::parse_grid_entry(g));
    spec.threads = 1;
    kvroof::io::validate_sweep(spec);
    std::size_t bytes = 0;
    for (auto _ : state) kvroof::io::run_sweep(spec, [&](std::string_view t) { bytes += t.size(); });
    benchmark::DoNotOptimize(bytes);
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kvroof::io::sweep_points(spec)));
}
// make_verdict alone on the scenarios of BM_SweepGrid/verdict_rows (hbm-bw 1..10 TB/s by 0.01):
// the difference per item is the sweep's own cost per verdict row.
void BM_VerdictRowsAlone(benchmark::State& state) {
    std::vector<kvroof::Scenario> points;
    for (int i = 0; i <= 900; ++i) {
        kvroof::io::ScenarioInputs in;
        in.set("hbm-bw", fmt::format("{:.17g}", 1.0 + 0.01 * i));
        points.push_back(kvroof::io::build_scenario(in).scenario);
    }
    for (auto _ : state)
        for (const auto& s : points) benchmark::DoNotOptimize(kvroof::make_verdict(s));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(points.size()));
}
BENCHMARK(BM_VerdictRowsAlone)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SweepGrid, verdict_rows, std::vector<const char*>{"hbm-bw=1:10:0.01"})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SweepGrid, f_then_sparse, std::vector<const char*>{"f=0:1:0.001", "sparse=0.01:1:0.01"})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SweepGrid, sparse_then_f, std::vector<const char*>{"sparse=0.01:1:0.01", "f=0:1:0.001"})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
