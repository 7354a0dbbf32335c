// SPDX-License-Identifier: MIT
#pragma once
// A transformer's shape: enough to derive weight bytes, KV bytes per token and
// FLOP per token for dense/MoE MLPs and GQA/MLA attention.

#include <string>

#include "kvroof/spec/check.hpp"

namespace kvroof {

enum class Attention { gqa, mla };
enum class DType { bf16, fp8, int4 };

[[nodiscard]] constexpr double bytes_per_element(DType d) noexcept {
    switch (d) {
        case DType::bf16: return 2.0;
        case DType::fp8: return 1.0;
        case DType::int4: return 0.5;
    }
    return 2.0;
}
[[nodiscard]] inline const char* to_string(DType d) noexcept {
    switch (d) {
        case DType::bf16: return "bf16";
        case DType::fp8: return "fp8";
        case DType::int4: return "int4";
    }
    return "bf16";
}

struct ModelSpec {
    std::string name;
    Attention attention = Attention::gqa;
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kv_heads = 0;       // GQA only
    int head_dim = 0;       // GQA only
    int intermediate = 0;   // dense MLP width (dense layers)
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
    // Published total parameter count, if any (a cross-check, not used in the math).
    double published_params = 0.0;

    [[nodiscard]] bool is_moe() const noexcept { return experts > 0; }

    void check_validity() const {
        auto pos = [&](const char* f, int v) {
            if (v <= 0) throw InputError(name + ": " + f + " must be > 0, got " + std::to_string(v));
        };
        auto nonneg = [&](const char* f, int v) {
            if (v < 0) throw InputError(name + ": " + f + " must be >= 0, got " + std::to_string(v));
        };
        pos("layers", layers);
        pos("hidden", hidden);
        pos("heads", heads);
        pos("vocab", vocab);
        if (attention == Attention::gqa) {
            pos("kv_heads", kv_heads);
            pos("head_dim", head_dim);
            if (heads % kv_heads != 0)
                throw InputError(name + ": heads must be a multiple of kv_heads, got " + std::to_string(heads) + " and " + std::to_string(kv_heads));
        } else {
            nonneg("q_lora_rank", q_lora_rank);
            pos("kv_lora_rank", kv_lora_rank);
            pos("qk_rope_head_dim", qk_rope_head_dim);
            pos("qk_nope_head_dim", qk_nope_head_dim);
            pos("v_head_dim", v_head_dim);
        }
        if (is_moe()) {
            pos("experts_active", experts_active);
            pos("moe_intermediate", moe_intermediate);
            nonneg("shared_experts", shared_experts);
            nonneg("first_dense_layers", first_dense_layers);
            if (experts_active > experts)
                throw InputError(name + ": experts_active must be <= experts, got " + std::to_string(experts_active) + " > " + std::to_string(experts));
            if (first_dense_layers > layers)
                throw InputError(name + ": first_dense_layers must be <= layers, got " + std::to_string(first_dense_layers));
            if (first_dense_layers > 0) pos("intermediate", intermediate);
        } else {
            pos("intermediate", intermediate);
        }
    }
};

}  // namespace kvroof
