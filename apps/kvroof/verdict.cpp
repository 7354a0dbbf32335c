// SPDX-License-Identifier: MIT
// `kvroof verdict`: the one-shot answer for one scenario.
#include <memory>

#include "commands.hpp"
#include "kvroof/analysis/verdict_report.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
// A measured co-execution throughput, tokens/s (docs/model.md, "Input ranges").
constexpr double kMinMeasuredTps = 1e-6, kMaxMeasuredTps = 1e15;

struct VerdictOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    std::optional<std::string> f, ov, measured_tps;
};

void run_verdict(const VerdictOptionsText& o) {
    const io::BuiltScenario built = io::build_scenario(o.scenario);
    VerdictOptions vo;
    if (o.f) {
        vo.fixed_f = io::parse_number("--f", *o.f);
        check::unit_interval("--f", *vo.fixed_f);
    }
    std::optional<double> ov;
    if (o.ov) {
        ov = io::parse_number("--ov", *o.ov);
        check::unit_interval("--ov", *ov);
    }
    if (o.measured_tps) {
        vo.measured_tps = io::parse_number("--measured-tps", *o.measured_tps);
        check::positive("--measured-tps", *vo.measured_tps);
        check::in_range("--measured-tps", *vo.measured_tps, kMinMeasuredTps, kMaxMeasuredTps);
    }
    const VerdictReport r = verdict_report(built.scenario, vo, ov);
    emit_lazy(
        o.output, [&] { return io::render_verdict_text(r, built); }, [&] { return io::verdict_json(r, built).dump(2) + "\n"; },
        [&] { return io::render_verdict_markdown(r, built); });
}
}  // namespace

Action setup_verdict(CLI::App& app) {
    auto o = std::make_shared<VerdictOptionsText>();
    CLI::App* sub =
        app.add_subcommand("verdict", "offload or not: the band at f=0 and at the best f, binding resources, VERDICT line");
    sub->footer(
        "Examples:\n"
        "  kvroof verdict\n"
        "  kvroof verdict --gpus 1 --cpus-per-gpu 4 --sparse 0.1 --workload \"s_cached=16000,a_append=2000,o_output=400\"\n"
        "  kvroof verdict --hardware h200 --model qwen3-235b-a22b --gpus 4 --kv-dtype fp8 --json\n"
        "  kvroof verdict --f 0.5 --measured-tps 420    # calibrate ov against one measurement\n"
        "  kvroof verdict --model ./config.json --report verdict.md");
    add_scenario_flags(*sub, o->scenario);
    auto add = [&](const char* flag, std::optional<std::string>& t, const char* help) {
        sub->add_option_function<std::string>(
               flag, [&t](const std::string& v) { t = v; }, help)
            ->type_name("X")
            ->group("Offload");
    };
    add("--f", o->f, "evaluate this offload fraction instead of optimising f");
    add("--ov", o->ov, "also report the point at this overlap inside the band [0, 1]");
    add("--measured-tps", o->measured_tps, "one measured co-execution throughput [tok/s]: fit ov to it");
    add_output_flags(*sub, o->output);
    return [o] { run_verdict(*o); };
}

}  // namespace kvroof::cli
