// SPDX-License-Identifier: MIT
// `kvroof ladder`: the levers of one scenario, taken one at a time in the order that gains most.
#include <memory>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/io/ladder_render.hpp"
#include "kvroof/io/parse.hpp"
#include "lazy_emit.hpp"
#include "plot_flag.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct LadderOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    std::optional<std::string> max_gpus, sparse;
    std::string plot;
};

void run_ladder(const LadderOptionsText& o) {
    const io::BuiltScenario built = build_scenario_warning(o.scenario, true);
    LadderOptions lo;
    lo.max_gpus = std::max(built.scenario.hardware.deployment.gpus, built.scenario.hardware.gpu.nvlink_domain);
    if (o.max_gpus) {
        const double g = io::parse_number("--max-gpus", *o.max_gpus);
        check::in_range("--max-gpus", g, 1.0, limits::kMaxGpus);
        if (g != static_cast<int>(g)) throw InputError(fmt::format("--max-gpus: must be a whole number, got '{}'", *o.max_gpus));
        const int gpus = built.scenario.hardware.deployment.gpus;
        if (g < gpus)
            throw InputError(fmt::format("--max-gpus: must be at least --gpus ({}), the group the ladder starts from, got '{}'",
                                         gpus, *o.max_gpus));
        lo.max_gpus = static_cast<int>(g);
    }
    if (o.sparse) {
        lo.sparse = io::parse_number("--lever-sparse", *o.sparse);
        check::in_range("--lever-sparse", lo.sparse, 1e-6, 1.0);
    }
    PlotOutput plot(o.plot);
    const io::LadderReport r = io::ladder_report(built.scenario, lo);
    plot.draw([&] { return io::ladder_plot(r.study, fmt::format("Bottleneck ladder: {}", built.scenario.model.name)); });
    emit_lazy(
        o.output, [&] { return io::render_ladder_text(r, built); }, [&] { return io::ladder_json(r, built).dump(2) + "\n"; },
        [&] { return io::render_ladder_markdown(r, built); });
    plot.commit();
}
}  // namespace

Action setup_ladder(CLI::App& app) {
    auto o = std::make_shared<LadderOptionsText>();
    CLI::App* sub = app.add_subcommand("ladder",
                                       "the bottleneck ladder: levers (TP, sparse attention, KV quantisation, parking, CPU "
                                       "offload) in the order that gains most");
    sub->footer(
        "Each round takes the lever that raises tok/s per GPU most at ov = 0 (no overlap: the bankable end) on top of the\n"
        "levers before it, until none gains 2 %. Tensor parallelism doubles the GPUs up to --max-gpus; sparse attention reads\n"
        "--lever-sparse of the KV; KV quantisation steps bf16 -> fp8 -> int4; parking needs idle gaps in the workload.\n"
        "A scenario that serves nothing (weights or one session do not fit) and that no lever alone makes serve doubles\n"
        "its GPUs as a step of gain 1, up to --max-gpus, until one does; growth that never serves is not shown.\n\n"
        "Examples:\n"
        "  kvroof ladder --gpus 1 --cpus-per-gpu 1 --max-gpus 2     # the reference model's ladder on the default codex "
        "scenario\n"
        "  kvroof ladder --hardware h100-sxm --model llama-3.1-70b --gpus 2 --json\n"
        "  kvroof ladder --workload \"s_cached=60000,a_append=2000,o_output=400,idle_gap=10s\" --report ladder.md\n"
        "  kvroof ladder --hardware h100-sxm --model llama-3.1-70b --gpus 2 --plot ladder.svg");
    add_scenario_flags(*sub, o->scenario);
    add_text_option(*sub, "--max-gpus", o->max_gpus, "N", "Ladder", "the tensor-parallel lever doubles --gpus up to this",
                    "the NVLink domain, at least --gpus");
    add_text_option(*sub, "--lever-sparse", o->sparse, "X", "Ladder",
                    "the share of the KV the sparse-attention lever reads per decode token",
                    fmt::format("{:g}", LadderOptions{}.sparse));
    add_plot_option(*sub, o->plot, "each step's tok/s per GPU at both band ends");
    add_output_flags(*sub, o->output);
    return [o] { run_ladder(*o); };
}

}  // namespace kvroof::cli
