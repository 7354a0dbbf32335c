// SPDX-License-Identifier: MIT
// `kvroof report`: builds the scenarios of configs/report.json, computes each
// page's study, and writes the pages their renderers format, all or nothing.
#include "kvroof/io/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "kvroof/analysis/report_study.hpp"
#include "kvroof/io/accuracy.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/disagg_render.hpp"
#include "kvroof/io/ladder_render.hpp"
#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/plot.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/report_render.hpp"
#include "kvroof/io/sweep.hpp"
#include "kvroof/io/validate.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "report_deployments.hpp"
#include "report_sim.hpp"
#include "report_trace.hpp"

namespace kvroof::io {
namespace {

using nlohmann::json;

ScenarioInputs inputs_from(const json& flags, std::string_view where) {
    ScenarioInputs in;
    for (const auto& [k, v] : flags.items()) set_scenario_flag(in, k, v.get<std::string>(), where);
    return in;
}

std::string flags_text(const json& flags) {
    std::string s;
    for (const auto& [k, v] : flags.items()) {
        const std::string val = v.get<std::string>();
        s += fmt::format(" --{} {}", k, val.find_first_of(" ,:;=") == std::string::npos ? val : "\"" + val + "\"");
    }
    return s;
}

// The reference scenarios, each with its verdict and the band at f = 0, 0.1, …, 1.
std::vector<ReferenceScenario> reference_scenarios(const json& cfg) {
    std::vector<ReferenceScenario> out;
    for (const auto& s : cfg.at("scenarios")) {
        ReferenceScenario r;
        r.name = s.at("name").get<std::string>();
        r.description = s.at("description").get<std::string>();
        r.flags_text = flags_text(s.at("flags"));
        const BuiltScenario built = build_scenario(inputs_from(s.at("flags"), "configs/report.json scenarios." + r.name));
        r.table = band_table(built.scenario, f_divisions(10));
        out.push_back(std::move(r));
    }
    return out;
}

SummaryPicks summary_picks(const std::vector<ReferenceScenario>& refs) {
    auto find = [&](const char* n) -> size_t {
        for (size_t i = 0; i < refs.size(); ++i)
            if (refs[i].name == n) return i;
        throw InputError(std::string("configs/report.json: SUMMARY.md needs scenario '") + n + "'");
    };
    return {find("default"), find("one-grace-dense"), find("one-grace-sparse"), find("seed-example")};
}

// `kvroof ladder` on the ladder's base scenario: each rung, and offload with overlap only when it pays there alone.
std::vector<LadderRow> ladder(const json& cfg) {
    const json& l = cfg.at("ladder");
    const Scenario base = build_scenario(inputs_from(l.at("base"), "configs/report.json ladder.base")).scenario;
    LadderOptions o;
    o.max_gpus = l.at("max_gpus").get<int>();
    const LadderStudy st = ladder_study(base, o);
    std::vector<LadderRow> rows;
    for (const LadderRung& r : st.rungs) {
        const std::string flag = rung_flag(r);
        rows.push_back({r.lever ? rung_label(r) + " (`" + flag + "`)" : "as given: 1 GPU, dense attention, bf16 KV",
                        r.band.conservative, r.band.optimistic});
    }
    if (st.overlap_only)
        rows.push_back({"+ CPU offload at the best f, paying only with overlap", st.overlap_only->band.conservative,
                        st.overlap_only->band.optimistic});
    return rows;
}

std::vector<CeilingLine> ceilings(const json& cfg) {
    std::vector<CeilingLine> rows;
    for (const auto& h : cfg.at("ceiling_hardware")) {
        ScenarioInputs in;
        in.set("hardware", h.get<std::string>());
        in.set("gpus", "2");
        const BuiltScenario b = build_scenario(in);
        rows.push_back({in.get("hardware")->text, b.scenario.model.name, b.workload_label, ceiling_row(b.scenario)});
    }
    return rows;
}

// Best gains at each band end, dense and sparse 0.1, as one knob of `base` varies.
template <class SetKnob>
GainCurve gain_curve(const ScenarioInputs& base, const json& xs, SetKnob set_knob) {
    GainCurve g;
    for (const auto& xv : xs) {
        const double x = xv.get<double>();
        g.x.push_back(x);
        for (const bool dense : {true, false}) {
            ScenarioInputs in = base;
            set_knob(in, x);
            in.set("sparse", dense ? "1" : "0.1");
            (dense ? g.dense : g.sparse).push_back(best_gains(make_verdict(build_scenario(in).scenario)));
        }
    }
    return g;
}

PlotData plot_data(const json& cfg) {
    const json& pc = cfg.at("plots");
    const ScenarioInputs base = inputs_from(pc.at("scenario"), "configs/report.json plots.scenario");
    PlotData d;
    d.scenario = build_scenario(base).scenario;
    d.fs = f_divisions(100);
    d.bands = band_grid(d.scenario, d.fs);
    d.cpus_per_gpu = gain_curve(base, pc.at("cpus_per_gpu"),
                                [](ScenarioInputs& in, double x) { in.set("cpus-per-gpu", fmt::format("{:g}", x)); });
    d.link_gbps =
        gain_curve(base, pc.at("link_GBps"), [](ScenarioInputs& in, double x) { in.set("c2c-bw", fmt::format("{:g}GB/s", x)); });
    const Verdict v = make_verdict(d.scenario);
    d.f_star_con = v.best_conservative.f;
    d.f_star_opt = v.best_optimistic.f;
    ScenarioInputs preset;  // the hardware preset alone, none of the plot's overrides
    if (const auto& h = base.get("hardware")) preset.set("hardware", h->text);
    const HardwareSpec hw = build_scenario(preset).scenario.hardware;
    d.preset_cpus_per_gpu = hw.host.cpus_per_gpu;
    d.preset_link_gbps = hw.link.bandwidth.raw() / 1e9;
    return d;
}

// `kvroof report --out DIR` replaces DIR whole, so DIR must hold nothing but
// an earlier report (and temporaries an interrupted older kvroof left):
// `--out .` or `--out ~` is refused before anything is touched.
void check_report_folder(const std::string& out_dir, const std::vector<std::string>& names) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(out_dir, ec);
    if (!fs::exists(st)) return;
    if (!fs::is_directory(st)) throw InputError(fmt::format("--out: must be a folder, got '{}', which is not one", out_dir));
    for (const auto& entry : fs::directory_iterator(out_dir)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(".kvroof-", 0) == 0 || std::find(names.begin(), names.end(), name) != names.end()) continue;
        throw InputError(fmt::format(
            "--out: must be a new folder or one holding only an earlier report, got '{}', which holds '{}'", out_dir, name));
    }
}

}  // namespace

std::vector<std::string> write_reports(const std::string& out_dir) {
    const json& cfg = embedded_config("report");
    const std::vector<ReferenceScenario> refs = reference_scenarios(cfg);
    const std::vector<LadderRow> steps = ladder(cfg);
    // The two papers' tables, as `kvroof prefill --table seed` and `kvroof layers --table seed` print them.
    const GivenFlags seed_flag = {{"--table", "seed"}};
    PrefillInputs prefill_in;
    prefill_in.seed = true;
    LayersInputs layers_in;
    layers_in.seed = true;
    const PrefillStudy prefill = prefill_study(resolve_prefill(prefill_in), prefill_questions(true));
    const LayersStudy layers = run_layers_study(resolve_layers(layers_in));
    const BuiltScenario def = build_scenario(ScenarioInputs{});

    std::vector<std::pair<std::string, std::string>> files;
    files.reserve(32);  // every report below: no regrowth (and none of GCC 12's -Warray-bounds false alarms on it)
    files.emplace_back("concurrent_mix.md", concurrent_mix_md(refs));
    files.emplace_back("MODEL_WALKTHROUGH.md",
                       walkthrough_md(walkthrough(def.scenario), cfg.at("ladder").at("description").get<std::string>(), steps));
    files.emplace_back("throughput_ceiling.md", ceiling_md(ceilings(cfg)));
    files.emplace_back("prefill_kappa.md", prefill_markdown(prefill, seed_flag));
    files.emplace_back("layers_budget.md", layers_markdown(layers, seed_flag));
    files.emplace_back("verdict_default.md", render_verdict_markdown(verdict_report(def.scenario), def));
    files.emplace_back("accuracy.md", render_accuracy_markdown(accuracy_table(measured_points()),
                                                               accuracy_table(holdout_points()), engine_kernels()));
    const DeploymentPages deployments = deployment_pages(cfg);
    files.emplace_back("disagg_cpu_decode.md", render_disagg_markdown(disagg_report(def.scenario), def));
    const BuiltScenario pools =
        build_scenario(inputs_from(cfg.at("disagg_gpu_pools").at("flags"), "configs/report.json disagg_gpu_pools"));
    files.emplace_back("disagg_gpu_pools.md", render_gpu_disagg_markdown(gpu_disagg_report(pools.scenario, LoadSpec{}), pools));
    files.emplace_back("recommended_configs.md", deployments.markdown);
    files.emplace_back("parallelism_sweep.csv", deployments.csv);
    files.emplace_back(
        "sim_vs_closed_form.md",
        sim_vs_closed_form_markdown(cfg.at("sim_vs_closed_form").at("description").get<std::string>(), sim_sweep_pages(cfg)));
    files.emplace_back("trace_classes.md", trace_classes_page(cfg));
    ValidationResult validation = validate(measured_points(), "data/measurements/serving_points.json");
    check_holdout(validation, holdout_points());
    files.emplace_back("validation.md",
                       render_validate_markdown(validation, cfg.at("validation").at("description").get<std::string>()) +
                           "\n![predicted / measured output throughput](validation_throughput.svg)\n");
    files.emplace_back("SUMMARY.md",
                       summary_md(refs, summary_picks(refs), steps, prefill_answer(prefill), layers_answer(layers)));
    const Plots p = report_plots(plot_data(cfg));
    const std::pair<std::string, const PlotSpec*> plots[] = {{"throughput_vs_f.svg", &p.throughput_vs_f},
                                                             {"bottleneck_vs_f.svg", &p.bottleneck_vs_f},
                                                             {"gain_vs_cpus_per_gpu.svg", &p.gain_vs_cpus},
                                                             {"gain_vs_link_bw.svg", &p.gain_vs_link}};
    const PlotSpec validation_svg = validation_plot(validation);
    std::vector<std::string> written;
    written.reserve(files.size() + std::size(plots) + deployments.plots.size());
    for (const auto& f : files) written.push_back(f.first);
    for (const auto& pl : plots) written.push_back(pl.first);
    for (const auto& pl : deployments.plots) written.push_back(pl.first);
    written.emplace_back("validation_throughput.svg");

    // Everything that can fail without writing fails here, before the first byte.
    check_report_folder(out_dir, written);
    (void)find_gnuplot();

    // All or nothing: the files go into a fresh sibling folder that replaces out_dir at the end.
    AtomicDir dir(out_dir);
    for (const auto& [name, text] : files) write_file_atomic(dir.file(name), text);
    for (const auto& [name, spec] : plots) render_svg(*spec, dir.file(name));
    for (const auto& [name, spec] : deployments.plots) render_svg(spec, dir.file(name));
    render_svg(validation_svg, dir.file("validation_throughput.svg"));
    dir.commit();
    return written;
}

}  // namespace kvroof::io
