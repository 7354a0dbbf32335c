// SPDX-License-Identifier: MIT
#pragma once
// Quantities derived from a model's shape: parameters, weight bytes, KV bytes
// per token, FLOP per token, and the bytes an offloaded attention layer sends
// over the GPU<->CPU link. Conventions: a multiply-add is 2 FLOP; embedding
// lookups are free; the LM head is a matmul. Every sum and product of shape
// fields is taken in double: ints only hold the fields themselves.

#include <cmath>

#include "kvroof/spec/model.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

struct ParamCounts {
    double total = 0;  // every weight
    double active = 0;  // weights a token touches (MoE: routed experts_active of experts)
    double routed = 0;  // routed-expert weights (MoE), part of total
    double per_expert = 0;  // weights of one routed expert in one layer
    int moe_layers = 0;
    double embedding = 0;  // input embedding table (looked up, not multiplied)
    double lm_head = 0;  // output projection (0 when tied to the embedding)
    double attention = 0;  // attention (and linear-attention) projections of every layer
    double router = 0;  // MoE routers
};

// One GQA layer's projections with heads of size d and kv KV heads; with
// keys used as values (Gemma-4's attention_k_eq_v) there is no value projection.
[[nodiscard]] inline double gqa_params_per_layer(const ModelSpec& m, double d, double kv, bool k_eq_v) noexcept {
    const double h = m.hidden, heads = m.heads;
    const double q = h * heads * d * (m.attention_output_gate ? 2.0 : 1.0);
    const double k_v = (k_eq_v ? 1.0 : 2.0) * h * kv * d;
    const double o = heads * d * h;
    return q + k_v + o;
}

// Attention projections per attention layer, averaged over the window and
// full layers when their shapes differ (Gemma-4).
[[nodiscard]] inline double attention_params_per_layer(const ModelSpec& m) noexcept {
    const double h = m.hidden, heads = m.heads;
    if (m.attention == Attention::gqa) {
        const double window = gqa_params_per_layer(m, m.head_dim, m.kv_heads, false);
        if (!m.full_layers_differ()) return window;
        const double w = m.window_layers, full = m.attention_layers() - w;
        return (w * window + full * gqa_params_per_layer(m, m.full_dim(), m.full_kv(), m.full_k_eq_v)) / m.attention_layers();
    }
    const double q_rank = m.q_lora_rank, kv_rank = m.kv_lora_rank, rope = m.qk_rope_head_dim, nope = m.qk_nope_head_dim;
    const double qk_dim = nope + rope;
    const double q = q_rank > 0 ? h * q_rank + q_rank * heads * qk_dim : h * heads * qk_dim;
    const double kv_down = h * (kv_rank + rope);
    const double kv_up = kv_rank * heads * (nope + m.v_head_dim);
    const double o = heads * m.v_head_dim * h;
    // DSA's indexer: its query from the query latent, one key and a weight per head from h.
    const double index_heads = m.index_heads, index_dim = m.index_head_dim;
    const double indexer =
        m.index_topk > 0 ? (q_rank > 0 ? q_rank : h) * index_heads * index_dim + h * index_dim + h * index_heads : 0.0;
    return q + kv_down + kv_up + o + indexer;
}

// A linear-attention (Gated DeltaNet) layer's weights: the fused q/k/v/z input
// projection h·(2·Hk·dk + 2·Hv·dv), the β/α gates h·2·Hv, the depthwise causal
// convolution over q, k, v (conv_dim·K) and the output projection Hv·dv·h.
// A Mamba-2 layer (Hk = n_groups, dk = ssm_state_size, Hv·dv = d_inner): the
// same with one gate per head, its in_proj h·(d_inner + conv_dim + H) emits z,
// x, B, C and dt (A, D, dt_bias, the conv bias and the gated norm, 3·H + conv_dim
// + d_inner, are not counted, like every norm and bias). A lightning layer
// (MiniMax): qkv_proj h·3·H·d and output_gate h·H·d (the same h·(2·key + 2·value)
// with Hk = Hv = H, dk = dv = d), out_proj H·d·h; no gates (its decay is a fixed
// slope per head) and no convolution (K = 0).
[[nodiscard]] inline double linear_conv_channels(const ModelSpec& m) noexcept {
    return 2.0 * m.linear_key_heads * m.linear_key_head_dim + static_cast<double>(m.linear_value_heads) * m.linear_value_head_dim;
}
[[nodiscard]] inline double linear_params_per_layer(const ModelSpec& m) noexcept {
    const double h = m.hidden, value = static_cast<double>(m.linear_value_heads) * m.linear_value_head_dim;
    const double key = static_cast<double>(m.linear_key_heads) * m.linear_key_head_dim;
    const double gates = m.linear_kind == LinearKind::lightning ? 0.0 : m.linear_kind == LinearKind::mamba2 ? 1.0 : 2.0;
    return h * (2.0 * key + 2.0 * value) + h * gates * m.linear_value_heads + linear_conv_channels(m) * m.linear_conv_kernel +
           value * h;
}

// Dense MLP weights per layer, averaged over all layers: gated (SwiGLU) 3·h·I,
// non-gated (relu²) 2·h·I; MLP-free layers hold none, DeciLM's widths differ.
[[nodiscard]] inline double dense_mlp_params_per_layer(const ModelSpec& m) noexcept {
    const double per_width = (m.mlp_gated ? 3.0 : 2.0) * m.hidden;
    if (m.mlp_free_layers == 0 && m.mlp_widths.empty()) return per_width * m.intermediate;
    double widths = static_cast<double>(m.layers - m.mlp_free_layers) * m.intermediate;
    if (!m.mlp_widths.empty()) {
        widths = 0;
        for (const int w : m.mlp_widths) widths += w;
    }
    return per_width * widths / m.layers;
}

// Parameter counts from the shape (gated MLPs: 3 matrices per MLP).
[[nodiscard]] inline ParamCounts param_counts(const ModelSpec& m) noexcept {
    ParamCounts p;
    const double h = m.hidden, layers = m.layers, experts = m.experts;
    // Attention projections per layer, averaged over the layer kinds (linear layers have their own, MLP-only layers none).
    const double attn =
        m.linear_layers == 0 && m.mlp_only_layers == 0
            ? attention_params_per_layer(m)
            : (m.attention_layers() * attention_params_per_layer(m) + m.linear_layers * linear_params_per_layer(m)) / layers;
    const double dense_mlp = dense_mlp_params_per_layer(m);
    p.embedding = static_cast<double>(m.vocab) * h;
    p.lm_head = m.tied_embeddings ? 0.0 : p.embedding;
    p.attention = layers * attn;
    double total = p.embedding + p.lm_head;
    double active = p.embedding + p.lm_head;
    if (!m.is_moe()) {
        total += layers * (attn + dense_mlp);
        active = total;
    } else {
        const double dense_layers = m.first_dense_layers;
        p.moe_layers = m.layers - m.first_dense_layers;  // both in [0, 10000] (kModelFieldRanges)
        const double moe_layers = p.moe_layers;
        p.per_expert = 3.0 * h * m.moe_intermediate;
        const double shared = m.shared_experts * p.per_expert;
        const double router = h * experts;
        total += dense_layers * (attn + dense_mlp) + moe_layers * (attn + shared + router + experts * p.per_expert);
        active += dense_layers * (attn + dense_mlp) + moe_layers * (attn + shared + router + m.experts_active * p.per_expert);
        p.routed = moe_layers * experts * p.per_expert;
        p.router = moe_layers * router;
    }
    p.total = total;
    p.active = active;
    return p;
}

// Weight bytes in `weights` format, scales included. Stored as a quantised
// checkpoint declares (its own format, no --weight-dtype to another one): the
// embeddings, LM head and routers stay BF16, as every quantiser keeps them
// (DeepSeek-V3 report §3.3; transformers' quantizers skip the output head),
// and so does the share of attention projections the checkpoint lists
// (gpt-oss: all, its experts alone are MXFP4). Any other format is taken as
// every matrix re-quantised to it.
struct WeightBytes {
    double total = 0;
    double routed = 0;  // routed experts (MoE)
    double embedding = 0;  // the input embedding table
    double attention = 0;  // attention (and linear-attention) projections of every layer
};
[[nodiscard]] inline bool stored_as_checkpoint(const ModelSpec& m, DType weights) noexcept {
    return m.checkpoint_weights && *m.checkpoint_weights == weights && weights != DType::bf16;
}
[[nodiscard]] inline WeightBytes weight_bytes_by_group(const ModelSpec& m, DType weights) noexcept {
    const ParamCounts p = param_counts(m);
    const double q = weight_bytes_per_element(weights);
    if (!stored_as_checkpoint(m, weights)) return {p.total * q, p.routed * q, p.embedding * q, p.attention * q};
    const double b = weight_bytes_per_element(DType::bf16);
    const double kept = p.embedding + p.lm_head + p.router + m.checkpoint_bf16_attention * p.attention;
    const double attention = p.attention * (m.checkpoint_bf16_attention * b + (1.0 - m.checkpoint_bf16_attention) * q);
    return {(p.total - kept) * q + kept * b, p.routed * q, p.embedding * b, attention};
}
// Weights a token multiplies that the stored checkpoint keeps in BF16 (the
// output projection, the routers and the attention of checkpoint_bf16_attention
// of the layers): their GEMMs run at the BF16 peak whatever the math of the
// quantised ones. 0 unless the weights are the checkpoint as stored.
[[nodiscard]] inline double bf16_gemm_params(const ModelSpec& m, DType weights) noexcept {
    if (!stored_as_checkpoint(m, weights)) return 0.0;
    const ParamCounts p = param_counts(m);
    return p.lm_head + p.router + m.checkpoint_bf16_attention * p.attention;
}
[[nodiscard]] inline Bytes weight_bytes(const ModelSpec& m, DType weights) noexcept {
    return Bytes(weight_bytes_by_group(m, weights).total);
}

// KV cache bytes per token over the attention layers (full and sliding
// window; linear layers hold none). GQA: K and V for every KV head; MLA: the
// compressed latent plus the decoupled RoPE key, shared by all heads (and,
// with DSA, the indexer's key).
[[nodiscard]] inline Bytes kv_bytes_per_token(const ModelSpec& m, DType kv) noexcept {
    const int layers = m.attention_layers();
    const double index_key = m.index_topk > 0 ? m.index_head_dim : 0;
    double elems = m.attention == Attention::gqa
                       ? 2.0 * layers * m.kv_heads * m.head_dim
                       : static_cast<double>(layers) * (static_cast<double>(m.kv_lora_rank) + m.qk_rope_head_dim + index_key);
    if (m.attention == Attention::gqa && m.full_layers_differ())  // window and full layers each with their own shape
        elems = 2.0 * (static_cast<double>(m.window_layers) * m.kv_heads * m.head_dim +
                       static_cast<double>(layers - m.window_layers) * m.full_kv() * m.full_dim());
    return Bytes(elems * kv_bytes_per_element(kv));
}

// The constant state one sequence holds in the linear-attention layers, held
// in BF16 (vLLM keeps it in the model's dtype whatever the KV dtype; the
// recurrent part in FP32 where the config says mamba_ssm_dtype float32): per
// layer the recurrent state, a dk × dv matrix per value head, and the
// convolution's last K − 1 inputs of every channel (none without a convolution, K = 0).
[[nodiscard]] inline double linear_state_elements(const ModelSpec& m) noexcept {
    const double recurrent = static_cast<double>(m.linear_value_heads) * m.linear_key_head_dim * m.linear_value_head_dim;
    const double conv = linear_conv_channels(m) * (m.linear_conv_kernel > 1 ? m.linear_conv_kernel - 1.0 : 0.0);
    return m.linear_layers * (recurrent + conv);
}
[[nodiscard]] inline Bytes linear_state_bytes(const ModelSpec& m) noexcept {
    const double recurrent = static_cast<double>(m.linear_value_heads) * m.linear_key_head_dim * m.linear_value_head_dim;
    const double fp32_extra = m.linear_state_fp32 ? m.linear_layers * recurrent * 2.0 : 0.0;  // 4 B, not 2
    return Bytes(linear_state_elements(m) * bytes_per_element(DType::bf16) + fp32_extra);
}
// FLOP per token of the linear layers' recurrence: ≈ 6 per recurrent-state
// element (kᵀS for the delta rule, the rank-1 update with its decay, the
// output Sᵀq: 2 each) plus 2·K per convolution channel; Mamba-2 ≈ 5 (the
// decay 1, the update dt·x·Bᵀ 2, the readout C·h 2), lightning ≈ 5 too (the
// decay 1, the update kᵀv 2, the readout q·S 2). An estimate: decode of these
// layers is bound by reading and writing the state, not by FLOP.
[[nodiscard]] inline double linear_state_flop_per_token(const ModelSpec& m) noexcept {
    const double recurrent = static_cast<double>(m.linear_value_heads) * m.linear_key_head_dim * m.linear_value_head_dim;
    const double per_element = m.linear_kind == LinearKind::gated_deltanet ? 6.0 : 5.0;
    return m.linear_layers * (per_element * recurrent + 2.0 * linear_conv_channels(m) * m.linear_conv_kernel);
}

// Matmul FLOP per token outside attention's score/value products: 2 per active
// weight, excluding the embedding lookup.
[[nodiscard]] inline Flop linear_flop_per_token(const ModelSpec& m) noexcept {
    const auto p = param_counts(m);
    return Flop(2.0 * (p.active - p.embedding));
}

// Attention score + value FLOP for one query token against `keys` cached tokens.
// GQA: QK^T and PV, 2·H·d each per key and layer. MLA at decode runs in the
// absorbed form (queries projected into the latent): 2·H·(c+r) + 2·H·c per key;
// at prefill in the expanded form: 2·H·(d_nope+d_rope) + 2·H·d_v per key.
enum class Phase { decode, prefill };
[[nodiscard]] inline double attention_flop_per_key(const ModelSpec& m, Phase phase) noexcept {
    const double H = m.heads, kv_rank = m.kv_lora_rank, rope = m.qk_rope_head_dim, nope = m.qk_nope_head_dim;
    double per_layer;
    if (m.attention == Attention::gqa) {
        if (m.full_layers_differ())
            return 4.0 * H *
                   (static_cast<double>(m.window_layers) * m.head_dim +
                    static_cast<double>(m.attention_layers() - m.window_layers) * m.full_dim());
        per_layer = 4.0 * H * m.head_dim;
    } else if (phase == Phase::decode) {
        per_layer = 2.0 * H * (kv_rank + rope) + 2.0 * H * kv_rank;
    } else {
        per_layer = 2.0 * H * (nope + rope) + 2.0 * H * m.v_head_dim;
    }
    return per_layer * m.attention_layers();
}

// DSA's indexer FLOP per (query, cached token) over the full-attention
// layers: a dot product of index_head_dim per index head and its weight.
[[nodiscard]] inline double indexer_flop_per_key(const ModelSpec& m) noexcept {
    if (m.index_topk <= 0) return 0.0;
    return 2.0 * m.index_heads * (m.index_head_dim + 1.0) * (m.attention_layers() - m.window_layers);
}

// Bytes one decode token sends each way when part of its attention runs on the
// CPU: per layer the query goes down (D2H) and a partial output plus its
// softmax statistics (max and sum, fp32 per head) come back (H2D). Linear
// layers are charged the same (an approximation), MLP-only layers nothing.
struct LinkBytesPerToken {
    Bytes d2h;
    Bytes h2d;
};
[[nodiscard]] inline LinkBytesPerToken offload_link_bytes_per_token(const ModelSpec& m, DType act = DType::bf16) noexcept {
    const double e = bytes_per_element(act);
    const double H = m.heads;
    double q, out;
    if (m.attention == Attention::gqa) {
        q = H * m.head_dim;
        out = H * m.head_dim;
    } else {
        q = H * (static_cast<double>(m.kv_lora_rank) + m.qk_rope_head_dim);
        out = H * m.kv_lora_rank;
    }
    const double stats = 2.0 * 4.0 * H;  // fp32 running max and sum per head
    const int layers = m.layers - m.mlp_only_layers;  // MLP-only layers hold no KV nor state to offload
    return {Bytes(layers * q * e), Bytes(layers * (out * e + stats))};
}

}  // namespace kvroof
