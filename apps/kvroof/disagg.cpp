// SPDX-License-Identifier: MIT
// `kvroof disagg`: GPUs only prefill, a pool of CPU sockets decodes; the CPUs per GPU that balance the pipeline.
#include <memory>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/io/parse.hpp"

#include "kvroof/io/disagg_render.hpp"
#include "lazy_emit.hpp"
#include "plot_flag.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct DisaggOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    BenchmarkWorkloadText bench;
    std::string arch = "cpu-decode";
    std::optional<std::string> chunk;
    std::string plot;
};

void run_gpu_pools(const DisaggOptionsText& o, const io::BuiltScenario& built) {
    LoadSpec load;
    if (o.chunk) load.chunk = prefill_chunk(*o.chunk);
    PlotOutput plot(o.plot);
    const io::GpuDisaggReport r = io::gpu_disagg_report(built.scenario, load);
    plot.draw([&] {
        return io::gpu_disagg_plot(
            r.study, fmt::format("{} on {} GPUs: prefill and decode pools", built.scenario.model.name, r.study.gpus));
    });
    emit_lazy(
        o.output, [&] { return io::render_gpu_disagg_text(r, built); },
        [&] { return io::gpu_disagg_json(r, built).dump(2) + "\n"; }, [&] { return io::render_gpu_disagg_markdown(r, built); });
    plot.commit();
}

void run_disagg(const DisaggOptionsText& o) {
    if (o.arch != "cpu-decode" && o.arch != "gpu-pools")
        throw InputError(fmt::format("--arch: must be cpu-decode or gpu-pools, got '{}'", o.arch));
    io::BuiltScenario built = build_scenario_warning(o.scenario, o.bench);
    if (o.arch == "gpu-pools") return run_gpu_pools(o, built);
    if (o.chunk) throw InputError("--prefill-chunk: needs --arch gpu-pools");
    PlotOutput plot(o.plot);
    const io::DisaggReport r = io::disagg_report(built.scenario);
    plot.draw([&] {
        return io::disagg_plot(r.study,
                               fmt::format("{} on {} GPU{}: GPU prefill, CPU decode", built.scenario.model.name, r.study.gpus,
                                           r.study.gpus == 1 ? "" : "s"),
                               built.scenario.hardware.host.cpus_per_gpu);
    });
    emit_lazy(
        o.output, [&] { return io::render_disagg_text(r, built); }, [&] { return io::disagg_json(r, built).dump(2) + "\n"; },
        [&] { return io::render_disagg_markdown(r, built); });
    plot.commit();
}
}  // namespace

Action setup_disagg(CLI::App& app) {
    auto o = std::make_shared<DisaggOptionsText>();
    CLI::App* sub = app.add_subcommand(
        "disagg", "full disaggregation onto CPUs: GPUs only prefill, CPU sockets decode; the sockets per GPU that balance it");
    sub->footer(
        "The GPUs prefill every call (cached KV brought up over the link, new KV taken down); each CPU socket holds the\n"
        "weights and its sessions' KV in DRAM and decodes them. Output tok/s = O x min(GPU prefill calls/s, CPU decode\n"
        "calls/s), against the baseline that keeps KV on the GPU (f = 0). --cpus-per-gpu is the machine's own ratio.\n\n"
        "Examples:\n"
        "  kvroof disagg                                   # the default: GB200, Llama-3.1-70B, codex\n"
        "  kvroof disagg --hardware h200 --model llama-3.1-8b --json\n"
        "  kvroof disagg --weight-dtype fp8 --kv-dtype fp8 --report disagg.md\n"
        "  kvroof disagg --arch gpu-pools --hardware h100-sxm --gpus 8 --model llama-3.1-70b --isl 2000 --osl 500\n"
        "  kvroof disagg --pp 2 --plot sockets.svg               # a 2-stage prefill pipeline; tok/s vs sockets per GPU");
    add_scenario_flags(*sub, o->scenario);
    sub->add_option("--arch", o->arch,
                    with_default("cpu-decode: GPUs prefill, CPU sockets decode (the Python reference model's full "
                                 "disaggregation); gpu-pools: prefill and decode on separate GPU instances (DistServe, "
                                 "Dynamo) against the same GPUs aggregated",
                                 o->arch))
        ->type_name("ARCH")
        ->group("Disaggregation");
    add_benchmark_workload_flags(*sub, o->bench, "Disaggregation");
    add_text_option(*sub, "--prefill-chunk", o->chunk, "N", "Disaggregation",
                    "gpu-pools: prefill tokens per step of a prefill instance", default_prefill_chunk());
    add_plot_option(*sub, o->plot,
                    "cpu-decode: tok/s against CPU sockets per GPU; gpu-pools: tok/s per GPU against the prefill instances");
    add_output_flags(*sub, o->output);
    return [o] { run_disagg(*o); };
}

}  // namespace kvroof::cli
