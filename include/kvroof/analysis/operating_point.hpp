// SPDX-License-Identifier: MIT
#pragma once
// An operating point as a serving benchmark reports it: a fixed decode batch
// (--batch B: B sequences decoding together, a finished one replaced at once)
// or C closed-loop clients (--concurrency C: each sends its next request when
// the last completes, after the class's idle gap), with prefill run the way
// engines run it. docs/model.md, "Operating points", gives every equation.
//
// The steady state is fluid. Per step, x requests start and x finish; class i
// (probability p_i) has S_c cached and A new input tokens and O output tokens,
// the first of which its prefill produces, so it decodes D = O − 1 steps:
//   decoding sequences   B = x·Σ p·D
//   prefill tokens       P = x·Σ p·A            (chunked; at most the step's budget, cycle_budget)
// Decode token j reads the context S + j, so over a call decode reads the mean
// context S + O/2 (context growth). One step reads the weights once for all of
// its tokens (the MoE experts its B + P tokens touch):
//   chunked:  T = combine(GEMMs + attention + elementwise, offloaded path, ov)
//             + c0 over the B decode tokens and the P prefill tokens together,
//             where GEMMs = max(tokens·linear FLOP/F, W/BW), attention =
//             max(attention FLOP/F, KV bytes/BW) and elementwise =
//             tokens·a/BW: separate kernels, each on its own roofline, one
//             after the other;
//             ITL = T (the mean step a decoding request sees: itself beside
//             the others, only their prefill), TTFT_i = ½·β·T + ⌈A_i/chunk⌉·T_i,
//             T_i the step of the others decoding plus one chunk of that
//             request, β the chance the others keep the GPU stepping (+ the
//             queue wait when the chunk budget, not the clients, limits starts)
//   separate: T_bare = the decode step alone; every request's prefill is its own
//             pass τ_i (call_demand.hpp, weights read again) between steps:
//             ITL = T_bare + x_o·Σ p·τ (the others'),  TTFT_i = τ_i + ½·β·T_bare
// The GPU steps at T_gpu, the same step with every start's decode and prefill
// (for a fixed batch the step a request sees), so requests complete at x/T_gpu
// a second: throughput (output tokens/s) = x·Σ p·O / T_gpu. Closed loop
// (Little's law): C = (x/T_gpu)·Σ p·(TTFT + D·ITL + idle).
// Memory is the fluid occupancy, the time-average of what sessions hold, since
// paged engines allocate KV as tokens arrive: decoding sequences hold S + O/2
// on average, prefilling ones S_c + A/2, idle ones (hold) S + O. As engines
// do, a closed loop admits only the requests that fit and queues the rest:
// their wait is in TTFT (a fixed --batch that does not fit is an answer).

#include <algorithm>
#include <cmath>
#include <optional>

#include "kvroof/analysis/point_run.hpp"
#include "kvroof/analysis/point_seen.hpp"
#include "kvroof/physics/monotone_root.hpp"

namespace kvroof {

namespace detail {
// The starts per step x at which the closed loop holds C clients, or the
// chunk-capped x with the queue wait of the clients beyond it. At the cap the
// C clients need not all queue: from the C whose request shares the others'
// starts at the cap to the C it holds sharing every start's, they run the
// budget full with none queued, and `share` (LoadSpec::backlog) is the
// sharing between at which the point holds exactly C (Little's law; TTFT
// grows with it). Beyond that the rest queue.
inline void solve_concurrency(const PreparedScenario& ps, const PointInputs& in, const LoadSpec& load, double f, double ov,
                              double x_cap, double& x, double& wait, bool& capped, double& share) {
    const double C = load.value;
    auto excess = [&](double xx) { return clients_at(ps, in, load, f, ov, xx) - C; };
    double hi = in.sum_pD > 0 ? C / in.sum_pD : 1.0;  // all C decoding: more than C in the system
    while (excess(hi) < 0 && hi < 1e30) hi *= 2.0;
    hi = std::min(hi, x_cap);
    const double g_hi = excess(hi);
    if (g_hi > 0) {
        x = last_feasible(excess, 0.0, excess(0.0), hi, g_hi, 1e-12);
        return;
    }
    x = hi;  // the cap binds: the clients beyond it wait for the chunk budget
    capped = std::isfinite(x_cap) && hi >= x_cap;
    share = capped ? 1.0 : 0.0;
    LoadSpec queued = load;
    queued.backlog = share;
    const OperatingPoint at = point_at(ps, in, queued, f, ov, x, 0.0);
    if (capped && at.concurrency > C) {  // the budget runs full and no request queues
        auto held = [&](double s) {
            queued.backlog = s;
            return point_at(ps, in, queued, f, ov, x, 0.0).concurrency - C;
        };
        share = last_feasible(held, 0.0, std::min(held(0.0), 0.0), 1.0, at.concurrency - C, 1e-12);
        wait = 0;
        return;
    }
    wait = at.requests_per_s > 0 ? std::max(0.0, (C - at.concurrency) / at.requests_per_s) : 0.0;
}

// The starts per step at which requests complete at R per second; false when
// no x up to the chunk cap reaches R (the system saturates first).
inline bool solve_rate(const PreparedScenario& ps, const PointInputs& in, const LoadSpec& load, double f, double ov, double x_cap,
                       double& x) {
    auto excess = [&](double xx) { return point_at(ps, in, load, f, ov, xx, 0.0).requests_per_s - load.value; };
    double hi = std::min(1.0, x_cap), g_hi = excess(hi);
    while (g_hi < 0 && hi < x_cap && hi < 1e9) {  // the rate x/ITL(x) rises towards a finite limit
        hi = std::min(2.0 * hi, x_cap);
        g_hi = excess(hi);
    }
    if (g_hi < 0) return false;
    x = last_feasible(excess, 0.0, excess(0.0), hi, g_hi, 1e-12);
    return true;
}
}  // namespace detail

// The operating point for the load at offload fraction f and overlap ov.
[[nodiscard]] inline OperatingPoint operating_point(const PreparedScenario& ps, const LoadSpec& load, double f, double ov);
namespace detail {
// The same without admission: every client's request held at once, fitting or not.
[[nodiscard]] inline OperatingPoint unqueued_point(const PreparedScenario& ps, const LoadSpec& load, double f, double ov);
}  // namespace detail

namespace detail {
// Whether a point meets the policy's SLOs: the ITL (or the bare step) and TTFT.
// Requests of one output token have no inter-token latency to bound.
inline void check_slos(const PreparedScenario& ps, OperatingPoint& r) {
    const PolicySpec& pol = ps.scenario->policy;
    if (pol.slo_tpot && ps.second_token)
        r.within_slo_tpot = (pol.slo_tpot_bounds == SloTarget::itl ? r.itl : r.step_bare) <= pol.slo_tpot->raw();
    if (pol.slo_ttft) r.within_slo_ttft = r.ttft <= pol.slo_ttft->raw();
}

// Saturate: the most clients the system can hold running: their point fits
// in HBM and DRAM and the chunk budget still starts them all (clients beyond
// either only queue, adding no throughput). Best (the solved mode): the same,
// also within the SLOs. Every condition is monotone in C (every held
// quantity, the starts per step, the step, ITL and TTFT grow with it); one
// client when even one does not qualify.
[[nodiscard]] inline OperatingPoint saturated_point(const PreparedScenario& ps, const LoadSpec& load, double f, double ov) {
    const bool slos = load.mode == LoadMode::best;
    LoadSpec c = load;
    c.mode = LoadMode::concurrency;
    auto at = [&](double clients) {
        c.value = clients;
        OperatingPoint p = unqueued_point(ps, c, f, ov);
        check_slos(ps, p);
        return p;
    };
    auto runs = [&](const OperatingPoint& p) {
        return p.fits && !p.prefill_bound && p.running <= load.running_cap() &&
               (!slos || (p.within_slo_tpot && p.within_slo_ttft));
    };
    double lo = 1.0, hi = 2.0;
    if (!runs(at(lo))) return at(lo);
    while (runs(at(hi))) {
        lo = hi;
        hi *= 2.0;
        if (hi > limits::kMaxLoad) return at(lo);
    }
    for (int i = 0; i < 60 && hi - lo > 1e-6 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (runs(at(mid)) ? lo : hi) = mid;
    }
    return at(lo);
}
}  // namespace detail

namespace detail {
// Concurrency beyond memory (or --max-seqs): an engine admits only the requests
// whose KV fits (up to max_seqs) and queues the rest, so the point runs as full as allowed and every
// request waits its turn: queue wait = (C − running) / requests per second.
[[nodiscard]] inline OperatingPoint queue_beyond_memory(const PreparedScenario& ps, const LoadSpec& load, double f, double ov) {
    OperatingPoint r = saturated_point(ps, load, f, ov);
    const double extra = r.requests_per_s > 0 ? std::max(0.0, load.value - r.concurrency) / r.requests_per_s : 0.0;
    r.queue_wait += extra;
    r.ttft += extra;
    r.e2e += extra;
    r.concurrency = load.value;
    r.memory_queued = true;
    return r;
}
}  // namespace detail

namespace detail {
// What every point states beside its rates: the requests in the engine and whether it fits.
inline void finish_point(const PreparedScenario& ps, double f, OperatingPoint& r) {
    r.running = r.in_engine();
    r.weights_fit = ps.hbm_free_bytes() > 0;
    r.session_fits = ps.session_fits_hbm_peak(f) && ps.session_fits_dram_peak(f);
    r.fits = r.weights_fit && r.session_fits && r.hbm_used <= r.hbm_capacity && r.dram_used <= r.dram_capacity;
}

// An open loop asked for more than it serves: the queue grows and the engine runs the open loop at
// the largest rate it does serve — the most starts per step, at most x_hi, whose point fits in memory
// and keeps the requests in the engine within the running cap (each grows with x; bisection). Its
// own memory, not a closed loop's: idle sessions between calls hold nothing here.
inline OperatingPoint open_loop_full(const PreparedScenario& ps, const PointInputs& in, const LoadSpec& load, double f, double ov,
                                     double x_hi) {
    auto at = [&](double x) {
        OperatingPoint p = point_at(ps, in, load, f, ov, x, 0.0);
        finish_point(ps, f, p);
        return p;
    };
    auto runs = [&](const OperatingPoint& p) { return p.fits && p.running <= load.running_cap(); };
    double lo = 0.0, hi = x_hi;
    if (!std::isfinite(hi)) {  // no chunk budget: double until a point does not run
        hi = 1.0;
        while (runs(at(hi)) && hi < 1e9) {
            lo = hi;
            hi *= 2.0;
        }
    }
    if (runs(at(hi))) lo = hi;
    for (int i = 0; i < 60 && lo < hi && hi - lo > 1e-9 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (runs(at(mid)) ? lo : hi) = mid;
    }
    OperatingPoint r = at(lo);
    r.saturated = true;
    return r;
}
}  // namespace detail

inline OperatingPoint detail::unqueued_point(const PreparedScenario& ps, const LoadSpec& load, double f, double ov) {
    if (load.mode == LoadMode::saturate || load.mode == LoadMode::best) return detail::saturated_point(ps, load, f, ov);
    const detail::PointInputs in = detail::point_inputs(ps, f, load);
    const bool chunked = load.prefill == PrefillMode::chunked;
    // The chunk budget caps the starts per step (a pipeline's cycle: one budget per micro-batch).
    const double x_cap = chunked && in.sum_pA > 0 ? cycle_budget(ps.pipe, load.chunk) / in.sum_pA : kUnbounded;
    double x = 0, wait = 0, share = 0;
    bool capped = false;
    switch (load.mode) {
        case LoadMode::batch:
            if (!(in.sum_pD > 0)) throw InputError("batch: every call has one output token: no sequence decodes");
            x = load.value / in.sum_pD;
            capped = x > x_cap;
            x = std::min(x, x_cap);
            break;
        case LoadMode::concurrency: detail::solve_concurrency(ps, in, load, f, ov, x_cap, x, wait, capped, share); break;
        default: {
            const bool served = detail::solve_rate(ps, in, load, f, ov, x_cap, x);
            if (!served || detail::point_at(ps, in, load, f, ov, x, 0.0).in_engine() > load.running_cap()) {
                // Overloaded: the queue grows (without bound, or to the run's N) and the engine runs as full as it may.
                if (ps.hbm_free_bytes() > 0 && ps.session_fits_hbm_peak(f) && ps.session_fits_dram_peak(f))
                    return detail::open_loop_full(ps, in, load, f, ov, served ? x : x_cap);
                OperatingPoint r = detail::saturated_point(ps, load, f, ov);  // nothing runs: the point says why
                r.saturated = true;
                return r;
            }
            break;
        }
    }
    LoadSpec at = load;
    // The chunk budget binds: the requests beyond it queue (a closed loop's: the sharing its solve found).
    if (capped) at.backlog = load.mode == LoadMode::concurrency ? share : 1.0;
    OperatingPoint r = detail::point_at(ps, in, at, f, ov, x, wait);
    r.prefill_bound = capped;
    if (load.mode == LoadMode::concurrency) r.concurrency = load.value;
    detail::finish_point(ps, f, r);
    return r;
}

inline OperatingPoint operating_point(const PreparedScenario& ps, const LoadSpec& asked, double f, double ov) {
    if (asked.mode == LoadMode::request_rate && asked.requests == 1) {  // one request is that request alone, at any rate
        LoadSpec one = asked;
        one.mode = LoadMode::concurrency;
        one.value = 1;
        return operating_point(ps, one, f, ov);
    }
    LoadSpec load = asked;  // a run of N requests has no more than N clients
    if (load.mode == LoadMode::concurrency) load.value = std::min(load.value, load.requests);
    OperatingPoint r = detail::unqueued_point(ps, load, f, ov);
    if (load.mode == LoadMode::concurrency && (!r.fits || r.running > load.running_cap()) && r.weights_fit && r.session_fits)
        r = detail::queue_beyond_memory(ps, load, f, ov);
    // An open loop whose steady state does not fit in memory saturates too: the engine admits only
    // the requests that fit and the rest queue, their queue growing (to the run's N) as when the rate
    // is more than the chunk budget or --max-seqs start.
    if (load.mode == LoadMode::request_rate && !r.saturated && !r.fits && r.weights_fit && r.session_fits)
        r = detail::open_loop_full(ps, detail::point_inputs(ps, f, load), load, f, ov, r.starts_per_step);
    const bool sent_at_once =
        load.mode == LoadMode::saturate || (load.mode == LoadMode::concurrency && load.value >= load.requests);
    // The wave only where it is used: a run sent at once, and the open loop's floor.
    const std::optional<detail::Wave> wave =
        sent_at_once || load.mode == LoadMode::request_rate ? detail::wave_of(ps, load, f, ov) : std::nullopt;
    // An open loop whose N arrivals are all in before the wave would have prefilled them runs as that wave
    // (a benchmark's QPS=INF), not as the steady state at its rate.
    const bool at_once = sent_at_once || (load.mode == LoadMode::request_rate && wave && std::isfinite(load.requests) &&
                                          (load.requests - 1.0) / load.value <= wave->prefill);
    // A run of N that does not all run at once: the engine runs what it may and the rest wait their turn, each
    // its own share of the backlog (backlog_wait), not a closed loop's steady queue (every client behind all
    // the others) nor none at all.
    const bool closed_queue = load.mode == LoadMode::concurrency && r.memory_queued;
    const bool chunk_queue = load.mode == LoadMode::concurrency && !r.memory_queued && r.prefill_bound;
    const bool rate_queue = load.mode == LoadMode::request_rate && r.saturated;
    if (std::isfinite(load.requests) && r.weights_fit && r.session_fits &&
        ((at_once && !wave) || closed_queue || chunk_queue || rate_queue)) {
        // What runs without waiting: the requests in the engine of an open loop; the clients the memory-full point
        // holds for a closed loop or a run sent at once (idle between calls included: they wait for nothing), or
        // those the chunk budget admits (the steady queue solve_concurrency charged is replaced).
        double n = rate_queue ? r.running : r.concurrency;
        if (closed_queue) {
            r = detail::saturated_point(ps, load, f, ov);  // queue_beyond_memory's wait was the closed loop's
            n = r.concurrency;
        } else if (chunk_queue) {
            n = load.value - r.queue_wait * r.requests_per_s;
            r.ttft -= r.queue_wait;
            r.e2e -= r.queue_wait;
            r.queue_wait = 0;
        }
        const double N = load.requests, mu = r.requests_per_s;
        const double w = !(mu > 0)                            ? 0.0
                         : load.mode == LoadMode::concurrency ? detail::closed_backlog_wait(N, load.value, n, mu)
                         : rate_queue                         ? detail::backlog_wait(N, n, mu, load.value)
                                                              : detail::backlog_wait(N, n, mu, kUnbounded);
        r.queue_wait += w;
        r.ttft += w;
        r.e2e += w;
        if (closed_queue) {
            r.concurrency = load.value;
            r.memory_queued = true;
        }
    }
    detail::finite_run(ps, f, r, load, wave);
    if (wave && at_once && r.weights_fit && r.session_fits) {
        detail::apply_wave(ps, *wave, load.requests, r);
        if (load.mode == LoadMode::request_rate) r.saturated = false;  // all in before the wave: nothing queues
    }
    detail::check_slos(ps, r);
    return r;
}

}  // namespace kvroof
