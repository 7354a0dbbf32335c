// SPDX-License-Identifier: MIT
#pragma once
// A run of N requests (--requests N), not a steady state: one wave when they
// are all sent at once and all fit (wave_of), the run's length for an open
// loop (finite_run), and the backlog a run queues when not all of its
// requests run at once (backlog_wait). operating_point.hpp applies them;
// docs/model.md ("A finite run", "One wave") gives the equations.

#include <algorithm>
#include <cmath>
#include <optional>

#include "kvroof/analysis/point_seen.hpp"

namespace kvroof {

namespace detail {
// One wave: every request of a run of N sent at once, all of them running
// together, is not a steady state. The engine first prefills all N·Ā tokens,
// a full budget K = min(budget, N·Ā, N·chunk) a step (cycle_budget: chunk, a
// pipeline's m·chunk a cycle, each request at most a chunk of it): n_p = N·Ā/K
// steps of t_p each, T_p = n_p·t_p.
// A request decodes from the end of its prefill, the prefill steps still to
// come, then decode steps t_d of those still decoding. First tokens leave
// evenly from step a = max(1, Ā/min(K, chunk)) to n_p, so TTFT = a·t_p + L/2
// with L = (n_p − a)·t_p (an open loop's arrivals, spread over (N − 1)/R,
// take half that span off: TTFT = a·t_p + max(0, L − (N − 1)/R)/2), and a
// request's first token leaves u before the last one's, u uniform on [0, L]. It decodes min(u/t_p, D) of its D tokens in
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
    double prefill = 0;  // s, T_p: the prefill steps, the last request's first token at their end
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
    // K: the budget a step fills, each request at most a chunk of it (a pipeline's m chunks a cycle need m requests).
    const double piece = std::min({cycle_budget(ps.pipe, load.chunk), n * in.sum_pA, n * load.chunk});
    const double steps = n * in.sum_pA / piece;
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
    w.prefill = steps * t_p;
    w.throughput = n * in.sum_pO / w.duration;
    w.decode = decode;
    w.itl = D > 0 ? decode / D : t_p;
    // An open loop's k-th arrival comes at k/R of the N − 1 gaps, its first token at first·t_p + k·L/N: the
    // mean TTFT falls by half the arrivals' span (none once the arrivals outlast the prefill's spread).
    const double arrivals = load.mode == LoadMode::request_rate ? (n - 1.0) / load.value : 0.0;
    w.ttft = first * t_p + 0.5 * std::max(0.0, L - arrivals);
    w.batch = n * g;
    w.step = D > 0 ? t_d : t_p;  // nothing decodes: the step that runs is the prefill's
    return w;
}

// An open-loop run of N requests (a benchmark's --num-prompts) lasts from its
// first arrival to its last completion. When the engine serves the rate with
// at most N requests in it, that is N − 1 gaps between arrivals, then the last
// request's drain: its TTFT, then its D = Σp·(O − 1) decode steps, in which
// the requests still in the engine finish and none arrives. Every prefill is
// over by its first token (the chunks go in arrival order), so those steps
// carry none: each is at most the bare step at the point's batch, which the
// thinning batch only shortens, and the drain TTFT + D·step_bare is an upper
// bound (the throughput, N·Ō over the run, a lower bound). The steady e2e,
// TTFT + D·ITL, would charge the drain the prefill interleaved while requests
// still arrive. Otherwise (saturated: the rate asked needs more requests in
// the engine than memory, max_seqs or the run's N allow) the engine runs as
// many as it may, completing μ a second, and the run lasts the longer of the
// arrivals plus that point's drain and N/μ. No run of N ends sooner than its
// wave, every request sent at once (when they all fit at once). The steady
// occupancy it takes is built only by a run long enough to reach it: near μ
// it overstates the drain (docs/model.md, "A finite run"). A closed loop keeps
// its clients busy to the end and, as a fluid, runs at the steady rate.
inline void finite_run(const PreparedScenario& ps, double f, OperatingPoint& r, const LoadSpec& load,
                       const std::optional<Wave>& wave) {
    r.steady_throughput = r.throughput;
    const double n = load.requests;
    if (load.mode != LoadMode::request_rate || !std::isfinite(n) || !(r.requests_per_s > 0)) return;
    const double D = point_inputs(ps, f, load).sum_pD;  // only for a finite open loop: most points need none
    const double arrivals = (n - 1.0) / load.value, drain = r.ttft + D * r.step_bare;
    double duration = r.saturated ? std::max(arrivals + drain, n / r.requests_per_s) : arrivals + drain;
    if (wave) duration = std::max(duration, wave->duration);
    const double scale = n / (r.requests_per_s * duration);
    r.throughput *= scale;
    r.throughput_per_gpu *= scale;
    r.requests_per_s *= scale;  // completed over the run, as the throughput: N / duration
}

// A run of N requests that do not all run at once queues the rest: request
// k (in order of arrival, at k/R) is admitted when the (k − n)-th completes,
// at (k − n)/μ, with n running and μ completing a second. Its wait,
// (k − n)/μ − k/R where positive, averaged over the N (a fluid in k), is
// a·(N − k*)²/(2N), a = 1/μ − 1/R, k* = (n/μ)/a the first request that waits;
// sent at once (R = ∞), (N − n)²/(2·N·μ). 0 when they all run or the engine
// keeps up with the arrivals.
[[nodiscard]] inline double backlog_wait(double N, double n, double mu, double R) noexcept {
    const double a = 1.0 / mu - (std::isfinite(R) ? 1.0 / R : 0.0);
    if (!(a > 0) || !(N > n)) return 0.0;
    const double k0 = n / mu / a;
    return N > k0 ? a * (N - k0) * (N - k0) / (2.0 * N) : 0.0;
}
// The same for C ≤ N closed-loop clients: the first C sent at once wait (k − n)/μ; each later one is sent
// when the request C before it completes, (k − C)/μ, and admitted at (k − n)/μ, so waits (C − n)/μ, the
// steady closed loop's queue. Mean: ((C − n)²/2 + (N − C)·(C − n)) / (N·μ); at C = N the wave sent at once.
[[nodiscard]] inline double closed_backlog_wait(double N, double C, double n, double mu) noexcept {
    C = std::min(C, N);
    if (!(C > n) || !(mu > 0)) return 0.0;
    return (0.5 * (C - n) * (C - n) + (N - C) * (C - n)) / (N * mu);
}

// Every request of the run sent at once (--concurrency max, or as many
// clients as requests): the wave's figures replace the steady ones, but for
// memory (the steady point's fluid occupancy) and what binds the step.
// Not inlined: GCC 12 at -O3, inlining it into operating_point, warns that the
// engaged std::optional<Wave> it reads may be uninitialised (a false positive;
// the call sits behind `if (wave && …)`). Once per point, off every hot path.
[[gnu::noinline]] inline void apply_wave(const PreparedScenario& ps, const Wave& w, double n, OperatingPoint& r) {
    r.one_wave = true;
    r.memory_queued = r.prefill_bound = false;  // every request runs at once
    r.running = n;
    r.batch = w.batch;
    r.step_bare = w.step;
    r.step_allreduce = step_allreduce_time(ps, w.batch, w.batch);
    r.step_alltoall = step_alltoall_time(ps, w.batch, w.batch);
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

}  // namespace kvroof
