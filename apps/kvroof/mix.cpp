// SPDX-License-Identifier: MIT
// `kvroof mix`: the concurrent-mix band table over f.
#include <memory>

#include "commands.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct MixOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    std::optional<std::string> step, ov;
};

void run_mix(const MixOptionsText& o) {
    const io::BuiltScenario built = build_scenario_warning(o.scenario);
    double step = 0.05;
    if (o.step) {
        step = io::parse_number("--step", *o.step);
        if (!(step >= 0.001 && step <= 1)) throw InputError("--step: must be in [0.001, 1], got '" + *o.step + "'");
    }
    std::optional<double> ov;
    if (o.ov) {
        ov = io::parse_number("--ov", *o.ov);
        check::unit_interval("--ov", *ov);
    }
    const MixTable t = make_mix_table(built.scenario, step, ov);
    emit_lazy(
        o.output, [&] { return io::render_mix_text(t, built); }, [&] { return io::mix_json(t, built).dump(2) + "\n"; },
        [&] { return io::render_mix_markdown(t, built); });
}
}  // namespace

Action setup_mix(CLI::App& app) {
    auto o = std::make_shared<MixOptionsText>();
    CLI::App* sub = app.add_subcommand("mix", "the concurrent-mix throughput band for every f on a grid");
    sub->footer(
        "Examples:\n"
        "  kvroof mix                                      # the default scenario (codex class alone)\n"
        "  kvroof mix --mix \"long:0.7,short:0.3\" --gpus 1 --cpus-per-gpu 4 --sparse 0.1\n"
        "  kvroof mix --step 0.1 --ov 0.5 --json");
    add_scenario_flags(*sub, o->scenario);
    sub->add_option_function<std::string>(
           "--step", [o](const std::string& v) { o->step = v; }, "f grid step (default 0.05)")
        ->type_name("X")
        ->group("Offload");
    sub->add_option_function<std::string>(
           "--ov", [o](const std::string& v) { o->ov = v; }, "also find the best f at this overlap")
        ->type_name("X")
        ->group("Offload");
    add_output_flags(*sub, o->output);
    return [o] { run_mix(*o); };
}

}  // namespace kvroof::cli
