// SPDX-License-Identifier: MIT
// Hugging Face layer structures: Nemotron-H, DeciLM block_configs, Llama-4.
#include "hf_layer_structure.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "presets_json.hpp"

namespace kvroof::io {

using namespace json_read;

namespace {
bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }
std::string text(const json& j, const char* key) {
    return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}

// Nemotron-H: one character per layer, M a Mamba-2 mixer, * attention, - an MLP
// (transformers' NemotronHBlock: each layer is one of them, never both).
void read_hybrid_pattern(std::string_view where, const json& m, ModelSpec& s) {
    const json& p = m.at("hybrid_override_pattern");
    if (!p.is_string()) throw InputError(fmt::format("{}: 'hybrid_override_pattern' must be a string, got {}", where, found(p)));
    const std::string pattern = p.get<std::string>();
    if (pattern.size() != static_cast<std::size_t>(s.layers))
        throw InputError(
            fmt::format("{}: hybrid_override_pattern: {} characters for num_hidden_layers {}", where, pattern.size(), s.layers));
    int mamba = 0, attention = 0, mlp = 0;
    for (const char c : pattern) {
        if (c == 'M')
            ++mamba;
        else if (c == '*')
            ++attention;
        else if (c == '-')
            ++mlp;
        else
            throw InputError(fmt::format(
                "{}: hybrid_override_pattern: '{}' layers are not modelled (M Mamba-2, * attention, - MLP)", where, c));
    }
    if (attention == 0) throw InputError(fmt::format("{}: hybrid_override_pattern: no attention layer ('*')", where));
    s.linear_layers = mamba;
    s.mlp_only_layers = mlp;
    s.mlp_free_layers = mamba + attention;
    s.mlp_gated = false;  // NemotronHMLP: down(act(up(x))), relu² in the published configs
    s.head_dim = field_or(where, m, "head_dim", "head_dim", field_or(where, m, "attention_head_dim", "head_dim", s.head_dim));
    if (mamba == 0) return;
    // Mamba-2 as a linear layer: n_groups × ssm_state_size for the key (B, C),
    // mamba_num_heads × mamba_head_dim for the value (x; d_inner).
    s.linear_kind = LinearKind::mamba2;
    s.linear_key_heads = field(where, m, "n_groups", "linear_key_heads");
    s.linear_key_head_dim = field(where, m, "ssm_state_size", "linear_key_head_dim");
    s.linear_value_heads = field(where, m, "mamba_num_heads", "linear_value_heads");
    s.linear_value_head_dim = field(where, m, "mamba_head_dim", "linear_value_head_dim");
    s.linear_conv_kernel = field(where, m, "conv_kernel", "linear_conv_kernel");
}

// DeciLM's FFN width: modeling_decilm.py _ffn_mult_to_intermediate_size,
// int(2·ffn_mult·h/3) rounded up to a multiple of 256.
int decilm_ffn_width(std::string_view where, const json& ffn, int hidden) {
    const double mult = number(where, ffn, "ffn_mult");
    check::in_range(fmt::format("{}: block_configs: ffn_mult", where), mult, 1e-6, 1e4);
    const double width = std::floor(2.0 * mult * hidden / 3.0);
    if (width > model_field_range("intermediate").hi - 256)
        throw InputError(fmt::format("{}: block_configs: ffn_mult {:g} gives an FFN width of {:g}, over {}", where, mult, width,
                                     model_field_range("intermediate").hi - 256));
    const int w = static_cast<int>(width);
    return w % 256 == 0 ? w : w + 256 - w % 256;
}

// DeciLM (Llama-3.3-Nemotron-Super/Ultra): per layer GQA attention with
// n_heads_in_group query heads per KV head, or none (no_op); an FFN of
// ffn_mult, or none. Every attention layer must have the same KV heads.
void read_block_configs(std::string_view where, const json& m, ModelSpec& s) {
    const json& blocks = m.at("block_configs");
    if (!blocks.is_array() || blocks.size() != static_cast<std::size_t>(s.layers))
        throw InputError(fmt::format("{}: block_configs: {} for num_hidden_layers {}", where,
                                     blocks.is_array() ? std::to_string(blocks.size()) + " entries" : found(blocks), s.layers));
    s.mlp_only_layers = s.mlp_free_layers = 0;
    s.mlp_widths.clear();
    int group = 0;
    for (const json& b : blocks) {
        if (!b.is_object() || !b.contains("attention") || !b.contains("ffn"))
            throw InputError(fmt::format("{}: block_configs: each entry needs 'attention' and 'ffn', got {}", where, found(b)));
        const json &att = b.at("attention"), &ffn = b.at("ffn");
        for (const auto& [part, key] : {std::pair{&att, "replace_with_linear"}, {&ffn, "replace_with_linear"}})
            if (boolean_or(where, *part, key, false))
                throw InputError(fmt::format("{}: block_configs: {}: a linear replacement layer is not modelled", where, key));
        if (present(att, "window_length"))
            throw InputError(fmt::format("{}: block_configs: window_length: windowed DeciLM attention is not modelled", where));
        if (boolean_or(where, att, "no_op", false)) {
            ++s.mlp_only_layers;
        } else {
            const int g = integer(where, att, "n_heads_in_group", 1, s.heads);
            if (group != 0 && g != group)
                throw InputError(
                    fmt::format("{}: block_configs: n_heads_in_group {} and {}: KV heads that differ by layer are not modelled",
                                where, group, g));
            group = g;
        }
        if (boolean_or(where, ffn, "no_op", false))
            ++s.mlp_free_layers;
        else
            s.mlp_widths.push_back(decilm_ffn_width(where, ffn, s.hidden));
    }
    if (group == 0) throw InputError(fmt::format("{}: block_configs: no attention layer", where));
    if (s.heads % group != 0)
        throw InputError(
            fmt::format("{}: block_configs: n_heads_in_group {} must divide num_attention_heads {}", where, group, s.heads));
    s.kv_heads = s.heads / group;
    s.intermediate = 0;  // the widths are per layer
}

// Llama-4: a shared expert beside the routed ones in every MoE layer, of the
// routed experts' width (intermediate_size); the other layers a dense MLP of
// intermediate_size_mlp; MoE on every interleave_moe_layer_step-th layer.
void read_llama4_moe(std::string_view where, const json& m, ModelSpec& s) {
    if (s.experts == 0) return;
    s.moe_intermediate = field(where, m, "intermediate_size", "moe_intermediate");
    s.intermediate = field_or(where, m, "intermediate_size_mlp", "intermediate", s.intermediate);
    s.shared_experts = 1;
    int moe = s.layers / integer_or(where, m, "interleave_moe_layer_step", 1, s.layers, 1);  // range(step−1, L, step)
    if (present(m, "moe_layers")) {
        if (!m.at("moe_layers").is_array()) throw InputError(fmt::format("{}: 'moe_layers' must be a list", where));
        moe = static_cast<int>(std::min<std::size_t>(m.at("moe_layers").size(), s.layers));
    }
    s.first_dense_layers = s.layers - moe;  // where they are does not matter: a count
}

// Chunked local attention (Llama-4): the layers layer_types marks
// chunked_attention, else those with RoPE (no_rope_layers 1; transformers'
// default: all but every 4th), attend within their chunk of
// attention_chunk_size tokens, modelled as a window of that size (an upper bound).
void read_chunked_attention(std::string_view where, const json& m, ModelSpec& s) {
    const int chunk = field(where, m, "attention_chunk_size", "window");
    const int every = integer_or(where, m, "no_rope_layer_interval", 1, s.layers, 4);
    int chunked = s.layers - s.layers / every;  // Llama4TextConfig's default: (i + 1) % every != 0 keeps RoPE
    if (present(m, "layer_types") && m.at("layer_types").is_array()) {  // its length checked by read_layer_kinds
        chunked = 0;
        for (const json& t : m.at("layer_types")) chunked += t == "chunked_attention" ? 1 : 0;
    } else if (present(m, "no_rope_layers") && !(m.at("no_rope_layers").is_array() && m.at("no_rope_layers").empty())) {
        const json& rope = m.at("no_rope_layers");
        if (!rope.is_array() || rope.size() != static_cast<std::size_t>(s.layers))
            throw InputError(fmt::format("{}: no_rope_layers: must list num_hidden_layers ({}) entries", where, s.layers));
        chunked = 0;
        for (const json& r : rope) chunked += r.is_number() && r.get<double>() != 0 ? 1 : 0;
    }
    if (s.window_layers > 0 || s.linear_layers > 0)
        throw InputError(
            fmt::format("{}: attention_chunk_size: chunked attention beside other layer kinds is not modelled", where));
    s.window_layers = std::min(chunked, s.attention_layers());
    s.window = s.window_layers > 0 ? chunk : 0;
}
}  // namespace

void refuse_unmodelled_layers(std::string_view where, const json& in, const json& m) {
    const std::string type = text(m, "model_type").empty() ? text(in, "model_type") : text(m, "model_type");
    for (const char* mamba1 : {"mamba", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "falcon_h1"})
        if (type == mamba1)
            throw InputError(
                fmt::format("{}: model_type '{}': its Mamba layers are not modelled (Nemotron-H's Mamba-2 "
                            "hybrid_override_pattern is)",
                            where, type));
    if (type.rfind("llama4", 0) != 0 && m.contains("interleave_moe_layer_step") &&
        m.at("interleave_moe_layer_step").is_number() && m.at("interleave_moe_layer_step").get<double>() > 1)
        throw InputError(fmt::format("{}: interleave_moe_layer_step: MoE on some layers is modelled for Llama-4 only", where));
    if (present(m, "layers_block_type"))
        throw InputError(fmt::format("{}: layers_block_type: hybrid Mamba layer lists are not modelled", where));
}

void read_hf_layer_structure(std::string_view where, const json& in, const json& m, ModelSpec& s) {
    if (present(m, "hybrid_override_pattern")) read_hybrid_pattern(where, m, s);
    if (present(m, "block_configs")) read_block_configs(where, m, s);
    const std::string type = text(m, "model_type").empty() ? text(in, "model_type") : text(m, "model_type");
    if (type.rfind("llama4", 0) == 0) read_llama4_moe(where, m, s);
    if (present(m, "attention_chunk_size")) read_chunked_attention(where, m, s);
}

}  // namespace kvroof::io
