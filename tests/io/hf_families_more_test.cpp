// SPDX-License-Identifier: MIT
// Hugging Face families a probe found misread (src/hf_families.cpp,
// src/hf_quantization.cpp), each sized by hand: ERNIE-4.5's MoE keys, MLPs
// without a gate, a vision tower's quantisation exclusions, mixed-precision
// compressed-tensors groups and Llama-3.2-Vision's cross-attention layers.
#include <catch2/catch.hpp>
#include <string>

#include "../test_support.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

// ERNIE-4.5-300B-A47B: L=54, h=8192, H=64, kv=8, d=128, I=28672, V=103424, 64 experts of 3584 (8 a token)
// from layer 3. Embedding and head 2·103424·8192 = 1,694,498,816; attention 8192·8192·2 + 2·8192·1024 =
// 150,994,944 a layer (its router 64·8192 = 524,288 more in the 51 MoE layers); dense MLPs 3·3·8192·28672 =
// 2,113,929,216; experts 51·64·3·8192·3584 = 287,602,556,928. Total 299,483,267,072 (the published 300 B).
// It was read as a dense 47.9 B model: moe_num_experts was not a key kvroof knew.
TEST_CASE("ERNIE-4.5's MoE keys: moe_num_experts, moe_k, moe_layer_start_index", "[hf]") {
    const std::string ernie = R"({"model_type": "ernie4_5_moe", "num_hidden_layers": 54, "hidden_size": 8192,
        "intermediate_size": 28672, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 103424, "moe_num_experts": 64, "moe_k": 8, "moe_intermediate_size": 3584,
        "moe_layer_start_index": 3, "moe_layer_end_index": 53, "moe_layer_interval": 1, "moe_num_shared_experts": 0)";
    const ModelSpec m = io::load_model("--model", test::temp_json_file("ernie", ernie + "}"));
    CHECK(m.experts == 64);
    CHECK(m.experts_active == 8);
    CHECK(m.first_dense_layers == 3);
    CHECK(param_counts(m).total == Approx(299'483'267'072.0).epsilon(1e-12));
    // Every n-th layer only, or dense layers after the MoE ones: refused by name.
    std::string every2 = ernie;
    every2.replace(every2.find("\"moe_layer_interval\": 1"), 23, "\"moe_layer_interval\": 2");
    CHECK_THROWS_WITH(io::load_model("--model", test::temp_json_file("ernie2", every2 + "}")),
                      Catch::Contains("moe_layer_interval"));
}

// StarCoder2-15B: L=40, h=6144, H=48, kv=4, d=128, I=24576, V=49152, untied (said so here: Starcoder2Config
// ties an absent tie_word_embeddings). MLP c_fc/c_proj (no gate):
// 2·6144·24576 = 301,989,888; attention 6144·6144·2 + 2·6144·512 = 81,788,928; 40 layers 15,351,152,640 +
// 2·49152·6144 = 603,979,776: 15,955,132,416 (the published 15.96 B). Read as gated: 21,994,930,176.
TEST_CASE("MLPs without a gate (StarCoder2, Phi-2, GPT-NeoX) have two weight matrices, not three", "[hf]") {
    const ModelSpec m =
        io::load_model("--model", test::temp_json_file("starcoder2", R"({"model_type": "starcoder2", "num_hidden_layers": 40,
            "hidden_size": 6144, "intermediate_size": 24576, "num_attention_heads": 48, "num_key_value_heads": 4,
            "vocab_size": 49152, "sliding_window": 4096, "tie_word_embeddings": false})"));
    CHECK_FALSE(m.mlp_gated);
    CHECK(param_counts(m).total == Approx(15'955'132'416.0).epsilon(1e-12));
    for (const char* family : {"phi", "gpt_neox"}) {
        const ModelSpec f =
            io::load_model("--model", test::temp_json_file(family, std::string(R"({"model_type": ")") + family +
                                                                       R"(", "num_hidden_layers": 2, "hidden_size": 64,
                "intermediate_size": 256, "num_attention_heads": 4, "vocab_size": 100})"));
        CAPTURE(family);
        CHECK_FALSE(f.mlp_gated);
    }
}

// Gemma-3-27B-it in FP8 whose ignore list names the vision tower's attention: the text layers' attention is
// quantised (it was counted as 27 of 62 text layers kept in BF16, +1.78 GB; a regex, as all of them).
TEST_CASE("a vision tower's attention in a quantisation exclusion is not the text layers'", "[hf][quant]") {
    const std::string body = R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
        "num_hidden_layers": 62, "hidden_size": 5376, "intermediate_size": 21504, "num_attention_heads": 32,
        "num_key_value_heads": 16, "head_dim": 128, "sliding_window": 1024},
        "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
        {"num_bits": 8, "type": "float"}}}, "ignore": [)";
    const ModelSpec plain = io::load_model("--model", test::temp_json_file("g3plain", body + R"("lm_head"]}})"));
    const ModelSpec vision =
        io::load_model("--model", test::temp_json_file("g3vision", body + R"("lm_head", "re:vision_tower.*self_attn.*",
            "vision_tower.vision_model.encoder.layers.0.self_attn.q_proj"]}})"));
    CHECK(plain.checkpoint_bf16_attention == 0.0);
    CHECK(vision.checkpoint_bf16_attention == 0.0);
}

TEST_CASE("compressed-tensors groups of different formats are refused, not sized at one of them", "[hf][quant]") {
    const std::string mixed = R"({"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256,
        "num_attention_heads": 4, "vocab_size": 100, "quantization_config": {"quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}, "targets": ["re:.*self_attn.*"]},
        "group_1": {"weights": {"num_bits": 4, "type": "int"}, "targets": ["re:.*mlp.*"]}}}})";
    CHECK_THROWS_WITH(io::load_model("--model", test::temp_json_file("ctmixed", mixed)),
                      Catch::Contains("mixed-precision") && Catch::Contains("--weight-dtype"));
}

TEST_CASE("Llama-3.2-Vision's cross-attention layers are refused by name, not counted as token KV", "[hf]") {
    CHECK_THROWS_WITH(io::load_model("--model", test::temp_json_file("mllama", R"({"model_type": "mllama", "text_config":
        {"model_type": "mllama_text_model", "num_hidden_layers": 40, "hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
        "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38]}})")),
                      Catch::Contains("cross_attention_layers"));
}

// OLMoE-1B-7B: L=16, h=2048, H=kv=16, d=128, 64 experts of intermediate_size 1024 (8 a token), V=50304, untied.
// Embedding and head 2·50304·2048 = 206,045,184; a layer's attention 4·2048·2048 = 16,777,216, experts
// 64·3·2048·1024 = 402,653,184, router 64·2048 = 131,072: 16·419,561,472 + 206,045,184 = 6,919,028,736 (the
// published 6.9 B). It was refused for want of moe_intermediate_size, which OLMoE has no use for.
TEST_CASE("OLMoE's experts are intermediate_size wide: it names no moe_intermediate_size", "[hf]") {
    const ModelSpec m = io::load_model("--model", test::temp_json_file("olmoe", R"({"model_type": "olmoe",
        "num_hidden_layers": 16, "hidden_size": 2048, "intermediate_size": 1024, "num_attention_heads": 16,
        "num_key_value_heads": 16, "vocab_size": 50304, "num_experts": 64, "num_experts_per_tok": 8})"));
    CHECK(m.moe_intermediate == 1024);
    CHECK(param_counts(m).total == Approx(6'919'028'736.0).epsilon(1e-12));
    // Another family counting num_experts still has to name the experts' width.
    CHECK_THROWS_WITH(io::load_model("--model", test::temp_json_file("qwenmoe", R"({"model_type": "qwen3_moe",
        "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
        "vocab_size": 100, "num_experts": 8, "num_experts_per_tok": 2})")),
                      Catch::Contains("moe_intermediate_size"));
}

TEST_CASE("a dense config without intermediate_size names that key", "[hf]") {
    CHECK_THROWS_WITH(io::load_model("--model", test::temp_json_file("falcon", R"({"model_type": "falcon",
        "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100})")),
                      Catch::Contains("missing required key 'intermediate_size'"));
}

// Qwen (v1) remote code, QWenMLP: w1 and w2 of intermediate_size / 2, c_proj back. Qwen-7B's config.json:
// L=32, h=4096, H=32 (MHA, kv_channels 128), I=22016, V=151936, untied. Per layer 4·4096² + 3·4096·11008 =
// 202,375,168; 32 of them 6,476,005,376, + 2·151,936·4096 = 1,244,659,712: 7,720,665,088 (the published 7.7 B).
// Read as a gated MLP of 22016 it was 12.05 B.
TEST_CASE("Qwen (v1): intermediate_size counts both halves of the gated MLP", "[hf]") {
    const ModelSpec m = io::load_model("--model", test::temp_json_file("qwen1", R"({"model_type": "qwen",
        "architectures": ["QWenLMHeadModel"], "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "kv_channels": 128, "intermediate_size": 22016, "vocab_size": 151936, "tie_word_embeddings": false})"));
    CHECK(m.intermediate == 11008);
    CHECK(m.mlp_gated);
    CHECK(param_counts(m).total == Approx(7'720'665'088.0).epsilon(1e-12));
}

// CohereConfig, Cohere2Config and Starcoder2Config tie the LM head unless told: Aya-23-8B's shape (L=32,
// h=4096, H=32, kv=8, I=14336, V=256000) has no tie_word_embeddings key. Per layer 2·4096² + 2·4096·1024 +
// 3·4096·14336 = 218,103,808; 32 of them 6,979,321,856 + 256,000·4096 once = 8,027,897,856 (untied: 9,076,473,856).
TEST_CASE("Cohere and StarCoder2: an absent tie_word_embeddings is their configs' default, tied", "[hf]") {
    const std::string shape = R"("num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 256000)";
    for (const char* type : {"cohere", "cohere2"}) {
        const ModelSpec m = io::load_model(
            "--model", test::temp_json_file(type, std::string(R"({"model_type": ")") + type + R"(", )" + shape + "}"));
        INFO(type);
        CHECK(m.tied_embeddings);
        CHECK(param_counts(m).total == Approx(8'027'897'856.0).epsilon(1e-12));
    }
    const ModelSpec untied = io::load_model(
        "--model",
        test::temp_json_file("cohere_untied", R"({"model_type": "cohere", "tie_word_embeddings": false, )" + shape + "}"));
    CHECK(param_counts(untied).total == Approx(9'076'473'856.0).epsilon(1e-12));
    CHECK(io::load_model("--model", test::temp_json_file("starcoder2", R"({"model_type": "starcoder2", )" + shape + "}"))
              .tied_embeddings);
}
