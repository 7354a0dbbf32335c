// SPDX-License-Identifier: MIT
// Hugging Face keys particular to one family: Gemma's defaults, Gemma-4's
// full-attention shape, the features refused by name, attn_output_gate,
// mamba_ssm_dtype, MiniMax's lightning layers and Qwen-MoE's dense layers.
#include "hf_families.hpp"

#include <fmt/format.h>

#include <set>
#include <string>

#include "presets_json.hpp"

namespace kvroof::io {

using namespace json_read;

namespace {
std::string text(const json& j, const char* key) {
    return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}
std::string family(const json& in, const json& m) {
    const std::string t = text(m, "model_type");
    return t.empty() ? text(in, "model_type") : t;
}
bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }
bool positive(const json& j, const char* key) { return present(j, key) && j.at(key).is_number() && j.at(key).get<double>() > 0; }
}  // namespace

// transformers' defaults for the keys published configs leave out: GemmaConfig,
// Gemma2Config and Gemma3TextConfig (Gemma-3's text_config names few:
// gemma-3-4b-it gives no heads, none gives vocab_size or tie_word_embeddings);
// CohereConfig, Cohere2Config and Starcoder2Config, whose LM head is tied to
// the embedding unless the config says otherwise (Command-R, Aya-23 and
// StarCoder2 configs omit the key: read untied, Aya-23-8B counted 9.08 B
// parameters for its 8.03 B).
json with_family_defaults(const json& in, const json& m) {
    const std::string t = family(in, m);
    json out = m;
    auto fill = [&](const char* key, const json& value) {
        if (!present(out, key)) out[key] = value;
    };
    if (t == "cohere" || t == "cohere2" || t == "starcoder2") fill("tie_word_embeddings", true);
    if (t.rfind("gemma", 0) != 0) return out;
    fill("tie_word_embeddings", true);  // every Gemma ties its LM head to the embedding
    fill("head_dim", 256);
    if (t == "gemma" || t == "gemma2") {
        fill("vocab_size", 256000);
        fill("max_position_embeddings", 8192);
        fill("num_attention_heads", t == "gemma" ? 16 : 8);
        fill("num_key_value_heads", t == "gemma" ? 16 : 4);
        if (t == "gemma2") fill("sliding_window", 4096);
    } else if (t == "gemma3" || t == "gemma3_text") {
        fill("vocab_size", 262208);
        fill("max_position_embeddings", 131072);
        fill("num_attention_heads", 8);
        fill("num_key_value_heads", 4);
        fill("sliding_window", 4096);
    }
    return out;
}

void refuse_unmodelled_features(std::string_view where, const json& m) {
    // Gemma-3n: KV shared across layers and per-layer input embeddings.
    if (positive(m, "num_kv_shared_layers"))
        throw InputError(fmt::format("{}: num_kv_shared_layers: KV shared across layers is not modelled (Gemma-3n)", where));
    if (positive(m, "hidden_size_per_layer_input"))
        throw InputError(
            fmt::format("{}: hidden_size_per_layer_input: per-layer input embeddings are not modelled (Gemma-3n)", where));
    // Llama-3.2-Vision (mllama): its cross-attention layers hold the image's KV, not the tokens'.
    if (present(m, "cross_attention_layers") &&
        !(m.at("cross_attention_layers").is_array() && m.at("cross_attention_layers").empty()))
        throw InputError(fmt::format(
            "{}: cross_attention_layers: cross-attention layers (Llama-3.2-Vision) are not modelled: their KV is the image's, "
            "not the tokens'",
            where));
    const std::string ssm = text(m, "mamba_ssm_dtype");
    if (present(m, "mamba_ssm_dtype") && ssm != "float32" && ssm != "bfloat16" && ssm != "float16")
        throw InputError(fmt::format("{}: mamba_ssm_dtype: {} is not modelled (float32, bfloat16, float16)", where,
                                     found(m.at("mamba_ssm_dtype"))));
}

namespace {
// Qwen2/3-MoE: a layer has experts unless mlp_only_layers lists it, and only
// every decoder_sparse_step-th (transformers: (i + 1) % step == 0); the others
// a dense MLP of intermediate_size. Counted, as where they sit does not matter.
void read_qwen_dense_layers(std::string_view where, const json& m, ModelSpec& s) {
    const bool listed = present(m, "mlp_only_layers") && !(m.at("mlp_only_layers").is_array() && m.at("mlp_only_layers").empty());
    const int step = integer_or(where, m, "decoder_sparse_step", 1, s.layers, 1);
    if (s.experts == 0 || (!listed && step == 1)) return;
    std::set<long> dense;
    if (listed) {
        if (!m.at("mlp_only_layers").is_array())
            throw InputError(fmt::format("{}: 'mlp_only_layers' must be a list, got {}", where, found(m.at("mlp_only_layers"))));
        for (const json& e : m.at("mlp_only_layers"))
            if (e.is_number_integer()) dense.insert(e.get<long>());
    }
    int moe = 0;
    for (int i = 0; i < s.layers; ++i) moe += dense.count(i) == 0 && (i + 1) % step == 0 ? 1 : 0;
    if (s.intermediate <= 0 && moe < s.layers)
        throw InputError(fmt::format("{}: mlp_only_layers: dense layers need intermediate_size", where));
    s.first_dense_layers = s.layers - moe;
}
}  // namespace

namespace {
// MiniMax-Text-01 / MiniMax-M1 (modeling_minimax_m1.py, MiniMaxM1Model: layer i
// is MiniMaxM1LightningAttention where attn_type_list[i] is 0, softmax
// attention where 1; transformers' port, model_type minimax, lists them as
// layer_types linear_attention / full_attention, counted by read_layer_kinds).
// A lightning layer is linear attention with a fixed decay per head: heads ×
// head_dim for keys and values, no convolution, a head_dim × head_dim state per
// head, held in the model's dtype as vLLM holds it (MambaStateDtypeCalculator.
// linear_attention_state_dtype; MiniMax's reference code keeps it in FP32).
// shared_intermediate_size > 0 adds a sigmoid-gated MLP of intermediate_size
// beside the experts (MiniMaxM1DecoderLayer.shared_mlp): one shared expert.
void read_lightning_layers(std::string_view where, const json& in, const json& m, ModelSpec& s) {
    const bool listed = present(m, "attn_type_list");
    if (listed) {
        const json& a = m.at("attn_type_list");
        if (!a.is_array() || a.size() != static_cast<std::size_t>(s.layers))
            throw InputError(fmt::format("{}: attn_type_list: must list num_hidden_layers ({}) entries, got {}", where, s.layers,
                                         a.is_array() ? std::to_string(a.size()) + " entries" : found(a)));
        int lightning = 0;
        for (const json& e : a) {
            const double kind = e.is_number() ? e.get<double>() : -1.0;
            if (kind != 0 && kind != 1)
                throw InputError(fmt::format(
                    "{}: attn_type_list: {} is not a layer kind (0 lightning attention, 1 softmax attention)", where, found(e)));
            lightning += kind == 0 ? 1 : 0;
        }
        if (lightning > 0 && s.window_layers > 0)
            throw InputError(
                fmt::format("{}: sliding_window: windows beside lightning-attention layers are not modelled", where));
        s.linear_layers = lightning;
    }
    if (!listed && family(in, m).rfind("minimax", 0) != 0) return;
    if (positive(m, "shared_intermediate_size") && s.experts > 0) s.shared_experts = 1;
    if (s.linear_layers == 0) return;
    s.linear_kind = LinearKind::lightning;
    s.linear_key_heads = s.linear_value_heads = s.heads;
    s.linear_key_head_dim = s.linear_value_head_dim = s.head_dim;
    s.linear_conv_kernel = 0;
}

// Gemma-4's full-attention layers (transformers' Gemma4TextAttention): heads
// of global_head_dim, and with attention_k_eq_v num_global_key_value_heads KV
// heads whose key projection also gives the values (no v_proj). The window
// layers keep head_dim and num_key_value_heads.
void read_full_layer_shape(std::string_view where, const json& m, ModelSpec& s) {
    const int hi = model_field_range("head_dim").hi;
    if (s.attention != Attention::gqa) return;
    if (present(m, "global_head_dim")) s.full_head_dim = integer(where, m, "global_head_dim", 1, hi);
    s.full_k_eq_v = boolean_or(where, m, "attention_k_eq_v", false);
    if (s.full_k_eq_v && present(m, "num_global_key_value_heads"))
        s.full_kv_heads = integer(where, m, "num_global_key_value_heads", 1, hi);
    if (s.full_layers_differ() && (s.window_layers == 0 || s.window_layers == s.attention_layers()))
        throw InputError(
            fmt::format("{}: global_head_dim/attention_k_eq_v: a full-attention shape of its own needs both "
                        "sliding and full attention layers ({} of {} slide)",
                        where, s.window_layers, s.attention_layers()));
}
}  // namespace

namespace {
// ERNIE-4.5 MoE (transformers' Ernie4_5_MoeConfig): moe_num_experts routed
// experts of moe_intermediate_size, moe_k of them a token, moe_num_shared_experts
// beside them, in the layers from moe_layer_start_index on (the ones before it
// dense, of intermediate_size). Every moe_layer_interval-th layer, and an end
// before the last layer, are not modelled.
void read_ernie_moe(std::string_view where, const json& m, ModelSpec& s) {
    if (!present(m, "moe_num_experts") || s.experts == 0) return;
    s.shared_experts = integer_or(where, m, "moe_num_shared_experts", 0, model_field_range("shared_experts").hi, 0);
    s.first_dense_layers = integer_or(where, m, "moe_layer_start_index", 0, s.layers, 0);
    if (integer_or(where, m, "moe_layer_interval", 1, s.layers, 1) != 1)
        throw InputError(fmt::format("{}: moe_layer_interval: MoE in every n-th layer only is not modelled", where));
    if (present(m, "moe_layer_end_index")) {
        const int end = integer(where, m, "moe_layer_end_index", -1, s.layers);
        if (end != -1 && end != s.layers - 1)
            throw InputError(fmt::format("{}: moe_layer_end_index: dense layers after the MoE ones ({} of {}) are not modelled",
                                         where, end, s.layers - 1));
    }
}
}  // namespace

void read_family_keys(std::string_view where, const json& in, const json& m, ModelSpec& s) {
    read_full_layer_shape(where, m, s);
    read_ernie_moe(where, m, s);
    // MLPs of up and down projections only, no gate (StarCoder2's c_fc/c_proj, Phi-1/2's fc1/fc2, GPT-NeoX's
    // dense_h_to_4h/dense_4h_to_h): two weight matrices, not three.
    const std::string f = family(in, m);
    if (f == "starcoder2" || f == "phi" || f == "gpt_neox" || f == "persimmon") s.mlp_gated = false;
    // Qwen (v1, model_type "qwen", its remote code's QWenMLP): w1 and w2 of
    // intermediate_size / 2 each, gated, and c_proj back: the config's width is
    // both halves together (Qwen-7B: 22016, a gated MLP of 11008; read whole it
    // counted 12.05 B parameters for the published 7.7 B).
    if (f == "qwen") s.intermediate /= 2;
    // Nemotron-4 / Minitron (transformers' NemotronMLP): up and down
    // projections only, squared ReLU, whatever hidden_act says; NeMo's
    // converter writes the head size as kv_channels when it is not h / H.
    if (family(in, m) == "nemotron") {
        s.mlp_gated = false;
        if (!present(m, "head_dim") && present(m, "kv_channels"))
            s.head_dim = integer(where, m, "kv_channels", 1, model_field_range("head_dim").hi);
    }
    // The query projection's output gate: Qwen3-Next always, Qwen3.5 by the key.
    s.attention_output_gate = boolean_or(where, m, "attn_output_gate", family(in, m) == "qwen3_next");
    s.linear_state_fp32 = s.linear_layers > 0 && text(m, "mamba_ssm_dtype") == "float32";
    read_lightning_layers(where, in, m, s);
    read_qwen_dense_layers(where, m, s);
    // Gemma-4's enable_moe_block: a dense MLP of intermediate_size beside the
    // experts in every layer; as always-on shared experts of the experts' width.
    if (boolean_or(where, m, "enable_moe_block", false) && s.experts > 0) {
        if (s.moe_intermediate <= 0 || s.intermediate % s.moe_intermediate != 0)
            throw InputError(fmt::format("{}: enable_moe_block: a dense MLP of {} beside experts of {} is not modelled", where,
                                         s.intermediate, s.moe_intermediate));
        s.shared_experts = s.intermediate / s.moe_intermediate;
    }
}

}  // namespace kvroof::io
