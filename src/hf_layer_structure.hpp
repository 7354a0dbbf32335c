// SPDX-License-Identifier: MIT
#pragma once
// Hugging Face layer structures beyond a uniform stack of attention + MLP
// layers (src/hf_layer_structure.cpp; docs/model.md, "Per-layer attention"):
// Nemotron-H's hybrid_override_pattern, DeciLM's block_configs, Llama-4's
// shared expert, interleaved MoE and chunked attention. Private to the preset
// loaders.

#include <nlohmann/json.hpp>
#include <string_view>

#include "kvroof/spec/model.hpp"

namespace kvroof::io {

// Before any field is read: an exit-2 error naming the key for a hybrid layer
// kind kvroof does not model (Mamba-1, Jamba/Zamba layer lists).
void refuse_unmodelled_layers(std::string_view where, const nlohmann::json& in, const nlohmann::json& m);

// After the uniform fields are read from config `m` (the text_config of `in`
// when nested): the per-layer structure, overriding what a uniform read got wrong.
void read_hf_layer_structure(std::string_view where, const nlohmann::json& in, const nlohmann::json& m, ModelSpec& s);

}  // namespace kvroof::io
