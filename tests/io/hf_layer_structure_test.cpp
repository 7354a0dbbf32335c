// SPDX-License-Identifier: MIT
// Hugging Face layer structures (src/hf_layer_structure.cpp): DeciLM's
// block_configs and Llama-4's keys on small configs, each checked by hand; the
// real configs are in tests/io/hf_corpus_test.cpp.
#include <catch2/catch.hpp>
#include <string>

#include "../test_support.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/call_demand.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

using test::hf_config_file;

// DeciLM block_configs: one entry per layer; 24 attention layers of 4 query
// heads per KV head (32 / 4 = 8 KV heads) with ffn_mult 1.0, 8 no_op attention
// layers with ffn_mult 5.25; FFN width int(2·m·4096/3) rounded up to 256.
TEST_CASE("block_configs: per-layer attention and FFN widths, or a one-line error naming the variant", "[hf][attention-layers]") {
    auto blocks = [](const std::string& last) {  // `last`: the 32nd block, if given
        const std::string gqa = R"({"attention": {"n_heads_in_group": 4, "no_op": false}, "ffn": {"ffn_mult": 1.0}})";
        const std::string no_op = R"({"attention": {"no_op": true}, "ffn": {"ffn_mult": 5.25}})";
        std::string s = R"("block_configs": [)";
        for (int i = 0; i < 32; ++i) s += (i ? ", " : "") + (i < 24 ? gqa : i < 31 || last.empty() ? no_op : last);
        return s + "]";
    };
    const ModelSpec m = io::load_model("--model", hf_config_file(blocks("")));
    CHECK(m.attention_layers() == 24);
    CHECK(m.kv_heads == 8);
    // 1.0: int(2,730.67) = 2,730 -> 2,816; 5.25: 14,336 exactly.
    const double attn = 4096.0 * 4096 * 2 + 2 * 4096.0 * 1024, mlp = 3 * 4096.0 * (24 * 2816 + 8 * 14'336);
    CHECK(param_counts(m).total == Approx(24 * attn + mlp + 2 * 128'256.0 * 4096).epsilon(1e-12));
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() == 2.0 * 24 * 8 * 128 * 2);
    CHECK_THROWS_WITH(
        io::load_model("--model",
                       hf_config_file(blocks(R"({"attention": {"replace_with_linear": true}, "ffn": {"ffn_mult": 5.25}})"))),
        Catch::Contains("block_configs: replace_with_linear: a linear replacement layer is not modelled"));
    CHECK_THROWS_WITH(
        io::load_model("--model", hf_config_file(blocks(R"({"attention": {"n_heads_in_group": 8}, "ffn": {"ffn_mult": 5.25}})"))),
        Catch::Contains("block_configs: n_heads_in_group 4 and 8: KV heads that differ by layer are not modelled"));
}

// Llama-4's keys on a 32-layer config: MoE (4 experts + the shared one, of
// intermediate_size 14,336) on every 4th layer, a dense MLP of 16,384 on the
// other 24; chunks of 1,024 on the layers no_rope_layers marks 1 (16 of 32).
TEST_CASE("Llama-4: shared expert, interleaved MoE, chunked attention from no_rope_layers", "[hf][attention-layers]") {
    std::string rope = R"("no_rope_layers": [)";
    for (int i = 0; i < 32; ++i) rope += std::string(i ? ", " : "") + (i % 2 ? "1" : "0");
    const ModelSpec m = io::load_model(
        "--model", hf_config_file(R"("num_local_experts": 4, "num_experts_per_tok": 1, "intermediate_size_mlp": 16384,
            "interleave_moe_layer_step": 4, "attention_chunk_size": 1024, )" +
                                      rope + "]",
                                  "llama4_text"));
    CHECK(m.shared_experts == 1);
    CHECK(m.first_dense_layers == 24);
    CHECK(m.window_layers == 16);
    CHECK(m.window == 1024);
    const double attn = 4096.0 * 4096 * 2 + 2 * 4096.0 * 1024, expert = 3 * 4096.0 * 14'336;
    const double total = 32 * attn + 8 * (4096 * 4 + 5 * expert) + 24 * 3 * 4096.0 * 16'384 + 2 * 128'256.0 * 4096;
    CHECK(param_counts(m).total == Approx(total).epsilon(1e-12));
    CHECK(param_counts(m).active == Approx(total - 8 * 3 * expert).epsilon(1e-12));
    PolicySpec p;
    p.kv_dtype = DType::bf16;
    CHECK(kv_held(model_constants(m, p), 65536).raw() == 4096.0 * (16 * 65536 + 16 * 1024));
}
