// SPDX-License-Identifier: MIT
#pragma once
// A transformer's shape: enough to derive weight bytes, KV bytes per token and
// FLOP per token for dense/MoE MLPs and GQA/MLA attention.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/spec/check.hpp"

namespace kvroof {

enum class Attention { gqa, mla };
// The recurrence of linear layers: Gated DeltaNet (Qwen3-Next), Mamba-2
// (Nemotron-H) or MiniMax's lightning attention (decayed linear attention, no gates).
enum class LinearKind { gated_deltanet, mamba2, lightning };
// Storage formats (weights, KV) and GEMM math precisions. bf16 stands for the
// 16-bit floats (BF16 and FP16 have the same size and tensor peak); fp4 is
// NVFP4 (NVIDIA's FP4: blocks of 16 with an FP8 scale), mxfp4 the OCP MX FP4
// (blocks of 32 with an 8-bit power-of-two scale); both compute in FP4 math.
enum class DType { bf16, fp8, int8, int4, fp4, mxfp4 };

// The element size of a plain tensor (activations, all-reduce payloads), no scales.
[[nodiscard]] constexpr double bytes_per_element(DType d) noexcept {
    switch (d) {
        case DType::bf16: return 2.0;
        case DType::fp8:
        case DType::int8: return 1.0;
        case DType::int4:
        case DType::fp4:
        case DType::mxfp4: return 0.5;
    }
    return 2.0;
}
// Bytes per stored weight including its share of the quantisation scales
// (docs/model.md, "Weight and KV formats"): INT4 as AWQ/GPTQ store it, groups
// of 128 with an FP16 scale and a 4-bit zero point, 4 + 20/128 bits; MXFP4
// 4 + 8/32 bits; NVFP4 4 + 8/16 bits. FP8 and INT8 scales (per tensor, per
// channel, or DeepSeek's 128×128 blocks: 32/16384 bits) are below 0.03 % and
// not charged.
[[nodiscard]] constexpr double weight_bytes_per_element(DType d) noexcept {
    switch (d) {
        case DType::int4: return (4.0 + 20.0 / 128.0) / 8.0;
        case DType::mxfp4: return (4.0 + 8.0 / 32.0) / 8.0;
        case DType::fp4: return (4.0 + 8.0 / 16.0) / 8.0;
        case DType::bf16:
        case DType::fp8:
        case DType::int8: return bytes_per_element(d);
    }
    return 2.0;
}
// Bytes per stored KV element including its scales: INT4 KV with an FP16
// scale and zero point per 128-element head vector (LMDeploy's KV INT4),
// 4 + 32/128 bits; FP4 as NVFP4 (TensorRT-LLM's FP4 KV cache), MXFP4 as
// above; FP8 and INT8 KV use per-tensor scales (none charged).
[[nodiscard]] constexpr double kv_bytes_per_element(DType d) noexcept {
    if (d == DType::int4) return (4.0 + 32.0 / 128.0) / 8.0;
    return weight_bytes_per_element(d);
}
[[nodiscard]] inline const char* to_string(DType d) noexcept {
    switch (d) {
        case DType::bf16: return "bf16";
        case DType::fp8: return "fp8";
        case DType::int8: return "int8";
        case DType::int4: return "int4";
        case DType::fp4: return "fp4";
        case DType::mxfp4: return "mxfp4";
    }
    return "bf16";
}

struct ModelSpec {
    std::string name;
    Attention attention = Attention::gqa;
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kv_heads = 0;  // GQA only
    int head_dim = 0;  // GQA only
    // GQA: the query projection also emits a sigmoid gate on the attention
    // output (Qwen3-Next's gated attention): q_proj is h × 2·H·d.
    bool attention_output_gate = false;
    // GQA with sliding-window layers: the full-attention layers' own shape
    // where it differs (Gemma-4's global layers): their head size and KV heads
    // (0: as every other layer), and keys projected once and used as values
    // too (attention_k_eq_v: no value projection; the cache still holds K and
    // V, as V is normalised without RoPE and K with it).
    int full_head_dim = 0;
    int full_kv_heads = 0;
    bool full_k_eq_v = false;
    int intermediate = 0;  // dense MLP width (dense layers)
    int vocab = 0;
    bool tied_embeddings = false;
    // MoE (experts == 0 means dense)
    int experts = 0;
    int experts_active = 0;
    int shared_experts = 0;
    int moe_intermediate = 0;
    int first_dense_layers = 0;
    // MLA (DeepSeek-style latent attention)
    int q_lora_rank = 0;  // 0: full-rank query projection
    int kv_lora_rank = 0;
    int qk_rope_head_dim = 0;
    int qk_nope_head_dim = 0;
    int v_head_dim = 0;
    // DeepSeek sparse attention (MLA only; index_topk 0: none): a lightning
    // indexer per layer (index_heads heads of index_head_dim) scores every
    // cached token by its own cached key, and attention reads the top index_topk.
    int index_topk = 0;
    int index_heads = 0;
    int index_head_dim = 0;
    // Layers by attention kind, counts of `layers` (the rest have full
    // attention; physics/attention_layers.hpp): sliding window — each stores
    // and attends only the last `window` tokens; linear attention (Gated
    // DeltaNet) — a constant recurrent state per sequence and no KV.
    int window_layers = 0;
    int window = 0;  // W, tokens (window layers only)
    int linear_layers = 0;
    int linear_key_heads = 0;  // linear layers only: their heads and head sizes,
    int linear_value_heads = 0;  // and the width of their short causal convolution (0: none)
    int linear_key_head_dim = 0;
    int linear_value_head_dim = 0;
    int linear_conv_kernel = 0;
    // Mamba-2 layers are linear layers of kind mamba2 with n_groups key heads
    // of ssm_state_size, mamba_num_heads value heads of mamba_head_dim;
    // MiniMax's lightning layers of kind lightning, heads × head_dim both ways.
    LinearKind linear_kind = LinearKind::gated_deltanet;
    // The recurrent state held in FP32 rather than BF16 (Qwen3.5's
    // mamba_ssm_dtype float32); the convolution state stays BF16.
    bool linear_state_fp32 = false;
    // Layers that are not attention + MLP (Nemotron-H's hybrid_override_pattern,
    // DeciLM's block_configs): MLP-only layers hold no KV and no state; MLP-free
    // layers are attention or linear layers without an MLP. mlp_gated false: up
    // and down projections only (Nemotron-H's relu²). mlp_widths: each MLP
    // layer's width when they differ (DeciLM; replaces intermediate).
    int mlp_only_layers = 0;
    int mlp_free_layers = 0;
    bool mlp_gated = true;
    std::vector<int> mlp_widths;
    // Published total parameter count, if any (a cross-check, not used in the math).
    double published_params = 0.0;
    // The context window its position embeddings cover, tokens (a Hugging Face
    // config's max_position_embeddings; 0: not stated). A longer context is
    // warned about, not refused: engines serve one with RoPE scaling (YaRN).
    double max_context = 0.0;
    // The weights' precision the checkpoint itself declares (a Hugging Face
    // quantization_config), and where it was read: the scenario's weight dtype
    // unless --weight-dtype is given.
    std::optional<DType> checkpoint_weights;
    std::string checkpoint_weights_from;
    // What such a checkpoint keeps in BF16 (modules_to_not_convert / ignore):
    // the share of the layers whose attention projections are kept (gpt-oss: 1),
    // besides the embeddings, LM head and routers, which every quantised
    // checkpoint keeps (physics/model_quantities.hpp, weight_bytes).
    double checkpoint_bf16_attention = 0.0;

    [[nodiscard]] bool is_moe() const noexcept { return experts > 0; }
    // Head size and KV heads of the full-attention layers (GQA).
    [[nodiscard]] int full_dim() const noexcept { return full_head_dim > 0 ? full_head_dim : head_dim; }
    [[nodiscard]] int full_kv() const noexcept { return full_kv_heads > 0 ? full_kv_heads : kv_heads; }
    // Full-attention layers shaped unlike the window layers (Gemma-4).
    [[nodiscard]] bool full_layers_differ() const noexcept {
        return full_dim() != head_dim || full_kv() != kv_heads || full_k_eq_v;
    }
    // Layers that hold KV (full and sliding-window attention).
    [[nodiscard]] int attention_layers() const noexcept { return layers - linear_layers - mlp_only_layers; }

    // Throws InputError prefixed with `where` (the flag and file, or the
    // preset) on a field outside its range (kModelFieldRanges) or a broken rule.
    void check_validity(std::string_view where) const;
    void check_validity() const { check_validity(name); }
    void check_layer_structure(const std::string& at) const;
};

// Which models a field applies to; elsewhere it is left at 0 and not checked.
enum class FieldUse { always, gqa, mla, moe, window, linear, sparse_index };

// The documented range of every integer model field (docs/model.md, "Input
// ranges"): generous bounds, far beyond any published model, that keep every
// derived quantity finite and every int conversion exact. `lo` is the minimum
// where the field applies.
struct ModelFieldRange {
    const char* key;  // the key in data/models.json
    int ModelSpec::*field;
    FieldUse use;
    int lo, hi;
};
inline constexpr std::array<ModelFieldRange, 32> kModelFieldRanges = {{
    {"layers", &ModelSpec::layers, FieldUse::always, 1, 10'000},
    {"hidden", &ModelSpec::hidden, FieldUse::always, 1, 1'000'000},
    {"heads", &ModelSpec::heads, FieldUse::always, 1, 100'000},
    {"vocab", &ModelSpec::vocab, FieldUse::always, 1, 100'000'000},
    {"intermediate", &ModelSpec::intermediate, FieldUse::always, 0, 10'000'000},
    {"kv_heads", &ModelSpec::kv_heads, FieldUse::gqa, 1, 100'000},
    {"head_dim", &ModelSpec::head_dim, FieldUse::gqa, 1, 100'000},
    {"full_head_dim", &ModelSpec::full_head_dim, FieldUse::always, 0, 100'000},
    {"full_kv_heads", &ModelSpec::full_kv_heads, FieldUse::always, 0, 100'000},
    {"q_lora_rank", &ModelSpec::q_lora_rank, FieldUse::mla, 0, 1'000'000},
    {"kv_lora_rank", &ModelSpec::kv_lora_rank, FieldUse::mla, 1, 1'000'000},
    {"qk_rope_head_dim", &ModelSpec::qk_rope_head_dim, FieldUse::mla, 1, 100'000},
    {"qk_nope_head_dim", &ModelSpec::qk_nope_head_dim, FieldUse::mla, 1, 100'000},
    {"v_head_dim", &ModelSpec::v_head_dim, FieldUse::mla, 1, 100'000},
    {"experts", &ModelSpec::experts, FieldUse::always, 0, 100'000},
    {"experts_active", &ModelSpec::experts_active, FieldUse::moe, 1, 100'000},
    {"shared_experts", &ModelSpec::shared_experts, FieldUse::moe, 0, 100'000},
    {"moe_intermediate", &ModelSpec::moe_intermediate, FieldUse::moe, 1, 10'000'000},
    {"first_dense_layers", &ModelSpec::first_dense_layers, FieldUse::moe, 0, 10'000},
    {"index_topk", &ModelSpec::index_topk, FieldUse::always, 0, 100'000'000},
    {"index_heads", &ModelSpec::index_heads, FieldUse::sparse_index, 1, 100'000},
    {"index_head_dim", &ModelSpec::index_head_dim, FieldUse::sparse_index, 1, 100'000},
    {"window_layers", &ModelSpec::window_layers, FieldUse::always, 0, 10'000},
    {"window", &ModelSpec::window, FieldUse::window, 1, 100'000'000},
    {"linear_layers", &ModelSpec::linear_layers, FieldUse::always, 0, 10'000},
    {"linear_key_heads", &ModelSpec::linear_key_heads, FieldUse::linear, 1, 100'000},
    {"linear_value_heads", &ModelSpec::linear_value_heads, FieldUse::linear, 1, 100'000},
    {"linear_key_head_dim", &ModelSpec::linear_key_head_dim, FieldUse::linear, 1, 100'000},
    {"linear_value_head_dim", &ModelSpec::linear_value_head_dim, FieldUse::linear, 1, 100'000},
    {"linear_conv_kernel", &ModelSpec::linear_conv_kernel, FieldUse::linear, 0, 10'000},
    {"mlp_only_layers", &ModelSpec::mlp_only_layers, FieldUse::always, 0, 10'000},
    {"mlp_free_layers", &ModelSpec::mlp_free_layers, FieldUse::always, 0, 10'000},
}};

// The range of the field stored under `key` in data/models.json.
[[nodiscard]] inline const ModelFieldRange& model_field_range(std::string_view key) {
    for (const auto& r : kModelFieldRanges)
        if (key == r.key) return r;
    throw InputError("unknown model field '" + std::string(key) + "'");
}

inline void ModelSpec::check_validity(std::string_view where) const {
    const std::string at = std::string(where) + ": ";
    for (const auto& r : kModelFieldRanges) {
        const bool applies = r.use == FieldUse::always || (r.use == FieldUse::gqa && attention == Attention::gqa) ||
                             (r.use == FieldUse::mla && attention == Attention::mla) || (r.use == FieldUse::moe && is_moe()) ||
                             (r.use == FieldUse::window && window_layers > 0) ||
                             (r.use == FieldUse::linear && linear_layers > 0) ||
                             (r.use == FieldUse::sparse_index && index_topk > 0);
        const int v = this->*r.field;
        if (applies && (v < r.lo || v > r.hi))
            throw InputError(at + r.key + " must be in [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "], got " +
                             std::to_string(v));
    }
    if (attention == Attention::gqa && heads % kv_heads != 0)
        throw InputError(at + "heads (" + std::to_string(heads) + ") must be a multiple of kv_heads (" +
                         std::to_string(kv_heads) + ")");
    if (full_layers_differ() && (attention != Attention::gqa || window_layers == 0 || window_layers == attention_layers()))
        throw InputError(at + "full_head_dim, full_kv_heads and full_k_eq_v describe the full-attention layers of a GQA model " +
                         "with sliding-window layers");
    if (attention == Attention::gqa && heads % full_kv() != 0)
        throw InputError(at + "heads (" + std::to_string(heads) + ") must be a multiple of full_kv_heads (" +
                         std::to_string(full_kv()) + ")");
    if (is_moe()) {
        if (experts_active > experts)
            throw InputError(at + "experts_active (" + std::to_string(experts_active) + ") must be <= experts (" +
                             std::to_string(experts) + ")");
        if (first_dense_layers > layers)
            throw InputError(at + "first_dense_layers (" + std::to_string(first_dense_layers) + ") must be <= layers (" +
                             std::to_string(layers) + ")");
    }
    if (index_topk > 0 && attention != Attention::mla)
        throw InputError(at + "index_topk (DeepSeek sparse attention) needs MLA attention");
    check_layer_structure(at);
    if (linear_layers >= layers || window_layers > attention_layers())
        throw InputError(at + "window_layers (" + std::to_string(window_layers) + ") + linear_layers (" +
                         std::to_string(linear_layers) + ") must be <= layers (" + std::to_string(layers) +
                         "), with at least one attention layer");
    if ((!is_moe() || first_dense_layers > 0) && intermediate < 1 && mlp_widths.empty() && mlp_free_layers < layers)
        throw InputError(at + "intermediate must be >= 1 for " + (is_moe() ? "the dense layers" : "a dense model") + ", got " +
                         std::to_string(intermediate));
}

// MLP-only and MLP-free layers, and per-layer MLP widths (dense models only).
inline void ModelSpec::check_layer_structure(const std::string& at) const {
    const bool uniform = mlp_only_layers == 0 && mlp_free_layers == 0 && mlp_gated && mlp_widths.empty();
    if (uniform) return;
    if (is_moe()) throw InputError(at + "MLP-only, MLP-free, non-gated or per-layer MLP widths need a dense model");
    if (mlp_only_layers + linear_layers >= layers || mlp_free_layers > layers)
        throw InputError(at + "mlp_only_layers (" + std::to_string(mlp_only_layers) + ") + linear_layers (" +
                         std::to_string(linear_layers) + ") must leave an attention layer, and mlp_free_layers (" +
                         std::to_string(mlp_free_layers) + ") be <= layers (" + std::to_string(layers) + ")");
    if (!mlp_widths.empty() && mlp_widths.size() != static_cast<std::size_t>(layers - mlp_free_layers))
        throw InputError(at + "mlp_widths has " + std::to_string(mlp_widths.size()) + " entries for " +
                         std::to_string(layers - mlp_free_layers) + " MLP layers");
    for (const int w : mlp_widths)
        if (w < 1 || w > 10'000'000) throw InputError(at + "mlp_widths must be in [1, 10000000], got " + std::to_string(w));
}

}  // namespace kvroof
