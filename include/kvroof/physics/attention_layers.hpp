// SPDX-License-Identifier: MIT
#pragma once
// How much KV a sequence holds and reads at context S, by attention layer kind.
// Every demand multiplies kv (bytes per token over the attention layers) by
// what these functions return, in tokens of kv:
//   held(S)       = (1−w)·S + w·min(S, W) + state      (full layers S; window layers min(S, W);
//                                                       linear layers a constant state)
//   keys(S)       = (1−w)·S' + w·min(S, W)              keys one decode query attends (attention FLOP)
//   read(S)       = sparse·((1−w)·S'' + w·min(S, W)) + 2·state
//                                                      KV a decode token reads; the state is read and written
// with w the window layers' share of kv (bytes per token) and w' in keys(S)
// their share of the per-key attention FLOP; both are the share of the
// attention layers that have a sliding window of W tokens unless the full
// layers have a shape of their own (Gemma-4: w = n_w·K·d / (n_w·K·d +
// n_f·K_f·d_f), w' = n_w·d / (n_w·d + n_f·d_f)), and state the linear layers'
// state in tokens of kv. Full layers attend S' = S, read S'' = S; with DeepSeek sparse
// attention (top k) S' = min(S, k) and S'' = u·min(S, k) + (1−u)·S, u the
// latent's share of kv (the indexer reads its own key of every token). A model
// of plain full-attention layers (w = 0, no state, no top-k) returns S itself,
// bit for bit. Prefill of A tokens after S_c cached: prefill_keys.

#include <algorithm>

#include "kvroof/physics/model_quantities.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

struct AttentionLayout {
    double window_share = 0;  // w: sliding-window layers' share of kv
    double window_key_share = 0;  // w': their share of the per-key attention FLOP
    double window = 0;  // W, tokens (when window_share > 0)
    double state_tokens = 0;  // linear layers' state per sequence / kv bytes per token
    double state_flop = 0;  // FLOP per token of the linear layers' recurrence
    double topk = 0;  // DSA: keys a full layer's query attends (0: all)
    double topk_share = 1;  // DSA: the attended latent's share of kv (the rest: the indexer's key)
    double index_flop_per_key = 0;  // DSA: indexer FLOP per (query, cached token)

    [[nodiscard]] bool plain() const noexcept { return window_share == 0 && state_tokens == 0; }
};

// The layout of model m with KV stored at kv_dtype (the state stays BF16).
[[nodiscard]] inline AttentionLayout attention_layout(const ModelSpec& m, DType kv_dtype) noexcept {
    AttentionLayout a;
    if (m.window_layers > 0) {
        a.window_share = static_cast<double>(m.window_layers) / m.attention_layers();
        a.window_key_share = a.window_share;
        a.window = m.window;
    }
    if (m.attention == Attention::gqa && m.full_layers_differ()) {
        const double nw = m.window_layers, nf = m.attention_layers() - nw;
        const double kw = nw * m.kv_heads * m.head_dim, kf = nf * m.full_kv() * m.full_dim();
        a.window_share = kw / (kw + kf);
        a.window_key_share = nw * m.head_dim / (nw * m.head_dim + nf * m.full_dim());
    }
    if (m.index_topk > 0) {
        a.topk = m.index_topk;
        const double latent = static_cast<double>(m.kv_lora_rank) + m.qk_rope_head_dim;
        a.topk_share = latent / (latent + m.index_head_dim);
        a.index_flop_per_key = indexer_flop_per_key(m);
    }
    if (m.linear_layers > 0) {
        a.state_tokens = linear_state_bytes(m).raw() / kv_bytes_per_token(m, kv_dtype).raw();
        a.state_flop = linear_state_flop_per_token(m);
    }
    return a;
}

// Tokens of kv a sequence holds at context S (one copy).
[[nodiscard]] inline double kv_tokens_held(const AttentionLayout& a, double S) noexcept {
    if (a.plain()) return S;
    return (1.0 - a.window_share) * S + a.window_share * std::min(S, a.window) + a.state_tokens;
}

// Keys one decode query at context S attends, averaged over the attention layers.
[[nodiscard]] inline double decode_keys(const AttentionLayout& a, double S) noexcept {
    if (a.window_key_share == 0 && a.topk == 0) return S;
    const double full = a.topk > 0 ? std::min(S, a.topk) : S;
    return (1.0 - a.window_key_share) * full + a.window_key_share * std::min(S, a.window);
}

// Tokens of kv one decode token at context S reads, besides writing its own:
// the sparse share of the keys it attends, and the linear state read and written.
[[nodiscard]] inline double decode_tokens_read(const AttentionLayout& a, double S, double sparse) noexcept {
    if (a.topk == 0 && a.window_key_share == a.window_share) return sparse * decode_keys(a, S) + 2.0 * a.state_tokens;
    const double full = a.topk > 0 ? a.topk_share * std::min(S, a.topk) + (1.0 - a.topk_share) * S : S;
    return sparse * ((1.0 - a.window_share) * full + a.window_share * std::min(S, a.window)) + 2.0 * a.state_tokens;
}

// Keys attended by the A new queries of an append-prefill after S_c cached
// tokens (causal), split between the GPU and the CPU, which attends in place
// the (1−r)·f share of the cached KV it holds. Per query the CPU part (the
// caller multiplies by A). Full layers: A·S_c + A²/2 keys, A·S_c of them
// cached. Window layers: a query at position x attends min(x, W) keys, so
// K_w = F(S_c + A) − F(S_c) with F(x) = x²/2 up to W and W²/2 + W·(x − W)
// beyond; the query j tokens in attends min(S_c, W − j) cached keys when
// positive, C_w = ∫₀^A clamp(W − j, 0, S_c) dj. DSA full layers: min(x, k)
// keys per query (F with k for W), cached in the causal proportion
// A·S_c / (A·S_c + A²/2) (the indexer picks them anywhere in the context);
// `index`: the keys the indexer scores, A·S_c + A²/2 per full layer.
struct PrefillKeys {
    double gpu = 0;
    double cpu_per_query = 0;
    double index = 0;
};
[[nodiscard]] inline double causal_keys_capped(double cap, double x) noexcept {
    return x <= cap ? 0.5 * x * x : 0.5 * cap * cap + cap * (x - cap);
}
[[nodiscard]] inline PrefillKeys prefill_keys(const AttentionLayout& a, double Sc, double A, double f, double r) noexcept {
    const double on_cpu = (1.0 - r) * (f * Sc);  // cached tokens of a full layer the CPU attends
    if (a.window_key_share == 0 && a.topk == 0) return {A * (Sc - on_cpu) + 0.5 * A * A, on_cpu, 0.0};
    const double w = a.window_key_share, share = (1.0 - r) * f, causal = A * Sc + 0.5 * A * A;
    double full_gpu = A * (Sc - on_cpu) + 0.5 * A * A, full_cpu = A * on_cpu, index = 0;
    if (a.topk > 0) {
        const double keys = causal_keys_capped(a.topk, Sc + A) - causal_keys_capped(a.topk, Sc);
        full_cpu = causal > 0 ? share * keys * (A * Sc / causal) : 0.0;
        full_gpu = keys - full_cpu;
        index = causal;
    }
    double win_gpu = 0, win_cpu = 0;
    if (w > 0) {
        const double W = a.window;
        const double keys_w = causal_keys_capped(W, Sc + A) - causal_keys_capped(W, Sc);
        const double j1 = std::clamp(W - Sc, 0.0, A), j2 = std::clamp(W, 0.0, A);
        const double cached_w = Sc * j1 + W * (j2 - j1) - 0.5 * (j2 * j2 - j1 * j1);
        win_cpu = share * cached_w;
        win_gpu = keys_w - win_cpu;
    }
    const double cpu = (1.0 - w) * full_cpu + w * win_cpu;
    return {(1.0 - w) * full_gpu + w * win_gpu, A > 0 ? cpu / A : 0.0, index};
}

}  // namespace kvroof
