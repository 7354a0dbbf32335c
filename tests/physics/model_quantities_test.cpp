// SPDX-License-Identifier: MIT
#include "kvroof/physics/model_quantities.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "../test_support.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/call_demand.hpp"

using namespace kvroof;

TEST_CASE("KV bytes per token match the published cross-checks", "[model]") {
    CHECK(kv_bytes_per_token(io::load_model("--model", "llama-3.1-70b"), DType::bf16).raw() == 327680);
    CHECK(kv_bytes_per_token(io::load_model("--model", "llama-3.1-405b"), DType::bf16).raw() == 516096);
    CHECK(kv_bytes_per_token(io::load_model("--model", "deepseek-v3"), DType::bf16).raw() == 70272);
    CHECK(kv_bytes_per_token(io::load_model("--model", "qwen3-235b-a22b"), DType::bf16).raw() == 192512);
    CHECK(kv_bytes_per_token(io::load_model("--model", "glm-4.5"), DType::bf16).raw() == 376832);
}

TEST_CASE("KV dtype scales KV bytes with each format's scales: fp8 halves, int4 and fp4 a little over a quarter", "[model]") {
    const ModelSpec m = io::load_model("--model", "llama-3.1-70b");  // 163,840 KV elements per token
    CHECK(kv_bytes_per_token(m, DType::fp8).raw() == 163840);
    CHECK(kv_bytes_per_token(m, DType::int8).raw() == 163840);
    CHECK(kv_bytes_per_token(m, DType::int4).raw() == 163840 * 4.25 / 8);  // FP16 scale and zero per 128: 87,040
    CHECK(kv_bytes_per_token(m, DType::fp4).raw() == 163840 * 4.5 / 8);  // NVFP4: an FP8 scale per 16: 92,160
    CHECK(kv_bytes_per_token(m, DType::mxfp4).raw() == 163840 * 4.25 / 8);  // MX: an 8-bit scale per 32
}

TEST_CASE("weight formats carry their scales: int4 4.15625, mxfp4 4.25, nvfp4 4.5 bits", "[model]") {
    CHECK(weight_bytes_per_element(DType::int4) * 8 == 4.15625);
    CHECK(weight_bytes_per_element(DType::mxfp4) * 8 == 4.25);
    CHECK(weight_bytes_per_element(DType::fp4) * 8 == 4.5);
    CHECK(weight_bytes_per_element(DType::fp8) == 1.0);
    CHECK(weight_bytes_per_element(DType::int8) == 1.0);
    CHECK(weight_bytes_per_element(DType::bf16) == 2.0);
    // A model without a checkpoint format: every matrix in the format asked for.
    const ModelSpec m = io::load_model("--model", "llama-3.1-8b");  // 8,029,995,008 weights
    CHECK(weight_bytes(m, DType::int4).raw() == Approx(8'029'995'008.0 * 4.15625 / 8).epsilon(1e-12));
}

TEST_CASE("parameter counts from the shape agree with the published totals within 1%", "[model]") {
    // Llama-4's published totals include its vision tower, which kvroof does not
    // model: 871,304,448 weights by hand from vision_config (tests/data/hf/README.md).
    const std::map<std::string, double> vision = {{"llama-4-scout", 871'304'448.0}, {"llama-4-maverick", 871'304'448.0}};
    for (const auto& name : io::preset_names("models")) {
        const ModelSpec m = io::load_model("--model", name);
        INFO(name);
        REQUIRE(m.published_params > 0);
        const double beside = vision.count(name) ? vision.at(name) : 0.0;
        CHECK(param_counts(m).total + beside == Approx(m.published_params).epsilon(0.01));
    }
}

TEST_CASE("MoE active parameters: Mixtral 12.9B, DeepSeek-V3 ~37B", "[model]") {
    CHECK(param_counts(io::load_model("--model", "mixtral-8x7b")).active == Approx(12.9e9).epsilon(0.01));
    CHECK(param_counts(io::load_model("--model", "deepseek-v3")).active == Approx(37e9).epsilon(0.03));
}

TEST_CASE("a tiny model checks by hand", "[model]") {
    const ModelSpec m = test::tiny_model();
    // attention per layer: q 4*2*2 + kv 2*4*1*2 + o 2*2*4 = 48; MLP 3*4*8 = 96; 2 layers = 288; embed + head 2*10*4 = 80
    CHECK(param_counts(m).total == 368);
    CHECK(weight_bytes(m, DType::bf16).raw() == 736);
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() == 16);  // 2 (K,V) * 2 layers * 1 head * 2 dim * 2 bytes
    CHECK(linear_flop_per_token(m).raw() == 656);  // 2 * (368 - 40 embedding)
    CHECK(attention_flop_per_key(m, Phase::decode) * 100.0 == 3200);  // 4 * 2 heads * 2 dim * 2 layers * 100 keys
    const auto link = offload_link_bytes_per_token(m);
    CHECK(link.d2h.raw() == 16);  // 2 layers * 2 heads * 2 dim * 2 bytes
    CHECK(link.h2d.raw() == 16 + 32);  // outputs + fp32 max and sum per head per layer
}

TEST_CASE("MLA attention FLOP use the absorbed form at decode", "[model]") {
    const ModelSpec m = io::load_model("--model", "deepseek-v3");
    // per key and layer: 2*128*(512+64) + 2*128*512 = 278,528
    CHECK(attention_flop_per_key(m, Phase::decode) == 278528.0 * 61);
    // expanded at prefill: 2*128*(128+64) + 2*128*128 = 81,920
    CHECK(attention_flop_per_key(m, Phase::prefill) == 81920.0 * 61);
}

TEST_CASE("MoE weight read grows with the batch to the full weights", "[model]") {
    const ModelSpec m = io::load_model("--model", "qwen3-235b-a22b");
    const ModelConstants mc = model_constants(m, PolicySpec{});
    const Bytes one = mc.weights_read(1);
    const Bytes many = mc.weights_read(1e6);
    const auto p = param_counts(m);
    CHECK(many.raw() == Approx(2 * (p.total - p.embedding)));
    CHECK(one.raw() == Approx(2 * (p.active - p.embedding)));
    CHECK(one < many);
}
