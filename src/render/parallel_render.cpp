// SPDX-License-Identifier: MIT
#include "kvroof/io/parallel_render.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kvroof/io/parse.hpp"
#include "kvroof/io/point_render.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
using nlohmann::json;

namespace {
std::string label(const Deployment& d) { return deployment_label(d); }

std::string clients_text(const DeploymentPoint& x) {
    return x.memory_full ? fmt::format("max ({:.0f})", x.clients) : fmt::format("{:.0f}", x.clients);
}

// Why a deployment has no point within the SLOs.
std::string why_none(const DeploymentResult& r) {
    if (!r.weights_fit)
        return fmt::format("weights {} per GPU exceed {} of HBM", format_bytes(r.weights_per_gpu), format_bytes(r.hbm_per_gpu));
    if (!r.session_fits) return "one request's KV does not fit beside the weights";
    return "no load meets the SLOs";
}

std::string ranking(const ParallelStudy& s, bool markdown) {
    std::string out =
        markdown ? "| rank | deployment | tok/s per GPU | tok/s per user | ITL | TTFT | clients per replica | "
                   "batch | step bound by |\n|---|---|---|---|---|---|---|---|---|\n"
                 : fmt::format("  {:<5}{:<18}{:>14}{:>15}{:>11}{:>12}{:>20}{:>9}  {}\n", "rank", "deployment", "tok/s/GPU",
                               "tok/s/user", "ITL ms", "TTFT ms", "clients/replica", "batch", "step bound by");
    int rank = 0;
    for (const DeploymentResult& r : s.deployments) {
        const DeploymentPoint* b = r.best_point();
        if (!b) {
            out += markdown ? fmt::format("| — | {} | {} | | | | | | |\n", label(r.d), why_none(r))
                            : fmt::format("  {:<5}{:<18}{}\n", "-", label(r.d), why_none(r));
            continue;
        }
        const OperatingPoint& p = b->p;
        const std::string bound(name(p.binding));
        out += markdown
                   ? fmt::format("| {} | {} | {:.0f} | {:.1f} | {:.1f} ms | {:.0f} ms | {} | {:.1f} | {} |\n", ++rank, label(r.d),
                                 b->per_gpu, b->per_user, p.itl * 1e3, p.ttft * 1e3, clients_text(*b), p.batch, bound)
                   : fmt::format("  {:<5}{:<18}{:>14.0f}{:>15.1f}{:>11.1f}{:>12.0f}{:>20}{:>9.1f}  {}\n", ++rank, label(r.d),
                                 b->per_gpu, b->per_user, p.itl * 1e3, p.ttft * 1e3, clients_text(*b), p.batch, bound);
    }
    return out;
}

std::string frontier(const ParallelStudy& s, bool markdown) {
    std::string out = markdown
                          ? "| tok/s per user | tok/s per GPU | deployment | clients per replica | ITL |\n|---|---|---|---|---|\n"
                          : fmt::format("  {:>14}{:>15}  {:<18}{:>20}{:>10}\n", "tok/s/user", "tok/s/GPU", "deployment",
                                        "clients/replica", "ITL ms");
    for (const DeploymentPoint& x : s.pareto)
        out += markdown ? fmt::format("| {:.1f} | {:.0f} | {} | {} | {:.1f} ms |\n", x.per_user, x.per_gpu, label(x.d),
                                      clients_text(x), x.p.itl * 1e3)
                        : fmt::format("  {:>14.1f}{:>15.0f}  {:<18}{:>20}{:>10.1f}\n", x.per_user, x.per_gpu, label(x.d),
                                      clients_text(x), x.p.itl * 1e3);
    return out;
}

std::string heading(const ParallelStudy& s) {
    return fmt::format(
        "Deployments of {} GPUs (groups up to the NVLink domain of {}: tensor-parallel, with expert parallelism EP for MoE "
        "models and data-parallel attention ADP for MLA models; replicas DP for the rest), each run at "
        "1, 2, 4, ... closed-loop clients per replica and memory-full, prefill chunked ({:g} tokens per step, per micro-batch in "
        "a pipeline), KV on the GPU",
        s.gpus, s.nvlink_domain, s.load.chunk);
}

json point_json(const DeploymentPoint& x) {
    return json{{"tp", x.d.tp},
                {"pp", x.d.pp},
                {"dp", x.d.dp},
                {"ep", x.d.ep},
                {"attention_dp", x.d.attention_dp},
                {"clients_per_replica", x.clients},
                {"memory_full", x.memory_full},
                {"tok_s_per_gpu", x.per_gpu},
                {"tok_s_per_user", x.per_user},
                {"tok_s_total", x.total},
                {"within_slos", x.within_slos},
                {"point", operating_point_json(x.p)}};
}
}  // namespace

std::string deployment_label(const Deployment& d) {
    const std::string ep = d.ep > 1 ? fmt::format(" EP{}", d.ep) : std::string();
    const std::string pp = d.pp > 1 ? fmt::format(" PP{}", d.pp) : std::string();
    return fmt::format("{}{}{}{} x DP{}", d.attention_dp ? "ADP" : "TP", d.tp, ep, pp, d.dp);
}

ParallelReport parallel_report(const Scenario& sc, const LoadSpec& load) {
    ParallelReport r{parallel_study(sc, load), {}};
    Scenario one = sc;
    one.hardware.deployment.gpus = 1;
    one.hardware.deployment.ep = 1;  // each deployment sets its own
    one.hardware.deployment.attention_dp = 0;
    r.facts = scenario_facts(PreparedScenario(one));
    return r;
}

std::string parallel_verdict_line(const ParallelStudy& s) {
    const DeploymentPoint* b = s.deployments.empty() ? nullptr : s.deployments.front().best_point();
    if (!b) return fmt::format("VERDICT: NO DEPLOYMENT of {} GPUs serves this model within the SLOs\n", s.gpus);
    return fmt::format(
        "VERDICT: {} — {:.0f} tok/s per GPU ({:.0f} in all) at {:.1f} tok/s per user (ITL {:.1f} ms, {} clients "
        "per replica); {} points on the frontier\n",
        label(b->d), b->per_gpu, b->total, b->per_user, b->p.itl * 1e3, clients_text(*b), s.pareto.size());
}

std::string render_parallel_text(const ParallelReport& r, const BuiltScenario& built) {
    const ParallelStudy& s = r.study;
    std::string out = render::inputs_text(built, r.facts, false) + "\n" + heading(s) +
                      ".\n\nRanked by tokens/s per GPU at each "
                      "deployment's best load within the SLOs:\n" +
                      ranking(s, false);
    out += "\nPareto frontier: tokens/s per user (interactivity) against tokens/s per GPU (cost):\n" + frontier(s, false);
    return out + "\n" + parallel_verdict_line(s);
}

std::string render_parallel_markdown(const ParallelReport& r, const BuiltScenario& built) {
    const ParallelStudy& s = r.study;
    const std::string v = parallel_verdict_line(s);
    return "# Deployments\n\n" + heading(s) + ".\n\n## Inputs\n\n```\n" + render::inputs_text(built, r.facts, false) +
           "```\n\n## Ranked by tokens/s per GPU\n\n" + ranking(s, true) + "\n## Pareto frontier\n\n" + frontier(s, true) +
           "\n`" + v.substr(0, v.size() - 1) + "`\n";
}

json parallel_json(const ParallelReport& r, const BuiltScenario& built) {
    const ParallelStudy& s = r.study;
    json ds = json::array();
    for (const DeploymentResult& d : s.deployments) {
        json pts = json::array();
        for (const DeploymentPoint& x : d.points) pts.push_back(point_json(x));
        ds.push_back({{"tp", d.d.tp},
                      {"pp", d.d.pp},
                      {"dp", d.d.dp},
                      {"ep", d.d.ep},
                      {"attention_dp", d.d.attention_dp},
                      {"weights_fit", d.weights_fit},
                      {"session_fits", d.session_fits},
                      {"weights_per_gpu_bytes", d.weights_per_gpu},
                      {"best", d.best < 0 ? json(nullptr) : json(d.best)},
                      {"points", std::move(pts)}});
    }
    json front = json::array();
    for (const DeploymentPoint& x : s.pareto) front.push_back(point_json(x));
    return json{{"inputs", inputs_json(built, r.facts)},
                {"gpus", s.gpus},
                {"nvlink_domain", s.nvlink_domain},
                {"prefill_chunk", s.load.chunk},
                {"deployments", std::move(ds)},
                {"pareto", std::move(front)},
                {"verdict", parallel_verdict_line(s).substr(9, parallel_verdict_line(s).size() - 10)}};
}

std::string parallel_ranking_markdown(const ParallelStudy& s) { return ranking(s, true); }
std::string parallel_frontier_markdown(const ParallelStudy& s) { return frontier(s, true); }

std::string parallel_csv_header() {
    return "scenario,tp,pp,dp,ep,attention_dp,clients_per_replica,memory_full,tok_s_per_gpu,tok_s_per_user,tok_s_total,itl_ms,"
           "ttft_ms,batch,step_allreduce_ms,step_alltoall_ms,within_slos,on_frontier,step_bound_by\n";
}

std::string parallel_csv_rows(const ParallelStudy& s, const std::string& scenario) {
    std::string out;
    for (const DeploymentResult& d : s.deployments)
        for (const DeploymentPoint& x : d.points) {
            const bool front = std::any_of(s.pareto.begin(), s.pareto.end(), [&](const DeploymentPoint& f) {
                return f.d == x.d && f.clients == x.clients && f.memory_full == x.memory_full;
            });
            out +=
                fmt::format("{},{},{},{},{},{},{:g},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{}\n",
                            scenario, x.d.tp, x.d.pp, x.d.dp, x.d.ep, x.d.attention_dp ? 1 : 0, x.clients, x.memory_full ? 1 : 0,
                            x.per_gpu, x.per_user, x.total, x.p.itl * 1e3, x.p.ttft * 1e3, x.p.batch, x.p.step_allreduce * 1e3,
                            x.p.step_alltoall * 1e3, x.within_slos ? 1 : 0, front ? 1 : 0, name(x.p.binding));
        }
    return out;
}

PlotSpec parallel_plot(const ParallelStudy& s, const std::string& title) {
    static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    PlotSpec p;
    p.title = title;
    p.xlabel = "output tokens/s per user (1 / ITL)";
    p.ylabel = "output tokens/s per GPU";
    p.key = "outside right top";  // outside the data
    // The legend names the best-ranked deployments and those on the frontier; the rest share one grey series
    // (DeepSeek-V3 on 72 GPUs tries 155: a key of all of them would not fit).
    constexpr std::size_t kNamed = 8;
    PlotSeries rest;
    rest.style = PlotSeries::Style::points;
    rest.title = "other deployments";
    rest.color = "#c7c7c7";
    std::size_t i = 0;
    for (std::size_t k = 0; k < s.deployments.size(); ++k) {
        const DeploymentResult& d = s.deployments[k];
        const bool on_front = std::any_of(s.pareto.begin(), s.pareto.end(), [&](const DeploymentPoint& x) { return x.d == d.d; });
        const bool named = k < kNamed || on_front;
        PlotSeries ser;
        ser.style = PlotSeries::Style::points;
        ser.title = label(d.d);
        PlotSeries& into = named ? ser : rest;
        for (const DeploymentPoint& x : d.points)
            if (x.within_slos) {
                into.x.push_back(x.per_user);
                into.y.push_back(x.per_gpu);
            }
        if (named && !ser.x.empty()) {
            ser.color = kColors[i++ % std::size(kColors)];
            p.series.push_back(std::move(ser));
        }
    }
    if (!rest.x.empty()) p.series.insert(p.series.begin(), std::move(rest));  // drawn first, beneath the named ones
    PlotSeries front;
    front.title = "Pareto frontier";
    front.color = "#000000";
    for (const DeploymentPoint& x : s.pareto) {
        front.x.push_back(x.per_user);
        front.y.push_back(x.per_gpu);
    }
    if (!front.x.empty()) p.series.push_back(std::move(front));
    return p;
}

}  // namespace kvroof::io
