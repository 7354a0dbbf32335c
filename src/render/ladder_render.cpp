// SPDX-License-Identifier: MIT
#include "kvroof/io/ladder_render.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
using nlohmann::json;

namespace {
// The f of each band end when offloading, else nothing.
std::string f_text(const LadderRung& r) {
    return r.offload ? fmt::format(" (f = {} / {})", render::fmt_f(r.band.conservative.f), render::fmt_f(r.band.optimistic.f))
                     : std::string();
}

// A rung serves something at one end of its band at least; one that does not shows no tok/s ("—", null in JSON).
bool serves(const LadderRung& r) { return r.band.conservative.throughput > 0 || r.band.optimistic.throughput > 0; }
std::string tps_cell(double v, bool serving) { return serving ? fmt::format("{:.1f}", v) : std::string("—"); }
json tps_json(double v, bool serving) { return serving ? json(v) : json(nullptr); }

std::string bound_text(const LadderRung& r) {
    const ServingPoint& p = r.band.conservative;
    if (!serves(r))  // why nothing runs, as verdict says it (it was the batch limit, hbm_capacity, beside 0.0 tok/s)
        return !p.fits ? "weights do not fit" : !p.session_fits ? "one session does not fit" : "no batch meets the SLOs";
    const Resource c = r.band.conservative.headline, o = r.band.optimistic.headline;
    return c == o ? std::string(name(c)) : fmt::format("{} / {}", name(c), name(o));
}

// No gain where the rung serves nothing (a growth step that does not serve yet: 0 over 0), nor on the first rung.
std::string gain_text(const LadderRung& r, bool first) {
    if (first || !(r.band.conservative.throughput > 0)) return "—";
    return std::isfinite(r.gain) ? fmt::format("{:.2f}×", r.gain) : std::string("∞");
}

std::string table(const LadderStudy& s, bool markdown, std::string_view group = "--gpus") {
    std::string out = markdown ? "| step | lever | flag | tok/s (ov = 0) | tok/s (ov = 1) | per GPU (ov = 0) | gain per GPU | "
                                 "binds |\n|---|---|---|---|---|---|---|---|\n"
                               : fmt::format("  {:<5}{:<46}{:<16}{:>12}{:>12}{:>12}{:>9}  {}\n", "step", "lever", "flag",
                                             "tok/s ov=0", "tok/s ov=1", "per GPU", "gain", "binds");
    for (std::size_t i = 0; i < s.rungs.size(); ++i) {
        const LadderRung& r = s.rungs[i];
        const std::string lever = rung_label(r) + f_text(r);
        const bool on = serves(r);
        const std::string con = tps_cell(r.band.conservative.throughput, on), opt = tps_cell(r.band.optimistic.throughput, on),
                          per_gpu = tps_cell(r.per_gpu_conservative, on);
        out += markdown ? fmt::format("| {} | {} | `{}` | {} | {} | {} | {} | {} |\n", i, lever, rung_flag(r, group), con, opt,
                                      per_gpu, gain_text(r, i == 0), bound_text(r))
                        : fmt::format("  {:<5}{:<46}{:<16}{:>12}{:>12}{:>12}{:>9}  {}\n", i, lever, rung_flag(r, group), con, opt,
                                      per_gpu, gain_text(r, i == 0), bound_text(r));
    }
    return out;
}

std::string notes(const LadderStudy& s) {
    std::string out = fmt::format(
        "Each round takes the lever that raises tok/s per GPU most at ov = 0 (the bankable end), on top of the ones before; "
        "tensor parallelism up to {} GPUs. ",
        s.options.max_gpus);
    out += s.compute_bound
               ? "The last step is GPU-compute-bound: only more GPUs help.\n"
               : fmt::format("No remaining lever gains {:.0f} % or more per GPU at ov = 0.\n", (kGainThreshold - 1) * 100);
    if (s.overlap_only)
        out += fmt::format(
            "CPU offload on top of the last step pays only with overlap: {:.1f} tok/s at ov = 1 (f = {}), {:.1f} at ov = "
            "0.\n",
            s.overlap_only->band.optimistic.throughput, render::fmt_f(s.overlap_only->band.optimistic.f),
            s.overlap_only->band.conservative.throughput);
    return out;
}
}  // namespace

LadderReport ladder_report(const Scenario& sc, const LadderOptions& o) {
    LadderReport r{ladder_study(sc, o), scenario_facts(PreparedScenario(sc))};
    return r;
}

std::string rung_label(const LadderRung& r) {
    if (!r.lever) return "as given";
    const Scenario& sc = r.scenario;
    switch (*r.lever) {
        case LeverKind::tensor_parallel: return fmt::format("+ tensor parallel over {} GPUs", sc.hardware.deployment.gpus);
        case LeverKind::sparse: return fmt::format("+ sparse attention ({:g} % of KV read)", sc.policy.sparse * 100);
        case LeverKind::kv_quant: return fmt::format("+ {} KV cache", to_string(sc.policy.kv_dtype));
        case LeverKind::park_idle: return "+ park idle sessions in CPU DRAM";
        case LeverKind::hold_idle: return "+ hold idle sessions in HBM";
        case LeverKind::offload: return "+ CPU offload at the best f";
    }
    return "?";
}

std::string_view group_flag(const BuiltScenario& built) {
    const auto& o = built.overrides;
    return std::any_of(o.begin(), o.end(), [](const auto& f) { return f.first == "--tp"; }) ? "--tp" : "--gpus";
}

std::string rung_flag(const LadderRung& r, std::string_view group) {
    if (!r.lever) return "";
    const Scenario& sc = r.scenario;
    switch (*r.lever) {
        case LeverKind::tensor_parallel: {
            const DeploymentSpec& d = sc.hardware.deployment;
            return d.ep > 1 ? fmt::format("{} {} --ep {}", group, d.gpus, d.ep) : fmt::format("{} {}", group, d.gpus);
        }
        case LeverKind::sparse: return fmt::format("--sparse {:g}", sc.policy.sparse);
        case LeverKind::kv_quant: return fmt::format("--kv-dtype {}", to_string(sc.policy.kv_dtype));
        case LeverKind::park_idle: return "--idle park";
        case LeverKind::hold_idle: return "--idle hold";
        case LeverKind::offload: return "--f " + render::f_flag(r.band.conservative.f, r.f_fits_from);
    }
    return "";
}

std::string ladder_line(const LadderStudy& s, std::string_view group) {
    const LadderRung &a = s.rungs.front(), &b = s.rungs.back();
    std::string steps;
    // The flags that reproduce the last rung: each lever's, the offload's at the f the last rung runs at each end
    // (every rung after offload re-optimises f, so the f it had when it was added is stale by then).
    const std::string f_con = render::f_flag(b.band.conservative.f, b.f_fits_from);
    const std::string f_opt = render::f_flag(b.band.optimistic.f, b.f_fits_from);
    const std::string offload_flag =
        "--f " + f_con +
        (b.band.conservative.f > 0 ? (f_opt == f_con ? std::string() : " (ov = 1: --f " + f_opt + ")")
                                   : " (the later levers left offload no bankable gain; ov = 1: --f " + f_opt + ")");
    for (std::size_t i = 1; i < s.rungs.size(); ++i)
        steps += (i > 1 ? ", " : "") + (s.rungs[i].lever == LeverKind::offload ? offload_flag : rung_flag(s.rungs[i], group));
    if (s.rungs.size() == 1 && !(a.band.conservative.throughput > 0))
        return fmt::format(
            "LADDER: 0 tok/s; nothing is served on up to {} GPU{} (--max-gpus): the weights or one session do not fit\n",
            s.options.max_gpus, s.options.max_gpus == 1 ? "" : "s");
    if (s.rungs.size() == 1)
        return fmt::format("LADDER: {:.1f} tok/s; no lever gains {:.0f} % per GPU{}\n", a.band.conservative.throughput,
                           (kGainThreshold - 1) * 100, s.compute_bound ? " (GPU-compute-bound)" : "");
    // From nothing served ("the weights do not fit"), not from a measured-looking 0.0.
    const std::string from = serves(a) ? fmt::format("{:.1f}", a.band.conservative.throughput) : bound_text(a);
    return fmt::format("LADDER: {} -> {:.1f} tok/s (ov = 0) .. {:.1f} (ov = 1) in {} step(s): {}{}\n", from,
                       b.band.conservative.throughput, b.band.optimistic.throughput, s.rungs.size() - 1, steps,
                       s.compute_bound ? "; then GPU-compute-bound" : "");
}

std::string ladder_table_markdown(const LadderStudy& s) { return table(s, true); }

std::string render_ladder_text(const LadderReport& r, const BuiltScenario& built) {
    return render::inputs_text(built, r.facts) + "\nBottleneck ladder:\n" + table(r.study, false, group_flag(built)) + "\n" +
           notes(r.study) + ladder_line(r.study, group_flag(built));
}

std::string render_ladder_markdown(const LadderReport& r, const BuiltScenario& built) {
    const std::string l = ladder_line(r.study, group_flag(built));
    return "# Bottleneck ladder\n\n## Inputs\n\n```\n" + render::inputs_text(built, r.facts) + "```\n\n## Levers\n\n" +
           table(r.study, true, group_flag(built)) + "\n" + notes(r.study) + "\n`" + l.substr(0, l.size() - 1) + "`\n";
}

json ladder_json(const LadderReport& r, const BuiltScenario& built) {
    json rungs = json::array();
    for (const LadderRung& x : r.study.rungs)
        rungs.push_back({{"lever", rung_label(x)},
                         {"flag", rung_flag(x, group_flag(built))},
                         {"offload", x.offload},
                         {"gpus", x.scenario.hardware.deployment.gpus},
                         {"conservative", point_json(x.band.conservative)},
                         {"optimistic", point_json(x.band.optimistic)},
                         {"serves", serves(x)},
                         {"per_gpu_conservative_tok_s", tps_json(x.per_gpu_conservative, serves(x))},
                         {"per_gpu_optimistic_tok_s", tps_json(x.per_gpu_optimistic, serves(x))},
                         {"gain_per_gpu", x.band.conservative.throughput > 0 ? render::finite_or_null(x.gain) : nullptr}});
    const std::string l = ladder_line(r.study, group_flag(built));
    return json{
        {"inputs", inputs_json(built, r.facts)},
        {"max_gpus", r.study.options.max_gpus},
        {"rungs", std::move(rungs)},
        {"compute_bound", r.study.compute_bound},
        {"overlap_only_offload", r.study.overlap_only ? point_json(r.study.overlap_only->band.optimistic) : json(nullptr)},
        {"ladder", l.substr(8, l.size() - 9)}};
}

PlotSpec ladder_plot(const LadderStudy& s, const std::string& title) {
    PlotSpec p;
    p.title = title;
    p.xlabel = "output tokens/s per GPU";
    p.ylabel = "";
    p.log_x = true;
    p.key = "outside right top";
    PlotSeries lo, hi;  // the bankable end (no overlap) and the best case (full overlap)
    lo.style = hi.style = PlotSeries::Style::points;
    lo.title = "ov = 0";
    lo.color = "#1f77b4";
    hi.title = "ov = 1";
    hi.color = "#ff7f0e";
    const std::size_t n = s.rungs.size();
    for (std::size_t i = 0; i < n; ++i) {  // the first rung on top: category n
        const LadderRung& r = s.rungs[i];
        const double y = static_cast<double>(n - i);
        p.y_categories.insert(p.y_categories.begin(), fmt::format("{}. {}", i, rung_label(r)));
        for (auto [ser, tps] : {std::pair{&lo, r.per_gpu_conservative}, std::pair{&hi, r.per_gpu_optimistic}})
            if (tps > 0) {  // a log axis has no 0
                ser->x.push_back(tps);
                ser->y.push_back(y);
            }
    }
    for (PlotSeries* ser : {&lo, &hi})
        if (!ser->x.empty()) p.series.push_back(std::move(*ser));
    return p;
}

}  // namespace kvroof::io
