// SPDX-License-Identifier: MIT
// Family keys of Hugging Face configs (src/hf_families.cpp, and layer_types'
// chunked_attention in src/hf_layer_structure.cpp) on small configs, each
// checked by hand; the real configs are in tests/io/hf_corpus_families_test.cpp.
#include <catch2/catch.hpp>
#include <string>

#include "../test_support.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/call_demand.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

using test::hf_config_file;

namespace {
// A JSON list of 32 entries: `every` on each 4th (i % 4 == 3), `rest` on the others, from the `first`-th entry.
std::string layer_list(const std::string& rest, const std::string& every, int first) {
    std::string out;
    for (int i = 0; i < 32; ++i) out += (i ? ", " : "") + (i >= first && i % 4 == 3 ? every : rest);
    return out;
}
double held_at(const ModelSpec& m, double tokens) {
    PolicySpec p;
    p.kv_dtype = DType::bf16;
    return kv_held(model_constants(m, p), tokens).raw();
}
}  // namespace

// Gemma-3-27B's text_config as published names neither vocab_size nor
// tie_word_embeddings: Gemma3TextConfig's 262,208 and true. L=62, h=5376,
// H=32, kv=16, d=128, I=21504: attention 5376·4096·2 + 2·5376·2048 =
// 66,060,288; MLP 3·5376·21504 = 346,816,512; 62·412,876,800 = 25,598,361,600
// (the Gemma 3 report's 25,600 M non-embedding) + 262,208·5376 = 1,409,630,208
// once: 27,007,991,808. Every 6th layer global (10), 52 slide over 1,024.
TEST_CASE("Gemma-3: absent vocab_size and tie_word_embeddings take the family defaults", "[hf][attention-layers]") {
    const ModelSpec m = io::load_model(
        "--model", test::temp_json_file("gemma3", R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
            "num_hidden_layers": 62, "hidden_size": 5376, "intermediate_size": 21504, "num_attention_heads": 32,
            "num_key_value_heads": 16, "head_dim": 128, "sliding_window": 1024}})"));
    CHECK(m.tied_embeddings);
    CHECK(m.vocab == 262'208);
    CHECK(param_counts(m).total == Approx(27'007'991'808.0).epsilon(1e-12));
    CHECK(m.window_layers == 52);
    CHECK(m.window == 1024);
    // KV per layer 2·16·128·2 = 8,192 B/token: 10·8,192·65,536 + 52·8,192·1,024 (full attention: 5.7× more).
    CHECK(held_at(m, 65536) == Approx(5'804'916'736.0).epsilon(1e-12));
    const ModelSpec preset = io::load_model("--model", "gemma-3-27b");  // data/models.json: the same shapes
    CHECK(param_counts(preset).total == param_counts(m).total);
    CHECK(held_at(preset, 65536) == held_at(m, 65536));
    // Gemma-2 without the key ties too; Llama does not.
    CHECK(io::load_model("--model", hf_config_file("", "gemma2")).tied_embeddings);
    CHECK_FALSE(io::load_model("--model", hf_config_file("", "llama")).tied_embeddings);
}

// Llama-4 configs with layer_types: the chunked_attention layers (24 of 32)
// hold a chunk of attention_chunk_size 1,024, the full_attention ones all.
TEST_CASE("Llama-4: layer_types chunked_attention layers are windows of attention_chunk_size", "[hf][attention-layers]") {
    std::string types = R"("layer_types": [)";
    for (int i = 0; i < 32; ++i)
        types += std::string(i ? ", " : "") + (i % 4 == 3 ? "\"full_attention\"" : "\"chunked_attention\"");
    types += "]";
    const ModelSpec m = io::load_model("--model", hf_config_file(R"("attention_chunk_size": 1024, )" + types, "llama4_text"));
    CHECK(m.window_layers == 24);
    CHECK(m.window == 1024);
    CHECK(held_at(m, 65536) == 4096.0 * (8 * 65536 + 24 * 1024));  // 2·8·128·2 = 4,096 B/token a layer
    CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(types, "llama4_text")),
                      Catch::Contains("attention_chunk_size: missing for the chunked_attention layers"));
}

// Qwen-MoE: experts on layer i unless mlp_only_layers lists it, and only where
// (i + 1) % decoder_sparse_step == 0: with [0, 1] and step 2, layers 3, 5, …,
// 31 (15); the other 17 a dense MLP of intermediate_size.
TEST_CASE("Qwen-MoE: mlp_only_layers and decoder_sparse_step give dense layers", "[hf]") {
    const ModelSpec m =
        io::load_model("--model", hf_config_file(R"("num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 1024,
            "mlp_only_layers": [0, 1], "decoder_sparse_step": 2)",
                                                 "qwen3_moe"));
    CHECK(m.first_dense_layers == 17);
    const double attn = 4096.0 * 4096 * 2 + 2 * 4096.0 * 1024, expert = 3 * 4096.0 * 1024;
    CHECK(param_counts(m).total ==
          Approx(32 * attn + 15 * (4096 * 8 + 8 * expert) + 17 * 3 * 4096.0 * 14'336 + 2 * 128'256.0 * 4096).epsilon(1e-12));
}

// Gemma-4's enable_moe_block: a dense MLP of intermediate_size (14,336) beside
// the experts of 7,168 in every layer, counted as 2 always-on shared experts.
TEST_CASE("enable_moe_block: the dense MLP beside the experts is always on", "[hf]") {
    const ModelSpec m = io::load_model(
        "--model",
        hf_config_file(R"("num_experts": 8, "top_k_experts": 2, "moe_intermediate_size": 7168, "enable_moe_block": true)"));
    CHECK(m.experts_active == 2);
    CHECK(m.shared_experts == 2);
    const double attn = 4096.0 * 4096 * 2 + 2 * 4096.0 * 1024, expert = 3 * 4096.0 * 7168, emb = 2 * 128'256.0 * 4096;
    CHECK(param_counts(m).active == Approx(32 * (attn + 4096 * 8 + 4 * expert) + emb).epsilon(1e-12));
    CHECK_THROWS_WITH(
        io::load_model("--model", hf_config_file(R"("num_experts": 8, "top_k_experts": 2, "moe_intermediate_size": 5000,
            "enable_moe_block": true)")),
        Catch::Contains("enable_moe_block: a dense MLP of 14336 beside experts of 5000 is not modelled"));
}

TEST_CASE("Family features kvroof does not model are refused by key", "[hf]") {
    auto refused = [](const std::string& extra, const std::string& message) {
        INFO(extra);
        CHECK_THROWS_WITH(io::load_model("--model", hf_config_file(extra)), Catch::Contains(message));
    };
    refused(R"("attn_type_list": [1, 0, 1])", "attn_type_list: must list num_hidden_layers (32) entries, got 3 entries");
    refused(R"("attn_type_list": [)" + layer_list("1", "2", 31) + "]",
            "attn_type_list: number 2 is not a layer kind (0 lightning attention, 1 softmax attention)");
    // A full-attention shape of its own needs sliding layers beside the full ones (this config has none).
    refused(R"("head_dim": 128, "global_head_dim": 512)", "a full-attention shape of its own needs both sliding and full");
    refused(R"("attention_k_eq_v": true)", "a full-attention shape of its own needs both sliding and full");
    refused(R"("num_kv_shared_layers": 10)", "num_kv_shared_layers: KV shared across layers is not modelled");
    refused(R"("hidden_size_per_layer_input": 256)", "hidden_size_per_layer_input: per-layer input embeddings");
    refused(R"("mamba_ssm_dtype": "int8")", "mamba_ssm_dtype: string \"int8\" is not modelled (float32, bfloat16, float16)");
    // Keys that change nothing pass: all-softmax attn_type_list, a global head size equal to head_dim,
    // global KV heads without attention_k_eq_v (transformers reads them only with it).
    const ModelSpec same = io::load_model(
        "--model", hf_config_file(R"("attn_type_list": [)" + layer_list("1", "1", 1) +
                                  R"(], "head_dim": 128, "global_head_dim": 128, "num_global_key_value_heads": 2)"));
    CHECK(same.linear_layers == 0);
    CHECK(same.layers == 32);
    CHECK(!same.full_layers_differ());
}

// model_type nemotron (transformers' NemotronMLP: up_proj and down_proj, no
// gate): L=32, h=4096, H=32, kv=8, d=128, I=16384, V=256000 untied. Attention
// 4096·4096·2 + 2·4096·1024 = 41,943,040; MLP 2·4096·16384 = 134,217,728;
// 32·176,160,768 + 2·256,000·4096 = 7,734,296,576 (a gated MLP would add
// 32·67,108,864). With 48 heads and kv_channels 128 (NeMo's converter; h/H
// is 85.3): q and o 4096·6144 each, KV 2·32·8·128·2 = 131,072 B/token.
TEST_CASE("Nemotron: the MLP has no gate, and kv_channels is the head size", "[hf]") {
    auto nemotron = [](const std::string& heads) {
        return io::load_model("--model", test::temp_json_file("nemotron", R"({"model_type": "nemotron", "num_hidden_layers": 32,
            "hidden_size": 4096, "intermediate_size": 16384, "num_key_value_heads": 8, "vocab_size": 256000,
            "tie_word_embeddings": false, "hidden_act": "relu2", )" + heads + "}"));
    };
    const ModelSpec m = nemotron(R"("num_attention_heads": 32)");
    CHECK_FALSE(m.mlp_gated);
    CHECK(param_counts(m).total == Approx(7'734'296'576.0).epsilon(1e-12));
    const ModelSpec wide = nemotron(R"("num_attention_heads": 48, "kv_channels": 128)");
    CHECK(wide.head_dim == 128);
    CHECK(kv_bytes_per_token(wide, DType::bf16).raw() == 131'072);
    const double attn = 2 * 4096.0 * 6144 + 2 * 4096.0 * 1024;
    CHECK(param_counts(wide).total == Approx(32 * (attn + 134'217'728.0) + 2 * 256'000.0 * 4096).epsilon(1e-12));
}

// MiniMax's lightning attention, as MiniMax's own config writes it
// (attn_type_list 0) and as transformers' port does (model_type minimax,
// layer_types linear_attention), on 24 of 32 layers: h=4096, H=32, kv=8,
// d=128, I=14336, V=128256. A lightning layer qkv_proj 4096·3·4096 +
// output_gate 4096·4096 + out_proj 4096·4096 = 83,886,080; softmax
// 41,943,040; MLP 176,160,768: 24·83,886,080 + 8·41,943,040 +
// 32·176,160,768 + 2·525,336,576 = 9,036,627,968. KV 2·8·8·128·2 = 32,768
// B/token; state 24·32·128·128·2 B = 25,165,824 B per sequence.
TEST_CASE("MiniMax: attn_type_list 0 and layer_types linear_attention are lightning-attention layers", "[hf][attention-layers]") {
    const ModelSpec listed =
        io::load_model("--model", hf_config_file(R"("attn_type_list": [)" + layer_list("0", "1", 0) + "]", "minimax_m1"));
    const ModelSpec typed = io::load_model(
        "--model",
        hf_config_file(R"("layer_types": [)" + layer_list(R"("linear_attention")", R"("full_attention")", 0) + "]", "minimax"));
    for (const ModelSpec* m : {&listed, &typed}) {
        CHECK(m->linear_layers == 24);
        CHECK(m->linear_kind == LinearKind::lightning);
        CHECK(m->linear_conv_kernel == 0);
        CHECK(param_counts(*m).total == Approx(9'036'627'968.0).epsilon(1e-12));
        CHECK(kv_bytes_per_token(*m, DType::bf16).raw() == 32'768);
        CHECK(linear_state_bytes(*m).raw() == 25'165'824);
        CHECK(held_at(*m, 65536) == Approx(32'768.0 * 65536 + 25'165'824).epsilon(1e-12));
    }
}

TEST_CASE("a config.json without num_hidden_layers is read as one, and the missing key is named", "[hf]") {
    const std::string path = test::temp_json_file("nolayers", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 128256})");
    CHECK_THROWS_WITH(io::load_model("--model", path), Catch::Contains("missing required key 'num_hidden_layers'"));
}
