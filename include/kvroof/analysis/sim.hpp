// SPDX-License-Identifier: MIT
#pragma once
// `kvroof sim`: a discrete-event simulation of a scenario at a load (C
// closed-loop clients or R requests/s), beside the closed form's operating
// point for the same load. The engine and its rules are in sim_engine.hpp;
// docs/model.md, "Discrete-event simulation", states what is simulated, what
// is shared with the closed form and how the gap between them is named.
//
// Statistics cover a window: it opens when the first `warmup` share of the
// calls has completed and closes when the last call arrives (after that the
// load falls as the run drains), or at the end when no call completed in it
// by then or the last call arrived before it opened (SimResult::window_to_end:
// the drain is then in it, and the text says so); token counts cover the whole run.

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kvroof/analysis/operating_point.hpp"
#include "kvroof/analysis/sim_engine.hpp"

namespace kvroof {

// What the gap to the closed form most likely comes from (none: within 10 %).
enum class SimGap {
    none,
    overload,
    admission_stall,
    link_queue,
    reload_overlap,
    dynamic_split,
    bunched_arrivals,
    granularity,
    burstiness,
    idle_gap_variance,
    unexplained
};

[[nodiscard]] constexpr std::string_view name(SimGap g) noexcept {
    switch (g) {
        case SimGap::none: return "none";
        case SimGap::overload: return "overload";
        case SimGap::admission_stall: return "admission_stall";
        case SimGap::link_queue: return "link_queue";
        case SimGap::reload_overlap: return "reload_overlap";
        case SimGap::dynamic_split: return "dynamic_split";
        case SimGap::bunched_arrivals: return "bunched_arrivals";
        case SimGap::burstiness: return "burstiness";
        case SimGap::idle_gap_variance: return "idle_gap_variance";
        case SimGap::granularity: return "step_granularity";
        case SimGap::unexplained: return "unexplained";
    }
    return "?";
}

// One direction of the link over the window (sim_link.hpp).
struct SimLinkUse {
    double busy = 0, utilisation = 0;  // s of transfers queued in the window; over the window
    double transfers = 0;  // the calls' own transfers (reloads or saves) queued in the window
    Distribution wait;  // s each of those waited in the queue
};

// One window of the timeline, as shares: HBM used / capacity, each direction's busy time / window.
struct SimSample {
    double t0 = 0, t1 = 0, hbm = 0, h2d = 0, d2h = 0;
};

struct SimResult {
    SimSpec spec;
    bool feasible = true;  // the weights and one call at its peak fit
    std::string why_not;  // when not
    double calls = 0, measured_calls = 0, warmup_calls = 0;  // completed in the run, in the window, before it
    double steps = 0, events = 0;  // events: arrivals, admissions, steps, first tokens, completions
    double sim_time = 0, window = 0;  // s simulated, s measured
    // The window ran to the end of the run, the drain in it: every call had arrived before it could close
    // (the warm-up ended after the last arrival, or no call completed before it).
    bool window_to_end = false;
    double throughput = 0, throughput_per_gpu = 0, requests_per_s = 0;  // output tokens/s; calls/s
    Distribution ttft, itl;  // s; ITL per decode token (the step that produced it)
    bool itl_measured = false;  // some call made a second token (none at O = 1: no ITL exists, not 0)
    double mean_step = 0;  // s
    // s, the step of the window's mean content (step_time of the mean, not the
    // mean of step_time): a fluid step, which the closed form, charging whole
    // prefill pieces, no longer uses; the gap measures the steps' spread
    double step_of_mean = 0;
    // Time means: calls decoding; calls running as the closed form counts them (decoding, reloading, or prefilling
    // from their first chunk on: an admitted call waiting for the chunk budget is not yet running).
    double batch = 0, running = 0;
    double in_system = 0, time_in_system = 0;  // time mean of calls queued or running; mean s from arrival to last token
    double hbm_used = 0, hbm_capacity = 0;  // bytes: time mean of weights + KV held (idle holds too); capacity
    double queue_mean = 0, queue_max = 0, queue_busy = 0;  // calls waiting for admission; share of time any waits
    double max_running = 0;
    double mean_idle = 0;  // s, Σ p·idle gap (closed loop; 0 open loop)
    SimLinkUse h2d, d2h;
    double loading = 0;  // time mean of calls admitted and waiting for their reload
    double link_stall = 0;  // share of the steps' time spent waiting for the link's queue
    double cpu_utilisation = 0;  // share of the window the CPU sockets spent on the steps' offloaded attention
    UnitSpread f_split;  // the f of the window's steps that decoded (static: f itself)
    std::vector<SimSample> timeline;  // the whole run, in windows of equal width (the last cut at the end)
    double output_tokens = 0, expected_output_tokens = 0;  // produced; Σ O of the calls issued
    double prefill_tokens = 0, expected_prefill_tokens = 0;  // prefilled; Σ A of the calls issued
    // Over the run (preemption policy): calls preempted, of them swapped out; tokens prefilled again
    // (prefill_tokens = Σ A + this); bytes swapped out to DRAM (and back)
    double preemptions = 0, swaps = 0, recomputed_tokens = 0, swapped_bytes = 0;
    OperatingPoint closed;  // the closed form at the same load, f and ov
    double gap_throughput = 0, gap_itl = 0, gap_ttft = 0;  // simulated / closed form − 1
    SimGap mechanism = SimGap::none;
    // Share of the run the GPU spent stepping (steps · mean step / time simulated).
    [[nodiscard]] double gpu_busy() const noexcept { return sim_time > 0 ? steps * mean_step / sim_time : 1.0; }

    // Little's law over the window: L / (λ·W) − 1.
    [[nodiscard]] double littles_law_error() const noexcept {
        const double lw = requests_per_s * time_in_system;
        return lw > 0 ? in_system / lw - 1.0 : 0.0;
    }
};

namespace detail {
// The likely mechanism behind a gap of more than 10 % in throughput or ITL,
// from what the run observed, the first that applies:
//   overload          the rate exceeds what the closed form, or the simulation, serves (5 % short),
//                     and the simulation's queue is non-empty over half the window; an open loop the
//                     simulation serves 5 % short of its rate with such a queue is overloaded even
//                     where the two throughputs agree
//   link queue        the calls' reloads or saves keep a direction of the link > 90 % busy (it, not
//                     the steps, sets the pace), or a reload waits in the H2D queue more than 5 % of
//                     the closed form's cycle (TTFT + decode, + the idle gap), or steps wait for the
//                     link > 5 % of their time
//   admission stall   calls queued > 25 % of the time, fewer decode than in the closed form (> 5 %) and
//                     the simulation serves less
//   reload overlap    the simulation serves more while reloads (parked sessions', swapped calls') cross the link: the
//                     closed form charges each reload in series with the steps (ov < 1), a reload in
//                     flight does not hold up the running calls' steps
//   dynamic split     the dynamic policy serves more than the closed form at its mean split
//   bunched arrivals  the simulation serves less while the GPU steps under 90 % of the time: calls
//                     arrive together and wait, the GPU idle between the bunches (deterministic gaps
//                     keep closed-loop clients in lockstep)
//   then, where the simulation is the slower (a longer step or a varying load cannot make it faster;
//   else unexplained), the larger of two departures from the fluid step, when above 5 %:
//     step granularity  the mean step over the step of the mean content (whole calls and
//                       chunks per step; the step is not linear in them)
//     batch variation   the ITL per token over the mean step (busier steps are longer and
//                       carry more tokens): burstiness (open loop), idle-gap variance
//                       (random gaps), else granularity again
//   burstiness / idle-gap variance when the load is random, else unexplained
// Whether throughput or ITL differ from the closed form by more than 10 %.
[[nodiscard]] inline bool gap_over_10_percent(const SimResult& r) noexcept {
    return std::abs(r.gap_throughput) > 0.1 || std::abs(r.gap_itl) > 0.1;
}

[[nodiscard]] inline SimGap name_gap(const SimResult& r) {
    const bool open = r.spec.load.mode == LoadMode::request_rate;
    // Arrivals faster than the simulation serves them: its queue grows without bound, whatever the throughputs say
    // (both then serve what they can; the closed form's TTFT has no queue in it).
    // Its queue is then busy nearly all the time: a short run's sampling noise in the rate, with no queue, is not one.
    if (open && r.requests_per_s < 0.95 * r.spec.load.value && r.queue_busy > 0.5) return SimGap::overload;
    if (!gap_over_10_percent(r)) return SimGap::none;
    // The closed form saturated, or the simulation short of the rate: overload only where the simulation's own queue
    // builds. One that keeps up with an empty queue (a run whose random arrivals came slow, or a closed form that charges
    // reloads in series with the steps) is explained below.
    if (r.closed.saturated && r.queue_busy > 0.5) return SimGap::overload;  // (an open loop served short: above)
    const auto saturated = [](const SimLinkUse& u) { return u.transfers > 0 && u.utilisation > 0.9; };
    if (saturated(r.h2d) || saturated(r.d2h) || r.h2d.wait.mean > 0.05 * (r.closed.e2e + r.mean_idle) || r.link_stall > 0.05)
        return SimGap::link_queue;
    // A stall makes the simulation slower: fewer decode than in the closed form, and it serves less.
    if (r.queue_busy > 0.25 && r.batch < 0.95 * r.closed.batch && r.gap_throughput < 0) return SimGap::admission_stall;
    // The closed form puts each reload in series with the steps; the simulation runs it beside them.
    // Faster: throughput more than 10 % above, or ITL more than 10 % below with throughput not more than 10 % below
    // (the same line as the slower side's below, so no gap falls between the two).
    const bool faster = r.gap_throughput > 0.1 || (r.gap_itl < -0.1 && r.gap_throughput >= -0.1);
    if (faster && r.h2d.transfers > 0 && r.spec.ov < 1) return SimGap::reload_overlap;
    // Each step balanced on its own content beats the mean split on every step (the closed form's, at f = the mean).
    if (r.spec.f_policy == FPolicy::dynamic && r.gap_throughput > 0.1) return SimGap::dynamic_split;
    // The fluid closed form keeps the GPU stepping; calls that arrive together leave it idle, then queue.
    if (r.gap_throughput < -0.1 && r.gpu_busy() < 0.9) return SimGap::bunched_arrivals;
    const bool random = r.spec.gaps != GapDist::deterministic;
    const SimGap load = open && random              ? SimGap::burstiness
                        : r.mean_idle > 0 && random ? SimGap::idle_gap_variance
                                                    : SimGap::none;
    const double granularity = r.step_of_mean > 0 ? r.mean_step / r.step_of_mean - 1.0 : 0.0;
    const double variation = r.mean_step > 0 && r.itl_measured ? r.itl.mean / r.mean_step - 1.0 : 0.0;
    // Longer or busier steps, and a varying load, only slow the simulation: none of them explains it running faster.
    // The gap over 10 % decides which way: an ITL 12 % shorter beside a throughput 0.3 % lower is a faster simulation.
    if (!(r.gap_throughput < -0.1 || r.gap_itl > 0.1)) return SimGap::unexplained;
    if (std::max(granularity, variation) > 0.05)
        return granularity >= variation || load == SimGap::none ? SimGap::granularity : load;
    return load == SimGap::none ? SimGap::unexplained : load;
}

// The step of the window's mean content (0 when no step was measured).
[[nodiscard]] inline double step_of_mean(const PreparedScenario& ps, const SimTally& t, const SimSpec& spec, double f) {
    if (!(t.steps > 0)) return 0.0;
    StepContent mean = t.content;
    for (double StepContent::*m :
         {&StepContent::decode_tokens, &StepContent::prefill_tokens, &StepContent::attn_c, &StepContent::attn_m,
          &StepContent::cpu_c, &StepContent::cpu_d, &StepContent::h2d, &StepContent::d2h})
        mean.*m /= t.steps;
    return step_time(ps, mean, f, spec.ov);
}

inline void fill_from_tally(SimResult& r, const SimEngine& e, double gpus) {
    const SimTally& t = e.tally;
    r.window = t.t_end - t.t_start;
    r.window_to_end = !e.window_closed();
    r.measured_calls = t.completed;
    // One wave of identical calls ends together: the warm-up's last call and every measured one at one
    // instant. No rate exists over that window; the whole run (no warm-up) has one.
    if (!(r.window > 0))
        throw InputError(
            "warmup: every measured call completed at the instant the warm-up ended (one wave of identical calls), so the "
            "window is empty; set warmup to 0 to measure the whole run");
    const double T = r.window;
    r.throughput = t.tokens_out / T;
    r.throughput_per_gpu = r.throughput / gpus;
    r.requests_per_s = t.completed / T;
    r.time_in_system = t.completed > 0 ? t.sojourn / t.completed : 0.0;
    r.in_system = t.in_system / T;
    // The time sums add their steps' dt one by one and may exceed the window T by a rounding (1 + 4e-14 of a share):
    // a share is at most 1 and a mean at most its maximum.
    r.queue_max = t.queue_max;
    r.queue_mean = std::min(t.queued / T, r.queue_max);
    r.queue_busy = std::min(t.queue_busy / T, 1.0);
    r.batch = t.batch / T;
    r.running = t.running / T;
    r.hbm_used = t.hbm_used / T;
    r.mean_step = t.steps > 0 ? t.step_time / t.steps : 0.0;
    r.ttft = t.ttft.summary();
    r.itl = t.itl.summary();
    r.itl_measured = t.itl.weight() > 0;
    r.loading = t.loading / T;
    r.link_stall = t.step_time > 0 ? t.link_stall / t.step_time : 0.0;
    r.cpu_utilisation = t.cpu_busy / T;
    r.f_split = t.f_split.summary();
    for (auto [out, in] : {std::pair{&r.h2d, &e.link.use[LinkPair::h2d]}, std::pair{&r.d2h, &e.link.use[LinkPair::d2h]}}) {
        out->busy = in->busy;
        out->utilisation = in->busy / T;
        out->transfers = in->transfers;
        out->wait = in->wait.summary();
    }
}

// The engine's timeline as shares of HBM capacity and of each window.
[[nodiscard]] inline std::vector<SimSample> timeline_samples(const SimTimeline& tl, double end, double hbm_capacity) {
    std::vector<SimSample> out;
    for (std::size_t b = 0; b < tl.bins.size(); ++b) {
        SimSample s;
        s.t0 = static_cast<double>(b) * tl.width;
        s.t1 = std::min(end, s.t0 + tl.width);
        const double w = s.t1 - s.t0;
        if (!(w > 0)) break;
        s.hbm = hbm_capacity > 0 ? tl.bins[b][SimTimeline::hbm] / w / hbm_capacity : 0.0;
        s.h2d = tl.bins[b][SimTimeline::h2d] / w;
        s.d2h = tl.bins[b][SimTimeline::d2h] / w;
        out.push_back(s);
    }
    return out;
}
}  // namespace detail

// Simulates the scenario under `spec`; the closed form's point beside it.
[[nodiscard]] inline SimResult simulate(const Scenario& sc, const SimSpec& spec) {
    spec.check_validity();
    const PreparedScenario ps(sc);
    SimResult r;
    r.spec = spec;
    // Dynamic: the closed form at f = 0 for the clients' start (the run's admission is f = 0's), at the mean f after it.
    r.closed = operating_point(ps, spec.load, spec.f_gpu(), spec.ov);
    r.hbm_capacity = ps.sys.hbm_capacity.raw();
    if (!(ps.hbm_free_bytes() > 0) || !ps.session_fits_hbm_peak(spec.f_gpu()) || !ps.session_fits_dram_peak(spec.f)) {
        r.feasible = false;
        r.why_not = !(ps.hbm_free_bytes() > 0)                ? "the weights do not fit in HBM"
                    : !ps.session_fits_hbm_peak(spec.f_gpu()) ? "one call at its peak context (S + O) does not fit in HBM"
                    : ps.idle == IdlePolicy::park
                        ? "one session parked at its peak context (S + O) does not fit in CPU DRAM"
                        : "one call's offloaded share at its peak context (S + O) does not fit in CPU DRAM";
        return r;
    }
    detail::SimEngine e(ps, spec);
    const double idle = spec.load.mode == LoadMode::concurrency ? detail::point_inputs(ps, spec.f, spec.load).sum_p_idle : 0.0;
    // Clients start spread over one closed-form cycle without its queue wait: the queue forms within a cycle.
    const double cycle = r.closed.e2e - r.closed.queue_wait + idle;
    e.run(std::isfinite(cycle) && cycle > 0 ? cycle : 0.0);
    r.mean_idle = idle;
    r.calls = spec.calls;
    r.warmup_calls = std::floor(spec.warmup * spec.calls);
    r.steps = static_cast<double>(e.steps);
    r.events = static_cast<double>(e.events);
    r.sim_time = e.now;
    r.max_running = static_cast<double>(e.max_running);
    r.output_tokens = e.output_tokens;
    r.expected_output_tokens = e.expected_output;
    r.prefill_tokens = e.prefill_tokens;
    r.expected_prefill_tokens = e.expected_prefill;
    r.preemptions = static_cast<double>(e.preemptions);
    r.swaps = static_cast<double>(e.swaps);
    r.recomputed_tokens = e.recomputed_tokens;
    r.swapped_bytes = e.swapped_bytes;
    detail::fill_from_tally(r, e, replica_gpus(sc.hardware));
    const double f = spec.f_policy == FPolicy::dynamic ? r.f_split.mean : spec.f;
    if (spec.f_policy == FPolicy::dynamic) r.closed = operating_point(ps, spec.load, f, spec.ov);
    r.step_of_mean = detail::step_of_mean(ps, e.tally, spec, f);
    r.timeline = detail::timeline_samples(e.timeline, std::max(e.now, e.link.time()), r.hbm_capacity);
    auto gap = [](double sim, double closed) { return closed > 0 ? sim / closed - 1.0 : 0.0; };
    r.gap_throughput = gap(r.throughput, r.closed.throughput);
    r.gap_itl = r.itl_measured ? gap(r.itl.mean, r.closed.itl) : 0.0;
    r.gap_ttft = gap(r.ttft.mean, r.closed.ttft);
    r.mechanism = detail::name_gap(r);
    return r;
}

}  // namespace kvroof
