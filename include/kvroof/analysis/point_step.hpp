// SPDX-License-Identifier: MIT
#pragma once
// One operating point's step at a given number x of requests started per
// step: what it carries and its time (GEMMs and attention on their own
// rooflines, prefill chunked in or run apart, a pipeline's micro-batches).
// point_seen.hpp builds ITL, TTFT, throughput and memory from it;
// operating_point.hpp finds the x a load implies; its header comment and
// docs/model.md ("Operating points") give the equations.

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

// Σ p·idle·held(S + O): the token-seconds of KV a request's session keeps while idle after it (under --idle hold;
// × requests/s, the tokens idle sessions hold: Little's law).
[[nodiscard]] inline double idle_token_seconds(const ModelConstants& mc, const PointInputs& in) noexcept {
    double t = 0;
    for (std::size_t i = 0; i < in.n; ++i) t += in.cls[i].p * in.cls[i].idle * kv_tokens_held(mc, in.cls[i].S + in.cls[i].O);
    return t;
}

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
        // The MoE layers' fixed latency is GPU time with the roofline's (as attribute in serving.hpp charges it).
        *binding = offload > gpu             ? off
                   : comm > roofline + g.moe ? (g.ep > g.tp ? Resource::ep_alltoall : Resource::tp_allreduce)
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

// The content scaled by a: a share of its sequences, with their tokens and seconds.
[[nodiscard]] inline StepContent scaled(const StepContent& s, double a) noexcept {
    return {s.decode_tokens * a, s.prefill_tokens * a, s.attn_c * a, s.attn_m * a,
            s.cpu_c * a,         s.cpu_d * a,          s.h2d * a,    s.d2h * a};
}

// One of m micro-batches: 1/m of the content.
[[nodiscard]] inline StepContent split_in(const StepContent& s, double m) noexcept {
    return {s.decode_tokens / m, s.prefill_tokens / m, s.attn_c / m, s.attn_m / m,
            s.cpu_c / m,         s.cpu_d / m,          s.h2d / m,    s.d2h / m};
}

// What each group of a pipeline runs per cycle (pipeline.hpp): one of m
// micro-batches, m = the decoding sequences within [1, microbatches]; the step
// itself with one stage.
[[nodiscard]] inline StepContent group_share(const Pipeline& p, const StepContent& s) noexcept {
    if (p.pp <= 1) return s;
    return split_in(s, std::clamp(s.decode_tokens, 1.0, p.microbatches));
}

// A pipeline's cycle of m micro-batches (1 ≤ m ≤ microbatches), each carrying
// 1/m of the content: σ·T(s/m), σ = max(1, m·ι/pp), plus the transfers of its
// tokens over every boundary; `binding` gets what sets it.
[[nodiscard]] inline double cycle_time(const PreparedScenario& ps, const StepContent& s, double m, double f, double ov,
                                       Resource* binding) {
    const Pipeline& p = ps.pipe;
    const double sigma = std::max(1.0, m * p.imbalance / p.pp), tokens = s.decode_tokens + s.prefill_tokens;
    const double transfer = p.transfer_per_sequence * p.microbatches / m;  // s per token per cycle over every boundary
    return sigma * group_step_time(ps, split_in(s, m), f, ov, binding) + p.transfer_latency + tokens * transfer +
           ps.step_overhead;
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
    return cycle_time(ps, s, std::clamp(s.decode_tokens, 1.0, p.microbatches), f, ov, binding);
}

// A collective's time in one step for its `tokens` (`decode` of them decoding), as step_time charges it: a
// pipeline's cycle runs each of its m micro-batches' passes and stretches them by σ. `per_pass`: the collective's
// seconds in one pass over a number of tokens.
template <class PerPass>
[[nodiscard]] double step_collective_time(const PreparedScenario& ps, double decode, double tokens, PerPass per_pass) noexcept {
    const Pipeline& p = ps.pipe;
    if (p.pp <= 1) return per_pass(ps.mc, ps.sys, tokens);
    const double m = std::clamp(decode, 1.0, p.microbatches);
    return std::max(1.0, m * p.imbalance / p.pp) * per_pass(ps.mc, ps.sys, tokens / m);
}

// The tensor-parallel all-reduces one step charges (0 at one GPU).
[[nodiscard]] inline double step_allreduce_time(const PreparedScenario& ps, double decode, double tokens) noexcept {
    return step_collective_time(ps, decode, tokens, tp_comm_per_pass);
}
// The expert-parallel all-to-alls one step charges (0 at EP 1).
[[nodiscard]] inline double step_alltoall_time(const PreparedScenario& ps, double decode, double tokens) noexcept {
    return step_collective_time(ps, decode, tokens, ep_comm_per_pass);
}

[[nodiscard]] inline StepContent operator+(const StepContent& a, const StepContent& b) noexcept {
    return {a.decode_tokens + b.decode_tokens,
            a.prefill_tokens + b.prefill_tokens,
            a.attn_c + b.attn_c,
            a.attn_m + b.attn_m,
            a.cpu_c + b.cpu_c,
            a.cpu_d + b.cpu_d,
            a.h2d + b.h2d,
            a.d2h + b.d2h};
}

// A pipeline's cycle when its prefill comes in whole pieces (docs/model.md,
// "Pipeline parallelism and replicas", "Prefill in whole pieces"): a
// request's piece rides in one micro-batch, not split over the m of them, so
// the busiest holds g = max(1/m, min(1, piece/P)) of the P prefill tokens
// beside its 1/m of the decode content `dec`, and the other m − 1 share the
// rest. That micro-batch's trip through every stage, T(big), or the busiest
// stage serving all m, ι/pp·(T(big) + (m − 1)·T(other)), whichever is longer,
// is the cycle, plus the transfers of that micro-batch's tokens. At g = 1/m it
// is cycle_time's σ·T(s/m) with its transfers. m counts the micro-batches
// that hold something: a decoding sequence or a piece (P/piece of them), at
// most `microbatches`.
[[nodiscard]] inline double piece_step_time(const PreparedScenario& ps, const StepContent& dec, const StepContent& pre,
                                            double piece, double f, double ov, Resource* binding) {
    const Pipeline& p = ps.pipe;
    const double P = pre.prefill_tokens;
    if (p.pp <= 1) return step_time(ps, dec + pre, f, ov, binding);
    const double pieces = P > 0 && piece > 0 ? P / piece : 0.0;  // a mean, like the decoding count
    const double m = std::clamp(std::max(dec.decode_tokens, pieces), 1.0, p.microbatches);
    const double g = P > 0 ? std::max(1.0 / m, std::min(1.0, piece / P)) : 1.0 / m;
    if (g <= 1.0 / m) return cycle_time(ps, dec + pre, m, f, ov, binding);
    const StepContent share = scaled(dec, 1.0 / m);
    const double big = group_step_time(ps, share + scaled(pre, g), f, ov, binding);
    const double other = group_step_time(ps, share + scaled(pre, (1.0 - g) / (m - 1.0)), f, ov, nullptr);
    const double cycle = std::max(big, p.imbalance / p.pp * (big + (m - 1.0) * other));
    // The transfers of the busiest micro-batch's tokens over every boundary (step_time's at g = 1/m).
    const double per_token = p.transfer_per_sequence * p.microbatches;
    return cycle + p.transfer_latency + (dec.decode_tokens / m + g * P) * per_token + ps.step_overhead;
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

// The token-weighted mean piece a request's prefill comes in, Σp·A·min(A, chunk) / Σp·A.
[[nodiscard]] inline double mean_piece(const PointInputs& in, double chunk) noexcept {
    double piece = 0;
    for (std::size_t i = 0; i < in.n; ++i) piece += in.cls[i].p * in.cls[i].A * std::min(in.cls[i].A, chunk);
    return in.sum_pA > 0 ? piece / in.sum_pA : 0.0;
}

// step_time of x decoding beside prefill in whole pieces of `piece` tokens: the
// mean's x_pre prefills, or one chunk of a request of class `own` (one piece).
// Without a pipeline it is step_time of step_content, the same numbers.
[[nodiscard]] inline double step_time_in_pieces(const PreparedScenario& ps, const PointInputs& in, double f, double ov, double x,
                                                StepPrefill with, std::size_t own, double x_pre, double piece,
                                                Resource* binding = nullptr) {
    if (ps.pipe.pp <= 1) return step_time(ps, step_content(ps, in, x, with, own, x_pre), f, ov, binding);
    const StepContent dec = step_content(ps, in, x, StepPrefill::none);
    const StepContent pre = step_content(ps, in, 0.0, with, own, x_pre < 0 ? x : x_pre);  // the prefill alone
    return piece_step_time(ps, dec, pre, with == StepPrefill::own_chunk ? pre.prefill_tokens : piece, f, ov, binding);
}

}  // namespace detail

}  // namespace kvroof
