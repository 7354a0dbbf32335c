// SPDX-License-Identifier: MIT
#pragma once
// What a request sees at x requests started per step: the chunked step in
// whole pieces, whose work shares its steps (seen_sharing), and the operating
// point itself (point_at). point_step.hpp has the step's content and time;
// operating_point.hpp finds the x a load implies; docs/model.md ("Operating
// points", "What one request sees") gives the equations.

#include <algorithm>
#include <array>
#include <cmath>

#include "kvroof/analysis/point_step.hpp"

namespace kvroof {

namespace detail {
// The share φ of steps that carry prefill (chunked). An engine fills a step's
// token budget with prefill while some waits, so prefill comes in whole
// pieces: one request's chunk min(A, chunk), or the budget when prefills
// queue. A step with prefill carries K = min(budget, max(P, ū)) tokens, where
// P = x·Σp·A is the mean prefill per step, ū the token-weighted mean piece
// Σp·A·min(A, chunk) / Σp·A and budget the step's (cycle_budget: chunk, or
// a pipeline's m·chunk); φ = P / K (1 when every step carries some).
[[nodiscard]] inline double prefill_step_share(const PointInputs& in, double x, double chunk, double budget) noexcept {
    const double P = x * in.sum_pA;
    if (!(P > 0)) return 0.0;
    return std::min(1.0, P / std::min(budget, std::max(P, mean_piece(in, chunk))));
}

// The chunked step: the mean of the steps that carry prefill (1/φ of the mean
// prefill each) and those that do not, φ·T(prefill step) + (1 − φ)·T(decode
// step) — not T of the mean step: a roofline is a max, so the mean step would
// hide prefill FLOP under a memory-bound decode that no real step offers.
// x decodes and x_pre starts prefill per step (the step a decoding request
// sees: itself and the others decoding, the others' prefill; point_at).
// `without` is the decode-only step at x and `without_b` what binds it (the
// caller has them already); `binding` gets what sets the kind of step that
// takes more of the time.
[[nodiscard]] inline double chunked_step_time(const PreparedScenario& ps, const PointInputs& in, double f, double ov, double x,
                                              double x_pre, double chunk, double without, Resource without_b, Resource* binding) {
    const double phi = prefill_step_share(in, x_pre, chunk, cycle_budget(ps.pipe, chunk));
    Resource with_b = Resource::gpu_hbm;
    const double with =
        phi > 0 ? step_time_in_pieces(ps, in, f, ov, x, StepPrefill::mean, 0, x_pre / phi, mean_piece(in, chunk), &with_b) : 0.0;
    if (phi >= 1) without = 0.0;
    if (binding) *binding = phi * with >= (1.0 - phi) * without ? with_b : without_b;
    return phi * with + (1.0 - phi) * without;
}

// Whose work is in the steps a decoding request sees, in starts per step
// (x: the GPU's). A fixed batch B is B sequences in every step, their
// replacements' prefill among them: the GPU's own mean step. Otherwise the
// request's own decode token beside the others' x_o·Σp·D, and the others' x_o
// prefills a step (its own is over before it decodes): an open loop x_o = x
// (Poisson arrivals see the time average); C clients x·(C − 1)/C (the arrival
// theorem's system with one client fewer, taken at C's occupancy; queued for
// memory or --max-seqs, C is the clients that run); when the chunk budget
// binds and requests queue (LoadSpec::backlog = 1) every step carries
// another's chunk, x; a share between runs the budget full with no queue.
struct Sharing {
    double decode = 0, prefill = 0;  // starts per step whose decode tokens, and whose prefill, the step carries
};
[[nodiscard]] inline Sharing seen_sharing(const PointInputs& in, const LoadSpec& load, double x) noexcept {
    if (load.mode == LoadMode::batch) return {x, x};
    double x_o = x;
    if (load.mode == LoadMode::concurrency) {
        const double others = load.value > 1.0 ? (load.value - 1.0) / load.value : 0.0;
        x_o = load.backlog >= 1.0 ? x : x * (others + load.backlog * (1.0 - others));
    }
    return {in.sum_pD > 0 ? x_o + 1.0 / in.sum_pD : x_o, x_o};
}

// The decode-only step and the step with its prefill (chunked: whole pieces;
// separate: the prefill passes stall it) for that sharing, and what binds it.
struct StepPair {
    double bare = 0, with = 0;  // s
    Resource binding = Resource::gpu_hbm;
};
[[nodiscard]] inline StepPair steps_of(const PreparedScenario& ps, const PointInputs& in, const LoadSpec& load, double f,
                                       double ov, Sharing s, double mean_tau) {
    StepPair t;
    Resource bare_b = Resource::gpu_hbm;
    t.bare = step_time(ps, in, f, ov, s.decode, StepPrefill::none, 0, &bare_b);
    if (load.prefill == PrefillMode::chunked) {
        t.with = chunked_step_time(ps, in, f, ov, s.decode, s.prefill, load.chunk, t.bare, bare_b, &t.binding);
    } else {
        t.binding = bare_b;
        t.with = t.bare + s.prefill * mean_tau * ps.pipe.per_sequence;  // a pipeline's share of each prefill trip
    }
    return t;
}

// Everything at x starts per step; queue_wait added to every TTFT. The GPU
// steps at its fluid mean step T (every start's decode and prefill), so
// requests complete at x/T a second; what a user sees is the step of its own
// sharing (seen_sharing): ITL, the bare step, TTFT's chunk steps and so e2e.
// Where B is large the two steps agree; where it is small they do not: one
// request alone decodes in a batch of one, not of a mean B < 1 (docs/model.md,
// "What one request sees"). B, the time average decoding, is (x/T)·Σp·D·ITL.
[[nodiscard]] inline OperatingPoint point_at(const PreparedScenario& ps, const PointInputs& in, const LoadSpec& load, double f,
                                             double ov, double x, double queue_wait) {
    OperatingPoint r;
    r.f = f;
    r.ov = ov;
    r.starts_per_step = x;
    const bool chunked = load.prefill == PrefillMode::chunked, fixed = load.mode == LoadMode::batch;
    std::array<double, kMaxClasses> tau{};  // each class's prefill as its own pass (separate)
    double mean_tau = 0;  // Σ p·τ
    for (std::size_t i = 0; i < in.n; ++i) {
        // Its elementwise kernels after its rooflines (as gemm_terms); a pipeline's pp − 1 crossings (mix_demand.hpp).
        const double gpu = in.cls[i].pre.gpu_part + ps.activation_time(in.cls[i].A) + prefill_transfer(ps.pipe, in.cls[i].A);
        tau[i] = combine(Seconds(gpu), Seconds(in.cls[i].pre.offload_part), ov).raw();
        mean_tau += in.cls[i].p * tau[i];
    }
    const Sharing seen = seen_sharing(in, load, x);
    const StepPair mine = steps_of(ps, in, load, f, ov, seen, mean_tau);
    const double gpu_step = fixed ? mine.with : steps_of(ps, in, load, f, ov, {x, x}, mean_tau).with;
    r.step_bare = mine.bare;
    r.itl = mine.with;
    r.step = chunked ? mine.with : mine.bare;
    r.binding = mine.binding;
    r.prefill_tokens_per_step = x * in.sum_pA;
    const double step_tokens = seen.decode * in.sum_pD + (chunked ? seen.prefill * in.sum_pA : 0.0);
    r.step_allreduce = step_allreduce_time(ps, seen.decode * in.sum_pD, step_tokens);
    r.step_alltoall = step_alltoall_time(ps, seen.decode * in.sum_pD, step_tokens);
    r.queue_wait = queue_wait;
    // A request waits for the step under way only when the others keep the GPU stepping (a fixed batch always
    // does): the chance that any of the n_o others in the engine (decoding, or prefilling over its chunks) is there.
    double others = seen.prefill * in.sum_pD;
    for (std::size_t i = 0; i < in.n; ++i) others += seen.prefill * in.cls[i].p * (chunked ? in.cls[i].chunks : 1.0);
    const double busy = fixed ? 1.0 : 1.0 - std::exp(-others);
    const double beside = fixed ? x : seen.prefill;  // starts per step whose decode tokens share its prefill's steps
    // Separate prefill: the GPU alternates a decode step T_b and the others' whole prefill passes (each holding a
    // pipeline for q = σ/m of its trip); an arrival lands in one with a chance in proportion to its length, so the
    // wait for the one under way is the mean residual E[X²] / (2·E[X]), T_b/2 when no prefill runs beside.
    double residual = 0.5 * r.step_bare;
    if (!chunked && seen.prefill > 0) {
        const double q = ps.pipe.per_sequence;
        double sq = r.step_bare * r.step_bare, sum = r.step_bare;
        for (std::size_t i = 0; i < in.n; ++i) {
            sq += seen.prefill * in.cls[i].p * (tau[i] * q) * (tau[i] * q);
            sum += seen.prefill * in.cls[i].p * tau[i] * q;
        }
        residual = sum > 0 ? 0.5 * sq / sum : 0.0;
    }
    double held_prefill = 0, held_decode = 0;  // token-seconds per request, and tokens
    for (std::size_t i = 0; i < in.n; ++i) {
        const ClassLoad& c = in.cls[i];
        // Chunked: the step under way, then its chunks, each in a step with the others decoding.
        const double ttft =
            queue_wait + (chunked ? 0.5 * busy * r.step + c.chunks * step_time_in_pieces(ps, in, f, ov, beside,
                                                                                         StepPrefill::own_chunk, i, -1.0, 0.0)
                                  : tau[i] + busy * residual);
        r.ttft += c.p * ttft;
        r.e2e += c.p * (ttft + c.D * r.itl);
        // Queued, a request holds its cached prefix only; prefilling, half its new tokens besides.
        held_prefill +=
            c.p * ((ttft - queue_wait) * kv_tokens_held(ps.mc, c.Sc + 0.5 * c.A) + queue_wait * kv_tokens_held(ps.mc, c.Sc));
        held_decode += c.p * c.D * kv_tokens_held(ps.mc, c.S + 0.5 * c.O);
    }
    const double held_idle = idle_token_seconds(ps.mc, in);
    r.requests_per_s = gpu_step > 0 ? x / gpu_step : 0.0;
    r.batch = r.requests_per_s * in.sum_pD * r.itl;
    r.throughput = r.requests_per_s * in.sum_pO;
    r.throughput_per_gpu = r.throughput / replica_gpus(ps.scenario->hardware);
    r.throughput_per_user = r.itl > 0 ? 1.0 / r.itl : 0.0;
    r.concurrency = r.requests_per_s * (r.e2e + in.sum_p_idle);
    const double kv = ps.mc.kv_per_token.raw();
    const double decoding = r.requests_per_s * r.itl * held_decode, prefilling = r.requests_per_s * held_prefill;
    const double idle = load.mode == LoadMode::concurrency ? r.requests_per_s * held_idle : 0.0;
    r.kv_tokens = decoding + prefilling + idle;
    const bool park = ps.idle == IdlePolicy::park;
    r.hbm_capacity = ps.sys.hbm_capacity.raw();
    r.dram_capacity = ps.sys.cpu_memory.raw();
    r.hbm_used = ps.mc.weights.raw() + (1.0 - f) * ps.mc.kv_gpu_per_token.raw() * (decoding + prefilling + (park ? 0.0 : idle));
    r.dram_used = kv * (f * (decoding + prefilling) + (park ? idle : f * idle));
    return r;
}

// Requests in the system at x starts per step (closed loop), without a queue.
[[nodiscard]] inline double clients_at(const PreparedScenario& ps, const PointInputs& in, const LoadSpec& load, double f,
                                       double ov, double x) {
    return point_at(ps, in, load, f, ov, x, 0.0).concurrency;
}
}  // namespace detail

}  // namespace kvroof
