// SPDX-License-Identifier: MIT
#include "kvroof/io/disagg_render.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/parse.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
using nlohmann::json;

namespace {
std::string gain_text(double g) {
    return std::isfinite(g) ? fmt::format("{:.2f}×", g) : std::string("— (baseline serves nothing)");
}

std::string facts_text(const DisaggReport& r, bool markdown) {
    const DisaggStudy& s = r.study;
    const Scenario& sc = r.facts.scenario;
    const char* item = markdown ? "- " : "  ";
    std::string out = fmt::format("{}Baseline, KV on the GPU (f = 0): {:.1f} tok/s, batch limited by {}\n", item, s.baseline,
                                  name(s.baseline_limit));
    const int pp = sc.hardware.deployment.pp;
    const std::string stages = pp > 1 ? fmt::format(" in {} pipeline stages, the busiest one's share", pp) : std::string();
    if (!s.weights_fit_gpu)
        return out + fmt::format("{}GPU prefill: the weights ({}) and one call's KV do not fit the HBM of {} GPU(s) ({})\n", item,
                                 format_bytes(r.facts.weights.raw()), s.gpus, format_bytes(r.facts.hbm_usable.raw()));
    out += fmt::format(
        "{}GPU prefill feed: {:.3f} calls/s on {} GPU(s) (prefill {:.3f} s per call{}; links {:.3f} s: cached KV up, new KV "
        "down)\n",
        item, s.gpu_calls_per_s, s.gpus, s.prefill_gpu_s, stages, s.prefill_link_s);
    if (!s.weights_fit_dram)
        return out + fmt::format("{}CPU decode engine: the weights ({}) and one session do not fit one socket's DRAM ({})\n",
                                 item, format_bytes(r.facts.weights.raw()), format_bytes(sc.hardware.host.memory.raw()));
    out += fmt::format(
        "{}CPU decode engine, one {} socket: batch {:.1f} (limited by {}), step {:.0f} ms ({}-bound) -> {:.4f} calls/s\n", item,
        sc.hardware.host.name, s.cpu_batch, name(s.cpu_batch_limit), s.cpu_step * 1e3, s.cpu_compute_bound ? "FLOP/s" : "DRAM",
        s.cpu_calls_per_s);
    if (!s.cpu_meets_slo)
        out += fmt::format(
            "{}No CPU batch meets the TPOT SLO ({:.0f} ms): even one sequence's step is {:.0f} ms; shown "
            "without it\n",
            item, r.facts.scenario.policy.slo_tpot->raw() * 1e3, s.cpu_step_one * 1e3);
    if (!s.prefill_meets_ttft)
        out += fmt::format("{}No prefill meets the TTFT SLO ({:.0f} ms): one call's prefill takes {:.0f} ms; shown without it\n",
                           item, r.facts.scenario.policy.slo_ttft->raw() * 1e3, s.prefill_latency_s * 1e3);
    return out + fmt::format("{}Balance: {:.1f} CPU sockets per GPU match the prefill feed -> {:.1f} tok/s, {}\n", item,
                             s.balance_cpus_per_gpu, s.max_throughput,
                             s.baseline > 0 ? gain_text(s.max_throughput / s.baseline) + " the baseline"
                                            : std::string("where the baseline serves nothing"));
}

std::string curve(const DisaggStudy& s, bool markdown) {
    std::string out = markdown ? "| CPU sockets per GPU | tok/s | gain | bound by |\n|---|---|---|---|\n"
                               : fmt::format("  {:>20}{:>12}{:>10}  {}\n", "CPU sockets per GPU", "tok/s", "gain", "bound by");
    for (const DisaggPoint& x : s.curve) {
        const char* by = x.cpu_bound ? "CPU decode pool" : "GPU prefill feed";
        out += markdown ? fmt::format("| {:g} | {:.1f} | {} | {} |\n", x.cpus_per_gpu, x.throughput, gain_text(x.gain), by)
                        : fmt::format("  {:>20g}{:>12.1f}{:>10}  {}\n", x.cpus_per_gpu, x.throughput,
                                      std::isfinite(x.gain) ? gain_text(x.gain) : "—", by);  // the column is 10 wide
    }
    return out;
}
}  // namespace

DisaggReport disagg_report(const Scenario& sc) { return {disagg_study(sc), scenario_facts(PreparedScenario(sc))}; }

std::string disagg_line(const DisaggReport& r) {
    const DisaggStudy& s = r.study;
    if (!s.weights_fit_gpu) return "DISAGG: NOT POSSIBLE — the GPUs cannot hold the weights and one call to prefill it\n";
    if (!s.weights_fit_dram || !(s.cpu_calls_per_s > 0))
        return "DISAGG: NOT POSSIBLE — one CPU socket cannot hold the weights and a session\n";
    const std::string slos =
        std::string(s.cpu_meets_slo ? "" : fmt::format("; CPU decode steps of {:.0f} ms break the TPOT SLO", s.cpu_step * 1e3)) +
        (s.prefill_meets_ttft ? "" : fmt::format("; a prefill of {:.0f} ms breaks the TTFT SLO", s.prefill_latency_s * 1e3));
    if (!(s.baseline > 0))  // no ratio to state
        return fmt::format(
            "DISAGG: the baseline serves nothing; {:.1f} tok/s with {:.1f} CPU sockets per GPU, {:.1f} tok/s at this machine's "
            "{:g}{}\n",
            s.max_throughput, s.balance_cpus_per_gpu, s.at_machine.throughput, s.at_machine.cpus_per_gpu, slos);
    return fmt::format(
        "DISAGG: {} over the baseline with {:.1f} CPU sockets per GPU ({:.1f} tok/s); {} at this machine's {:g} ({:.1f} "
        "tok/s){}\n",
        gain_text(s.max_throughput / s.baseline), s.balance_cpus_per_gpu, s.max_throughput, gain_text(s.at_machine.gain),
        s.at_machine.cpus_per_gpu, s.at_machine.throughput, slos);
}

std::string disagg_body_markdown(const DisaggReport& r) { return facts_text(r, true) + "\n" + curve(r.study, true); }

std::string render_disagg_text(const DisaggReport& r, const BuiltScenario& built) {
    return render::inputs_text(built, r.facts) +
           "\nFull disaggregation onto CPUs: the GPUs only prefill; CPU sockets decode (weights, KV and attention in DRAM).\n" +
           facts_text(r, false) + "\n" + curve(r.study, false) + "\n" + disagg_line(r);
}

std::string render_disagg_markdown(const DisaggReport& r, const BuiltScenario& built) {
    const std::string l = disagg_line(r);
    return "# Full disaggregation onto CPUs\n\n## Inputs\n\n```\n" + render::inputs_text(built, r.facts) +
           "```\n\n## Pipeline\n\n" + disagg_body_markdown(r) + "\n`" + l.substr(0, l.size() - 1) + "`\n";
}

json disagg_json(const DisaggReport& r, const BuiltScenario& built) {
    const DisaggStudy& s = r.study;
    json c = json::array();
    for (const DisaggPoint& x : s.curve)
        c.push_back({{"cpus_per_gpu", x.cpus_per_gpu},
                     {"throughput_tok_s", x.throughput},
                     {"gain", render::finite_or_null(x.gain)},
                     {"cpu_bound", x.cpu_bound}});
    const std::string l = disagg_line(r);
    return json{{"inputs", inputs_json(built, r.facts)},
                {"baseline_tok_s", s.baseline},
                {"baseline_batch_limit", name(s.baseline_limit)},
                {"gpu_prefill_calls_per_s", s.gpu_calls_per_s},
                {"prefill_gpu_s", s.prefill_gpu_s},
                {"prefill_link_s", s.prefill_link_s},
                {"weights_fit_gpu", s.weights_fit_gpu},
                {"weights_fit_dram", s.weights_fit_dram},
                {"cpu_batch", s.cpu_batch},
                {"cpu_batch_limit", name(s.cpu_batch_limit)},
                {"cpu_step_s", s.cpu_step},
                {"cpu_calls_per_s", s.cpu_calls_per_s},
                {"cpu_meets_slo_tpot", s.cpu_meets_slo},
                {"prefill_latency_s", s.prefill_latency_s},
                {"prefill_meets_slo_ttft", s.prefill_meets_ttft},
                {"balance_cpus_per_gpu", render::finite_or_null(s.balance_cpus_per_gpu)},
                {"max_throughput_tok_s", s.max_throughput},
                {"at_machine", {{"cpus_per_gpu", s.at_machine.cpus_per_gpu}, {"throughput_tok_s", s.at_machine.throughput}}},
                {"curve", std::move(c)},
                {"disagg", l.substr(8, l.size() - 9)}};
}

PlotSpec disagg_plot(const DisaggStudy& s, const std::string& title, double machine_cpus_per_gpu) {
    PlotSpec p;
    p.title = title;
    p.xlabel = "CPU sockets per GPU";
    p.ylabel = "output tokens/s";
    p.log_x = true;
    PlotSeries pipe;
    pipe.title = "GPU prefill feeding CPU decode";
    pipe.color = "#1f77b4";
    for (const DisaggPoint& x : s.curve) {
        pipe.x.push_back(x.cpus_per_gpu);
        pipe.y.push_back(x.throughput);
    }
    p.series.push_back(std::move(pipe));
    p.hlines.push_back({s.baseline, "baseline: KV on the GPU (f = 0)", "#d62728"});
    p.vlines.push_back({machine_cpus_per_gpu, "this machine's sockets per GPU", "#555555"});
    if (std::isfinite(s.balance_cpus_per_gpu) && s.balance_cpus_per_gpu > 0)
        p.vlines.push_back({s.balance_cpus_per_gpu, "balance point", "#2ca02c"});
    return p;
}

}  // namespace kvroof::io
