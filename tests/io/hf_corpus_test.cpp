// SPDX-License-Identifier: MIT
// Real Hugging Face config.json files (tests/data/hf/, verbatim copies; sources
// and the hand arithmetic behind every number below in tests/data/hf/README.md).
// Each expected value is computed by hand from the config's fields, not by
// running kvroof: parameters count the weight matrices (embedding, LM head
// unless tied, attention, MLP or experts, router), not norms or biases; active
// parameters include the embedding and LM head (as param_counts does). A file
// whose architecture kvroof does not model yet must be refused by name.
#include <catch2/catch.hpp>
#include <string>

#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

namespace {
std::string corpus(const std::string& name) { return std::string(KVROOF_TEST_FIXTURES) + "/../data/hf/" + name + ".json"; }

struct Expected {
    const char* file;
    double total;  // parameters
    double active;  // parameters a token touches (= total for a dense model)
    DType weights;  // the checkpoint's quantization_config, else bf16
    double kv_per_token;  // bytes, bf16 KV
};

void check_supported(const Expected& e) {
    INFO(e.file);
    const ModelSpec m = io::load_model("--model", corpus(e.file));
    const ParamCounts p = param_counts(m);
    CHECK(p.total == Approx(e.total).epsilon(1e-9));
    CHECK(p.active == Approx(e.active).epsilon(1e-9));
    const DType weights = m.checkpoint_weights.value_or(DType::bf16);
    CHECK(weights == e.weights);
    CHECK(weight_bytes(m, weights).raw() == Approx(e.total * bytes_per_element(e.weights)).epsilon(1e-9));
    const double kv = kv_bytes_per_token(m, DType::bf16).raw();
    CHECK(kv == Approx(e.kv_per_token).epsilon(1e-12));
    // Full attention on every layer: the cache grows linearly with the context.
    CHECK(kv * 4096 == Approx(e.kv_per_token * 4096).epsilon(1e-12));
    CHECK(kv * 65536 == Approx(e.kv_per_token * 65536).epsilon(1e-12));
}

void check_refused(const char* file, const char* key_and_reason) {
    INFO(file);
    CHECK_THROWS_AS(io::load_model("--model", corpus(file)), InputError);
    CHECK_THROWS_WITH(io::load_model("--model", corpus(file)), Catch::Contains(key_and_reason));
}
}  // namespace

// ---- dense, GQA ----

TEST_CASE("HF corpus: Llama-3.1-8B", "[hf][hf-corpus]") {
    check_supported({"llama-3.1-8b", 8'029'995'008, 8'029'995'008, DType::bf16, 131'072});
}

TEST_CASE("HF corpus: Llama-3.1-70B", "[hf][hf-corpus]") {
    check_supported({"llama-3.1-70b", 70'552'387'584, 70'552'387'584, DType::bf16, 327'680});
}

TEST_CASE("HF corpus: Llama-3.3-70B-Instruct", "[hf][hf-corpus]") {
    check_supported({"llama-3.3-70b-instruct", 70'552'387'584, 70'552'387'584, DType::bf16, 327'680});
}

TEST_CASE("HF corpus: Llama-3.1-405B", "[hf][hf-corpus]") {
    check_supported({"llama-3.1-405b", 405'849'243'648, 405'849'243'648, DType::bf16, 516'096});
}

TEST_CASE("HF corpus: Qwen2.5-7B (sliding_window disabled)", "[hf][hf-corpus]") {
    check_supported({"qwen2.5-7b", 7'615'283'200, 7'615'283'200, DType::bf16, 57'344});
}

TEST_CASE("HF corpus: Qwen3-32B", "[hf][hf-corpus]") {
    check_supported({"qwen3-32b", 32'761'446'400, 32'761'446'400, DType::bf16, 262'144});
}

// ---- MoE, GQA ----

TEST_CASE("HF corpus: Mixtral-8x7B-v0.1", "[hf][hf-corpus]") {
    check_supported({"mixtral-8x7b-v0.1", 46'702'526'464, 12'879'659'008, DType::bf16, 131'072});
}

TEST_CASE("HF corpus: Mixtral-8x22B-v0.1", "[hf][hf-corpus]") {
    check_supported({"mixtral-8x22b-v0.1", 140'619'939'840, 39'151'337'472, DType::bf16, 229'376});
}

TEST_CASE("HF corpus: Qwen3-30B-A3B", "[hf][hf-corpus]") {
    check_supported({"qwen3-30b-a3b", 30'531'911'680, 3'352'821'760, DType::bf16, 98'304});
}

TEST_CASE("HF corpus: Qwen3-235B-A22B", "[hf][hf-corpus]") {
    check_supported({"qwen3-235b-a22b", 235'092'836'352, 22'189'965'312, DType::bf16, 192'512});
}

TEST_CASE("HF corpus: Qwen3-235B-A22B-FP8 (fp8 weights from quantization_config)", "[hf][hf-corpus]") {
    check_supported({"qwen3-235b-a22b-fp8", 235'092'836'352, 22'189'965'312, DType::fp8, 192'512});
}

TEST_CASE("HF corpus: Qwen3-Coder-480B-A35B-Instruct", "[hf][hf-corpus]") {
    check_supported({"qwen3-coder-480b-a35b-instruct", 480'154'091'520, 35'473'981'440, DType::bf16, 253'952});
}

// ---- MoE, MLA ----

TEST_CASE("HF corpus: DeepSeek-V3", "[hf][hf-corpus]") {
    check_supported({"deepseek-v3", 671'025'397'760, 37'551'276'032, DType::fp8, 70'272});
}

TEST_CASE("HF corpus: DeepSeek-R1", "[hf][hf-corpus]") {
    check_supported({"deepseek-r1", 671'025'397'760, 37'551'276'032, DType::fp8, 70'272});
}

TEST_CASE("HF corpus: Kimi-K2-Instruct", "[hf][hf-corpus]") {
    check_supported({"kimi-k2-instruct", 1'026'407'202'816, 32'860'471'296, DType::fp8, 70'272});
}

// ---- refused: kvroof once read these as uniform full-attention models and got
// them wrong (README: the hand values it should reach once they are modelled) ----

// DeepSeek Sparse Attention: an indexer per layer and its 128-wide key cache
// (KV 85,888 B/token by hand, not 70,272), and decode reads only the top 2,048 keys.
TEST_CASE("HF corpus: DeepSeek-V3.2 is refused (index_topk)", "[hf][hf-corpus]") {
    check_refused("deepseek-v3.2", "index_topk: DeepSeek sparse attention (an indexer picks 2048 keys per query)");
}

// 36 of 48 layers are Gated DeltaNet linear attention (full_attention_interval 4,
// no layer_types key): KV 24,576 B/token by hand, not 98,304.
TEST_CASE("HF corpus: Qwen3-Next-80B-A3B-Thinking is refused (full_attention_interval)", "[hf][hf-corpus]") {
    check_refused("qwen3-next-80b-a3b-thinking",
                  "full_attention_interval: hybrid linear attention (full attention on one layer in 4)");
}

// hybrid_override_pattern: 54 Mamba-2, 10 attention and 54 non-gated MLP layers
// (56.3 B parameters, KV 40,960 B/token by hand), not 118 attention + gated-MLP layers.
TEST_CASE("HF corpus: Nemotron-H-56B-Base-8K is refused (hybrid_override_pattern)", "[hf][hf-corpus]") {
    check_refused("nemotron-h-56b-base-8k", "hybrid_override_pattern: hybrid Mamba/attention layers are not modelled yet");
}

// ---- refused: the one-line error names the key ----

TEST_CASE("HF corpus: gpt-oss-20b and gpt-oss-120b are refused (sliding layers)", "[hf][hf-corpus]") {
    check_refused("gpt-oss-20b", "layer_types: 'sliding_attention' layers are not modelled yet");
    check_refused("gpt-oss-120b", "layer_types: 'sliding_attention' layers are not modelled yet");
}

TEST_CASE("HF corpus: Llama-3.3-Nemotron-Super-49B is refused (block_configs)", "[hf][hf-corpus]") {
    check_refused("llama-3.3-nemotron-super-49b-v1", "block_configs: heterogeneous layers are not modelled yet");
}
