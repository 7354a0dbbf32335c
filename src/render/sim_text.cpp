// SPDX-License-Identifier: MIT
// `kvroof sim`'s sentences: the gap's mechanism and the SLOs missed (sim_text.hpp).
#include "sim_text.hpp"

#include <fmt/format.h>

namespace kvroof::io {

std::string mechanism_text(const SimResult& r) {
    switch (r.mechanism) {
        case SimGap::none: return "";
        case SimGap::overload:
            return fmt::format(
                "overload: calls arrive faster than the system serves them ({:.3f}/s served of {:.3f}/s asked), so the queue "
                "grows through the run{}",
                r.requests_per_s, r.spec.load.value,
                r.closed.saturated ? " (the closed form shows its saturated point)" : "; the closed form serves the rate");
        case SimGap::admission_stall:
            return fmt::format(
                "admission stall: calls waited for HBM, DRAM or the running cap {:.0f} % of the time; {}, the closed form "
                "counts the mean occupancy",
                r.queue_busy * 100,
                r.spec.preempt == Preempt::none
                    ? "the simulator reserves each call's peak KV (S + O tokens)"
                    : fmt::format("the simulator admits a call when its prompt fits and preempted {:.0f} calls when decode "
                                  "outgrew HBM",
                                  r.preemptions));
        case SimGap::link_queue:
            return fmt::format(
                "queueing at the link: {} kept the link busy {:.0f} % (H2D) and {:.0f} % (D2H) of the time; {}steps waited "
                "for the link {:.1f} % of their time; the closed form spreads the same transfers over its steps as a fluid "
                "share of each (in series with the GPU's work at ov = 0) and charges no wait",
                r.h2d.transfers + r.d2h.transfers > 0 ? "the steps' offloaded attention and the calls' reloads and saves"
                                                      : "the steps' offloaded attention (no call's reload or save)",
                r.h2d.utilisation * 100, r.d2h.utilisation * 100,
                r.h2d.transfers > 0 ? fmt::format("a reload waited {:.1f} ms on average (P99 {:.1f} ms) in the H2D queue before "
                                                  "its call could prefill, and ",
                                                  r.h2d.wait.mean * 1e3, r.h2d.wait.p99 * 1e3)
                                    : std::string(),
                r.link_stall * 100);
        case SimGap::dynamic_split:
            return fmt::format(
                "dynamic split: each step sends to the CPU the share of its own content that makes it shortest, while the "
                "closed form runs the mean split, f = {:.3f}, on every step; a step's time is a maximum of its paths, so "
                "balancing each step beats balancing the mean",
                r.f_split.mean);
        case SimGap::reload_overlap:
            return fmt::format(
                "reloads beside the steps: reloads kept the link busy {:.0f} % (H2D) of the time, and a call's reload in "
                "flight does not hold up the running calls' steps; the closed form charges each reload in series with the "
                "GPU's work at ov = {:g}, so the simulation serves more",
                r.h2d.utilisation * 100, r.spec.ov);
        case SimGap::bunched_arrivals:
            return fmt::format(
                "bunched arrivals: the GPU stepped only {:.0f} % of the time; calls arrive together{}, queue for their "
                "prefill, and leave the GPU idle between the bunches, where the fluid closed form keeps it stepping",
                r.gpu_busy() * 100,
                r.spec.load.mode == LoadMode::concurrency && r.spec.gaps == GapDist::deterministic
                    ? " (deterministic gaps keep closed-loop clients in lockstep)"
                    : "");
        case SimGap::burstiness:
            return fmt::format(
                "burstiness: Poisson arrivals make the batch vary from step to step; busier steps are longer and carry more "
                "tokens, so the ITL per token, {:.2f} ms, exceeds the mean step, {:.2f} ms, and calls stay longer; the fluid "
                "mean hides both",
                r.itl.mean * 1e3, r.mean_step * 1e3);
        case SimGap::idle_gap_variance:
            return fmt::format(
                "idle-gap variance: random gaps change how many clients are active at once; busier steps are longer and carry "
                "more tokens, so the ITL per token, {:.2f} ms, exceeds the mean step, {:.2f} ms",
                r.itl.mean * 1e3, r.mean_step * 1e3);
        case SimGap::granularity:
            return fmt::format(
                "step granularity: a step carries whole calls and whole prefill chunks, so its content varies from step to "
                "step, and its time is not linear in its content (rooflines and the overlap are maxima: a decode-only step "
                "reads every weight for a few tokens, a busier one tips onto another resource); the mean step, {:.2f} ms, "
                "exceeds the step of the mean content, {:.2f} ms; the closed form charges whole prefill pieces, not the "
                "spread of calls and pieces from step to step",
                r.mean_step * 1e3, r.step_of_mean * 1e3);
        case SimGap::unexplained:
            return "no single mechanism stands out (few queue waits, steps close to the step of their mean content)";
    }
    return "";
}

// The ITL and the mean TTFT, as the closed form checks them. Under --slo-tpot-bounds step the closed form's bare
// decode step alone: the simulator's steps carry prefill chunks, and their mean is no bare step.
std::string slo_lines(const SimResult& x, const PolicySpec& pol) {
    std::string s;
    auto line = [&](const char* what, const char* flag, double sim, double closed, double slo, bool closed_meets) {
        const bool sim_meets = sim <= slo;
        if (sim_meets && closed_meets) return;
        s += fmt::format("SLO: the {} is {:.2f} ms simulated and {:.2f} ms in the closed form, against the {} {:.1f} ms: {}.\n",
                         what, sim * 1e3, closed * 1e3, flag, slo * 1e3,
                         !sim_meets && !closed_meets ? "both miss it"
                         : !sim_meets                ? "the simulation misses it"
                                                     : "the closed form misses it");
    };
    if (pol.slo_tpot && x.itl_measured && x.closed.batch > 0) {
        if (pol.slo_tpot_bounds == SloTarget::itl)
            line("ITL", "TPOT SLO (--slo-tpot)", x.itl.mean, x.closed.itl, pol.slo_tpot->raw(), x.closed.within_slo_tpot);
        else if (!x.closed.within_slo_tpot)
            s += fmt::format(
                "SLO: the closed form's bare decode step, {:.2f} ms, misses the TPOT SLO (--slo-tpot, on the step) {:.1f} ms "
                "(the simulation's steps carry prefill chunks: it has no bare step to compare).\n",
                x.closed.step_bare * 1e3, pol.slo_tpot->raw() * 1e3);
    }
    if (pol.slo_ttft)
        line("mean TTFT", "TTFT SLO (--slo-ttft)", x.ttft.mean, x.closed.ttft, pol.slo_ttft->raw(), x.closed.within_slo_ttft);
    return s;
}

}  // namespace kvroof::io
