// SPDX-License-Identifier: MIT
#pragma once
// Hugging Face config keys particular to one family (src/hf_families.cpp;
// docs/model.md, "Reading Hugging Face configs"): the defaults transformers
// gives the Gemma families for keys their published configs leave out, the
// features kvroof refuses by name (Gemma-3n's shared KV), and the keys read
// into the uniform fields (Gemma-4's full-attention shape, attn_output_gate,
// mamba_ssm_dtype, MiniMax's attn_type_list, Qwen-MoE's dense layers).
// Private to the preset loaders.

#include <nlohmann/json.hpp>
#include <string_view>

#include "kvroof/spec/model.hpp"

namespace kvroof::io {

// Config `m` with the family's documented defaults filled in for absent keys
// (`in` the whole file, `m` its text_config when nested).
[[nodiscard]] nlohmann::json with_family_defaults(const nlohmann::json& in, const nlohmann::json& m);

// Before any field is read: an exit-2 error naming the key of a feature kvroof
// does not model.
void refuse_unmodelled_features(std::string_view where, const nlohmann::json& m);

// After the uniform fields are read: the family keys that refine them.
void read_family_keys(std::string_view where, const nlohmann::json& in, const nlohmann::json& m, ModelSpec& s);

}  // namespace kvroof::io
