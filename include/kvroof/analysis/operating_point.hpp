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
//   prefill tokens       P = x·Σ p·A            (chunked; at most `chunk` per step)
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

#include "kvroof/analysis/point_seen.hpp"
#include "kvroof/physics/monotone_root.hpp"

namespace kvroof {

namespace detail {
// The starts per step x at which the closed loop holds C clients, or the
// chunk-capped x with the queue wait of the clients beyond it.
inline void solve_concurrency(const PreparedScenario& ps, const PointInputs& in, const LoadSpec& load, double f, double ov,
                              double x_cap, double& x, double& wait, bool& capped) {
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
    LoadSpec queued = load;
    queued.backlog = capped;
    const OperatingPoint at = point_at(ps, in, queued, f, ov, x, 0.0);
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
    const auto& entries = ps.scenario->mix.entries;
    const bool second_token = std::any_of(entries.begin(), entries.end(), [](const MixEntry& e) { return e.cls.o_output > 1; });
    if (pol.slo_tpot && second_token)
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
    double x = 0, wait = 0;
    bool capped = false;
    switch (load.mode) {
        case LoadMode::batch:
            if (!(in.sum_pD > 0)) throw InputError("batch: every call has one output token: no sequence decodes");
            x = load.value / in.sum_pD;
            capped = x > x_cap;
            x = std::min(x, x_cap);
            break;
        case LoadMode::concurrency: detail::solve_concurrency(ps, in, load, f, ov, x_cap, x, wait, capped); break;
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
    at.backlog = load.backlog || capped;  // the chunk budget binds: the requests beyond it queue
    OperatingPoint r = detail::point_at(ps, in, at, f, ov, x, wait);
    r.prefill_bound = capped;
    if (load.mode == LoadMode::concurrency) r.concurrency = load.value;
    detail::finish_point(ps, f, r);
    return r;
}

namespace detail {
// One wave: every request of a run of N sent at once, all of them running
// together, is not a steady state. The engine first prefills all N·Ā tokens,
// a full budget K = min(budget, N·Ā) a step (cycle_budget: chunk, a
// pipeline's m·chunk a cycle): n_p = N·Ā/K steps of t_p each, T_p = n_p·t_p.
// A request decodes from the end of its prefill, the prefill steps still to
// come, then decode steps t_d of those still decoding. First tokens leave
// evenly from step a = max(1, Ā/min(K, chunk)) to n_p, so TTFT = a·t_p + L/2
// with L = (n_p − a)·t_p, and a request's first token leaves u before the
// last one's, u uniform on [0, L]. It decodes min(u/t_p, D) of its D tokens in
// prefill steps and the rest in decode steps; with c = min(L, D·t_p) and
// ρ = t_d/t_p its decode time averages
//   (c²/2·(1 − ρ) + c·D·t_d + (L − c)·D·t_p) / L  = D·ITL   (D·t_d at L = 0).
// The last request ends the run at T_p + D·t_d: throughput = N·Ō / that. The
// decode steps carry the N·g still decoding, g = c/L (1 at L = 0), taken as
// they start though the batch thins as requests end (a lower bound); the
// prefill steps carry K prefill tokens (in a pipeline in whole pieces,
// piece_step_time, as the steady state's) and the N·g·(1 − g/2)·L/T_p requests
// decoding on average. Contexts are the classes' means, D and Ō the mix's.
struct Wave {
    double duration = 0, throughput = 0, ttft = 0, decode = 0, itl = 0;  // s (tok/s); decode: the mean of D·ITL
    double batch = 0, step = 0;  // decoding at T_p, and their decode step t_d (s)
};

// The wave of load.requests requests, or nothing when they do not all run at
// once: more than max_seqs, or more KV at their end (a wave's requests age
// together, each holding S + O) than the free HBM (and DRAM, f's share)
// holds; nothing either with separate prefill. When nothing decodes (O = 1) the
// wave is its prefill steps alone: D = 0, no decode step runs, and the step a
// request sees is the prefill step t_p.
[[nodiscard]] inline std::optional<Wave> wave_of(const PreparedScenario& ps, const LoadSpec& load, double f, double ov) {
    const double n = load.requests;
    if (!std::isfinite(n) || n > load.max_seqs || load.prefill != PrefillMode::chunked) return std::nullopt;
    const PointInputs in = point_inputs(ps, f, load);
    const double D = in.sum_pD;
    if (!(in.sum_pA > 0)) return std::nullopt;
    double end_kv = 0;  // bytes of KV a request holds at its end (one copy), the mix's mean
    for (std::size_t i = 0; i < in.n; ++i) end_kv += in.cls[i].p * kv_held(ps.mc, in.cls[i].S + in.cls[i].O).raw();
    if (n * (1.0 - f) * end_kv * ps.kv_replication > ps.hbm_free_bytes() || n * f * end_kv > ps.sys.cpu_memory.raw())
        return std::nullopt;
    // K: the budget each step fills (a pipeline's cycle: one per micro-batch); a request gets at most a chunk of it.
    const double piece = std::min(cycle_budget(ps.pipe, load.chunk), n * in.sum_pA), steps = n * in.sum_pA / piece;
    const double first = std::max(1.0, in.sum_pA / std::min(piece, load.chunk));  // the step of the first first token
    const double g = !(D > 0) ? 0.0 : steps > first ? std::min(1.0, D / (steps - first)) : 1.0;
    StepContent with =
        step_content(ps, in, D > 0 ? n * g * (1.0 - 0.5 * g) * (steps - first) / (steps * D) : 0.0, StepPrefill::none);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    const bool pieces = ps.pipe.pp > 1;  // a pipeline's: each request's chunk rides in one micro-batch
    StepContent pre;
    for (std::size_t i = 0; i < in.n; ++i) add_prefill(pieces ? pre : with, in.cls[i], piece * in.cls[i].p / in.sum_pA, lin);
    const double t_p =
        pieces ? piece_step_time(ps, with, pre, mean_piece(in, load.chunk), f, ov, nullptr) : step_time(ps, with, f, ov);
    const double t_d = step_time(ps, in, f, ov, D > 0 ? n * g / D : 0.0, StepPrefill::none);  // at D = 0 an empty step
    const double L = (steps - first) * t_p, c = std::min(L, D * t_p);
    const double decode = L > 0 ? (0.5 * c * c * (1.0 - t_d / t_p) + c * D * t_d + (L - c) * D * t_p) / L : D * t_d;
    Wave w;
    w.duration = steps * t_p + D * t_d;
    w.throughput = n * in.sum_pO / w.duration;
    w.decode = decode;
    w.itl = D > 0 ? decode / D : t_p;
    w.ttft = first * t_p + 0.5 * L;
    w.batch = n * g;
    w.step = D > 0 ? t_d : t_p;  // nothing decodes: the step that runs is the prefill's
    return w;
}

// An open-loop run of N requests (a benchmark's --num-prompts) lasts from its
// first arrival to its last completion. When the engine serves the rate with
// at most N requests in it, that is N − 1 gaps between arrivals, then the last
// request's end-to-end time, in which the requests still in the engine
// (running = λ·e2e, by Little's law) finish and none arrives: the throughput,
// N·Ō over that time, is the steady state's times N / (N − 1 + running) (the
// drain taken at the steady e2e, which a thinning batch only shortens: a
// lower bound). Otherwise (saturated: the rate asked needs more requests in
// the engine than memory, max_seqs or the run's N allow) the engine runs as
// many as it may, completing μ a second, and the run lasts the longer of the
// arrivals plus that point's e2e and N/μ. No run of N ends sooner than its
// wave, every request sent at once (when they all fit at once). The steady
// occupancy it takes is built only by a run long enough to reach it: near μ
// it overstates the drain (docs/model.md, "A finite run"). A closed loop keeps
// its clients busy to the end and, as a fluid, runs at the steady rate.
inline void finite_run(OperatingPoint& r, const LoadSpec& load, const std::optional<Wave>& wave) {
    r.steady_throughput = r.throughput;
    const double n = load.requests;
    if (load.mode != LoadMode::request_rate || !std::isfinite(n) || !(r.requests_per_s > 0)) return;
    const double arrivals = (n - 1.0) / load.value;
    double duration = r.saturated ? std::max(arrivals + r.e2e, n / r.requests_per_s) : arrivals + r.e2e;
    if (wave) duration = std::max(duration, wave->duration);
    const double scale = n / (r.requests_per_s * duration);
    r.throughput *= scale;
    r.throughput_per_gpu *= scale;
    r.requests_per_s *= scale;  // completed over the run, as the throughput: N / duration
}

// Every request of the run sent at once (--concurrency max, or as many
// clients as requests): the wave's figures replace the steady ones, but for
// memory (the steady point's fluid occupancy) and what binds the step.
inline void apply_wave(const PreparedScenario& ps, const Wave& w, double n, OperatingPoint& r) {
    r.one_wave = true;
    r.running = n;
    r.batch = w.batch;
    r.step_bare = w.step;
    r.step_allreduce = step_allreduce_time(ps, w.batch, w.batch);
    r.step = r.itl = w.itl;
    r.ttft = w.ttft;
    r.queue_wait = 0;
    r.e2e = w.ttft + w.decode;
    r.requests_per_s = n / w.duration;
    r.throughput = w.throughput;
    r.throughput_per_gpu = w.throughput / replica_gpus(ps.scenario->hardware);
    r.throughput_per_user = 1.0 / w.itl;
}
}  // namespace detail

inline OperatingPoint operating_point(const PreparedScenario& ps, const LoadSpec& asked, double f, double ov) {
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
    const bool at_once = load.mode == LoadMode::saturate || (load.mode == LoadMode::concurrency && load.value >= load.requests);
    // The wave only where it is used: a run sent at once, and the open loop's floor.
    const std::optional<detail::Wave> wave =
        at_once || load.mode == LoadMode::request_rate ? detail::wave_of(ps, load, f, ov) : std::nullopt;
    detail::finite_run(r, load, wave);
    if (wave && at_once && r.weights_fit && r.session_fits) detail::apply_wave(ps, *wave, load.requests, r);
    detail::check_slos(ps, r);
    return r;
}

}  // namespace kvroof
