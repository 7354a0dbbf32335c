// SPDX-License-Identifier: MIT
// `kvroof disagg`: GPUs only prefill, a pool of CPU sockets decodes; the CPUs per GPU that balance the pipeline.
#include <memory>

#include "commands.hpp"

#include "kvroof/io/disagg_render.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct DisaggOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
};

void run_disagg(const DisaggOptionsText& o) {
    const io::BuiltScenario built = io::build_scenario(o.scenario);
    const io::DisaggReport r = io::disagg_report(built.scenario);
    emit_lazy(
        o.output, [&] { return io::render_disagg_text(r, built); }, [&] { return io::disagg_json(r, built).dump(2) + "\n"; },
        [&] { return io::render_disagg_markdown(r, built); });
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
        "  kvroof disagg --weight-dtype fp8 --kv-dtype fp8 --report disagg.md");
    add_scenario_flags(*sub, o->scenario);
    add_output_flags(*sub, o->output);
    return [o] { run_disagg(*o); };
}

}  // namespace kvroof::cli
