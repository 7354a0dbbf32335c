// SPDX-License-Identifier: MIT
// `kvroof sim`: the simulated run beside the closed form, as text, JSON and markdown.
#include "kvroof/io/sim_render.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/point_render.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"
#include "sim_text.hpp"

namespace kvroof::io {
namespace {
using nlohmann::json;
using render::finite_or_null;

std::string load_text(const SimSpec& s, const Scenario& sc) {
    const std::string load = s.load.mode == LoadMode::concurrency
                                 ? fmt::format("concurrency {:g} (closed-loop clients)", s.load.value)
                                 : fmt::format("request rate {:g}/s (open loop)", s.load.value);
    const std::string f =
        s.f_policy == FPolicy::dynamic ? fmt::format("f dynamic in [0, {:g}]", s.f) : fmt::format("f = {:g}", s.f);
    return fmt::format("{}, prefill chunked ({}){}, {}, ov = {:g}, {} gaps, {:g} calls, seed {}{}", load,
                       render::chunk_budget_text(s.load.chunk, sc),
                       std::isfinite(s.load.max_seqs) ? fmt::format(", at most {:g} running", s.load.max_seqs) : "", f, s.ov,
                       name(s.gaps), s.calls, s.seed,
                       s.preempt == Preempt::none ? "" : fmt::format(", preemption by {}", name(s.preempt)));
}

// A relative gap in words: "12.3 % below", "4.0 % above".
std::string percent(double gap) { return fmt::format("{:.1f} % {}", std::abs(gap) * 100, gap < 0 ? "below" : "above"); }

struct Row {
    const char* label;
    double sim, closed;
    const char* spec;
    double scale;
    bool itl = false;  // the ITL row: none is measured where no call makes a second token
};

std::string comparison(const SimResult& r, bool markdown) {
    const OperatingPoint& c = r.closed;
    const Row rows[] = {
        {"throughput, tok/s", r.throughput, c.throughput, "{:.0f}", 1.0},
        {"per GPU, tok/s", r.throughput_per_gpu, c.throughput_per_gpu, "{:.0f}", 1.0},
        {"requests/s", r.requests_per_s, c.requests_per_s, "{:.3f}", 1.0},
        {"ITL mean, ms", r.itl.mean, c.itl, "{:.2f}", 1e3, true},
        {"TTFT mean, ms", r.ttft.mean, c.ttft, "{:.1f}", 1e3},
        {"batch decoding (mean)", r.batch, c.batch, "{:.1f}", 1.0},
        {"requests running (mean)", r.running, c.running, "{:.1f}", 1.0},
        {"HBM used (mean), GB", r.hbm_used, c.hbm_used, "{:.1f}", 1e-9},
    };
    std::string out = markdown ? "| | simulated | closed form | gap |\n|---|---|---|---|\n"
                               : fmt::format("  {:<26}{:>14}{:>14}{:>16}\n", "", "simulated", "closed form", "gap");
    for (const Row& x : rows) {
        const bool none = x.itl && !r.itl_measured;  // no call made a second token: no ITL to compare
        const bool closed_none = x.itl && !(c.batch > 0);  // nothing decodes in the closed form: no ITL (null in JSON)
        const std::string a = none ? "—" : fmt::format(fmt::runtime(x.spec), x.sim * x.scale);
        const std::string b = closed_none ? "—" : fmt::format(fmt::runtime(x.spec), x.closed * x.scale);
        const std::string g = x.closed > 0 && !none && !closed_none ? percent(x.sim / x.closed - 1.0) : "—";
        out += markdown ? fmt::format("| {} | {} | {} | {} |\n", x.label, a, b, g)
                        : fmt::format("  {:<26}{:>14}{:>14}{:>16}\n", x.label, a, b, g);
    }
    return out;
}

std::string distributions(const SimResult& r, bool markdown) {
    std::string out = markdown ? "| ms | mean | P50 | P90 | P99 |\n|---|---|---|---|---|\n"
                               : fmt::format("  {:<26}{:>10}{:>10}{:>10}{:>10}\n", "ms", "mean", "P50", "P90", "P99");
    auto row = [&](const char* label, const Distribution& d, const char* spec) {
        const auto v = [&](double x) { return fmt::format(fmt::runtime(spec), x * 1e3); };
        out += markdown ? fmt::format("| {} | {} | {} | {} | {} |\n", label, v(d.mean), v(d.p50), v(d.p90), v(d.p99))
                        : fmt::format("  {:<26}{:>10}{:>10}{:>10}{:>10}\n", label, v(d.mean), v(d.p50), v(d.p90), v(d.p99));
    };
    row("TTFT", r.ttft, "{:.1f}");
    if (r.itl_measured)
        row("ITL (per token)", r.itl, "{:.2f}");
    else
        out += markdown ? "| ITL (per token) | — | — | — | — |\n"
                        : fmt::format("  {:<26}{:>10}{:>10}{:>10}{:>10}\n", "ITL (per token)", "—", "—", "—", "—");
    return out;
}

std::string notes(const SimResult& r) {
    std::string s;
    s += fmt::format(
        "Measured over {:.0f} calls completed in a window of {:.1f} s: the first {:.0f} calls (warm-up){} are left out; {:.0f} "
        "steps, {:.0f} events, {:.1f} s simulated.\n",
        r.measured_calls, r.window, r.warmup_calls, r.window_to_end ? "" : " and the drain after the last arrival", r.steps,
        r.events, r.sim_time);
    if (r.window_to_end) {
        // An open loop beyond what the engine serves has its arrivals over before the warm-up whatever the calls.
        const bool over = r.spec.load.mode == LoadMode::request_rate && r.requests_per_s < 0.95 * r.spec.load.value;
        s += fmt::format(
            "Every call had arrived before the window could close, so it runs to the end of the run and holds the drain, "
            "whose load falls as the run empties: no steady state{}; {}.\n",
            r.warmup_calls > 0 ? ", and Little's law is off by the calls in it that arrived before it opened" : "",
            over ? fmt::format("the rate asked is beyond the {:.3g} calls/s served, so no run of it has one: give a lower "
                               "--request-rate",
                               r.requests_per_s)
            : r.warmup_calls > 0 ? "give more --calls or a lower --warmup"
                                 : "give more --calls");
    }
    s += fmt::format("Step: mean {:.2f} ms; the step of the mean content {:.2f} ms (a fluid step); {}.\n", r.mean_step * 1e3,
                     r.step_of_mean * 1e3,
                     r.itl_measured ? fmt::format("per decode token {:.2f} ms (busier steps carry more tokens)", r.itl.mean * 1e3)
                                    : std::string("no call made a second token, so no step decoded one"));
    s += fmt::format(
        "Queue: mean {:.2f}, max {:.0f} calls, non-empty {:.1f} % of the time; at most {:.0f} calls admitted (running or waiting "
        "for their first prefill chunk).\n",
        r.queue_mean, r.queue_max, r.queue_busy * 100, r.max_running);
    s += fmt::format("HBM used (time mean): {:.1f} of {:.1f} GB ({:.1f} %).\n", r.hbm_used * 1e-9, r.hbm_capacity * 1e-9,
                     r.hbm_capacity > 0 ? 100 * r.hbm_used / r.hbm_capacity : 0.0);
    for (auto [dir, u] : {std::pair{"H2D", &r.h2d}, std::pair{"D2H", &r.d2h}})
        s += fmt::format(
            "Link {}: busy {:.1f} % of the window; {:.0f} reloads or saves queued, wait mean {:.2f} ms, P99 {:.2f} ms.\n", dir,
            u->utilisation * 100, u->transfers, u->wait.mean * 1e3, u->wait.p99 * 1e3);
    if (r.link_stall > 0) s += fmt::format("Steps waited for the link's queue {:.2f} % of their time.\n", r.link_stall * 100);
    if (r.spec.f > 0)
        s += fmt::format("CPU: busy {:.1f} % of the window with the steps' offloaded attention (compute or DRAM, the larger).\n",
                         r.cpu_utilisation * 100);
    if (r.spec.f_policy == FPolicy::dynamic)
        s += fmt::format(
            "Split (dynamic): each step's f, the one in [0, {:g}] whose step is shortest: mean {:.3f}, P10 {:.3f}, P50 {:.3f}, "
            "P90 {:.3f}; the KV stays whole in HBM and the closed form is taken at the mean f.\n",
            r.spec.f, r.f_split.mean, r.f_split.p10, r.f_split.p50, r.f_split.p90);
    s += fmt::format("Little's law: {:.3f} calls in the system, {:.3f}/s × {:.3f} s = {:.3f} (off by {:.2f} %).\n", r.in_system,
                     r.requests_per_s, r.time_in_system, r.requests_per_s * r.time_in_system,
                     std::abs(r.littles_law_error()) * 100);
    s += fmt::format("Tokens: {:.0f} output (Σ O {:.0f}), {:.0f} prefilled (Σ A {:.0f}).\n", r.output_tokens,
                     r.expected_output_tokens, r.prefill_tokens, r.expected_prefill_tokens);
    if (r.spec.preempt != Preempt::none)
        s += fmt::format(
            "Preemption ({}): {:.0f} calls preempted over the run (the newest running when the next step's KV did not fit), "
            "{:.0f} swapped out ({:.3f} GB each way over the link), {:.0f} tokens prefilled again.\n",
            name(r.spec.preempt), r.preemptions, r.swaps, r.swapped_bytes * 1e-9, r.recomputed_tokens);
    if (r.spec.load.mode == LoadMode::concurrency && r.calls < 10 * r.spec.load.value)
        s += "Fewer than 10 calls per client: the run is mostly its start, not a steady state; give more --calls.\n";
    if (r.closed.saturated) s += "The closed form: the rate exceeds what the system serves; its point is the saturated one.\n";
    if (r.closed.memory_queued) s += "The closed form: not every client is admitted at once (memory or the running cap).\n";
    if (r.mechanism != SimGap::none)
        s += (detail::gap_over_10_percent(r) ? "Gap over 10 %, likely " : "Throughputs agree, but ") + mechanism_text(r) + ".\n";
    return s;
}
// The timeline in at most 16 rows (windows merged by whole groups), as a markdown table.
std::string timeline_table(const std::vector<SimSample>& tl) {
    std::string t = "| from s | to s | HBM used | H2D busy | D2H busy |\n|---:|---:|---:|---:|---:|\n";
    const std::size_t group = (tl.size() + 15) / 16;
    for (std::size_t i = 0; i < tl.size(); i += group) {
        const std::size_t end = std::min(tl.size(), i + group);
        double w = 0, hbm = 0, h2d = 0, d2h = 0;
        for (std::size_t k = i; k < end; ++k) {
            const double d = tl[k].t1 - tl[k].t0;
            w += d, hbm += tl[k].hbm * d, h2d += tl[k].h2d * d, d2h += tl[k].d2h * d;
        }
        t += fmt::format("| {:.2f} | {:.2f} | {:.1f} % | {:.1f} % | {:.1f} % |\n", tl[i].t0, tl[end - 1].t1, 100 * hbm / w,
                         100 * h2d / w, 100 * d2h / w);
    }
    return t;
}
}  // namespace

PlotSpec sim_plot(const SimResult& r, const std::string& title) {
    PlotSpec p;
    p.title = title;
    p.xlabel =
        "time, s (windows of " + fmt::format("{:g}", r.timeline.empty() ? 0.0 : r.timeline[0].t1 - r.timeline[0].t0) + " s)";
    p.ylabel = "share";
    PlotSeries hbm{PlotSeries::Style::line, "HBM used / capacity", {}, {}, {}, "#1f4e79"};
    PlotSeries h2d{PlotSeries::Style::line, "link H2D busy", {}, {}, {}, "#a04000"};
    PlotSeries d2h{PlotSeries::Style::line, "link D2H busy", {}, {}, {}, "#27ae60"};
    for (const SimSample& s : r.timeline) {
        const double mid = 0.5 * (s.t0 + s.t1);
        for (PlotSeries* ser : {&hbm, &h2d, &d2h}) ser->x.push_back(mid);
        hbm.y.push_back(s.hbm);
        h2d.y.push_back(s.h2d);
        d2h.y.push_back(s.d2h);
    }
    p.series = {hbm, h2d, d2h};
    return p;
}

SimReport sim_report(const Scenario& sc, const SimSpec& spec) {
    const PreparedScenario ps(sc);
    return {simulate(sc, spec), scenario_facts(ps)};
}

std::string sim_summary_line(const SimResult& r) {
    if (!r.feasible) return "SIM: cannot run: " + r.why_not + "\n";
    std::string s = fmt::format("SIM: {:.0f} tok/s simulated vs {:.0f} closed form ({}), ITL {} vs {} ms, TTFT P99 {:.0f} ms",
                                r.throughput, r.closed.throughput, percent(r.gap_throughput),
                                r.itl_measured ? fmt::format("{:.2f}", r.itl.mean * 1e3) : "—",
                                r.closed.batch > 0 ? fmt::format("{:.2f}", r.closed.itl * 1e3) : "—", r.ttft.p99 * 1e3);
    if (r.mechanism != SimGap::none) s += fmt::format("; gap: {}", name(r.mechanism));
    return s + "\n";
}

std::string render_sim_text(const SimReport& r, const BuiltScenario& built) {
    const SimResult& x = r.sim;
    std::string s = sim_summary_line(x) + "\n" + render::inputs_text(built, r.facts) + "\n";
    s += "Load: " + load_text(x.spec, built.scenario) + "\n";
    if (!x.feasible) return s;
    const std::string slo = slo_lines(x, built.scenario.policy);
    s += "\n" + comparison(x, false) + "\n" + (slo.empty() ? "" : slo + "\n") + distributions(x, false) + "\n" + notes(x);
    return s;
}

std::string render_sim_markdown(const SimReport& r, const BuiltScenario& built, const std::string& plot,
                                const std::string& command) {
    const SimResult& x = r.sim;
    std::string s = fmt::format("# kvroof discrete-event simulation\n\nGenerated by kvroof {} ({}", KVROOF_VERSION,
                                command.empty() ? "`kvroof sim`" + render::overrides_echo(built) : "`" + command + "`");
    s += ").\n\n`" + sim_summary_line(x).substr(0, sim_summary_line(x).size() - 1) + "`\n\n";
    s += "Load: " + load_text(x.spec, built.scenario) + "\n\n## Inputs\n\n```\n" + render::inputs_text(built, r.facts) + "```\n";
    if (!x.feasible) return s;
    const std::string slo = slo_lines(x, built.scenario.policy);
    s += "\n## Simulated and closed form\n\n" + comparison(x, true) + (slo.empty() ? "" : "\n" + slo) + "\n## Distributions\n\n" +
         distributions(x, true) + "\n## Notes\n\n" + notes(x) + "\n## HBM and link over time\n\n";
    if (!plot.empty()) s += fmt::format("![HBM and link use over time]({})\n\n", plot);
    return s + timeline_table(x.timeline);
}

namespace {
// What the simulation measured: the "simulated" object of sim_report_json.
json simulated_json(const SimResult& x) {
    auto dist = [](const Distribution& d) {
        return json{{"mean_s", d.mean}, {"p50_s", d.p50}, {"p90_s", d.p90}, {"p99_s", d.p99}};
    };
    json j = {{"throughput_tok_s", x.throughput},
              {"throughput_per_gpu_tok_s", x.throughput_per_gpu},
              {"requests_per_s", x.requests_per_s},
              {"ttft", dist(x.ttft)},
              {"itl", x.itl_measured ? dist(x.itl) : json(nullptr)},
              {"mean_step_s", x.mean_step},
              {"step_of_mean_content_s", x.step_of_mean},
              {"batch", x.batch},
              {"running", x.running},
              {"in_system", x.in_system},
              {"time_in_system_s", x.time_in_system},
              {"hbm_used_bytes", x.hbm_used},
              {"hbm_capacity_bytes", x.hbm_capacity},
              {"queue_mean", x.queue_mean},
              {"queue_max", x.queue_max},
              {"queue_busy_share", x.queue_busy},
              {"max_running", x.max_running},
              {"calls_measured", x.measured_calls},
              {"warmup_calls", x.warmup_calls},
              {"window_s", x.window},
              {"window_includes_drain", x.window_to_end},
              {"simulated_s", x.sim_time},
              {"steps", x.steps},
              {"events", x.events},
              {"output_tokens", x.output_tokens},
              {"expected_output_tokens", x.expected_output_tokens},
              {"prefill_tokens", x.prefill_tokens},
              {"expected_prefill_tokens", x.expected_prefill_tokens},
              {"littles_law_error", x.littles_law_error()},
              {"loading", x.loading},
              {"link_stall_share", x.link_stall},
              {"cpu_utilisation", x.cpu_utilisation},
              {"preemptions", x.preemptions},
              {"swaps", x.swaps},
              {"recomputed_tokens", x.recomputed_tokens},
              {"swapped_bytes", x.swapped_bytes}};
    j["f_split"] = {{"mean", x.f_split.mean}, {"p10", x.f_split.p10}, {"p50", x.f_split.p50}, {"p90", x.f_split.p90}};
    auto link = [](const SimLinkUse& u) {
        return json{{"busy_s", u.busy},
                    {"utilisation", u.utilisation},
                    {"transfers", u.transfers},
                    {"wait", {{"mean_s", u.wait.mean}, {"p50_s", u.wait.p50}, {"p90_s", u.wait.p90}, {"p99_s", u.wait.p99}}}};
    };
    j["link"] = {{"h2d", link(x.h2d)}, {"d2h", link(x.d2h)}};
    json tl = json::array();
    for (const SimSample& t : x.timeline)
        tl.push_back({{"t0_s", t.t0}, {"t1_s", t.t1}, {"hbm_share", t.hbm}, {"h2d_busy", t.h2d}, {"d2h_busy", t.d2h}});
    j["timeline"] = std::move(tl);
    return j;
}
}  // namespace

json sim_report_json(const SimReport& r, const BuiltScenario& built) {
    const SimResult& x = r.sim;
    const SimSpec& s = x.spec;
    json j{{"tool", "kvroof"},
           {"version", KVROOF_VERSION},
           {"command", "sim"},
           {"inputs", inputs_json(built, r.facts)},
           {"load",
            {{"mode", name(s.load.mode)},
             {"value", s.load.value},
             {"prefill_chunk", s.load.chunk},
             {"max_seqs", finite_or_null(s.load.max_seqs)},
             {"f", s.f},
             {"f_policy", name(s.f_policy)},
             {"ov", s.ov},
             {"gap_dist", name(s.gaps)},
             {"calls", s.calls},
             {"warmup", s.warmup},
             {"seed", s.seed},
             {"preempt", name(s.preempt)}}},
           {"feasible", x.feasible},
           {"closed_form", operating_point_json(x.closed)}};
    if (!x.feasible) {
        j["why_not"] = x.why_not;
        return j;
    }
    j["simulated"] = simulated_json(x);
    // Simulated over closed form (null where the closed form gives 0), and the likely mechanism when they differ by > 10 %.
    auto ratio = [](double sim, double closed) { return closed > 0 ? json(sim / closed) : json(nullptr); };
    j["gap"] = {{"throughput_ratio", ratio(x.throughput, x.closed.throughput)},
                {"itl_ratio", x.itl_measured ? ratio(x.itl.mean, x.closed.itl) : json(nullptr)},
                {"ttft_ratio", ratio(x.ttft.mean, x.closed.ttft)},
                {"mechanism", name(x.mechanism)}};
    return j;
}

}  // namespace kvroof::io
