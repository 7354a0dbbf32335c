// SPDX-License-Identifier: MIT
// `kvroof mix`: the concurrent-mix band table over f.
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
constexpr double kDefaultStep = 0.05;  // the f grid's step

struct MixOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    std::optional<std::string> step, ov;
};

void run_mix(const MixOptionsText& o) {
    const io::BuiltScenario built = build_scenario_warning(o.scenario);
    double step = kDefaultStep;
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
    add_text_option(*sub, "--step", o->step, "X", "Offload", "f grid step, in [0.001, 1]", fmt::format("{:g}", kDefaultStep));
    add_text_option(*sub, "--ov", o->ov, "X", "Offload", "also find the best f at this overlap, in [0, 1]",
                    "none: the best f at the band's two ends, ov = 0 and 1");
    add_output_flags(*sub, o->output);
    return [o] { run_mix(*o); };
}

}  // namespace kvroof::cli
