// SPDX-License-Identifier: MIT
// Model presets: data/models.json entries and Hugging Face config.json files.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hf_families.hpp"
#include "hf_layer_structure.hpp"
#include "hf_quantization.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "presets_json.hpp"

namespace kvroof::io {

using namespace json_read;

namespace {
// The attention kind's own fields (GQA heads, or MLA's ranks and DSA's indexer).
void read_attention_fields(std::string_view where, const json& m, ModelSpec& s) {
    auto int_field = [&](const char* key) { return field(where, m, key, key); };
    auto int_field_or = [&](const char* key, int fallback) { return field_or(where, m, key, key, fallback); };
    const std::string att = string(where, m, "attention");
    if (att != "gqa" && att != "mla") throw InputError(fmt::format("{}: 'attention' must be gqa or mla, got '{}'", where, att));
    s.attention = att == "gqa" ? Attention::gqa : Attention::mla;
    if (s.attention == Attention::gqa) {
        s.kv_heads = int_field("kv_heads");
        s.head_dim = int_field("head_dim");
        s.full_head_dim = int_field_or("full_head_dim", 0);  // Gemma-4's full-attention layers
        s.full_kv_heads = int_field_or("full_kv_heads", 0);
        s.full_k_eq_v = boolean_or(where, m, "full_k_eq_v", false);
        return;
    }
    s.q_lora_rank = int_field_or("q_lora_rank", 0);
    s.kv_lora_rank = int_field("kv_lora_rank");
    s.qk_rope_head_dim = int_field("qk_rope_head_dim");
    s.qk_nope_head_dim = int_field("qk_nope_head_dim");
    s.v_head_dim = int_field("v_head_dim");
    s.index_topk = int_field_or("index_topk", 0);
    if (s.index_topk > 0) {
        s.index_heads = int_field("index_heads");
        s.index_head_dim = int_field("index_head_dim");
    }
}

// The MLP's experts, and the layers that are not full attention (windows, linear attention).
void read_mlp_and_layer_kinds(std::string_view where, const json& m, ModelSpec& s) {
    auto int_field = [&](const char* key) { return field(where, m, key, key); };
    auto int_field_or = [&](const char* key, int fallback) { return field_or(where, m, key, key, fallback); };
    s.experts = int_field_or("experts", 0);
    if (s.experts > 0) {
        s.experts_active = int_field("experts_active");
        s.shared_experts = int_field_or("shared_experts", 0);
        s.moe_intermediate = int_field("moe_intermediate");
        s.first_dense_layers = int_field_or("first_dense_layers", 0);
    }
    s.window_layers = int_field_or("window_layers", 0);
    if (s.window_layers > 0) s.window = int_field("window");
    s.linear_layers = int_field_or("linear_layers", 0);
    if (s.linear_layers > 0)
        for (const char* k :
             {"linear_key_heads", "linear_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel"})
            s.*model_field_range(k).field = int_field(k);
    s.mlp_only_layers = int_field_or("mlp_only_layers", 0);  // per-layer structure (docs/model.md)
    s.mlp_free_layers = int_field_or("mlp_free_layers", 0);
    s.mlp_gated = boolean_or(where, m, "mlp_gated", true);
    const std::string kind = m.contains("linear_kind") ? string(where, m, "linear_kind") : "gated_deltanet";
    if (kind != "gated_deltanet" && kind != "mamba2" && kind != "lightning")
        throw InputError(fmt::format("{}: 'linear_kind' must be gated_deltanet, mamba2 or lightning, got '{}'", where, kind));
    s.linear_kind = kind == "mamba2"      ? LinearKind::mamba2
                    : kind == "lightning" ? LinearKind::lightning
                                          : LinearKind::gated_deltanet;
    s.linear_state_fp32 = boolean_or(where, m, "linear_state_fp32", false);
}
}  // namespace

ModelSpec model_from_json(std::string_view where, const json& m, std::string name) {
    only_keys(where, m,
              with_meta({"attention",
                         "layers",
                         "hidden",
                         "heads",
                         "kv_heads",
                         "head_dim",
                         "full_head_dim",
                         "full_kv_heads",
                         "full_k_eq_v",
                         "intermediate",
                         "vocab",
                         "tied_embeddings",
                         "attention_output_gate",
                         "experts",
                         "experts_active",
                         "shared_experts",
                         "moe_intermediate",
                         "first_dense_layers",
                         "q_lora_rank",
                         "kv_lora_rank",
                         "qk_rope_head_dim",
                         "qk_nope_head_dim",
                         "v_head_dim",
                         "published_params_B",
                         "max_context",
                         "index_topk",
                         "index_heads",
                         "index_head_dim",
                         "window_layers",
                         "window",
                         "linear_layers",
                         "linear_key_heads",
                         "linear_value_heads",
                         "linear_key_head_dim",
                         "linear_value_head_dim",
                         "linear_conv_kernel",
                         "linear_kind",
                         "linear_state_fp32",
                         "mlp_only_layers",
                         "mlp_free_layers",
                         "mlp_gated",
                         "checkpoint_weights",
                         "checkpoint_bf16_attention"}));
    ModelSpec s;
    s.name = std::move(name);
    read_attention_fields(where, m, s);
    s.layers = field(where, m, "layers", "layers");
    s.hidden = field(where, m, "hidden", "hidden");
    s.heads = field(where, m, "heads", "heads");
    s.vocab = field(where, m, "vocab", "vocab");
    s.intermediate = field_or(where, m, "intermediate", "intermediate", 0);
    s.tied_embeddings = boolean_or(where, m, "tied_embeddings", false);
    s.attention_output_gate = boolean_or(where, m, "attention_output_gate", false);
    read_mlp_and_layer_kinds(where, m, s);
    s.published_params = number_or(where, m, "published_params_B", 0.0) * 1e9;
    check::in_range(fmt::format("{}: published_params_B", where), s.published_params / 1e9, 0.0, 1e9);
    s.max_context = number_or(where, m, "max_context", 0.0);
    check::in_range(fmt::format("{}: max_context", where), s.max_context, 0.0, 1e9);
    if (m.contains("checkpoint_weights")) {  // the released checkpoint's format (its quantization_config)
        s.checkpoint_weights = parse_dtype(fmt::format("{}: checkpoint_weights", where), string(where, m, "checkpoint_weights"));
        s.checkpoint_weights_from = "the released checkpoint";
        s.checkpoint_bf16_attention = number_or(where, m, "checkpoint_bf16_attention", 0.0);
        check::unit_interval(fmt::format("{}: checkpoint_bf16_attention", where), s.checkpoint_bf16_attention);
    }
    return s;
}

namespace {
std::string model_type(const json& in, const json& m) { return text_or(m, "model_type", text_or(in, "model_type")); }

// The sliding window W when one is active and shorter than the longest
// context (a window the model can never fill is full attention), else 0.
int active_window(std::string_view where, const json& m) {
    if (!m.contains("sliding_window") || m.at("sliding_window").is_null()) return 0;
    if (!boolean_or(where, m, "use_sliding_window", true)) return 0;
    const int w = field(where, m, "sliding_window", "window");
    const double ctx = number_or(where, m, "max_position_embeddings", 0.0);
    return ctx > 0 && w >= ctx ? 0 : w;
}

// Layers by attention kind (docs/model.md, "Per-layer attention"): from
// `layer_types` (full_attention, sliding_attention, linear_attention;
// chunked_attention is Llama-4's, counted in hf_layer_structure.cpp) when
// present, else from the keys each family uses: full_attention_interval
// (Qwen3-Next: every N-th layer full, the rest linear), sliding_window with
// sliding_window_pattern (Gemma-3: every P-th layer global), gemma2 (every
// other layer), max_window_layers (Qwen2: layers from that index on), or
// every attention layer (Mistral, Phi-3).
void read_layer_kinds(std::string_view where, const json& in, const json& m, ModelSpec& s) {
    const int L = s.layers, W = active_window(where, m);
    bool typed = false, chunked = false;
    int sliding = 0;
    if (m.contains("layer_types") && m.at("layer_types").is_array()) {
        typed = true;
        const json& types = m.at("layer_types");
        if (types.size() != static_cast<std::size_t>(L))
            throw InputError(fmt::format("{}: layer_types: {} entries for num_hidden_layers {}", where, types.size(), L));
        for (const json& t : types) {
            const std::string kind = t.is_string() ? t.get<std::string>() : t.dump();
            if (kind == "sliding_attention")
                ++sliding;
            else if (kind == "linear_attention")
                ++s.linear_layers;
            else if (kind == "chunked_attention")  // Llama-4: a window of attention_chunk_size (hf_layer_structure.cpp)
                chunked = true;
            else if (kind != "full_attention")
                throw InputError(
                    fmt::format("{}: layer_types: '{}' layers are not modelled (full_attention, sliding_attention, "
                                "chunked_attention, linear_attention)",
                                where, kind));
        }
        if (chunked && !(m.contains("attention_chunk_size") && m.at("attention_chunk_size").is_number()))
            throw InputError(fmt::format("{}: attention_chunk_size: missing for the chunked_attention layers", where));
        if (sliding > 0 && W == 0 && !(m.contains("sliding_window") && m.at("sliding_window").is_number()))
            throw InputError(fmt::format("{}: sliding_window: missing for {} sliding_attention layers", where, sliding));
    } else if (m.contains("full_attention_interval") && !m.at("full_attention_interval").is_null()) {
        const int every = integer(where, m, "full_attention_interval", 1, L);
        s.linear_layers = L - L / every;
    }
    if (W > 0) {
        const std::string type = model_type(in, m);
        if (typed)
            s.window_layers = sliding;
        else if (m.contains("sliding_window_pattern") && !m.at("sliding_window_pattern").is_null())
            s.window_layers = L - L / integer(where, m, "sliding_window_pattern", 1, L);
        else if (type.rfind("gemma3", 0) == 0)
            s.window_layers = L - L / 6;  // transformers' Gemma-3 default pattern
        else if (type == "gemma2")
            s.window_layers = L - L / 2;
        else if (m.contains("max_window_layers") && !m.at("max_window_layers").is_null())
            s.window_layers = L - std::min(L, integer(where, m, "max_window_layers", 0, model_field_range("layers").hi));
        else
            s.window_layers = L - s.linear_layers;
        s.window = s.window_layers > 0 ? W : 0;
    }
    if (s.linear_layers > 0 && model_type(in, m).rfind("minimax", 0) != 0) {  // MiniMax's: hf_families.cpp
        s.linear_key_heads = field(where, m, "linear_num_key_heads", "linear_key_heads");
        s.linear_value_heads = field(where, m, "linear_num_value_heads", "linear_value_heads");
        s.linear_key_head_dim = field(where, m, "linear_key_head_dim", "linear_key_head_dim");
        s.linear_value_head_dim = field(where, m, "linear_value_head_dim", "linear_value_head_dim");
        s.linear_conv_kernel = field(where, m, "linear_conv_kernel_dim", "linear_conv_kernel");
    }
}

// The routed experts: their count, top-k, width, shared experts and leading dense layers.
void read_experts(std::string_view where, const json& in, const json& m, ModelSpec& s) {
    int experts = 0;
    const char* experts_key = nullptr;
    for (const char* k : {"n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"}) {
        if (m.contains(k) && !m.at(k).is_null()) {
            experts = field(where, m, k, "experts");
            experts_key = k;
            break;
        }
    }
    if (experts > 0) {
        s.experts = experts;
        const char* top_k = m.contains("num_experts_per_tok") ? "num_experts_per_tok"
                            : m.contains("top_k_experts")     ? "top_k_experts"
                            : m.contains("moe_k")             ? "moe_k"  // ERNIE-4.5
                                                              : "num_experts_per_tok";
        s.experts_active = field(where, m, top_k, "experts_active");
        // Mixtral's convention (num_local_experts: Mixtral, gpt-oss, Llama-4, MiniMax): intermediate_size is an
        // expert's width. Qwen-MoE and DeepSeek (num_experts, n_routed_experts) name it moe_intermediate_size,
        // their intermediate_size being the dense layers' (8x wider on Qwen3-30B-A3B): never guessed from it.
        // OLMoE counts num_experts with no dense layer: its intermediate_size is the experts' (OlmoeSparseMoeBlock).
        const bool expert_width = std::string_view(experts_key) == "num_local_experts" || model_type(in, m) == "olmoe";
        if (!expert_width && !m.contains("moe_intermediate_size"))
            throw InputError(
                fmt::format("{}: missing required key 'moe_intermediate_size' (each routed expert's width, "
                            "which a config with '{}' names; its intermediate_size is the dense layers')",
                            where, experts_key));
        s.moe_intermediate = field_or(where, m, "moe_intermediate_size", "moe_intermediate", s.intermediate);
        s.shared_experts = field_or(where, m, "n_shared_experts", "shared_experts", 0);
        if (s.shared_experts == 0 && m.contains("shared_expert_intermediate_size") && s.moe_intermediate > 0) {
            // Shared experts of moe_intermediate width that cover the shared width, rounded up (in double: no overflow).
            const int shared = integer(where, m, "shared_expert_intermediate_size", 0, model_field_range("moe_intermediate").hi);
            const double count = std::ceil(static_cast<double>(shared) / s.moe_intermediate);
            s.shared_experts = static_cast<int>(count);  // <= 1e7 / 1
        }
        s.first_dense_layers = field_or(where, m, "first_k_dense_replace", "first_dense_layers", 0);
    }
}
}  // namespace

ModelSpec model_from_hf_config(std::string_view where, const json& in, std::string name) {
    if (!in.is_object()) throw InputError(fmt::format("{}: expected a JSON object, got {}", where, in.type_name()));
    const bool nested = in.contains("text_config") && !in.at("text_config").is_null();
    if (nested && !in.at("text_config").is_object())
        throw InputError(fmt::format("{}: 'text_config' must be an object, got {}", where, found(in.at("text_config"))));
    refuse_unmodelled_layers(where, in, nested ? in.at("text_config") : in);
    refuse_unmodelled_features(where, nested ? in.at("text_config") : in);
    const json m = with_family_defaults(in, nested ? in.at("text_config") : in);
    ModelSpec s;
    s.name = std::move(name);
    s.layers = field(where, m, "num_hidden_layers", "layers");
    read_quantization(where, in, s);
    s.hidden = field(where, m, "hidden_size", "hidden");
    s.heads = field(where, m, "num_attention_heads", "heads");
    s.vocab = field(where, m, "vocab_size", "vocab");
    s.intermediate = field_or(where, m, "intermediate_size", "intermediate", 0);
    s.tied_embeddings = boolean_or(where, m, "tie_word_embeddings", false);
    s.max_context = number_or(where, m, "max_position_embeddings", 0.0);
    check::in_range(fmt::format("{}: max_position_embeddings", where), s.max_context, 0.0, 1e9);
    read_layer_kinds(where, in, m, s);
    if (m.contains("kv_lora_rank") && !m.at("kv_lora_rank").is_null()) {
        s.attention = Attention::mla;
        s.q_lora_rank = field_or(where, m, "q_lora_rank", "q_lora_rank", 0);
        s.kv_lora_rank = field(where, m, "kv_lora_rank", "kv_lora_rank");
        s.qk_rope_head_dim = field(where, m, "qk_rope_head_dim", "qk_rope_head_dim");
        s.qk_nope_head_dim = field(where, m, "qk_nope_head_dim", "qk_nope_head_dim");
        s.v_head_dim = field(where, m, "v_head_dim", "v_head_dim");
        if (m.contains("index_topk") && !m.at("index_topk").is_null()) {  // DeepSeek sparse attention (V3.2)
            s.index_topk = field(where, m, "index_topk", "index_topk");
            s.index_heads = field(where, m, "index_n_heads", "index_heads");
            s.index_head_dim = field(where, m, "index_head_dim", "index_head_dim");
        }
    } else {
        if (m.contains("index_topk") && !m.at("index_topk").is_null())
            throw InputError(
                fmt::format("{}: index_topk: DeepSeek sparse attention without MLA (kv_lora_rank) is not modelled", where));
        // MLA's other fields without its latent rank: read as GQA, its KV would be ~25× the latent's.
        for (const char* k : {"qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"})
            if (m.contains(k) && !m.at(k).is_null())
                throw InputError(
                    fmt::format("{}: kv_lora_rank: missing, though '{}' says the attention is MLA (give the "
                                "latent rank, a whole number)",
                                where, k));
        s.attention = Attention::gqa;
        s.kv_heads = field_or(where, m, "num_key_value_heads", "kv_heads", s.heads);
        s.head_dim = field_or(where, m, "head_dim", "head_dim", std::max(1, s.hidden / s.heads));
    }
    read_experts(where, in, m, s);
    read_hf_layer_structure(where, in, m, s);
    read_family_keys(where, in, m, s);
    // Dense layers with no width: name the key, not kvroof's field (the spec's check would).
    const bool dense_mlp = !s.is_moe() || s.first_dense_layers > 0;
    if (dense_mlp && s.intermediate < 1 && s.mlp_widths.empty() && s.mlp_free_layers < s.layers &&
        !m.contains("intermediate_size"))
        throw InputError(fmt::format(
            "{}: missing required key 'intermediate_size' (the {}MLP's width; a family that names it otherwise, as Falcon's "
            "implied 4 x hidden_size or Phi-3-small's ff_intermediate_size, is not read)",
            where, s.is_moe() ? "dense layers' " : ""));
    return s;
}

ModelSpec load_model(std::string_view flag, std::string_view name_or_path) {
    return *cached<ModelSpec>(name_or_path, [&] {
        if (is_path(name_or_path)) {
            const json j = read_python_json_file(flag, name_or_path);
            const std::string where = fmt::format("{} {}", flag, name_or_path);
            // A Hugging Face config.json (its own keys; one missing num_hidden_layers is still one, and is told so).
            const bool hf = j.is_object() && (j.contains("num_hidden_layers") || j.contains("text_config") ||
                                              j.contains("architectures") || j.contains("model_type"));
            if (hf) {
                std::string name(name_or_path);
                if (j.contains("_name_or_path") && j.at("_name_or_path").is_string())
                    name = j.at("_name_or_path").get<std::string>();
                ModelSpec s = model_from_hf_config(where, j, name);
                s.check_validity(where);
                return s;
            }
            const Entry e = single_entry(flag, name_or_path, j, "attention");
            ModelSpec s = model_from_json(where, e.value, e.name);
            s.check_validity(where);
            return s;
        }
        const std::string where = fmt::format("models.{}", name_or_path);
        ModelSpec s = model_from_json(where, find_preset(flag, "models", name_or_path), std::string(name_or_path));
        s.check_validity(where);
        return s;
    });
}

}  // namespace kvroof::io
