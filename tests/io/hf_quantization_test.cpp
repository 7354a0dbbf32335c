// SPDX-License-Identifier: MIT
// Hugging Face configs: the checkpoint's quantization_config sets the weights'
// precision (--weight-dtype overrides it), Python's Infinity/NaN literals read,
// and features kvroof does not model are named in the error, not read as full
// attention.
#include <unistd.h>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

namespace {
// A Llama-3.1-8B-shaped config with `extra` keys added, in a file of its own
// (load_model caches by path).
std::string config_file(const std::string& extra) {
    static int n = 0;
    const auto path = std::filesystem::temp_directory_path() /
                      ("kvroof_hf_" + std::to_string(::getpid()) + "_" + std::to_string(++n) + ".json");
    std::ofstream(path) << R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072)"
                        << (extra.empty() ? "" : ", " + extra) << "}";
    return path.string();
}
}  // namespace

TEST_CASE("quantization_config sets the weights' precision, --weight-dtype overrides it", "[hf][quant]") {
    const std::string fp8 =
        config_file(R"("quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})");
    const ModelSpec m = io::load_model("--model", fp8);
    REQUIRE(m.checkpoint_weights);
    CHECK(*m.checkpoint_weights == DType::fp8);
    io::ScenarioInputs in;
    in.set("model", fp8);
    CHECK(io::build_scenario(in).scenario.policy.weight_dtype == DType::fp8);
    in.set("weight-dtype", "bf16");
    CHECK(io::build_scenario(in).scenario.policy.weight_dtype == DType::bf16);
    // A preset without one keeps the default.
    CHECK_FALSE(io::load_model("--model", "llama-3.1-8b").checkpoint_weights);
}

TEST_CASE("each supported quantisation method maps to its precision", "[hf][quant]") {
    const std::pair<const char*, DType> cases[] = {
        {R"({"quant_method": "mxfp4"})", DType::fp4},
        {R"({"quant_method": "awq", "bits": 4, "group_size": 128})", DType::int4},
        {R"({"quant_method": "gptq", "bits": 4})", DType::int4},
        {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}})",
         DType::fp8},
        {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}})",
         DType::int4},
        {R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})", DType::fp4},
    };
    for (const auto& [q, d] : cases) {
        INFO(q);
        const ModelSpec m = io::load_model("--model", config_file(std::string(R"("quantization_config": )") + q));
        REQUIRE(m.checkpoint_weights);
        CHECK(*m.checkpoint_weights == d);
    }
    CHECK_THROWS_WITH(io::load_model("--model", config_file(R"("quantization_config": {"quant_method": "awq", "bits": 8})")),
                      Catch::Contains("quant_method 'awq' with 8 bits is not modelled"));
    CHECK_THROWS_WITH(io::load_model("--model", config_file(R"("quantization_config": {"quant_method": "bitsandbytes"})")),
                      Catch::Contains("give --weight-dtype"));
}

TEST_CASE("Python's Infinity and NaN literals read, the rest of the file is unchanged", "[hf]") {
    const ModelSpec m = io::load_model(
        "--model", config_file(R"("time_step_limit": [0.0, Infinity], "x": -Infinity, "y": NaN, "note": "NaN Infinity")"));
    CHECK(m.layers == 32);
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() == 131072);
}

TEST_CASE("features kvroof does not model are named, not read as full attention", "[hf]") {
    CHECK_THROWS_WITH(io::load_model("--model", config_file(R"("sliding_window": 4096)")),
                      Catch::Contains("sliding_window: 4096-token sliding-window attention is not modelled yet"));
    CHECK_THROWS_WITH(io::load_model("--model", config_file(R"("layer_types": ["full_attention", "sliding_attention"])")),
                      Catch::Contains("layer_types: 'sliding_attention' layers are not modelled yet"));
    CHECK_THROWS_WITH(io::load_model("--model", config_file(R"("block_configs": [{"attention": {}}])")),
                      Catch::Contains("block_configs: heterogeneous layers are not modelled yet"));
    CHECK_THROWS_WITH(io::load_model("--model", config_file(R"("attention_chunk_size": 8192)")),
                      Catch::Contains("attention_chunk_size: chunked local attention (Llama-4) is not modelled yet"));
    CHECK_THROWS_WITH(io::load_model("--model", config_file(R"("interleave_moe_layer_step": 2)")),
                      Catch::Contains("interleave_moe_layer_step: MoE on one layer in 2 is not modelled yet"));
    CHECK_NOTHROW(io::load_model("--model", config_file(R"("attention_chunk_size": null, "interleave_moe_layer_step": 1)")));
    // Not a window in effect: disabled, absent (null), or as long as the context.
    CHECK_NOTHROW(io::load_model("--model", config_file(R"("sliding_window": 4096, "use_sliding_window": false)")));
    CHECK_NOTHROW(io::load_model("--model", config_file(R"("sliding_window": null)")));
    CHECK_NOTHROW(io::load_model("--model", config_file(R"("sliding_window": 131072)")));
    CHECK_NOTHROW(io::load_model("--model", config_file(R"("layer_types": ["full_attention", "full_attention"])")));
}

TEST_CASE("top_k_experts names the active experts where num_experts_per_tok is absent", "[hf]") {
    const ModelSpec m =
        io::load_model("--model", config_file(R"("num_experts": 64, "top_k_experts": 4, "moe_intermediate_size": 1024)"));
    CHECK(m.experts == 64);
    CHECK(m.experts_active == 4);
}
