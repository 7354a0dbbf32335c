// SPDX-License-Identifier: MIT
// outputs/sim_vs_closed_form.md: the simulator beside the closed form over a
// sweep of load, one table and one paragraph per scenario, from SimSweep.
#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/sim_render.hpp"

namespace kvroof::io {
namespace {

bool open_loop(const SimSweep& s) { return s.spec.mode == LoadMode::request_rate; }

std::string load_label(const SimSweep& s, double v) {
    return open_loop(s) ? fmt::format("R = {:g}/s", v) : fmt::format("C = {:g}", v);
}

std::string signed_pct(double g) { return fmt::format("{:+.1f} %", g * 100); }

// What each mechanism means, in words (docs/model.md, "How the gap is named").
std::string_view meaning(SimGap g) {
    switch (g) {
        case SimGap::none: return "";
        case SimGap::overload:
            return "calls arrive faster than the system serves them, so the queue grows through the run and TTFT is that of a "
                   "growing queue";
        case SimGap::admission_stall:
            return "the simulator admits a call only when its peak KV (S + O tokens) fits beside what is reserved, so calls "
                   "queue while the closed form, counting the mean occupancy, runs more at once (the batch column)";
        case SimGap::link_queue:
            return "parked sessions' reloads and saves go through the link's FIFO queues: the link, not the steps, sets "
                   "the pace, or reloads wait before their call can prefill; the closed form spreads the same transfers over "
                   "its steps (in series with the GPU's work at ov = 0) and charges no wait";
        case SimGap::dynamic_split:
            return "each step sends to the CPU the share of its own content that makes it shortest, where the closed form "
                   "runs the mean split on every step; a step's time is a maximum of its paths, so balancing each step beats "
                   "balancing the mean";
        case SimGap::granularity:
            return "a step carries whole calls and whole prefill chunks, so steps with a chunk are far longer than "
                   "decode-only ones, and a step's time is not linear in its content; the closed form charges the step of "
                   "the mean content";
        case SimGap::reload_overlap:
            return "reloads cross the link beside the steps, where the closed form charges each in series with the GPU's "
                   "work (at ov < 1), so the simulation serves more";
        case SimGap::bunched_arrivals:
            return "calls arrive together and queue for their prefill, leaving the GPU idle between the bunches (the "
                   "simulation's GPU steps under 90 % of the time), where the fluid closed form keeps it stepping";
        case SimGap::burstiness:
            return "random arrivals make the batch vary from step to step; busier steps are longer and carry more tokens, "
                   "so the ITL per token exceeds the mean step";
        case SimGap::idle_gap_variance:
            return "random idle gaps change how many clients are active at once; busier steps are longer and carry more "
                   "tokens";
        case SimGap::unexplained: return "nothing the run observed explains it";
    }
    return "";
}

std::string table(const SimSweep& s) {
    std::string t = fmt::format(
        "| {} | closed tok/s | closed ITL ms | sim tok/s | sim ITL P50 ms | sim ITL P99 ms | sim TTFT P50 ms | sim TTFT P99 ms "
        "| batch sim / closed | gap tok/s | gap ITL | mechanism |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        open_loop(s) ? "calls/s" : "clients");
    for (const SimResult& r : s.rows) {
        if (!r.feasible) {
            t += fmt::format("| {:g} | {} |{}\n", r.spec.load.value, r.why_not, " | | | | | | | | | |");
            continue;
        }
        // No call made a second token (one output token each): no ITL was measured, none is compared.
        const auto itl = [&r](double x) { return r.itl_measured ? fmt::format("{:.2f}", x * 1e3) : std::string("—"); };
        t += fmt::format("| {:g} | {:.0f} | {:.2f} | {:.0f} | {} | {} | {:.0f} | {:.0f} | {:.2f} / {:.2f} | {} | {} | {} |\n",
                         r.spec.load.value, r.closed.throughput, r.closed.itl * 1e3, r.throughput, itl(r.itl.p50), itl(r.itl.p99),
                         r.ttft.p50 * 1e3, r.ttft.p99 * 1e3, r.batch, r.closed.batch, signed_pct(r.gap_throughput),
                         r.itl_measured ? signed_pct(r.gap_itl) : std::string("—"), name(r.mechanism));
    }
    return t;
}

std::string paragraph(const SimSweep& s) {
    const SimSweepFacts& f = s.facts;
    const SimResult& w = s.rows[f.worst];
    const SimResult& wi = s.rows[f.worst_itl];
    std::string p = fmt::format(
        "{} of {} loads agree within 10 % on throughput and ITL. The largest throughput gap is {} at {} ({:.0f} tok/s "
        "simulated, {:.0f} closed form); the largest ITL gap is {} at {} ({:.2f} ms mean, {:.2f} ms closed form).",
        f.agree, s.rows.size(), signed_pct(w.gap_throughput), load_label(s, w.spec.load.value), w.throughput, w.closed.throughput,
        signed_pct(wi.gap_itl), load_label(s, wi.spec.load.value), wi.itl.mean * 1e3, wi.closed.itl * 1e3);
    for (const auto& [g, loads] : f.named) {
        std::string at;
        for (const double v : loads) at += (at.empty() ? "" : ", ") + load_label(s, v);
        p += fmt::format(" *{}* at {}: {}.", name(g), at, meaning(g));
    }
    if (s.spec.f_policy == FPolicy::dynamic)
        for (const SimResult& r : s.rows)
            if (r.feasible)
                p += fmt::format(
                    " At {} the dynamic split's f per step has mean {:.3f}, P10 {:.3f}, P90 {:.3f} (the closed form is "
                    "taken at the mean f).",
                    load_label(s, r.spec.load.value), r.f_split.mean, r.f_split.p10, r.f_split.p90);
    const SimResult& lo = s.rows.front();
    const SimResult& hi = s.rows.back();
    p += fmt::format(
        " TTFT P99 goes from {:.0f} ms at {} to {:.0f} ms at {}; the closed form's mean TTFT from {:.0f} to {:.0f} ms.\n",
        lo.ttft.p99 * 1e3, load_label(s, lo.spec.load.value), hi.ttft.p99 * 1e3, load_label(s, hi.spec.load.value),
        lo.closed.ttft * 1e3, hi.closed.ttft * 1e3);
    return p;
}

}  // namespace

std::string sim_vs_closed_form_markdown(const std::string& description, const std::vector<SimSweepPage>& pages) {
    std::string md = fmt::format(
        "# The simulator beside the closed form\n\n{}.\n\nEach row is one `kvroof sim` run (docs/model.md, \"Discrete-event "
        "simulation\") beside the closed form's operating point at the same load. ITL and TTFT quantiles are the "
        "simulator's; gaps are simulated / closed form − 1 (ITL: the simulated mean); the mechanism is named when "
        "throughput or ITL differ by more than 10 %, or when an open loop's queue grows.\n",
        description);
    for (const SimSweepPage& pg : pages) {
        const SimSweepSpec& sp = pg.sweep.spec;
        md += fmt::format("\n## {}\n\n{}. `kvroof sim{} --gap-dist {} --calls {:g} --seed {} {} X`\n\n", pg.name, pg.description,
                          pg.command, name(sp.gaps), sp.calls, sp.seed,
                          sp.mode == LoadMode::request_rate ? "--request-rate" : "--concurrency");
        md += table(pg.sweep) + "\n" + paragraph(pg.sweep);
    }
    return md;
}

}  // namespace kvroof::io
