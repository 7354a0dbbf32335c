// SPDX-License-Identifier: MIT
// `kvroof parallel`: the deployments of N GPUs (tensor parallel x replicas),
// ranked by tokens/s per GPU, and the frontier of interactivity against cost.
#include <memory>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parallel_render.hpp"
#include "kvroof/io/parse.hpp"
#include "lazy_emit.hpp"
#include "plot_flag.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct ParallelOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    BenchmarkWorkloadText bench;
    std::optional<std::string> chunk, max_seqs;
    std::string csv, plot;
};

LoadSpec parallel_load(const ParallelOptionsText& o) {
    LoadSpec l;
    if (o.chunk) l.chunk = prefill_chunk(*o.chunk);
    if (o.max_seqs) l.max_seqs = max_seqs(*o.max_seqs);
    return l;
}

void run_parallel(const ParallelOptionsText& o) {
    check_distinct_outputs({{"--csv", o.csv}, {"--plot", o.plot}, {"--report", o.output.report}});
    io::BuiltScenario built = build_scenario_warning(o.scenario, o.bench, true);
    const LoadSpec load = parallel_load(o);
    PlotOutput plot(o.plot);
    const io::ParallelReport r = io::parallel_report(built.scenario, load);
    // The CSV and the plot appear with the report or not at all.
    std::unique_ptr<io::AtomicFile> csv;
    if (!o.csv.empty()) {
        csv = std::make_unique<io::AtomicFile>(o.csv);
        csv->write(io::parallel_csv_header() + io::parallel_csv_rows(r.study, built.scenario.model.name));
    }
    plot.draw([&] { return io::parallel_plot(r.study, fmt::format("{} on {} GPUs", built.scenario.model.name, r.study.gpus)); });
    emit_lazy(
        o.output, [&] { return io::render_parallel_text(r, built); }, [&] { return io::parallel_json(r, built).dump(2) + "\n"; },
        [&] { return io::render_parallel_markdown(r, built); });
    if (csv) csv->commit();
    plot.commit();
}
}  // namespace

Action setup_parallel(CLI::App& app) {
    auto o = std::make_shared<ParallelOptionsText>();
    CLI::App* sub = app.add_subcommand("parallel",
                                       "deployments of --gpus GPUs (tensor, expert and attention-data parallel x replicas) "
                                       "ranked by tok/s per GPU, and the Pareto frontier");
    sub->footer(
        "--gpus is the total; every tensor-parallel size that divides it, fits the NVLink domain (--nvlink-domain) and\n"
        "divides the attention heads is tried, with --gpus / TP replicas; for MoE models every expert-parallel degree\n"
        "that divides the group, up to the routed experts (where it does not divide them the busiest GPU holds\n"
        "ceil(experts/EP) of them), and for MLA models data-parallel attention over the group\n"
        "(ADP, with EP 1 or the group; beyond the NVLink domain only EP = the group: wide EP over the network);\n"
        "then each of those groups as p >= 2 pipeline stages, p dividing --gpus / TP\n"
        "up to the layers. --ep, --attention-dp and --pp are chosen here, not taken from the flags.\n"
        "Each deployment is run at 1, 2, 4, ... closed-loop clients per replica and memory-full, prefill chunked, KV on the GPU; "
        "its best point within the SLOs ranks it.\n\n"
        "Examples:\n"
        "  kvroof parallel --hardware h100-sxm --gpus 8 --model qwen3-235b-a22b --isl 2000 --osl 500\n"
        "  kvroof parallel --deployment gb200-nvl72 --model deepseek-v3 --isl 2000 --osl 500\n"
        "  kvroof parallel --hardware h200 --gpus 8 --model llama-3.1-405b --weight-dtype fp8 --slo-tpot 30ms --json\n"
        "  kvroof parallel --hardware h100-sxm --gpus 8 --model llama-3.1-70b --isl 1000 --osl 1000 --csv points.csv "
        "--plot pareto.svg");
    add_scenario_flags(*sub, o->scenario);
    const std::string group = "Workload and engine";
    add_benchmark_workload_flags(*sub, o->bench, group);
    add_text_option(*sub, "--prefill-chunk", o->chunk, "N", group,
                    "prefill tokens per step at most (per micro-batch in a pipeline)", default_prefill_chunk());
    add_text_option(*sub, "--max-seqs", o->max_seqs, "N", group,
                    "most requests one replica runs at once (vLLM --max-num-seqs); more queue", "no limit");
    sub->add_option("--csv", o->csv, with_default("also write every deployment's points as CSV to FILE (atomically)", "none"))
        ->type_name("FILE.csv")
        ->group("Output");
    add_plot_option(*sub, o->plot, "tok/s per GPU against tok/s per user");
    add_output_flags(*sub, o->output);
    return [o] { run_parallel(*o); };
}

}  // namespace kvroof::cli
