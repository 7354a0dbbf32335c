// SPDX-License-Identifier: MIT
// A Hugging Face config's quantization_config: the checkpoint's weight precision
// (docs/model.md, "Reading Hugging Face configs").
#include "hf_quantization.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include "presets_json.hpp"

namespace kvroof::io {

using namespace json_read;

namespace {
// compressed-tensors: the weights' num_bits and type of its config groups,
// which must agree: groups of different formats (mixed precision, e.g. FP8
// attention and INT4 MLPs) would size every weight at one of them.
std::optional<DType> compressed_tensors_dtype(std::string_view where, const json& q) {
    if (!q.contains("config_groups") || !q.at("config_groups").is_object()) return std::nullopt;
    std::optional<DType> out;
    std::string first;
    for (const auto& [name, group] : q.at("config_groups").items()) {
        if (!group.is_object() || !group.contains("weights") || !group.at("weights").is_object()) continue;
        const json& w = group.at("weights");
        const int bits = w.contains("num_bits") && w.at("num_bits").is_number_integer() ? w.at("num_bits").get<int>() : 0;
        const std::string type = text_or(w, "type", "int");
        std::optional<DType> d;
        if (bits == 8) d = type == "float" ? DType::fp8 : DType::int8;
        if (bits == 4) d = type == "float" ? DType::fp4 : DType::int4;
        if (!d) return std::nullopt;
        if (out && *out != *d)
            throw InputError(
                fmt::format("{}: quantization_config.config_groups: {} is {} and {} is {}: mixed-precision checkpoints are not "
                            "modelled; give --weight-dtype",
                            where, first, to_string(*out), name, to_string(*d)));
        if (!out) first = name;
        out = d;
    }
    return out;
}

// A quantisation exclusion that names a vision or audio tower or a multimodal
// projector: not the text layers' attention.
bool names_another_tower(const std::string& t) {
    for (const char* k : {"vision", "visual", "audio", "multi_modal", "mm_projector", "image"})
        if (t.find(k) != std::string::npos) return true;
    return false;
}

// The share of layers whose attention projections a quantised checkpoint
// keeps unquantised: modules_to_not_convert (transformers) or ignore
// (compressed-tensors) naming `self_attn` of every layer (a `*`) or of
// numbered layers. Other entries (norms, routers, the LM head) are kept
// anyway, and a vision or audio tower's attention is not the text layers'.
double kept_attention_share(const json& q, int layers) {
    std::set<long> named;
    for (const char* key : {"modules_to_not_convert", "ignore"}) {
        if (!q.contains(key) || !q.at(key).is_array()) continue;
        for (const json& e : q.at(key)) {
            const std::string t = e.is_string() ? e.get<std::string>() : std::string();
            if (t.find("self_attn") == std::string::npos || names_another_tower(t)) continue;
            const auto at = t.find("layers.");
            if (at == std::string::npos || t.find('*') != std::string::npos) return 1.0;
            named.insert(std::strtol(t.c_str() + at + 7, nullptr, 10));
        }
    }
    return layers > 0 ? std::min(1.0, static_cast<double>(named.size()) / layers) : 0.0;
}
}  // namespace

// The weight precision a Hugging Face quantization_config declares; an error
// naming the method for one kvroof does not model.
void read_quantization(std::string_view where, const json& in, ModelSpec& s) {
    if (!in.contains("quantization_config") || in.at("quantization_config").is_null()) return;
    const json& q = in.at("quantization_config");
    if (!q.is_object()) throw InputError(fmt::format("{}: 'quantization_config' must be an object, got {}", where, found(q)));
    const std::string method = text_or(q, "quant_method");
    const bool gptq_like = method == "awq" || method == "gptq";
    int bits = q.contains("bits") && q.at("bits").is_number_integer() ? q.at("bits").get<int>() : 0;
    if (gptq_like && q.contains("bits")) {  // 4 or 4.0 alike; anything else names the key, not the method
        const json& b = q.at("bits");
        const double v = b.is_number() ? b.get<double>() : 0.0;
        if (v != 4 && v != 8)
            throw InputError(
                fmt::format("{}: quantization_config.bits: {} is modelled at 4 or 8 bits, got {}; give --weight-dtype", where,
                            method, b.dump()));
        bits = static_cast<int>(v);
    }
    std::optional<DType> d;
    if (method == "fp8" || method == "fbgemm_fp8") d = DType::fp8;
    if (method == "mxfp4") d = DType::mxfp4;
    if (gptq_like && (bits == 4 || bits == 8)) d = bits == 4 ? DType::int4 : DType::int8;
    if (method == "compressed-tensors") d = compressed_tensors_dtype(where, q);
    if (method == "modelopt") {
        const std::string algo = text_or(q, "quant_algo");
        if (algo == "FP8") d = DType::fp8;
        if (algo == "NVFP4") d = DType::fp4;
    }
    if (!d)
        throw InputError(
            fmt::format("{}: quantization_config: quant_method '{}'{} is not modelled (supported: fp8, mxfp4, 4- and "
                        "8-bit awq/gptq, compressed-tensors fp8/int8/int4/fp4, modelopt FP8/NVFP4); give --weight-dtype",
                        where, method, bits ? fmt::format(" with {} bits", bits) : std::string()));
    s.checkpoint_weights = d;
    s.checkpoint_weights_from = fmt::format("quantization_config: {}", method);
    s.checkpoint_bf16_attention = kept_attention_share(q, s.layers);
}

}  // namespace kvroof::io
