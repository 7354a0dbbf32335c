// SPDX-License-Identifier: MIT
// Real Hugging Face config.json files (tests/data/hf/, verbatim copies; sources
// and the hand arithmetic behind every number below in tests/data/hf/README.md).
// Each expected value is computed by hand from the config's fields, not by
// running kvroof: parameters count the weight matrices (embedding, LM head
// unless tied, attention, MLP or experts, router), not norms or biases; active
// parameters include the embedding and LM head (as param_counts does).
#include <catch2/catch.hpp>
#include <string>

#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/call_demand.hpp"
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
    // Weight bytes as the checkpoint stores them (0: every matrix in BF16):
    // the quantised matrices at their format's bytes with scales, the
    // embeddings, LM head, routers and any attention it keeps in BF16.
    double stored_bytes = 0;
};

void check_supported(const Expected& e) {
    INFO(e.file);
    const ModelSpec m = io::load_model("--model", corpus(e.file));
    const ParamCounts p = param_counts(m);
    CHECK(p.total == Approx(e.total).epsilon(1e-9));
    CHECK(p.active == Approx(e.active).epsilon(1e-9));
    const DType weights = m.checkpoint_weights.value_or(DType::bf16);
    CHECK(weights == e.weights);
    CHECK(weight_bytes(m, weights).raw() == Approx(e.stored_bytes > 0 ? e.stored_bytes : 2 * e.total).epsilon(1e-12));
    const double kv = kv_bytes_per_token(m, DType::bf16).raw();
    CHECK(kv == Approx(e.kv_per_token).epsilon(1e-12));
    // Full attention on every layer: the cache grows linearly with the context.
    CHECK(kv * 4096 == Approx(e.kv_per_token * 4096).epsilon(1e-12));
    CHECK(kv * 65536 == Approx(e.kv_per_token * 65536).epsilon(1e-12));
}

// KV bytes one sequence holds at 4k and 64k tokens of context (bf16 KV): by
// layer kind, not KV per token × context (physics/attention_layers.hpp).
void check_held(const char* file, double at_4k, double at_64k) {
    INFO(file);
    PolicySpec p;
    p.kv_dtype = DType::bf16;
    const ModelConstants mc = model_constants(io::load_model("--model", corpus(file)), p);
    CHECK(kv_held(mc, 4096).raw() == Approx(at_4k).epsilon(1e-12));
    CHECK(kv_held(mc, 65536).raw() == Approx(at_64k).epsilon(1e-12));
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
    check_supported({"qwen3-235b-a22b-fp8", 235'092'836'352, 22'189'965'312, DType::fp8, 192'512,
                     // + embedding, LM head and 94 routers in BF16: 2·622,329,856 + 94·4,096·128.
                     235'092'836'352 + 1'293'942'784});
}

TEST_CASE("HF corpus: Qwen3-Coder-480B-A35B-Instruct", "[hf][hf-corpus]") {
    check_supported({"qwen3-coder-480b-a35b-instruct", 480'154'091'520, 35'473'981'440, DType::bf16, 253'952});
}

// ---- MoE, MLA ----

TEST_CASE("HF corpus: DeepSeek-V3", "[hf][hf-corpus]") {
    check_supported({"deepseek-v3", 671'025'397'760, 37'551'276'032, DType::fp8, 70'272,
                     // + embedding, LM head and 58 routers in BF16: 2·926,679,040 + 58·7,168·256.
                     671'025'397'760 + 1'959'788'544});
}

TEST_CASE("HF corpus: DeepSeek-R1", "[hf][hf-corpus]") {
    check_supported({"deepseek-r1", 671'025'397'760, 37'551'276'032, DType::fp8, 70'272, 671'025'397'760 + 1'959'788'544});
}

TEST_CASE("HF corpus: Kimi-K2-Instruct", "[hf][hf-corpus]") {
    check_supported({"kimi-k2-instruct", 1'026'407'202'816, 32'860'471'296, DType::fp8, 70'272,
                     // + 2·1,174,405,120 + 60·7,168·384 in BF16.
                     1'026'407'202'816 + 2'513'960'960});
}

// ---- per-layer attention: window and linear layers (README "Per-layer attention") ----

// layer_types: 18 of 36 layers sliding_attention with a 128-token window. L=36,
// h=2880, H=64, kv=8, d=64, E=128, k=4, I_e=2880, V=201088: attention
// 2880·4096·2 + 2·2880·512 = 26,542,080; expert 3·2880·2880 = 24,883,200;
// router 368,640; 36·(26,910,720 + 128·24,883,200) + 2·579,133,440. The
// checkpoint is MXFP4 (experts only; read as fp4 throughout until per-tensor
// precisions land). KV 2·36·8·64·2 = 73,728 B/token over all 36 layers; held:
// 18·2,048·S + 18·2,048·min(S, 128).
TEST_CASE("HF corpus: gpt-oss-120b (sliding_attention layers)", "[hf][hf-corpus][attention-layers]") {
    check_supported({"gpt-oss-120b", 116'788'838'400, 5'710'233'600, DType::mxfp4, 73'728,
                     // experts 36·128·3·2,880² at 4.25 bits + the rest (2·579,133,440 embedding and head,
                     // 36·26,542,080 attention, 36·2,880·128 routers) in BF16: 65.2 GB.
                     114'661'785'600 * 17.0 / 32 + 2 * 2'127'052'800.0});
    // 4k: 36,864·4,096 + 36,864·128; 64k: 36,864·65,536 + 4,718,592 (full attention: 4,831,838,208, 2.0×).
    check_held("gpt-oss-120b", 155'713'536, 2'420'637'696);
}

// 12 of 24 layers sliding (128), E=32 (router 2880·32 = 92,160):
// 24·(26,542,080 + 92,160 + 32·24,883,200) + 1,158,266,880; active
// 24·(26,634,240 + 4·24,883,200) + 1,158,266,880.
TEST_CASE("HF corpus: gpt-oss-20b (sliding_attention layers)", "[hf][hf-corpus][attention-layers]") {
    check_supported({"gpt-oss-20b", 20'907'786'240, 4'186'275'840, DType::mxfp4, 49'152,
                     // experts 24·32·3·2,880² in MXFP4 + 2·579,133,440 + 24·26,542,080 + 24·2,880·32 in BF16: 13.7 GB.
                     19'110'297'600 * 17.0 / 32 + 2 * 1'797'488'640.0});
    // 24,576·4,096 + 24,576·128; 24,576·65,536 + 3,145,728 (full attention: 3,221,225,472).
    check_held("gpt-oss-20b", 103'809'024, 1'613'758'464);
}

// full_attention_interval 4 (no layer_types key): 12 full-attention layers, 36
// Gated DeltaNet layers with a constant state and no KV. Parameters: README
// (79,674,179,584 with the shared-expert gate, 48·2,048, which kvroof does not count).
TEST_CASE("HF corpus: Qwen3-Next-80B-A3B-Thinking (linear_attention layers)", "[hf][hf-corpus][attention-layers]") {
    const ModelSpec m = io::load_model("--model", corpus("qwen3-next-80b-a3b-thinking"));
    CHECK(m.linear_layers == 36);
    CHECK(m.attention_layers() == 12);
    const ParamCounts p = param_counts(m);
    CHECK(p.total == Approx(79'674'179'584.0 - 98'304).epsilon(1e-12));
    CHECK(p.active == Approx(3'874'717'696.0 - 98'304).epsilon(1e-12));
    // KV 2·12·2·256·2 = 24,576 B/token; state per linear layer: recurrent
    // 32·128·128 = 524,288 + conv (2·16·128 + 32·128)·(4 − 1) = 24,576
    // elements; 36·548,864·2 B = 39,518,208 B per sequence.
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() == 24'576);
    CHECK(linear_state_bytes(m).raw() == 39'518'208);
    // 24,576·4,096 + 39,518,208; 24,576·65,536 + 39,518,208 (read as full attention: 6,442,450,944, 3.9×).
    check_held("qwen3-next-80b-a3b-thinking", 140'181'504, 1'650'130'944);
}

// DeepSeek sparse attention: V3's shapes plus a lightning indexer per layer
// (index_n_heads 64, index_head_dim 128: wq_b 1536·64·128 + wk 7168·128 +
// weights_proj 7168·64 = 13,959,168) and its key in the cache: 61·(512 + 64 +
// 128)·2 = 85,888 B/token, all of it held; decode reads the latents of the
// top 2,048 keys and the indexer key of every token.
TEST_CASE("HF corpus: DeepSeek-V3.2 (index_topk sparse attention)", "[hf][hf-corpus][attention-layers]") {
    check_supported({"deepseek-v3.2", 671'876'907'008, 38'402'785'280, DType::fp8, 85'888, 671'876'907'008 + 1'959'788'544});
    check_held("deepseek-v3.2", 351'797'248, 5'628'755'968);  // 85,888 × 4,096 and × 65,536
    PolicySpec p;
    p.kv_dtype = DType::bf16;
    const ModelConstants mc = model_constants(io::load_model("--model", corpus("deepseek-v3.2")), p);
    // Read per decode token: 70,272·min(S, 2,048) + 15,616·S (61·128·2 B of indexer key per token).
    CHECK(kv_read_per_decode_token(mc, 65536, 1.0).raw() == Approx(70'272.0 * 2048 + 15'616.0 * 65536).epsilon(1e-12));
    CHECK(kv_read_per_decode_token(mc, 1000, 1.0).raw() == Approx(85'888.0 * 1000).epsilon(1e-12));
    // FLOP per decode token at 64k: MLA absorbed (2·128·576 + 2·128·512)·61 = 16,990,208 per key over
    // 2,048 keys, the indexer 2·64·(128 + 1)·61 = 1,007,232 per key over all 65,536.
    CHECK(decode_attention_flop(mc, 65536, 1.0) == Approx(16'990'208.0 * 2048 + 1'007'232.0 * 65536).epsilon(1e-12));
}

// ---- layers that are not attention + MLP (README, "Per-layer structure") ----

// hybrid_override_pattern: 54 Mamba-2 (M), 10 attention (*), 54 MLP (-) layers,
// each one of them. Mamba-2 (h = 8192, 256 heads of 64, n_groups 8, state 256,
// conv 4): in_proj 8192·(16,384 + 20,480 + 256) + conv1d 20,480·4 + out_proj
// 16,384·8192 = 438,386,688; attention 150,994,944; relu² MLP (not gated)
// 2·8192·32,768 = 536,870,912; embedding and head 2·131,072·8192.
TEST_CASE("HF corpus: Nemotron-H-56B-Base-8K (Mamba-2 hybrid_override_pattern)", "[hf][hf-corpus][attention-layers]") {
    const double total = 54 * 438'386'688.0 + 10 * 150'994'944.0 + 54 * 536'870'912.0 + 2 * 131'072.0 * 8192;
    CHECK(total == 56'321'343'488.0);
    check_supported({"nemotron-h-56b-base-8k", total, total, DType::bf16, 2.0 * 10 * 8 * 128 * 2});
    const ModelSpec m = io::load_model("--model", corpus("nemotron-h-56b-base-8k"));
    CHECK(m.linear_layers == 54);
    CHECK(m.attention_layers() == 10);
    CHECK(m.linear_kind == LinearKind::mamba2);
    // State per Mamba-2 layer (vLLM's mamba2_state_shape): SSM 256·64·256 +
    // conv (16,384 + 2·8·256)·(4 − 1), BF16, 54 layers: 459,620,352 B per sequence.
    const double state = 54 * (256.0 * 64 * 256 + 20'480.0 * 3) * 2;
    CHECK(linear_state_bytes(m).raw() == state);
    CHECK(state == 459'620'352.0);
    // 40,960·4,096 + state; 40,960·65,536 + state (read as 118 attention layers: 483,328·65,536, 10×).
    check_held("nemotron-h-56b-base-8k", 40'960.0 * 4096 + state, 40'960.0 * 65536 + state);
    CHECK(linear_state_flop_per_token(m) == 54 * (5 * 256.0 * 64 * 256 + 2 * 20'480.0 * 4));
    // Each layer is one block: one all-reduce per layer under tensor parallelism,
    // not 2; the offload link carries a query for the 64 attention and Mamba layers.
    PolicySpec p;
    CHECK(model_constants(m, p, 8).allreduces_per_pass == 118);
    CHECK(offload_link_bytes_per_token(m).d2h.raw() == 64 * 64 * 128 * 2);
}

// block_configs (DeciLM): 49 GQA layers (n_heads_in_group 8: 8 KV heads), 31
// no_op attention; every layer an FFN of width int(2·ffn_mult·8192/3) rounded
// up to 256: 49 × 28,672 (5.25), 10 × 7,168 (1.3125), 8 × 5,632 (1.0: 5,461 →
// 5,632), 6 × 2,816 (0.5), 6 × 14,336 (2.625), 1 × 17,920 (3.28125).
TEST_CASE("HF corpus: Llama-3.3-Nemotron-Super-49B (block_configs)", "[hf][hf-corpus][attention-layers]") {
    const double widths = 49 * 28'672.0 + 10 * 7'168.0 + 8 * 5'632.0 + 6 * 2'816.0 + 6 * 14'336.0 + 17'920.0;
    const double total = 3 * 8192 * widths + 49 * 150'994'944.0 + 2 * 128'256.0 * 8192;
    CHECK(total == 49'866'080'256.0);
    CHECK(total == Approx(49.9e9).epsilon(0.01));  // the Hub's 49.9 B
    check_supported({"llama-3.3-nemotron-super-49b-v1", total, total, DType::bf16, 2.0 * 49 * 8 * 128 * 2});
    const ModelSpec m = io::load_model("--model", corpus("llama-3.3-nemotron-super-49b-v1"));
    CHECK(m.attention_layers() == 49);
    CHECK(m.kv_heads == 8);
    check_held("llama-3.3-nemotron-super-49b-v1", 200'704.0 * 4096, 200'704.0 * 65536);
    CHECK(model_constants(m, PolicySpec{}, 8).allreduces_per_pass == 2 * 80 - 31);  // 49 attention blocks + 80 FFNs
}

// Llama-4 (README: aiconfigurator's copies, not verbatim). Attention
// 5120·5120·2 + 2·5120·1024 = 62,914,560; an expert 3·5120·8192 =
// 125,829,120, the shared expert of the same width beside the routed ones;
// dense MLP 3·5120·16,384; embedding and head 2·202,048·5120.
// attention_chunk_size 8192 on the 36 RoPE layers (all but every 4th).
TEST_CASE("HF corpus: Llama-4-Scout and Maverick (shared expert, interleaved MoE, chunked attention)",
          "[hf][hf-corpus][attention-layers]") {
    const double attn = 62'914'560.0, expert = 125'829'120.0, dense = 3 * 5120 * 16'384.0, emb = 2 * 202'048.0 * 5120;
    // Scout: 48 MoE layers of 16 experts, top 1.
    const double scout = 48 * (attn + 5120 * 16 + 17 * expert) + emb;
    check_supported({"llama-4-scout-17b-16e-instruct", scout, 48 * (attn + 5120 * 16 + 2 * expert) + emb, DType::bf16,
                     2.0 * 48 * 8 * 128 * 2});
    CHECK(scout == 107'769'364'480.0);
    // Published 109 B is the whole checkpoint: with the vision tower (README, 871,304,448 weights) within 1 %.
    CHECK(scout + 871'304'448.0 == Approx(109e9).epsilon(0.01));
    // Maverick: MoE on every 2nd layer (24 of 48, 128 experts), a dense MLP on the others.
    const double maverick = 24 * (attn + 5120 * 128 + 129 * expert) + 24 * (attn + dense) + emb;
    check_supported({"llama-4-maverick-17b-128e-instruct", maverick,
                     24 * (attn + 5120 * 128 + 2 * expert) + 24 * (attn + dense) + emb, DType::bf16, 196'608});
    CHECK(maverick == Approx(400e9).epsilon(0.01));  // 400,711,352,320
    const ModelSpec m = io::load_model("--model", corpus("llama-4-maverick-17b-128e-instruct"));
    CHECK(m.shared_experts == 1);
    CHECK(m.first_dense_layers == 24);
    CHECK(m.window_layers == 36);
    CHECK(m.window == 8192);
    // KV per layer 2·8·128·2 = 4,096 B/token: 4k all of it; 64k 12 global layers
    // hold 65,536 tokens and 36 chunked ones at most 8,192 (full attention: 12,884,901,888, 2.9×).
    for (const char* file : {"llama-4-scout-17b-16e-instruct", "llama-4-maverick-17b-128e-instruct"})
        check_held(file, 196'608.0 * 4096, 12 * 4096.0 * 65536 + 36 * 4096.0 * 8192);
}

// The presets of the per-layer models carry the same shapes as their configs.
TEST_CASE("HF corpus: the per-layer model presets match their configs", "[hf][hf-corpus][presets]") {
    PolicySpec p;
    p.kv_dtype = DType::bf16;
    for (const auto& [preset, file] : {std::pair{"gpt-oss-120b", "gpt-oss-120b"},
                                       {"qwen3-next-80b", "qwen3-next-80b-a3b-thinking"},
                                       {"nemotron-h-56b", "nemotron-h-56b-base-8k"},
                                       {"llama-4-scout", "llama-4-scout-17b-16e-instruct"},
                                       {"llama-4-maverick", "llama-4-maverick-17b-128e-instruct"}}) {
        INFO(preset);
        const ModelSpec a = io::load_model("--model", preset), b = io::load_model("--model", corpus(file));
        CHECK(param_counts(a).total == param_counts(b).total);
        CHECK(param_counts(a).active == param_counts(b).active);
        CHECK(kv_held(model_constants(a, p), 65536).raw() == kv_held(model_constants(b, p), 65536).raw());
        CHECK(linear_state_flop_per_token(a) == linear_state_flop_per_token(b));
    }
}
