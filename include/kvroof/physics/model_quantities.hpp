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
};

[[nodiscard]] inline double attention_params_per_layer(const ModelSpec& m) noexcept {
    const double h = m.hidden, heads = m.heads;
    if (m.attention == Attention::gqa) {
        const double q = h * heads * m.head_dim;
        const double kv = 2.0 * h * m.kv_heads * m.head_dim;
        const double o = heads * m.head_dim * h;
        return q + kv + o;
    }
    const double q_rank = m.q_lora_rank, kv_rank = m.kv_lora_rank, rope = m.qk_rope_head_dim, nope = m.qk_nope_head_dim;
    const double qk_dim = nope + rope;
    const double q = q_rank > 0 ? h * q_rank + q_rank * heads * qk_dim : h * heads * qk_dim;
    const double kv_down = h * (kv_rank + rope);
    const double kv_up = kv_rank * heads * (nope + m.v_head_dim);
    const double o = heads * m.v_head_dim * h;
    return q + kv_down + kv_up + o;
}

// Parameter counts from the shape (gated MLPs: 3 matrices per MLP).
[[nodiscard]] inline ParamCounts param_counts(const ModelSpec& m) noexcept {
    ParamCounts p;
    const double h = m.hidden, layers = m.layers, experts = m.experts;
    const double attn = attention_params_per_layer(m);
    const double dense_mlp = 3.0 * h * m.intermediate;
    p.embedding = static_cast<double>(m.vocab) * h;
    const double lm_head = m.tied_embeddings ? 0.0 : p.embedding;
    double total = p.embedding + lm_head;
    double active = p.embedding + lm_head;
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
    }
    p.total = total;
    p.active = active;
    return p;
}

[[nodiscard]] inline Bytes weight_bytes(const ModelSpec& m, DType weights) noexcept {
    return Bytes(param_counts(m).total * bytes_per_element(weights));
}

// KV cache bytes per token over all layers. GQA: K and V for every KV head;
// MLA: the compressed latent plus the decoupled RoPE key, shared by all heads.
[[nodiscard]] inline Bytes kv_bytes_per_token(const ModelSpec& m, DType kv) noexcept {
    const double elems = m.attention == Attention::gqa
                             ? 2.0 * m.layers * m.kv_heads * m.head_dim
                             : static_cast<double>(m.layers) * (static_cast<double>(m.kv_lora_rank) + m.qk_rope_head_dim);
    return Bytes(elems * bytes_per_element(kv));
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
        per_layer = 4.0 * H * m.head_dim;
    } else if (phase == Phase::decode) {
        per_layer = 2.0 * H * (kv_rank + rope) + 2.0 * H * kv_rank;
    } else {
        per_layer = 2.0 * H * (nope + rope) + 2.0 * H * m.v_head_dim;
    }
    return per_layer * m.layers;
}

// Bytes one decode token sends each way when part of its attention runs on the
// CPU: per layer the query goes down (D2H) and a partial output plus its
// softmax statistics (max and sum, fp32 per head) come back (H2D).
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
    return {Bytes(m.layers * q * e), Bytes(m.layers * (out * e + stats))};
}

}  // namespace kvroof
