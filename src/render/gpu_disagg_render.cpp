// SPDX-License-Identifier: MIT
#include <fmt/format.h>

#include <iterator>

#include "kvroof/io/disagg_render.hpp"
#include "kvroof/io/parallel_render.hpp"
#include "kvroof/io/point_render.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
using nlohmann::json;

namespace {
std::string split_name(const PoolSplit& p) {
    const std::string pp = p.pp > 1 ? fmt::format(" PP{}", p.pp) : std::string();
    return fmt::format("TP{}{}: {} prefill + {} decode", p.tp, pp, p.prefill_instances, p.decode_instances);
}

// What caps the decode side: its own limit, or the memory idle sessions hold between calls.
std::string limit_text(const PoolSplit& p) {
    return std::string(name(p.decode_limit)) + (p.idle_bound ? " (idle sessions' KV)" : "");
}

std::string table(const GpuDisaggStudy& s, bool markdown) {
    std::string out = markdown
                          ? "| instances | tok/s per GPU | decode ITL | TTFT | prefill req/s per instance | decode req/s "
                            "per instance (most) | decode batch | decode limit |\n|---|---|---|---|---|---|---|---|\n"
                          : fmt::format("  {:<34}{:>11}{:>10}{:>10}{:>18}{:>17}{:>9}  {}\n", "instances", "tok/s/GPU", "ITL ms",
                                        "TTFT ms", "prefill rps/inst", "dec rps/inst max", "batch", "decode limit");
    for (const PoolSplit& p : s.splits) {
        if (!p.feasible && p.throughput <= 0) {
            const std::string tp = p.pp > 1 ? fmt::format("{} PP{}", p.tp, p.pp) : fmt::format("{}", p.tp);
            out += markdown ? fmt::format("| TP{} | does not fit or serve | | | | | | |\n", tp)
                            : fmt::format("  TP{:<32}does not fit or serve\n", tp);
            continue;
        }
        const std::string label = split_name(p) + (p.feasible ? "" : " (TTFT SLO broken)");
        out += markdown
                   ? fmt::format("| {} | {:.0f} | {:.1f} ms | {:.0f} ms | {:.3f} | {:.3f} | {:.1f} | {} |\n", label, p.per_gpu,
                                 p.decode_step * 1e3, p.ttft * 1e3, p.prefill_rps, p.decode_rps, p.decode_batch, limit_text(p))
                   : fmt::format("  {:<34}{:>11.0f}{:>10.1f}{:>10.0f}{:>18.3f}{:>17.3f}{:>9.1f}  {}\n", label, p.per_gpu,
                                 p.decode_step * 1e3, p.ttft * 1e3, p.prefill_rps, p.decode_rps, p.decode_batch, limit_text(p));
    }
    return out;
}

std::string aggregated_text(const GpuDisaggStudy& s) {
    if (!s.aggregated_ok) return "Aggregated (kvroof parallel): no deployment meets the SLOs.\n";
    const DeploymentPoint& a = s.aggregated;
    return fmt::format(
        "Aggregated on the same {} GPUs (kvroof parallel's best): {}, {:.0f} tok/s per GPU, ITL {:.1f} ms, TTFT {:.0f} "
        "ms.\n",
        s.gpus, deployment_label(a.d), a.per_gpu, a.p.itl * 1e3, a.p.ttft * 1e3);
}

std::string heading(const GpuDisaggStudy& s) {
    return fmt::format(
        "Prefill and decode on separate GPU pools ({} GPUs as instances of one tensor-parallel size{}; prefill instances run "
        "only prefill chunks, decode instances only decode, each request's KV sent between them), against the same GPUs "
        "aggregated.\n",
        s.gpus, s.pp > 1 ? fmt::format(" and {} pipeline stages", s.pp) : std::string());
}
}  // namespace

GpuDisaggReport gpu_disagg_report(const Scenario& sc, const LoadSpec& load) {
    Scenario one = sc;
    one.hardware.deployment.gpus = 1;
    return {gpu_disagg_study(sc, load), scenario_facts(PreparedScenario(one))};
}

std::string gpu_disagg_line(const GpuDisaggStudy& s) {
    if (s.splits.empty() || !s.splits.front().feasible)
        return fmt::format("DISAGG: NO POOL SPLIT of {} GPUs serves this model within the SLOs\n", s.gpus);
    const PoolSplit& b = s.splits.front();
    const std::string vs = s.aggregated_ok ? fmt::format("; {:.2f}× the aggregated {} ({:.0f})", b.per_gpu / s.aggregated.per_gpu,
                                                         deployment_label(s.aggregated.d), s.aggregated.per_gpu)
                                           : std::string("; aggregated serving meets no SLO");
    return fmt::format("DISAGG: {} — {:.0f} tok/s per GPU (ITL {:.1f} ms, TTFT {:.0f} ms){}\n", split_name(b), b.per_gpu,
                       b.decode_step * 1e3, b.ttft * 1e3, vs);
}

std::string render_gpu_disagg_text(const GpuDisaggReport& r, const BuiltScenario& built) {
    return render::inputs_text(built, r.facts, false) + "\n" + heading(r.study) + "\n" + table(r.study, false) + "\n" +
           aggregated_text(r.study) + gpu_disagg_line(r.study);
}

std::string render_gpu_disagg_markdown(const GpuDisaggReport& r, const BuiltScenario& built) {
    const std::string l = gpu_disagg_line(r.study);
    return "# Prefill and decode on separate GPU pools\n\n" + heading(r.study) + "\n## Inputs\n\n```\n" +
           render::inputs_text(built, r.facts, false) + "```\n\n## Pool splits\n\n" + table(r.study, true) + "\n" +
           aggregated_text(r.study) + "\n`" + l.substr(0, l.size() - 1) + "`\n";
}

json gpu_disagg_json(const GpuDisaggReport& r, const BuiltScenario& built) {
    json splits = json::array();
    for (const PoolSplit& p : r.study.splits)
        splits.push_back({{"tp", p.tp},
                          {"pp", p.pp},
                          {"prefill_instances", p.prefill_instances},
                          {"decode_instances", p.decode_instances},
                          {"feasible", p.feasible},
                          {"tok_s_per_gpu", p.per_gpu},
                          {"tok_s_total", p.throughput},
                          {"prefill_rps_per_instance", p.prefill_rps},
                          {"decode_rps_per_instance", p.decode_rps},
                          {"prefill_step_s", p.prefill_step},
                          {"decode_step_s", p.decode_step},
                          {"decode_batch", p.decode_batch},
                          {"decode_limit", std::string(name(p.decode_limit))},
                          {"idle_kv_binds", p.idle_bound},
                          {"kv_transfer_s", p.transfer},
                          {"ttft_s", p.ttft}});
    const std::string l = gpu_disagg_line(r.study);
    json agg = nullptr;
    if (r.study.aggregated_ok)
        agg = {{"tp", r.study.aggregated.d.tp},
               {"pp", r.study.aggregated.d.pp},
               {"dp", r.study.aggregated.d.dp},
               {"ep", r.study.aggregated.d.ep},
               {"attention_dp", r.study.aggregated.d.attention_dp},
               {"tok_s_per_gpu", r.study.aggregated.per_gpu},
               {"point", operating_point_json(r.study.aggregated.p)}};
    return json{{"inputs", inputs_json(built, r.facts)},
                {"gpus", r.study.gpus},
                {"splits", std::move(splits)},
                {"aggregated", std::move(agg)},
                {"disagg", l.substr(8, l.size() - 9)}};
}

PlotSpec gpu_disagg_plot(const GpuDisaggStudy& s, const std::string& title) {
    static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    PlotSpec p;
    p.title = title;
    p.xlabel = "prefill instances (the rest decode)";
    p.ylabel = "output tokens/s per GPU";
    std::size_t i = 0;
    for (const PoolSplit& sp : s.splits) {
        if (sp.per_gpu_by_prefill.empty()) continue;
        PlotSeries ser;
        ser.style = PlotSeries::Style::points;  // P is a whole number
        ser.title = sp.pp > 1 ? fmt::format("TP{} PP{}", sp.tp, sp.pp) : fmt::format("TP{}", sp.tp);
        ser.color = kColors[i++ % std::size(kColors)];
        for (std::size_t k = 0; k < sp.per_gpu_by_prefill.size(); ++k) {
            ser.x.push_back(static_cast<double>(k + 1));
            ser.y.push_back(sp.per_gpu_by_prefill[k]);
        }
        p.series.push_back(std::move(ser));
    }
    if (s.aggregated_ok)
        p.hlines.push_back({s.aggregated.per_gpu, fmt::format("aggregated {}", deployment_label(s.aggregated.d)), "#d62728"});
    return p;
}

}  // namespace kvroof::io
