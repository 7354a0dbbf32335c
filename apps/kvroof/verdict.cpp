// SPDX-License-Identifier: MIT
// `kvroof verdict`: the one-shot answer for one scenario.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/analysis/verdict_report.hpp"
#include "kvroof/io/load_text.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/point_render.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/solve_render.hpp"
#include "kvroof/io/validate.hpp"
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
    // The operating point and the benchmark's single-class workload.
    io::LoadText load;
    BenchmarkWorkloadText bench;
    std::optional<std::string> solve;  // --solve KNOB with --target / --target-gain / --range
    std::optional<std::string> calibration;  // --calibration FIT.json (kvroof validate --out)
    io::SolveText solve_text;
};

// The load flags (io::parse_load), with what the verdict cannot combine with a load.
std::optional<LoadSpec> load_spec(const VerdictOptionsText& o) {
    const io::ParsedLoad p = io::parse_load(o.load);
    if (!p.load) return std::nullopt;
    if (o.measured_tps) throw InputError(fmt::format("--measured-tps: not available with {}", p.flag));
    if (o.ov) throw InputError(fmt::format("--ov: not available with {} (the point is shown at both ends of the band)", p.flag));
    return p.load;
}

// --calibration: the fit read and its efficiencies applied to the scenario.
std::optional<io::CalibrationFile> apply_calibration(const VerdictOptionsText& o, io::BuiltScenario& built) {
    if (!o.calibration) return std::nullopt;
    const std::string where = "--calibration " + *o.calibration;
    // The fit's intervals hold at its own values: a flag that moves a fitted knob would void them silently.
    for (std::string_view name : io::kFitKnobs) {
        const std::string_view flag = o.scenario.given(name)                                   ? name
                                      : name.substr(0, 4) == "eta-" && o.scenario.given("eta") ? "eta"  // sets every η
                                                                                               : "";
        if (!flag.empty())
            throw InputError(
                fmt::format("{}: sets --{} from its fit, so --{} may not be given too; drop one", where, name, flag));
    }
    io::CalibrationFile c = io::read_calibration(where, io::read_json_file("--calibration", *o.calibration));
    io::apply_fit(built.scenario, c.values);
    built.overrides.emplace_back("--calibration", *o.calibration);  // echoed with the inputs; voids the defaults' stated error
    return c;
}

// Each output, with the CALIBRATED block (text, markdown) or key (JSON) when a calibration is given.
template <class Text, class Json, class Markdown>
void emit_calibrated(const VerdictOptionsText& o, const std::optional<io::CalibrationFile>& cal,
                     const std::function<std::vector<io::CalibratedFigure>()>& figures, const std::string& kind, const Text& text,
                     const Json& json, const Markdown& markdown) {
    if (!cal) {
        emit_lazy(
            o.output, text, [&] { return json().dump(2) + "\n"; }, markdown);
        return;
    }
    const std::string where = *o.calibration;
    emit_lazy(
        o.output, [&] { return text() + io::render_calibrated_text(*cal, where, figures(), kind); },
        [&] {
            nlohmann::json j = json();
            j["calibration"] = io::calibrated_json(*cal, where, figures(), kind);
            return j.dump(2) + "\n";
        },
        [&] {
            return markdown() + "\n## Calibration\n\n```\n" + io::render_calibrated_text(*cal, where, figures(), kind) + "```\n";
        });
}

// --f, --measured-tps and --ov, checked.
VerdictOptions verdict_options(const VerdictOptionsText& o, std::optional<double>& ov) {
    VerdictOptions vo;
    if (o.f) {
        vo.fixed_f = io::parse_number("--f", *o.f);
        check::unit_interval("--f", *vo.fixed_f);
    }
    if (o.ov) {
        ov = io::parse_number("--ov", *o.ov);
        check::unit_interval("--ov", *ov);
    }
    if (o.measured_tps) {
        vo.measured_tps = io::parse_number("--measured-tps", *o.measured_tps);
        check::positive("--measured-tps", *vo.measured_tps);
        check::in_range("--measured-tps", *vo.measured_tps, kMinMeasuredTps, kMaxMeasuredTps);
    }
    return vo;
}

void run_verdict(const VerdictOptionsText& o) {
    io::BuiltScenario built = build_scenario_warning(o.scenario, o.bench);
    const std::optional<io::CalibrationFile> cal = apply_calibration(o, built);
    const std::optional<LoadSpec> load = load_spec(o);
    if (load && load->mode == LoadMode::batch && !built.scenario.mix.second_token())
        throw InputError("--batch: every call has one output token, so no sequence decodes; use --concurrency or --osl >= 2");
    std::optional<double> ov;
    const VerdictOptions vo = verdict_options(o, ov);
    if (o.solve) {
        if (cal) throw InputError("--calibration: not available with --solve");
        if (load || o.f || o.ov || o.measured_tps)
            throw InputError("--solve: searches the solved verdict; drop --f, --ov, --measured-tps and the load flags");
        io::SolveText t = o.solve_text;
        t.knob = *o.solve;
        const SolveResult r = solve(built.scenario, io::solve_spec(t, built.scenario));
        // The answer's own scenario may be one engines refuse (--solve gpus: 13 GPUs over 128 heads): say so, as
        // verdict does at that value.
        if (r.outcome == SolveOutcome::at_least || r.outcome == SolveOutcome::at_most)
            for (const std::string& w : io::tensor_parallel_warnings(r.at_answer.facts.scenario))
                std::fprintf(stderr, "kvroof: warning: at the answer: %s\n", w.c_str());
        emit_lazy(
            o.output, [&] { return io::render_solve_text(r); }, [&] { return io::solve_json(r, built).dump(2) + "\n"; },
            [&] { return io::render_solve_markdown(r, built, invocation()); });
        return;
    }
    if ((o.solve_text.target || o.solve_text.target_gain || o.solve_text.range))
        throw InputError(fmt::format("{}: needs --solve KNOB", o.solve_text.range ? "--range" : "--target"));
    if (load) {
        const io::PointReport r = io::point_report(built.scenario, *load, vo.fixed_f);
        const PointStudy& st = r.study;
        emit_calibrated(
            o, cal,
            [&] {
                return std::vector<io::CalibratedFigure>{
                    io::calibrated_throughput(*cal, "throughput at f = 0", st.baseline.conservative.throughput),
                    io::calibrated_throughput(*cal, "throughput, bankable (ov = 0)", st.bankable.throughput),
                    io::calibrated_throughput(*cal, "throughput, pipelined (ov = 1)", st.pipelined.throughput),
                    io::calibrated_gain(*cal, "gain, bankable", st.gain_bankable),
                    io::calibrated_gain(*cal, "gain, pipelined", st.gain_pipelined)};
            },
            "", [&] { return io::render_point_text(r, built); }, [&] { return io::point_report_json(r, built); },
            [&] { return io::render_point_markdown(r, built); });
        return;
    }
    const VerdictReport r = verdict_report(built.scenario, vo, ov);
    const Verdict& v = r.verdict;
    std::string kind;  // the class with the fit's gain band in place of kGainUncertainty
    if (cal)  // the same verdict judged against the fit's band: no second solve
        kind = std::string(name(v.kind == VerdictKind::does_not_fit
                                    ? v.kind
                                    : classify(v, v.baseline.conservative, std::expm1(cal->gain_half_width))));
    // The ends the gains are of: each end's best f, or both at the f the user fixed (--f).
    const ServingPoint& bank = v.f_fixed ? v.at_f.conservative : v.best_conservative;
    const ServingPoint& pipe = v.f_fixed ? v.at_f.optimistic : v.best_optimistic;
    emit_calibrated(
        o, cal,
        [&] {
            return std::vector<io::CalibratedFigure>{
                io::calibrated_throughput(*cal, "throughput at f = 0 (ov = 0)", v.baseline.conservative.throughput),
                io::calibrated_throughput(*cal, "throughput, bankable (ov = 0)", bank.throughput),
                io::calibrated_throughput(*cal, "throughput, pipelined (ov = 1)", pipe.throughput),
                io::calibrated_gain(*cal, "gain, bankable", v.gain_bankable),
                io::calibrated_gain(*cal, "gain, pipelined", v.gain_pipelined)};
        },
        kind, [&] { return io::render_verdict_text(r, built); }, [&] { return io::verdict_json(r, built); },
        [&] { return io::render_verdict_markdown(r, built, invocation()); });
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
        "  kvroof verdict --gpus 1 --cpus-per-gpu 4 --sparse 0.1 --workload \"s_cached=16000,a_append=2000,o_output=400\" --f "
        "0.85 "
        "--measured-tps 610   # the overlap a measurement implies\n"
        "  kvroof verdict --model ./config.json --report verdict.md\n"
        "  kvroof verdict --hardware h100-sxm --model llama-3.1-8b --weight-dtype fp8 --concurrency 32 --isl 2000 --osl 500\n"
        "  kvroof verdict --batch 8 --isl 4096 --osl 256 --prefill separate --json   # a fixed decode batch\n"
        "  kvroof verdict --solve cpus-per-gpu --target-gain 1.2   # how many CPUs per GPU for a 1.2x bankable gain\n"
        "  kvroof verdict --solve c2c-bw --target-gain 1.2 --cpus-per-gpu 1 --sparse 0.1   # the link a 1.2x gain needs\n"
        "  kvroof verdict --solve context --target fits --workload \"s_cached=60000,a_append=2000,o_output=400\"");
    add_scenario_flags(*sub, o->scenario);
    auto add_in = [&](const char* group, const char* type, const char* flag, std::optional<std::string>& t, std::string_view help,
                      std::string_view absent) { add_text_option(*sub, flag, t, type, group, help, absent); };
    auto add = [&](const char* flag, std::optional<std::string>& t, std::string_view help, std::string_view absent) {
        add_in("Offload", "X", flag, t, help, absent);
    };
    add("--f", o->f, "evaluate this offload fraction instead of optimising f", "optimised");
    add("--ov", o->ov, "also report the point at this overlap inside the band [0, 1]", "none: the band's two ends, ov = 0 and 1");
    add("--measured-tps", o->measured_tps, "one measured co-execution throughput [tok/s]: fit ov to it", "none");
    const std::string point = "Operating point (a benchmark's load)";
    add_load_flags(*sub, o->load, point, "none: the solved batch (what memory and the SLO allow)",
                   "chunked with a load; without one, separate (the Python reference model's solved mode); --prefill chunked "
                   "alone solves for the best load");
    add_benchmark_workload_flags(*sub, o->bench, point);
    auto add_solve = [&](const char* flag, std::optional<std::string>& t, const char* type, std::string_view help,
                         std::string_view absent) { add_in("Break-even (solve for one knob)", type, flag, t, help, absent); };
    add_solve("--solve", o->solve, "KNOB",
              "find the least (or greatest) value of this knob that meets --target: any numeric scenario knob "
              "(cpus-per-gpu, c2c-bw, hbm-cap, gpus, …) or context (the tokens a session holds at its prefill)",
              "none: no search");
    add_solve("--target", o->solve_text.target, "T",
              "fits (without offload), gain=X (bankable offload gain, ov = 0), pipelined-gain=X (ov = 1) or tps=X (best "
              "bankable tok/s); --solve needs it or --target-gain",
              "none");
    add_solve("--target-gain", o->solve_text.target_gain, "X", "shorthand for --target gain=X; 1 = offload helps at all", "none");
    add_solve("--range", o->solve_text.range, "LO:HI", "values to search, in the knob's unit",
              "the scenario's value / 64 .. x 64 within the knob's bounds");
    add_in("Calibration", "FIT.json", "--calibration", o->calibration,
           "apply the efficiencies `kvroof validate --out` fitted, and print each throughput and gain with its 90 % "
           "interval; the solved verdict's MARGINAL class uses the fit's gain band",
           "none: the scenario's efficiencies (--eta-*)");
    add_output_flags(*sub, o->output);
    return [o] { run_verdict(*o); };
}

}  // namespace kvroof::cli
