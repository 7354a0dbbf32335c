// SPDX-License-Identifier: MIT
#pragma once
// The weight precision a Hugging Face quantization_config declares (src/hf_quantization.cpp).
// Private to the preset loaders.

#include <nlohmann/json.hpp>
#include <string_view>

#include "kvroof/spec/model.hpp"

namespace kvroof::io {

// Sets the checkpoint's weight precision, where it came from and the share of layers whose attention stays
// BF16; an exit-2 error naming the method (or its bits) for one kvroof does not model. Reads s.layers.
void read_quantization(std::string_view where, const nlohmann::json& in, ModelSpec& s);

}  // namespace kvroof::io
