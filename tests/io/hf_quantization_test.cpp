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

#include "../test_support.hpp"
#include "kvroof/analysis/mix_demand.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

using test::hf_config_file;

TEST_CASE("quantization_config sets the weights' precision, --weight-dtype overrides it", "[hf][quant]") {
    const std::string fp8 =
        hf_config_file(R"("quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})");
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
        {R"({"quant_method": "mxfp4"})", DType::mxfp4},
        {R"({"quant_method": "gptq", "bits": 8, "group_size": 128})", DType::int8},
        {R"({"quant_method": "awq", "bits": 4, "group_size": 128})", DType::int4},
        {R"({"quant_method": "gptq", "bits": 4})", DType::int4},
        {R"({"quant_method": "gptq", "bits": 4.0})", DType::int4},  // a whole number written as a float
        {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}})",
         DType::fp8},
        {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}})",
         DType::int4},
        {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int"}}}})",
         DType::int8},
        {R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})", DType::fp4},
    };
    for (const auto& [q, d] : cases) {
        INFO(q);
        const ModelSpec m = io::load_model("--model", hf_config_file(std::string(R"("quantization_config": )") + q));
        REQUIRE(m.checkpoint_weights);
        CHECK(*m.checkpoint_weights == d);
    }
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(R"("quantization_config": {"quant_method": "awq", "bits": 3})")),
                      Catch::Contains("quantization_config.bits: awq is modelled at 4 or 8 bits, got 3"));
    CHECK_THROWS_WITH(
        io::load_model("--model", hf_config_file(R"("quantization_config": {"quant_method": "gptq", "bits": 4.5})")),
        Catch::Contains("quantization_config.bits: gptq is modelled at 4 or 8 bits, got 4.5"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(R"("quantization_config": {"quant_method": "bitsandbytes"})")),
                      Catch::Contains("give --weight-dtype"));
}

TEST_CASE("a quantised checkpoint keeps embeddings, LM head and the attention it lists in BF16", "[hf][quant]") {
    // Llama-3.1-8B's shape: embedding and LM head 128,256·4,096 each; attention
    // 32 layers of 2·4,096² + 2·4,096·1,024 = 41,943,040; all 8,029,995,008.
    const double embed = 128'256.0 * 4096, attention = 32 * 41'943'040.0, total = 8'029'995'008.0;
    const double kept = 2 * embed;  // no routers in a dense model
    // AWQ INT4 in groups of 128 with an FP16 scale and a 4-bit zero: 4.15625 bits.
    ModelSpec m = io::load_model("--model", hf_config_file(R"("quantization_config": {"quant_method": "awq", "bits": 4})"));
    CHECK(m.checkpoint_bf16_attention == 0.0);
    CHECK(weight_bytes(m, DType::int4).raw() == Approx((total - kept) * 4.15625 / 8 + 2 * kept).epsilon(1e-12));
    // Another format than the checkpoint's re-quantises every matrix.
    CHECK(weight_bytes(m, DType::fp8).raw() == Approx(total).epsilon(1e-12));
    CHECK(weight_bytes(m, DType::bf16).raw() == Approx(2 * total).epsilon(1e-12));
    // modules_to_not_convert with every layer's self_attn (gpt-oss's form), and with 8 of 32 layers named.
    m = io::load_model("--model", hf_config_file(R"("quantization_config": {"quant_method": "mxfp4",
      "modules_to_not_convert": ["model.layers.*.self_attn", "model.embed_tokens", "lm_head"]})"));
    CHECK(m.checkpoint_bf16_attention == 1.0);
    CHECK(weight_bytes(m, DType::mxfp4).raw() ==
          Approx((total - kept - attention) * 4.25 / 8 + 2 * (kept + attention)).epsilon(1e-12));
    m = io::load_model("--model", hf_config_file(R"("quantization_config": {"quant_method": "compressed-tensors",
      "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float"}}},
      "ignore": ["lm_head", "model.layers.0.self_attn", "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.o_proj",
                 "model.layers.2.self_attn", "model.layers.3.self_attn", "model.layers.4.self_attn",
                 "model.layers.5.self_attn", "model.layers.6.self_attn", "model.layers.31.self_attn"]})"));
    CHECK(m.checkpoint_bf16_attention == 0.25);
    CHECK(weight_bytes(m, DType::fp4).raw() ==
          Approx((total - kept - attention / 4) * 4.5 / 8 + 2 * (kept + attention / 4)).epsilon(1e-12));
}

TEST_CASE("the gpt-oss-120b preset is sized as its MXFP4 checkpoint, ~65 GB", "[hf][quant]") {
    io::ScenarioInputs in;
    in.set("model", "gpt-oss-120b");
    const Scenario s = io::build_scenario(in).scenario;
    CHECK(s.policy.weight_dtype == DType::mxfp4);
    CHECK(gemm_dtype(s.policy) == DType::fp4);
    // tests/io/hf_corpus_test.cpp: 114,661,785,600 expert weights at 4.25 bits, 2,127,052,800 in BF16.
    CHECK(weight_bytes(s.model, s.policy.weight_dtype).raw() == Approx(65'168'179'200.0).epsilon(1e-12));
}

TEST_CASE("Python's Infinity and NaN literals read, the rest of the file is unchanged", "[hf]") {
    const ModelSpec m = io::load_model(
        "--model", hf_config_file(R"("time_step_limit": [0.0, Infinity], "x": -Infinity, "y": NaN, "note": "NaN Infinity")"));
    CHECK(m.layers == 32);
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() == 131072);
    // A NaN where kvroof reads a number is named, not taken as absent (it fell back to MHA: 4x the KV).
    const std::string nan_heads = test::temp_json_file(
        "hf", R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                  "num_key_value_heads": NaN, "intermediate_size": 14336, "vocab_size": 128256})");
    CHECK_THROWS_WITH(io::load_model("--model", nan_heads), Catch::Contains("num_key_value_heads") && Catch::Contains("NaN"));
}

// 32 entries of `kind`, with `first` in front when given.
std::string layer_types(const std::string& kind, const std::string& first = "", int layers = 32) {
    std::string s = R"("layer_types": [)";
    for (int i = 0; i < layers; ++i) s += (i ? ", \"" : "\"") + (i == 0 && !first.empty() ? first : kind) + "\"";
    return s + "]";
}

TEST_CASE("features kvroof does not model are named, not read as full attention", "[hf]") {
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(R"("block_configs": [{"attention": {}}])")),
                      Catch::Contains("block_configs: 1 entries for num_hidden_layers 32"));
    CHECK_NOTHROW(io::load_model("--model", hf_config_file(R"("attention_chunk_size": null, "interleave_moe_layer_step": 1)")));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(R"("interleave_moe_layer_step": 2)")),
                      Catch::Contains("interleave_moe_layer_step: MoE on some layers is modelled for Llama-4 only"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(R"("hybrid_override_pattern": ")" + std::string(31, 'M') + "E\"")),
                      Catch::Contains("hybrid_override_pattern: 'E' layers are not modelled (M Mamba-2, * attention, - MLP)"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file("", "falcon_mamba")),
                      Catch::Contains("model_type 'falcon_mamba': its Mamba layers are not modelled"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(R"("layers_block_type": ["mamba"])", "jamba")),
                      Catch::Contains("model_type 'jamba'"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(layer_types("full_attention", "mamba"))),
                      Catch::Contains("layer_types: 'mamba' layers are not modelled (full_attention, sliding_attention, "
                                      "chunked_attention, linear_attention)"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(R"("layer_types": ["full_attention", "full_attention"])")),
                      Catch::Contains("layer_types: 2 entries for num_hidden_layers 32"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(layer_types("full_attention", "sliding_attention"))),
                      Catch::Contains("sliding_window: missing for 1 sliding_attention layers"));
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(layer_types("full_attention", "linear_attention"))),
                      Catch::Contains("'linear_num_key_heads'"));
}

TEST_CASE("sliding windows are read from each family's keys", "[hf][attention-layers]") {
    auto load = [](const std::string& extra, const std::string& type = "llama") {
        return io::load_model("--model", hf_config_file(extra, type));
    };
    // Mistral / Phi-3: every layer.
    ModelSpec m = load(R"("sliding_window": 4096)");
    CHECK(m.window_layers == 32);
    CHECK(m.window == 4096);
    // Not a window in effect: disabled, absent (null), or as long as the context.
    CHECK(load(R"("sliding_window": 4096, "use_sliding_window": false)").window_layers == 0);
    CHECK(load(R"("sliding_window": null)").window_layers == 0);
    CHECK(load(R"("sliding_window": 131072)").window_layers == 0);
    CHECK(load(layer_types("full_attention")).window_layers == 0);
    // gpt-oss: layer_types.
    m = load(layer_types("full_attention", "sliding_attention") + R"(, "sliding_window": 128)");
    CHECK(m.window_layers == 1);
    CHECK(m.window == 128);
    // Gemma-3: every 6th layer global (32 layers: 5 global, 27 local), by key or by default.
    CHECK(load(R"("sliding_window": 1024, "sliding_window_pattern": 6)").window_layers == 27);
    CHECK(load(R"("sliding_window": 1024)", "gemma3_text").window_layers == 27);
    // Gemma-2: every other layer; Qwen2: the layers from max_window_layers on.
    CHECK(load(R"("sliding_window": 4096)", "gemma2").window_layers == 16);
    CHECK(load(R"("sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 28)").window_layers == 4);
}

TEST_CASE("linear-attention layers come from full_attention_interval or layer_types", "[hf][attention-layers]") {
    const std::string linear = R"("linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
      "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4)";
    const ModelSpec a = io::load_model("--model", hf_config_file(R"("full_attention_interval": 4, )" + linear));
    CHECK(a.linear_layers == 24);
    CHECK(a.attention_layers() == 8);
    CHECK(a.linear_value_heads == 32);
    CHECK(a.linear_conv_kernel == 4);
    const ModelSpec b =
        io::load_model("--model", hf_config_file(layer_types("linear_attention", "full_attention") + ", " + linear));
    CHECK(b.linear_layers == 31);
    // 2·8·128·2 B per token and attention layer: 4,096; the state does not grow.
    CHECK(kv_bytes_per_token(a, DType::bf16).raw() == 8 * 4096.0);
}

TEST_CASE("top_k_experts names the active experts where num_experts_per_tok is absent", "[hf]") {
    const ModelSpec m =
        io::load_model("--model", hf_config_file(R"("num_experts": 64, "top_k_experts": 4, "moe_intermediate_size": 1024)"));
    CHECK(m.experts == 64);
    CHECK(m.experts_active == 4);
}

TEST_CASE("a kvroof model file carries layers by kind, with their ranges", "[attention-layers][ranges]") {
    const auto write = [](const std::string& name, const std::string& extra) {
        const auto path = std::filesystem::temp_directory_path() / ("kvroof_layers_" + std::to_string(::getpid()) + name);
        std::ofstream(path) << R"({"attention": "gqa", "layers": 48, "hidden": 2048, "heads": 16, "kv_heads": 2, "head_dim": 256,
          "intermediate": 5120, "vocab": 151936, )"
                            << extra << "}";
        return path.string();
    };
    const ModelSpec m = io::load_model(
        "--model", write("a.json", R"("window_layers": 6, "window": 4096, "linear_layers": 36, "linear_key_heads": 16,
          "linear_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel": 4)"));
    CHECK(m.window_layers == 6);
    CHECK(m.window == 4096);
    CHECK(m.attention_layers() == 12);
    CHECK(linear_state_bytes(m).raw() == 39'518'208);  // Qwen3-Next's state (tests/data/hf/README.md)
    // Lightning layers (MiniMax): no convolution, K = 0; no gates. h = 2048, 16 heads of 128 both ways:
    // qkv_proj + output_gate 2048·4·2048, out_proj 2048·2048; state 16·128·128 a layer.
    const ModelSpec lightning =
        io::load_model("--model", write("d.json", R"("linear_layers": 36, "linear_kind": "lightning", "linear_key_heads": 16,
          "linear_value_heads": 16, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel": 0)"));
    CHECK(lightning.linear_kind == LinearKind::lightning);
    CHECK(linear_params_per_layer(lightning) == 2048.0 * 4 * 2048 + 2048.0 * 2048);
    CHECK(linear_state_bytes(lightning).raw() == 36 * 16 * 128 * 128 * 2.0);
    CHECK_THROWS_WITH(io::load_model("--model", write("e.json", R"("linear_layers": 36, "linear_kind": "rwkv",
          "linear_key_heads": 1, "linear_value_heads": 1, "linear_key_head_dim": 1, "linear_value_head_dim": 1,
          "linear_conv_kernel": 1)")),
                      Catch::Contains("'linear_kind' must be gated_deltanet, mamba2 or lightning, got 'rwkv'"));
    CHECK_THROWS_WITH(io::load_model("--model", write("b.json", R"("window_layers": 6, "window": 0)")),
                      Catch::Contains("'window' must be a whole number in [1, 100000000], got 0"));
    CHECK_THROWS_WITH(io::load_model("--model", write("c.json", R"("linear_layers": 48, "linear_key_heads": 1,
          "linear_value_heads": 1, "linear_key_head_dim": 1, "linear_value_head_dim": 1, "linear_conv_kernel": 1)")),
                      Catch::Contains("with at least one attention layer"));
}

TEST_CASE("a checkpoint's BF16 GEMMs are charged at the BF16 peak", "[hf][quant][compute]") {
    auto prepared_mc = [](const char* hardware, const char* weights) {
        io::ScenarioInputs in;
        in.set("model", "gpt-oss-120b");
        in.set("hardware", hardware);
        if (weights) in.set("weight-dtype", weights);
        const Scenario s = io::build_scenario(in).scenario;
        const PreparedScenario ps(s);
        const ModelConstants plain = model_constants(s.model, s.policy);
        return std::pair{ps.mc, plain};
    };
    // Kept in BF16 by gpt-oss-120b's quantization_config: every layer's attention (955,514,880
    // weights, docs/model.md), the LM head (201,088 x 2,880) and the 36 routers (2,880 x 128 each).
    const double kept = 955'514'880.0 + 201'088.0 * 2'880 + 36.0 * 2'880 * 128;
    const auto [b200, plain] = prepared_mc("b200", nullptr);
    CHECK(plain.bf16_linear_per_token.raw() == Approx(2 * kept).epsilon(1e-12));
    // On a B200 the MXFP4 GEMMs run at the FP4 peak, 4x the BF16 one: each BF16 FLOP costs four.
    CHECK(b200.linear_per_token.raw() == Approx(plain.linear_per_token.raw() + 3 * 2 * kept).epsilon(1e-12));
    // Limiting cases: an H100 has no FP4 math, so every GEMM runs at BF16 already; and FP8
    // weights are the whole model re-quantised, with nothing kept in BF16.
    const auto [h100, h100_plain] = prepared_mc("h100-sxm", nullptr);
    CHECK(h100.linear_per_token.raw() == h100_plain.linear_per_token.raw());
    const auto [fp8, fp8_plain] = prepared_mc("b200", "fp8");
    CHECK(fp8_plain.bf16_linear_per_token.raw() == 0);
    CHECK(fp8.linear_per_token.raw() == fp8_plain.linear_per_token.raw());
}
