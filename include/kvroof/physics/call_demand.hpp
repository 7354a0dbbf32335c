// SPDX-License-Identifier: MIT
#pragma once
// What one call of a class asks of each resource at offload fraction f:
// per decode token (one sequence in one step) and per append-prefill.
//
// Decode, per token at context S = S_c + A (keys, read, held: attention_layers.hpp;
// full attention only: keys = held = S, read = sparse·S):
//   GPU FLOP   = linear + (1−f)·attn(S),   attn(S) = sparse·(attn·keys(S) + index·S) + state FLOP
//   HBM bytes  = (1−f)·(read(S) + 1)·kv_gpu        (+ weights once per step, see StepShape)
//   CPU FLOP   = f·attn(S)                   (index: DSA's indexer per cached token)
//   DRAM bytes = f·(read(S) + 1)·kv                (the CPU reads only the sparse share)
//   link       = per layer query down, partial output up; f·kv of the new token down
// Append-prefill of A tokens over S_c cached ones (held(S_c) tokens of kv stored):
//   GPU FLOP   = A·linear + attn over the GPU-visible context (causal, prefill_keys) + DSA's
//                indexer over every causal key + A·state FLOP
//   HBM bytes  = weights + (held(S_c) + A)·kv_gpu
//   link H2D   = r·f·held(S_c)·kv_gpu reloaded (+ (1−f)·held(S_c)·kv_gpu when idle sessions are parked)
//   CPU        = the (1−r)·f share of the cached KV: its prefill attention and its DRAM read
// TTFT = combine(GPU roofline + all-reduces + all-to-alls, CPU part + link, ov).
// The GPU's attention FLOP (the indexer's and the state's with them) run at the
// peak of attention's own math (attention_dtype: FP8 over an FP8 cache, else
// BF16), not the GEMMs' (FP8 or FP4 weights do not make attention 8- or 4-bit):
// each counts attn_flop_scale GEMM-rate FLOPs (SystemRates).
// kv is one copy of a token's KV (CPU DRAM, the link's D2H); kv_gpu the copies
// a tensor-parallel group holds in HBM (kv · replication: every GPU reloads its own).
// Tensor parallelism adds its all-reduces after the GPU roofline (not hidden
// under it): per decode token the bandwidth part, per pass of A tokens the whole.
// Expert parallelism adds its all-to-alls (dispatch and combine per MoE layer)
// the same way, and scales the routed experts' FLOP by the load imbalance λ.
// Data-parallel attention (MLA, attention_dp): each GPU holds one copy of the
// attention weights and only its own sequences' latent (replication 1); the
// attention all-reduce is gone and each FFN block is entered by an all-gather
// and left by a reduce-scatter of the hidden states (MoE layers under EP: the
// all-to-alls instead, the shared experts then data-parallel too).

#include <algorithm>
#include <cmath>

#include "kvroof/physics/attention_layers.hpp"
#include "kvroof/physics/combine.hpp"
#include "kvroof/physics/model_quantities.hpp"
#include "kvroof/spec/hardware.hpp"
#include "kvroof/spec/policy.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof {

// Model constants that do not depend on the workload or f: computed once.
struct ModelConstants {
    Bytes kv_per_token;  // one copy, over all layers (what CPU DRAM and the link hold and move)
    // KV bytes per token the tensor-parallel group stores in HBM and reads:
    // kv_per_token × kv_replication (see kv_replication below).
    Bytes kv_gpu_per_token;
    double kv_replication = 1.0;
    // One session fits when its KV (one copy) times this is within the group's
    // free HBM: kv_replication under tensor-parallel attention (each GPU holds
    // its share of every sequence); the group size under data-parallel
    // attention (a sequence's KV lives on one GPU, which has 1/t of the free HBM).
    double kv_session_span = 1.0;
    // Weight bytes held (and streamed) beyond one copy: data-parallel attention
    // holds the attention weights (and, under EP, the shared experts) on each of
    // the t GPUs, (t − 1) extra copies. Part of `weights` and `weights_non_routed`.
    double weights_replicated = 0;
    // Expert parallelism with e not dividing the E routed experts: the busiest
    // GPU holds ⌈E/e⌉ experts where the mean is E/e, expert_load = ⌈E/e⌉·e/E
    // times its even share (1 when e divides E, or at EP 1). The group is
    // charged as if every GPU held what the busiest does: (expert_load − 1)·
    // routed bytes more, part of `weights` and `weights_routed`.
    double expert_load = 1.0;
    double weights_uneven = 0;
    // How much of kv a sequence holds and reads at context S (window and
    // linear layers); the functions kv_held and kv_tokens_held below.
    AttentionLayout layout;
    // Tensor-parallel all-reduces: two per layer per forward pass (after the
    // attention output projection and after the MLP), each of one hidden
    // vector per token in BF16. Under data-parallel attention these count the
    // FFN blocks' all-gathers and reduce-scatters, each moving half a ring
    // all-reduce's bytes: allreduce_bytes_per_token is then h·1 B (half of h·2 B).
    double allreduces_per_pass = 0;
    double allreduce_bytes_per_token = 0;
    // Expert-parallel all-to-alls: a dispatch and a combine per MoE layer per
    // forward pass (0 at EP 1), each of one hidden vector per token per routed
    // expert (top-k copies) in BF16.
    double alltoalls_per_pass = 0;
    double alltoall_bytes_per_token = 0;
    double moe_layers = 0;  // layers with routed experts (0 for a dense model): each pays SystemRates::moe_layer_latency per pass
    // Bytes the elementwise kernels between the GEMMs and the attention move per
    // token of a forward pass, over the tensor-parallel group (activation_bytes_per_token).
    double act_bytes_per_token = 0;
    Flop linear_per_token;  // with the routed experts' FLOP scaled by the EP load imbalance
    // The part of it in GEMMs the checkpoint keeps in BF16 (bf16_gemm_params):
    // they run at the BF16 peak (charge_bf16_gemms).
    Flop bf16_linear_per_token;
    // The part of it in the routed experts' grouped GEMMs (λ-scaled like it):
    // charged at their own efficiency (charge_moe_gemms).
    Flop routed_linear_per_token;
    // What charge_bf16_gemms and charge_moe_gemms added to linear_per_token:
    // GPU kernel efficiencies, not work. A CPU running the same layers (disagg's
    // decode engine) or a FLOP count (the report) leaves it out: linear_work().
    Flop gemm_charge;
    double attn_decode_per_key = 0;  // FLOP
    double attn_prefill_per_key = 0;  // FLOP
    Bytes weights;  // all weights
    LinkBytesPerToken link_per_token;
    // Weight bytes one step streams at batch B. Dense: all but the gathered
    // input embedding. MoE: the non-routed weights plus the expected fraction
    // of routed experts that at least one of B tokens selects, 1 − (1 − k/E)^B
    // (uniform routing).
    bool moe = false;
    Bytes weights_non_routed;
    Bytes weights_routed;
    double log_expert_keep = 0.0;  // ln(1 − k/E): (1 − k/E)^B = e^(B·ln(1 − k/E))

    [[nodiscard]] Bytes weights_read(double batch) const noexcept {
        if (!moe) return weights_non_routed;
        // 1 − (1 − k/E)^B as −expm1(B·ln(1 − k/E)): no cancellation at small B (where
        // 1 − pow loses digits), and under half the time of pow, which the batch solves and
        // the operating-point steps of a MoE model call many times.
        return weights_non_routed + weights_routed * (batch <= 0 ? 0.0 : -std::expm1(batch * log_expert_keep));
    }

    // The linear FLOP per token as work, without the GPU kernels' charges.
    [[nodiscard]] Flop linear_work() const noexcept { return Flop(linear_per_token.raw() - gemm_charge.raw()); }
};

// How many copies of each token's KV a tensor-parallel group of t GPUs holds.
// GQA: each GPU holds ⌈kv_heads / t⌉ KV heads, so beyond t = kv_heads every
// head is replicated (t / kv_heads copies); MLA: the latent is shared by all
// heads, so every GPU holds all of it (t copies), as vLLM and SGLang store it
// without data-parallel attention. Full layers with KV heads of their own
// (Gemma-4) replicate on their own count; the larger of the two factors is
// charged to all the KV, an upper bound when only one kind replicates.
[[nodiscard]] inline double kv_replication(const ModelSpec& m, int t, bool attention_dp = false) noexcept {
    if (t <= 1) return 1.0;
    if (attention_dp && m.attention == Attention::mla) return 1.0;  // each GPU holds its own sequences' latent
    if (m.attention != Attention::gqa) return t;
    const double heads = m.kv_heads, per_gpu = std::ceil(heads / t);
    const double own = per_gpu * t / heads;
    if (m.full_kv() == m.kv_heads) return own;
    const double full = m.full_kv();
    return std::max(own, std::ceil(full / t) * t / full);
}

// Expert parallelism of degree ep, with the busiest GPU's expert work
// `imbalance` times the mean (1 = perfectly balanced).
struct ExpertParallel {
    int ep = 1;
    double imbalance = 1.0;
};

// The busiest GPU's share of the routed experts over the mean when E experts
// are sharded over e GPUs: ⌈E/e⌉ / (E/e) (DeepSeek-V3's 256 over 72: 4 of a
// mean 3.56, 1.125); exactly 1 where e divides E or e ≤ 1.
[[nodiscard]] inline double expert_load(int experts, int ep) noexcept {
    if (ep <= 1 || experts <= 0) return 1.0;
    const long long most = (static_cast<long long>(experts) + ep - 1) / ep;
    return static_cast<double>(most * ep) / experts;
}

namespace detail {
// Data-parallel attention over t GPUs (docs/model.md, "Data-parallel
// attention"): replicated weights, the KV on one GPU per sequence, and the
// FFN blocks' all-gather + reduce-scatter instead of the two all-reduces.
inline void apply_attention_dp(ModelConstants& c, const ModelSpec& m, const PolicySpec& p, int t, int ep, int moe_layers,
                               double per_expert, double attention_bytes) noexcept {
    const double copies = t - 1.0;
    const double shared = ep > 1 ? moe_layers * m.shared_experts * per_expert * weight_bytes_per_element(p.weight_dtype) : 0.0;
    c.weights_replicated = copies * (attention_bytes + shared);
    c.kv_session_span = t;
    const int ffn_blocks = m.layers - m.mlp_free_layers, gathered = ep > 1 ? ffn_blocks - moe_layers : ffn_blocks;
    c.allreduces_per_pass = 2.0 * gathered;  // an all-gather before and a reduce-scatter after each TP FFN block
    c.allreduce_bytes_per_token = static_cast<double>(m.hidden) * bytes_per_element(DType::bf16) / 2.0;
}
}  // namespace detail

// Bytes the elementwise kernels of one token's forward pass read and write,
// each kernel reading its inputs and writing its output once in 16-bit
// (docs/model.md, "Elementwise traffic"): before each block (attention or
// linear, MLP) a residual add fused with its RMSNorm, which reads the input
// and the residual and writes both (4h); the MLP's activation (gated: reads
// the gate and up outputs, 2I, writes I; an MLP's active weights over h count
// those 3I or, ungated, 2I); per MoE layer, the sum of the k routed experts'
// outputs ((k + 1)·h). The norms and the expert sum run on every GPU of a
// tensor-parallel group (`copies` = its size; 1 under data-parallel
// attention, where each GPU runs its own tokens'); the MLP activations are
// split across it.
[[nodiscard]] inline double activation_bytes_per_token(const ModelSpec& m, const ParamCounts& pc, int copies) noexcept {
    const double h = m.hidden, t = std::max(1, copies);
    const double blocks = 2.0 * m.layers - m.mlp_only_layers - m.mlp_free_layers;  // as the all-reduces count them
    const double mlp_active = pc.active - pc.embedding - pc.lm_head - pc.attention - pc.router;
    const double moe_sum = m.is_moe() ? pc.moe_layers * (m.experts_active + 1.0) * h : 0.0;
    const double per_gpu = blocks * 4.0 * h + moe_sum;
    return bytes_per_element(DType::bf16) * (t * per_gpu + mlp_active / h);
}

[[nodiscard]] inline ModelConstants model_constants(const ModelSpec& m, const PolicySpec& p, int tp = 1, ExpertParallel ep = {},
                                                    bool attention_dp = false) noexcept {
    ModelConstants c;
    const auto pc = param_counts(m);
    const WeightBytes w = weight_bytes_by_group(m, p.weight_dtype);
    c.kv_per_token = kv_bytes_per_token(m, p.kv_dtype);
    c.kv_replication = kv_replication(m, tp, attention_dp);
    c.kv_session_span = c.kv_replication;
    c.kv_gpu_per_token = c.kv_per_token * c.kv_replication;
    c.layout = attention_layout(m, p.kv_dtype);
    // One all-reduce after each attention (or linear) block and each MLP: 2 per layer, fewer with MLP-only or MLP-free layers.
    c.allreduces_per_pass = tp > 1 ? static_cast<double>(2 * m.layers - m.mlp_only_layers - m.mlp_free_layers) : 0.0;
    c.allreduce_bytes_per_token = static_cast<double>(m.hidden) * bytes_per_element(DType::bf16);
    c.linear_per_token = linear_flop_per_token(m);
    c.bf16_linear_per_token = Flop(2.0 * bf16_gemm_params(m, p.weight_dtype));
    if (m.is_moe()) c.routed_linear_per_token = Flop(2.0 * pc.moe_layers * m.experts_active * pc.per_expert);
    if (ep.ep > 1 && pc.moe_layers > 0) {
        c.alltoalls_per_pass = 2.0 * pc.moe_layers;
        c.alltoall_bytes_per_token = static_cast<double>(m.hidden) * bytes_per_element(DType::bf16) * m.experts_active;
        c.expert_load = expert_load(m.experts, ep.ep);
        c.weights_uneven = (c.expert_load - 1.0) * w.routed;
        // The step waits for the busiest GPU: its routed-expert FLOP is λ·expert_load times the mean.
        const double routed_flop = c.routed_linear_per_token.raw(), load = ep.imbalance * c.expert_load;
        if (load != 1.0) c.linear_per_token = Flop(c.linear_per_token.raw() + (load - 1.0) * routed_flop);
        c.routed_linear_per_token = Flop(load * routed_flop);
    }
    c.attn_decode_per_key = attention_flop_per_key(m, Phase::decode);
    c.attn_prefill_per_key = attention_flop_per_key(m, Phase::prefill);
    if (attention_dp && tp > 1 && m.attention == Attention::mla)
        detail::apply_attention_dp(c, m, p, tp, ep.ep, pc.moe_layers, pc.per_expert, w.attention);
    c.weights = Bytes(w.total + c.weights_replicated + c.weights_uneven);
    c.link_per_token = offload_link_bytes_per_token(m);
    c.moe = m.is_moe();
    c.moe_layers = c.moe ? pc.moe_layers : 0;
    const bool dp_attention = attention_dp && tp > 1 && m.attention == Attention::mla;  // as apply_attention_dp
    c.act_bytes_per_token = activation_bytes_per_token(m, pc, dp_attention ? 1 : tp);
    const double lookup_only = m.tied_embeddings ? 0.0 : w.embedding;  // rows gathered, not streamed
    c.weights_non_routed = Bytes(w.total - w.routed - lookup_only + c.weights_replicated);
    c.weights_routed = Bytes(w.routed + c.weights_uneven);
    // −∞ when every expert is active: then every B > 0 reads them all.
    c.log_expert_keep = c.moe ? std::log1p(-static_cast<double>(m.experts_active) / m.experts) : 0.0;
    return c;
}

// The GPU's compute demand is FLOP / the peak of the GEMM math (SystemRates).
// A checkpoint's BF16 GEMMs run at the BF16 peak instead, so each of their
// FLOP costs `math_over_bf16` (the math peak over the BF16 peak, >= 1) FLOP
// at the math rate: linear_per_token grows by (ratio − 1) times their FLOP.
// gpt-oss-120b in MXFP4 on a B200 (FP4 4× BF16): its BF16 attention, output
// projection and routers are 3.10 of its 10.26 GFLOP per token.
inline void charge_bf16_gemms(ModelConstants& c, double math_over_bf16) noexcept {
    if (math_over_bf16 > 1.0) {
        const double extra = (math_over_bf16 - 1.0) * c.bf16_linear_per_token.raw();
        c.linear_per_token = Flop(c.linear_per_token.raw() + extra);
        c.gemm_charge = Flop(c.gemm_charge.raw() + extra);
    }
}

// The routed experts' grouped GEMMs reach their own fraction η_moe of the GEMM
// peak (GpuSpec::eta_moe_gemm), where the rest reach η_compute, which the
// rate already holds: each of their FLOP costs η_compute/η_moe FLOP at that
// rate, so linear_per_token grows by (ratio − 1) times their FLOP. Linear in
// tokens like every FLOP term, so the step stays three lines (decode_step.hpp).
inline void charge_moe_gemms(ModelConstants& c, double eta_compute_over_moe) noexcept {
    if (eta_compute_over_moe != 1.0) {
        const double extra = (eta_compute_over_moe - 1.0) * c.routed_linear_per_token.raw();
        c.linear_per_token = Flop(c.linear_per_token.raw() + extra);
        c.gemm_charge = Flop(c.gemm_charge.raw() + extra);
    }
}

// KV bytes one sequence holds at context S, one copy (CPU DRAM, the link):
// kv · held(S) of attention_layers.hpp. Every KV footprint goes through it.
[[nodiscard]] inline double kv_tokens_held(const ModelConstants& mc, double S) noexcept { return kv_tokens_held(mc.layout, S); }
[[nodiscard]] inline Bytes kv_held(const ModelConstants& mc, double S) noexcept {
    return mc.kv_per_token * kv_tokens_held(mc.layout, S);
}
// KV bytes one decode token at context S reads (one copy), besides writing its own.
[[nodiscard]] inline Bytes kv_read_per_decode_token(const ModelConstants& mc, double S, double sparse) noexcept {
    return mc.kv_per_token * decode_tokens_read(mc.layout, S, sparse);
}
// Attention FLOP of one decode token at context S: the keys it attends (a
// window caps them at W, DSA at k), DSA's indexer over every cached token, the
// linear layers' recurrence.
[[nodiscard]] inline double decode_attention_flop(const ModelConstants& mc, double S, double sparse) noexcept {
    return mc.attn_decode_per_key * decode_keys(mc.layout, S) * sparse + mc.layout.index_flop_per_key * S * sparse +
           mc.layout.state_flop;
}

// Seconds of tensor-parallel all-reduce in one forward pass over `tokens`
// tokens: allreduces · (α + tokens · bytes per token · s per byte); 0 at one
// GPU or with no tokens.
[[nodiscard]] inline double tp_comm_per_pass(const ModelConstants& mc, const SystemRates& sys, double tokens) noexcept {
    if (tokens <= 0) return 0.0;
    return mc.allreduces_per_pass * (sys.allreduce_latency + tokens * mc.allreduce_bytes_per_token * sys.allreduce_s_per_byte);
}
// The bandwidth part alone, per token: what each token adds to a pass.
[[nodiscard]] inline double tp_comm_per_token(const ModelConstants& mc, const SystemRates& sys) noexcept {
    return mc.allreduces_per_pass * mc.allreduce_bytes_per_token * sys.allreduce_s_per_byte;
}

// Seconds of expert-parallel all-to-all in one forward pass over `tokens`
// tokens: all-to-alls · (α + tokens · bytes per token · s per byte · expert
// load), the s per byte already holding the share that leaves each GPU and the
// imbalance λ (SystemRates::alltoall_s_per_byte), the expert load the busiest
// GPU's extra experts (ModelConstants::expert_load); 0 at EP 1 or with no tokens.
[[nodiscard]] inline double ep_comm_per_pass(const ModelConstants& mc, const SystemRates& sys, double tokens) noexcept {
    if (tokens <= 0) return 0.0;
    return mc.alltoalls_per_pass *
           (sys.alltoall_latency + tokens * mc.alltoall_bytes_per_token * sys.alltoall_s_per_byte * mc.expert_load);
}
// Seconds of the MoE layers' fixed latency in one forward pass over `tokens`
// tokens: moe_layers · α_moe, whatever the tokens (routing, top-k and the
// expert kernels' floor, beyond their weight read and FLOP); 0 for a dense
// model or with no tokens.
[[nodiscard]] inline double moe_floor_per_pass(const ModelConstants& mc, const SystemRates& sys, double tokens) noexcept {
    return tokens > 0 ? mc.moe_layers * sys.moe_layer_latency : 0.0;
}

[[nodiscard]] inline double ep_comm_per_token(const ModelConstants& mc, const SystemRates& sys) noexcept {
    return mc.alltoalls_per_pass * mc.alltoall_bytes_per_token * sys.alltoall_s_per_byte * mc.expert_load;
}

// Plain aggregates (no member initialisers) so that arrays of them on the hot
// path are not zero-filled; the functions below value-initialise what they return.
struct DecodeDemand {  // per token of one sequence, in seconds of each resource
    double gpu_compute, gpu_hbm, cpu_compute, cpu_dram;
    double link_d2h, link_h2d;  // seconds on each direction
    double gpu_comm;  // tensor-parallel all-reduce bandwidth time (the per-step α is StepShape's g0)
    double ep_comm;  // expert-parallel all-to-all bandwidth time (its per-step α joins g0)
};

struct PrefillDemand {  // per call
    double gpu_compute, gpu_hbm, cpu_compute, cpu_dram;
    double gpu_comm;  // tensor-parallel all-reduces of its pass, after the GPU roofline
    double ep_comm;  // expert-parallel all-to-alls of its pass, after the GPU roofline
    double moe_floor;  // the MoE layers' fixed latency in its pass (moe_floor_per_pass)
    double link_d2h, link_h2d;  // before the first token
    double link_park_save;  // D2H after the call: the GPU share parked for the idle gap
    double ttft;
    double gpu_part, offload_part;  // the two operands of the TTFT combine
};

[[nodiscard]] inline DecodeDemand decode_demand(const ModelConstants& mc, const SystemRates& sys, const PolicySpec& p,
                                                double context) noexcept {
    const double f = p.f, g = 1.0 - p.f, sp = p.sparse;
    const double kv = mc.kv_per_token.raw();
    const double attn = decode_attention_flop(mc, context, sp);
    const double read = decode_tokens_read(mc.layout, context, sp);  // tokens of kv, besides the new one written
    DecodeDemand d{};
    d.gpu_compute = (mc.linear_per_token.raw() + g * attn * sys.attn_flop_scale) / sys.gpu_flops.raw();
    d.gpu_hbm = g * (read + 1.0) * mc.kv_gpu_per_token.raw() / sys.hbm_bandwidth.raw();
    d.gpu_comm = tp_comm_per_token(mc, sys);
    d.ep_comm = ep_comm_per_token(mc, sys);
    if (f > 0) {
        d.cpu_compute = f * attn / sys.cpu_flops.raw();
        d.cpu_dram = f * (read + 1.0) * kv / sys.cpu_dram_bandwidth.raw();
        d.link_d2h = (mc.link_per_token.d2h.raw() + f * kv) / sys.link_bandwidth.raw();
        d.link_h2d = mc.link_per_token.h2d.raw() / sys.link_bandwidth.raw();
    }
    return d;
}

[[nodiscard]] inline PrefillDemand prefill_demand(const ModelConstants& mc, const SystemRates& sys, const PolicySpec& p,
                                                  const CallClass& c) noexcept {
    PrefillDemand d{};
    const double kv = mc.kv_per_token.raw();
    const double A = c.a_append, Sc = c.s_cached, held = kv_tokens_held(mc, Sc);  // held: tokens of kv cached
    const double cpu_resident = p.f * held;  // cached KV that lives in CPU DRAM
    const double on_cpu = (1.0 - p.r) * cpu_resident;  // attended in place by the CPU
    const double reloaded = p.r * cpu_resident;  // copied back over the link
    const double parked = p.idle == IdlePolicy::park ? (1.0 - p.f) * held : 0.0;  // GPU share parked while idle
    d.link_h2d = (reloaded + parked) * mc.kv_gpu_per_token.raw() / sys.link_bandwidth.raw();
    d.link_d2h = p.f * A * kv / sys.link_bandwidth.raw();
    d.link_park_save = parked * kv / sys.link_bandwidth.raw();
    if (A > 0) {
        const PrefillKeys keys = prefill_keys(mc.layout, Sc, A, p.f, p.r);  // causal, over the GPU-visible KV
        const double at = sys.attn_flop_scale;  // attention's math (1 where it runs at the GEMMs' peak)
        const Flop flop(A * mc.linear_per_token.raw() + mc.attn_prefill_per_key * keys.gpu * at +
                        mc.layout.index_flop_per_key * keys.index * at + A * mc.layout.state_flop * at);
        const Bytes bytes = mc.weights_read(A) + mc.kv_gpu_per_token * (held + A);
        d.gpu_compute = time_for(flop, sys.gpu_flops).raw();
        d.gpu_hbm = time_for(bytes, sys.hbm_bandwidth).raw();
        d.gpu_comm = tp_comm_per_pass(mc, sys, A);
        d.ep_comm = ep_comm_per_pass(mc, sys, A);
        if (on_cpu > 0) {
            d.cpu_compute = mc.attn_prefill_per_key * A * keys.cpu_per_query / sys.cpu_flops.raw();
            d.cpu_dram = on_cpu * kv / sys.cpu_dram_bandwidth.raw();
            d.link_h2d += A * mc.link_per_token.h2d.raw() / sys.link_bandwidth.raw();
            d.link_d2h += A * mc.link_per_token.d2h.raw() / sys.link_bandwidth.raw();
        }
    }
    d.moe_floor = moe_floor_per_pass(mc, sys, A);
    d.gpu_part = std::max(d.gpu_compute, d.gpu_hbm) + d.moe_floor + d.gpu_comm + d.ep_comm;
    // The H2D reload precedes the GPU's use of it; queries/outputs ride the other direction.
    d.offload_part = std::max(d.cpu_compute, d.cpu_dram) + link_time(d.link_h2d, d.link_d2h, sys.link_bidir);
    d.ttft = combine(Seconds(d.gpu_part), Seconds(d.offload_part), p.ov).raw();
    return d;
}

}  // namespace kvroof
