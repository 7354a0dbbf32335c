// SPDX-License-Identifier: MIT
#pragma once
// One operating point's physics at a given number x of requests started per
// step: the step (GEMMs and attention on their own rooflines, prefill chunked
// in or run apart), ITL, TTFT, throughput and memory. operating_point.hpp
// finds the x a load implies; its header comment and docs/model.md
// ("Operating points") give the equations.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>

#include "kvroof/analysis/load_spec.hpp"
#include "kvroof/analysis/mix_demand.hpp"
#include "kvroof/analysis/point_result.hpp"
#include "kvroof/analysis/resource.hpp"

namespace kvroof {

namespace detail {
// Per class, what one request asks: decode per token at its mean context,
// its prefill, and the counts the step sums.
struct ClassLoad {
    double p = 0, A = 0, D = 0, O = 0, idle = 0, S = 0, Sc = 0;
    double chunks = 1;  // steps a prefill spans: ⌈A / chunk⌉, at least 1
    DecodeDemand dec{};  // per decode token, at context S + O/2
    PrefillDemand pre{};  // the per-call prefill (separate: its own pass)
    double pre_hbm_chunked = 0;  // s of HBM per call without the weights: KV re-read per chunk, written once
};

// s of HBM a prefill of A new tokens after Sc cached ones moves over `chunks`
// steps, without the weights: the cached KV the GPU attends to re-read per
// chunk, the new KV written once and re-read by the chunks after it.
[[nodiscard]] inline double prefill_hbm_chunked(const PreparedScenario& ps, const PolicySpec& pol, double Sc, double A,
                                                double chunks) noexcept {
    const double kv = ps.mc.kv_gpu_per_token.raw(), bw = ps.sys.hbm_bandwidth.raw();  // the copies HBM holds
    const double gpu_cached = kv_tokens_held(ps.mc, Sc) * (1.0 - pol.f * (1.0 - pol.r));  // in tokens of kv
    return kv * (chunks * gpu_cached + 0.5 * A * (chunks + 1.0)) / bw;
}

struct PointInputs {
    std::array<ClassLoad, kMaxClasses> cls{};
    std::size_t n = 0;
    double sum_pD = 0, sum_pA = 0, sum_pO = 0, sum_p_idle = 0;
};

[[nodiscard]] inline PointInputs point_inputs(const PreparedScenario& ps, double f, const LoadSpec& load) {
    const Scenario& sc = *ps.scenario;
    PolicySpec pol = sc.policy;
    pol.f = f;
    pol.ov = 0;
    pol.idle = ps.idle;
    PointInputs in;
    in.n = sc.mix.entries.size();
    for (std::size_t i = 0; i < in.n; ++i) {
        const auto& e = sc.mix.entries[i];
        ClassLoad& c = in.cls[i];
        c.p = e.weight;
        c.A = e.cls.a_append;
        c.Sc = e.cls.s_cached;
        c.S = e.cls.context();
        c.O = e.cls.o_output;
        c.D = std::max(0.0, c.O - 1.0);
        c.idle = e.cls.idle_gap.raw();
        c.chunks = std::max(1.0, std::ceil(c.A / load.chunk));  // at least the step that yields the first token
        c.dec = decode_demand(ps.mc, ps.sys, pol, c.S + 0.5 * c.O);
        c.pre = prefill_demand(ps.mc, ps.sys, pol, e.cls);
        c.pre_hbm_chunked = prefill_hbm_chunked(ps, pol, c.Sc, c.A, c.chunks);
        in.sum_pD += c.p * c.D;
        in.sum_pA += c.p * c.A;
        in.sum_pO += c.p * c.O;
        in.sum_p_idle += c.p * c.idle;
    }
    return in;
}

// What one step carries besides the decode tokens of x starts per step: the
// fluid mean of the prefill (every class's x·p prefills), or one chunk of one
// request of class `own` (the steps that make up its TTFT), or nothing.
enum class StepPrefill { none, mean, own_chunk };

// What one step carries, summed over its sequences: the tokens through the
// GEMMs and, per resource, the seconds of everything else (a fluid mean of
// the mix here, actual sequences in the simulator, sim.hpp). Attention FLOP
// and KV traffic exclude the GEMMs' linear FLOP and weight read, which the
// step charges once for all tokens.
struct StepContent {
    double decode_tokens = 0, prefill_tokens = 0;
    double attn_c = 0, attn_m = 0;  // s of GPU attention compute and HBM traffic
    double cpu_c = 0, cpu_d = 0;  // s of CPU attention compute and DRAM traffic
    double h2d = 0, d2h = 0;  // s on each link direction
};

// One group's step, its two paths: the GPU's and the offloaded attention's.
struct GroupPaths {
    double gpu = 0, offload = 0;  // s
};

// The GPU path's terms that depend only on the tokens through the step, not on where its attention runs: the GEMMs'
// FLOP time and weight read, the elementwise kernels' HBM traffic, the MoE layers' floor, the all-reduces, the all-to-alls.
struct GemmTerms {
    double gemm_c = 0, gemm_m = 0, act = 0, moe = 0, tp = 0, ep = 0;  // s
};

[[nodiscard]] inline GemmTerms gemm_terms(const PreparedScenario& ps, double tokens) {
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();  // s of GEMM per token
    return {tokens * lin,
            ps.group_weight_time(std::max(tokens, 1.0)),
            ps.activation_time(tokens),
            moe_floor_per_pass(ps.mc, ps.sys, tokens),
            tp_comm_per_pass(ps.mc, ps.sys, tokens),
            ep_comm_per_pass(ps.mc, ps.sys, tokens)};
}

// One group's two paths from its content and its GEMM terms (at its tokens), without the fixed overhead c0;
// `binding` gets what sets the step at ov = 0 and 1 alike. GPU: the GEMMs (every token's linear FLOP, the weights
// read once), the attention (its FLOP, the KV it reads and writes) and the elementwise kernels between them (norms,
// activations: HBM-bound) are separate kernels, each bound by its own roofline, run one after the other.
[[nodiscard]] inline GroupPaths group_paths(const PreparedScenario& ps, const GemmTerms& g, const StepContent& s, double f,
                                            Resource* binding) noexcept {
    const double roofline = std::max(g.gemm_c, g.gemm_m) + std::max(s.attn_c, s.attn_m) + g.act;
    const double comm = g.tp + g.ep;
    const double gpu = roofline + g.moe + comm;
    const double link = link_time(s.h2d, s.d2h, ps.sys.link_bidir);
    const double offload = (f > 0 ? ps.offload_step_latency : 0.0) + std::max(s.cpu_c, s.cpu_d) + link;
    if (binding) {
        const Resource off = offload <= 0                         ? Resource::gpu_hbm
                             : link >= std::max(s.cpu_c, s.cpu_d) ? Resource::link
                             : s.cpu_c >= s.cpu_d                 ? Resource::cpu_compute
                                                                  : Resource::cpu_dram;
        const double compute = (g.gemm_c >= g.gemm_m ? g.gemm_c : 0.0) + (s.attn_c >= s.attn_m ? s.attn_c : 0.0);
        *binding = offload > gpu             ? off
                   : comm > roofline         ? (g.ep > g.tp ? Resource::ep_alltoall : Resource::tp_allreduce)
                   : 2 * compute >= roofline ? Resource::gpu_compute
                                             : Resource::gpu_hbm;
    }
    return {gpu, offload};
}

// One group's step from its content, without the fixed overhead c0; `binding` gets what sets it.
[[nodiscard]] inline double group_step_time(const PreparedScenario& ps, const StepContent& s, double f, double ov,
                                            Resource* binding) {
    const GroupPaths p = group_paths(ps, gemm_terms(ps, s.decode_tokens + s.prefill_tokens), s, f, binding);
    return combine(Seconds(p.gpu), Seconds(p.offload), ov).raw();
}

// What each group of a pipeline runs per cycle (pipeline.hpp): one of m
// micro-batches, m = the decoding sequences within [1, microbatches]; the step
// itself with one stage.
[[nodiscard]] inline StepContent group_share(const Pipeline& p, const StepContent& s) noexcept {
    if (p.pp <= 1) return s;
    const double m = std::clamp(s.decode_tokens, 1.0, p.microbatches);
    return {s.decode_tokens / m, s.prefill_tokens / m, s.attn_c / m, s.attn_m / m,
            s.cpu_c / m,         s.cpu_d / m,          s.h2d / m,    s.d2h / m};
}

// One step's time from its content (a pipeline's cycle: pipeline.hpp, each of
// m micro-batches carrying 1/m of it, stretched by σ, plus the transfers of
// its tokens); `binding` gets what sets it. With fewer decoding sequences n
// than m, only max(1, n) micro-batches hold one (a sequence is not split):
// the cycle is then max(1, n·ι/pp) trips of one sequence through every stage.
[[nodiscard]] inline double step_time(const PreparedScenario& ps, const StepContent& s, double f, double ov,
                                      Resource* binding = nullptr) {
    const Pipeline& p = ps.pipe;
    if (p.pp <= 1) return group_step_time(ps, s, f, ov, binding) + ps.step_overhead;
    const double m = std::clamp(s.decode_tokens, 1.0, p.microbatches), tokens = s.decode_tokens + s.prefill_tokens;
    const double sigma = std::max(1.0, m * p.imbalance / p.pp);
    const StepContent part = group_share(p, s);
    const double transfer = p.transfer_per_sequence * p.microbatches / m;  // s per token per cycle over every boundary
    return sigma * group_step_time(ps, part, f, ov, binding) + p.transfer_latency + tokens * transfer + ps.step_overhead;
}

// Adds `calls` of class c's chunked prefill to a step (a fraction: part of
// one call's prefill, in proportion to its tokens); lin = s of GEMM per token.
inline void add_prefill(StepContent& s, const ClassLoad& c, double calls, double lin) noexcept {
    s.prefill_tokens += calls * c.A;
    s.attn_c += calls * (c.pre.gpu_compute - c.A * lin);
    s.attn_m += calls * c.pre_hbm_chunked;
    s.cpu_c += calls * c.pre.cpu_compute;
    s.cpu_d += calls * c.pre.cpu_dram;
    s.h2d += calls * c.pre.link_h2d;
    s.d2h += calls * (c.pre.link_d2h + c.pre.link_park_save);
}

// The fluid step with x requests starting per step: every class's x·p·D
// decode tokens at its mean context, and the prefill `with` says: the mean's
// x_pre·p prefills of every class (x_pre < 0: x; a step that carries a whole
// chunk: the others' starts over φ), or one chunk of class `own`.
[[nodiscard]] inline StepContent step_content(const PreparedScenario& ps, const PointInputs& in, double x, StepPrefill with,
                                              std::size_t own = 0, double x_pre = -1.0) {
    if (x_pre < 0) x_pre = x;
    StepContent s;
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();  // s of GEMM per token
    for (std::size_t i = 0; i < in.n; ++i) {
        const ClassLoad& c = in.cls[i];
        const double dec = x * c.p * c.D;  // decode tokens of this class in the step
        s.attn_c += dec * (c.dec.gpu_compute - lin);
        s.attn_m += dec * c.dec.gpu_hbm;
        s.cpu_c += dec * c.dec.cpu_compute;
        s.cpu_d += dec * c.dec.cpu_dram;
        s.h2d += dec * c.dec.link_h2d;
        s.d2h += dec * c.dec.link_d2h;
        const double calls = with == StepPrefill::mean                    ? x_pre * c.p
                             : with == StepPrefill::own_chunk && i == own ? 1.0 / c.chunks
                                                                          : 0.0;
        if (calls == 0) continue;  // prefills of this class in the step (a fraction: chunks)
        add_prefill(s, c, calls, lin);
    }
    s.decode_tokens = x * in.sum_pD;
    return s;
}

// One step's time with x requests starting per step; `binding` gets what sets it.
[[nodiscard]] inline double step_time(const PreparedScenario& ps, const PointInputs& in, double f, double ov, double x,
                                      StepPrefill with, std::size_t own = 0, Resource* binding = nullptr) {
    return step_time(ps, step_content(ps, in, x, with, own), f, ov, binding);
}

// The share φ of steps that carry prefill (chunked). An engine fills a step's
// token budget with prefill while some waits, so prefill comes in whole
// pieces: one request's chunk min(A, chunk), or the budget when prefills
// queue. A step with prefill carries K = min(chunk, max(P, ū)) tokens, where
// P = x·Σp·A is the mean prefill per step and ū the token-weighted mean piece
// Σp·A·min(A, chunk) / Σp·A; φ = P / K (1 when every step carries some).
[[nodiscard]] inline double prefill_step_share(const PointInputs& in, double x, double chunk) noexcept {
    const double P = x * in.sum_pA;
    if (!(P > 0)) return 0.0;
    double piece = 0;
    for (std::size_t i = 0; i < in.n; ++i) piece += in.cls[i].p * in.cls[i].A * std::min(in.cls[i].A, chunk);
    piece /= in.sum_pA;
    return std::min(1.0, P / std::min(chunk, std::max(P, piece)));
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
    const double phi = prefill_step_share(in, x_pre, chunk);
    Resource with_b = Resource::gpu_hbm;
    const double with = phi > 0 ? step_time(ps, step_content(ps, in, x, StepPrefill::mean, 0, x_pre / phi), f, ov, &with_b) : 0.0;
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
// binds (LoadSpec::backlog) every step carries another's chunk, x.
struct Sharing {
    double decode = 0, prefill = 0;  // starts per step whose decode tokens, and whose prefill, the step carries
};
[[nodiscard]] inline Sharing seen_sharing(const PointInputs& in, const LoadSpec& load, double x) noexcept {
    if (load.mode == LoadMode::batch) return {x, x};
    double x_o = x;
    if (load.mode == LoadMode::concurrency && !load.backlog) x_o = load.value > 1.0 ? x * (load.value - 1.0) / load.value : 0.0;
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
    r.step_allreduce = tp_comm_per_pass(ps.mc, ps.sys, seen.decode * in.sum_pD + (chunked ? seen.prefill * in.sum_pA : 0.0));
    r.queue_wait = queue_wait;
    // A request waits for the step under way only when the others keep the GPU stepping (a fixed batch always
    // does): the chance that any of the n_o others in the engine (decoding, or prefilling over its chunks) is there.
    double others = seen.prefill * in.sum_pD;
    for (std::size_t i = 0; i < in.n; ++i) others += seen.prefill * in.cls[i].p * (chunked ? in.cls[i].chunks : 1.0);
    const double busy = fixed ? 1.0 : 1.0 - std::exp(-others);
    const double beside = fixed ? x : seen.prefill;  // starts per step whose decode tokens share its prefill's steps
    double held_prefill = 0, held_decode = 0, held_idle = 0;  // token-seconds per request, and tokens
    for (std::size_t i = 0; i < in.n; ++i) {
        const ClassLoad& c = in.cls[i];
        // Chunked: the step under way, then its chunks, each in a step with the others decoding.
        const double ttft =
            queue_wait + (chunked ? 0.5 * busy * r.step + c.chunks * step_time(ps, in, f, ov, beside, StepPrefill::own_chunk, i)
                                  : tau[i] + 0.5 * busy * r.step_bare);
        r.ttft += c.p * ttft;
        r.e2e += c.p * (ttft + c.D * r.itl);
        // Queued, a request holds its cached prefix only; prefilling, half its new tokens besides.
        held_prefill +=
            c.p * ((ttft - queue_wait) * kv_tokens_held(ps.mc, c.Sc + 0.5 * c.A) + queue_wait * kv_tokens_held(ps.mc, c.Sc));
        held_decode += c.p * c.D * kv_tokens_held(ps.mc, c.S + 0.5 * c.O);
        held_idle += c.p * c.idle * kv_tokens_held(ps.mc, c.S + c.O);
    }
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
