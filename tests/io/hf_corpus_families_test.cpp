// SPDX-License-Identifier: MIT
// More real Hugging Face config.json files (tests/data/hf/, verbatim copies;
// sources and the hand arithmetic in tests/data/hf/README.md, "More
// families"): Gemma-2, Mistral-Small-3, Phi-3.5 and Phi-4, MiniMax-M2.7 and -M1,
// Qwen3.5 dense and MoE, and Gemma-4. Conventions as in
// hf_corpus_test.cpp: parameters count the weight matrices, not norms; active
// parameters include the embedding and LM head.
#include <catch2/catch.hpp>
#include <string>

#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/attention_layers.hpp"
#include "kvroof/physics/call_demand.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

namespace {
std::string corpus(const std::string& name) { return std::string(KVROOF_TEST_FIXTURES) + "/../data/hf/" + name + ".json"; }

// Parameters, weight bytes as stored, KV bytes per token and KV held by one
// sequence at 4k and 64k tokens (bf16 KV).
struct Expected {
    const char* file;
    double total, active;
    DType weights;
    double stored_bytes;
    double kv_per_token, held_4k, held_64k;
};

void check_config(const Expected& e) {
    INFO(e.file);
    const ModelSpec m = io::load_model("--model", corpus(e.file));
    const ParamCounts p = param_counts(m);
    CHECK(p.total == Approx(e.total).epsilon(1e-12));
    CHECK(p.active == Approx(e.active).epsilon(1e-12));
    CHECK(m.checkpoint_weights.value_or(DType::bf16) == e.weights);
    CHECK(weight_bytes(m, m.checkpoint_weights.value_or(DType::bf16)).raw() == Approx(e.stored_bytes).epsilon(1e-12));
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() == Approx(e.kv_per_token).epsilon(1e-12));
    PolicySpec pol;
    pol.kv_dtype = DType::bf16;
    const ModelConstants mc = model_constants(m, pol);
    CHECK(kv_held(mc, 4096).raw() == Approx(e.held_4k).epsilon(1e-12));
    CHECK(kv_held(mc, 65536).raw() == Approx(e.held_64k).epsilon(1e-12));
}
}  // namespace

// gemma2: L=42, h=3584, H=16, kv=8, d=256, I=14336, V=256000, no
// tie_word_embeddings key (Gemma ties: one V·h). Attention 3584·4096·2 +
// 2·3584·2048 = 44,040,192; MLP 3·3584·14336 = 154,140,672; 42·198,180,864 +
// 917,504,000 = 9,241,100,288. The checkpoint's model.safetensors.index.json
// says 18,483,411,968 B in BF16 = 9,241,705,984 weights: ours + 169 norms of
// 3,584 (4 a layer and the final one: 605,696). Every other layer (21) slides over 4,096 tokens; KV per
// layer 2·8·256·2 = 8,192 B/token.
TEST_CASE("HF corpus: Gemma-2-9B-it (tied by default, alternating 4,096 windows)", "[hf][hf-corpus][attention-layers]") {
    const double total = 42 * 198'180'864.0 + 917'504'000.0;
    CHECK(total + 169 * 3584.0 == 18'483'411'968.0 / 2);
    check_config({"gemma-2-9b-it", total, total, DType::bf16, 2 * total, 42 * 8192.0, 42 * 8192.0 * 4096,
                  21 * 8192.0 * 65536 + 21 * 8192.0 * 4096});  // 11,978,932,224; full attention 22,548,578,304 (1.9×)
}

// mistral: L=40, h=5120, H=32, kv=8, d=128, I=32768, V=131072, untied,
// sliding_window null (full attention). Attention 5120·4096·2 + 2·5120·1024 =
// 52,428,800; MLP 3·5120·32768 = 503,316,480; 40·555,745,280 + 2·671,088,640
// = 23,571,988,480 (24 B card; the index's 47,144,806,400 B in BF16 is ours
// + 81 norms of 5,120). KV 2·40·8·128·2 = 163,840 B/token.
TEST_CASE("HF corpus: Mistral-Small-24B-Instruct-2501", "[hf][hf-corpus]") {
    const double total = 23'571'988'480.0;
    CHECK(40 * 555'745'280.0 + 2 * 671'088'640.0 == total);
    CHECK(total + 81 * 5120.0 == 47'144'806'400.0 / 2);
    check_config(
        {"mistral-small-24b-instruct-2501", total, total, DType::bf16, 2 * total, 163'840, 163'840.0 * 4096, 163'840.0 * 65536});
    const ModelSpec preset = io::load_model("--model", "mistral-small-3");  // data/models.json, built from this file
    CHECK(param_counts(preset).total == total);
    CHECK(kv_bytes_per_token(preset, DType::bf16).raw() == 163'840);
}

// phi3: Phi-3.5-mini, L=32, h=3072, H=kv=32, d=96, I=8192, V=32064;
// sliding_window 262,144 over max_position_embeddings 131,072: never fills,
// full attention. 32·(4·3072² + 3·3072·8192) + 2·32064·3072 = 3,820,879,872
// (index: 7,642,159,104 B = ours + 65 norms of 3,072). KV 2·32·32·96·2 = 393,216.
// Phi-4: L=40, h=5120, H=40, kv=10, d=128, I=17920, V=100352, sliding_window
// null. Attention 2·5120² + 2·5120·1280 = 65,536,000; MLP 275,251,200;
// 40·340,787,200 + 2·513,802,240 = 14,659,092,480 (index 29,319,014,400 B:
// + 81 norms of 5,120). KV 2·40·10·128·2 = 204,800.
TEST_CASE("HF corpus: Phi-3.5-mini-instruct and Phi-4 (phi3)", "[hf][hf-corpus]") {
    const double mini = 32 * (4 * 3072.0 * 3072 + 3 * 3072.0 * 8192) + 2 * 32'064.0 * 3072;
    CHECK(mini + 65 * 3072.0 == 7'642'159'104.0 / 2);
    check_config({"phi-3.5-mini-instruct", mini, mini, DType::bf16, 2 * mini, 393'216, 393'216.0 * 4096, 393'216.0 * 65536});
    const double phi4 = 40 * 340'787'200.0 + 2 * 513'802'240.0;
    CHECK(phi4 + 81 * 5120.0 == 29'319'014'400.0 / 2);
    check_config({"phi-4", phi4, phi4, DType::bf16, 2 * phi4, 204'800, 204'800.0 * 4096, 204'800.0 * 65536});
}

// minimax_m2: L=62, h=3072, H=48, kv=8, d=128, E=256, k=8, I_e=1536 (its
// intermediate_size), V=200064, attn_type_list all 1 (softmax attention).
// Attention 3072·6144·2 + 2·3072·1024 = 44,040,192; expert 3·3072·1536 =
// 14,155,776; router 786,432; 62·(44,826,624 + 256·14,155,776) +
// 2·614,596,608 = 228,688,920,576 (230 B card, −0.6 %); active 62·(44,826,624
// + 8·14,155,776) + 1,229,193,216 = 11,029,708,800 (10 B card, without the
// embedding and head). fp8 checkpoint: embedding, head and 62 routers in BF16.
TEST_CASE("HF corpus: MiniMax-M2.7 (fp8)", "[hf][hf-corpus]") {
    const double total = 228'688'920'576.0;
    CHECK(total == Approx(230e9).epsilon(0.01));
    check_config({"minimax-m2.7", total, 11'029'708'800, DType::fp8, total + 1'229'193'216.0 + 62 * 786'432.0, 253'952,
                  253'952.0 * 4096, 253'952.0 * 65536});
}

// qwen3_5 (dense): L=64, 16 full_attention + 48 linear_attention layers;
// h=5120, H=24, kv=4, d=256, attn_output_gate (q_proj 5120·2·24·256), I=17408,
// V=248320, untied. Full layer 62,914,560 + 2·5,242,880 + 31,457,280 =
// 104,857,600; linear layer (Hk=16, Hv=48, dk=dv=128, K=4) in_proj
// 5120·(4096 + 12288) + 5120·96 + conv 10,240·4 + out 6144·5120 =
// 115,875,840; MLP 3·5120·17408 = 267,386,880; 16·104,857,600 +
// 48·115,875,840 + 64·267,386,880 + 2·1,271,398,400 = 26,895,319,040 (27 B
// card, −0.4 %). KV 2·16·4·256·2 = 65,536 B/token. mamba_ssm_dtype float32:
// the recurrent state 48·128·128 in 4 B, the convolution (4096 + 6144)·3 in 2:
// 48·3,207,168 = 153,944,064 B per sequence.
TEST_CASE("HF corpus: Qwen3.5-27B (linear attention, gated queries, FP32 state)", "[hf][hf-corpus][attention-layers]") {
    const double total = 16 * 104'857'600.0 + 48 * 115'875'840.0 + 64 * 267'386'880.0 + 2 * 1'271'398'400.0;
    CHECK(total == 26'895'319'040.0);
    const double state = 48 * (48 * 128 * 128 * 4.0 + 10'240 * 3 * 2.0);
    CHECK(linear_state_bytes(io::load_model("--model", corpus("qwen3.5-27b"))).raw() == state);
    check_config(
        {"qwen3.5-27b", total, total, DType::bf16, 2 * total, 65'536, 65'536.0 * 4096 + state, 65'536.0 * 65536 + state});
}

// qwen3_5_moe: L=40, 10 full + 30 linear (Hv=32); h=2048, H=16, kv=2, d=256,
// gated queries; E=256, k=8, I_e=512, one shared expert of 512; V=248320.
// Full layer 16,777,216 + 2·1,048,576 + 8,388,608 = 27,262,976; linear layer
// 25,165,824 + 131,072 + 32,768 + 8,388,608 = 33,718,272; MoE layer 257
// experts of 3·2048·512 = 3,145,728 + router 524,288 = 808,976,384;
// 10·27,262,976 + 30·33,718,272 + 40·808,976,384 + 2·508,559,360 =
// 34,660,352,000 (35 B card, −1.0 %; its vision tower, ≈0.45 B, is not
// modelled); active with 9 experts 3,454,730,240. KV 2·10·2·256·2 = 20,480
// B/token; state 30·(32·128·128·4 + 8,192·3·2) = 64,389,120 B.
TEST_CASE("HF corpus: Qwen3.5-35B-A3B (linear attention MoE)", "[hf][hf-corpus][attention-layers]") {
    const double total = 10 * 27'262'976.0 + 30 * 33'718'272.0 + 40 * 808'976'384.0 + 2 * 508'559'360.0;
    CHECK(total == 34'660'352'000.0);
    CHECK(total == Approx(35e9).epsilon(0.01));
    const double active = 10 * 27'262'976.0 + 30 * 33'718'272.0 + 40 * (524'288.0 + 9 * 3'145'728.0) + 2 * 508'559'360.0;
    const double state = 30 * (32 * 128 * 128 * 4.0 + 8'192 * 3 * 2.0);
    check_config(
        {"qwen3.5-35b-a3b", total, active, DType::bf16, 2 * total, 20'480, 20'480.0 * 4096 + state, 20'480.0 * 65536 + state});
}

// gemma4 (text_config; transformers' Gemma4TextAttention): L=30, h=2,816,
// H=16, V=262,144 tied. 25 sliding layers (window 1,024): d=256, 8 KV heads,
// q 2816·4096 + k,v 2·2816·2048 + o 4096·2816 = 34,603,008. 5 full layers:
// global_head_dim 512, attention_k_eq_v with 2 KV heads and no v_proj: q
// 2816·8192 + k 2816·1024 + o 8192·2816 = 49,020,928. Every layer: 128
// experts of 3·2816·704 = 5,947,392 (top 8), the dense MLP 3·2816·2112 =
// 17,842,176 beside them (enable_moe_block, 3 shared experts' worth), router
// 2816·128 = 360,448. Total 1,110,179,840 + 30·779,468,800 + 738,197,504 =
// 25,232,441,344 (published 25.2 B, vast.ai/model/gemma-4-26b-a4b-it quoting the model card); active 30·(17,842,176 +
// 8·5,947,392 + 360,448) = 1,973,452,800 more than attention + embedding:
// 3,821,830,144 (3.8 B). KV per token: sliding 2·8·256·2 = 8,192 B and full
// 2·2·512·2 = 4,096 B a layer (K and V both cached: V is normalised without
// RoPE): 25·8,192 + 5·4,096 = 225,280 B.
TEST_CASE("HF corpus: Gemma-4-26B-A4B (full-attention layers with their own head shape)", "[hf][hf-corpus][attention-layers]") {
    const double attention = 25 * 34'603'008.0 + 5 * 49'020'928.0, embedding = 262'144.0 * 2816;
    const double total = attention + 30 * (17'842'176 + 128 * 5'947'392.0 + 360'448) + embedding;
    const double active = attention + 30 * (17'842'176 + 8 * 5'947'392.0 + 360'448) + embedding;
    CHECK(total == 25'232'441'344.0);
    CHECK(active == 3'821'830'144.0);
    check_config({"gemma-4-26b-a4b", total, active, DType::bf16, 2 * total, 225'280, 25 * 8192.0 * 1024 + 5 * 4096.0 * 4096,
                  25 * 8192.0 * 1024 + 5 * 4096.0 * 65536});  // 293,601,280 and 1,551,892,480 B
    const ModelSpec m = io::load_model("--model", corpus("gemma-4-26b-a4b"));
    CHECK(m.full_head_dim == 512);
    CHECK(m.full_kv_heads == 2);
    CHECK(m.full_k_eq_v);
    // Attention FLOP per key: 4·16·(25·256 + 5·512) = 573,440 at decode and prefill.
    CHECK(attention_flop_per_key(m, Phase::decode) == 573'440.0);
    // Keys one decode query attends at 64k: the window layers' share of the per-key FLOP is
    // 25·256 / (25·256 + 5·512) = 5/7, of the KV 204,800 / 225,280 = 10/11.
    const AttentionLayout a = attention_layout(m, DType::bf16);
    CHECK(a.window_key_share == Approx(5.0 / 7).epsilon(1e-15));
    CHECK(a.window_share == Approx(10.0 / 11).epsilon(1e-15));
    CHECK(decode_keys(a, 65536) == Approx(65536.0 * 2 / 7 + 1024.0 * 5 / 7).epsilon(1e-15));
    CHECK(decode_tokens_read(a, 65536, 1.0) == Approx(65536.0 / 11 + 1024.0 * 10 / 11).epsilon(1e-15));
    // Tensor parallelism over 4 GPUs: 8 window KV heads split 2 a GPU, the 2 full ones replicated
    // twice; the larger factor, 2, is charged to all the KV (an upper bound).
    CHECK(kv_replication(m, 2) == 1.0);
    CHECK(kv_replication(m, 4) == 2.0);
    // The preset (data/models.json) is the same model.
    const ModelSpec preset = io::load_model("--model", "gemma-4-26b-a4b");
    CHECK(param_counts(preset).total == Approx(total).epsilon(1e-12));
    CHECK(param_counts(preset).active == Approx(active).epsilon(1e-12));
    CHECK(kv_bytes_per_token(preset, DType::bf16).raw() == 225'280);
    CHECK(attention_layout(preset, DType::bf16).window_key_share == a.window_key_share);
}

// gemma4 dense (Gemma-4-31B-IT as NVIDIA's NVFP4 checkpoint): L=60, h=5,376,
// H=32, I=21,504, V=262,144 tied. 50 sliding layers (window 1,024): d=256,
// 16 KV heads, q 5376·8192 + k,v 2·5376·4096 + o 8192·5376 = 132,120,576; 10
// full layers: d_f=512, K_f=4, keys as values: q 5376·16384 + k 5376·2048 + o
// 16384·5376 = 187,170,816; MLP 3·5376·21504 = 346,816,512. Total
// 8,477,736,960 + 60·346,816,512 + 1,409,286,144 = 30,696,013,824 (model card:
// 30.7 B, as summarised from the Gemma 4 model card). modelopt NVFP4 with every layer's self_attn and the LM head in
// `ignore`: the MLPs at 4.5 bits (20,808,990,720 · 0.5625), attention and
// embedding in BF16: 31,479,103,488 B. KV 50·16,384 + 10·8,192 = 901,120 B/token.
TEST_CASE("HF corpus: Gemma-4-31B-IT NVFP4 (dense, attention kept in BF16)", "[hf][hf-corpus][attention-layers]") {
    const double attention = 50 * 132'120'576.0 + 10 * 187'170'816.0, embedding = 262'144.0 * 5376, mlp = 60 * 346'816'512.0;
    const double total = attention + mlp + embedding;
    CHECK(total == 30'696'013'824.0);
    check_config({"gemma-4-31b-it-nvfp4", total, total, DType::fp4, mlp * 0.5625 + (attention + embedding) * 2, 901'120,
                  50 * 16'384.0 * 1024 + 10 * 8192.0 * 4096, 50 * 16'384.0 * 1024 + 10 * 8192.0 * 65536});
}

// minimax_m1 (MiniMax-M1, MiniMax-AI/MiniMax-M1 config.json): L=80,
// attn_type_list 0 (lightning attention) on 70 layers, 1 (softmax) on every
// 8th (10); h=6144, H=64, kv=8, d=128, E=32, k=2, I_e=9216, V=200064, untied.
// Lightning layer qkv_proj 6144·3·8192 + output_gate 6144·8192 + out_proj
// 8192·6144 = 251,658,240; softmax layer 6144·8192·2 + 2·6144·1024 =
// 113,246,208; MoE layer 32·3·6144·9216 + router 6144·32 = 5,436,014,592;
// embedding and head 2·1,229,193,216. Total 456,088,092,672 (456 B card);
// active 48,401,743,872, without the embedding and head 45,943,357,440 (the
// card's 45.9 B). Index total_size 912,210,767,872 B = 2·(total + 1,562,624
// norm weights) + the 80 routers' 15,728,640 weights at 2 B more (FP32).
// KV 2·10·8·128·2 = 40,960 B/token; lightning state 70·64·128·128·2 B =
// 146,800,640 B per sequence (BF16, as vLLM holds it).
TEST_CASE("HF corpus: MiniMax-M1 (lightning attention on 70 of 80 layers)", "[hf][hf-corpus][attention-layers]") {
    const double emb = 200'064 * 6144.0, moe = 32 * 3 * 6144 * 9216.0 + 6144 * 32;
    const double total = 70 * 251'658'240.0 + 10 * 113'246'208.0 + 80 * moe + 2 * emb;
    CHECK(total == 456'088'092'672.0);
    CHECK(total == Approx(456e9).epsilon(0.01));
    const double norms = 70 * (2 * 6144 + 8192.0) + 10 * 2 * 6144 + 6144;
    CHECK(2 * (total + norms) + 2 * 80 * 6144 * 32.0 == 912'210'767'872.0);
    const double active = 70 * 251'658'240.0 + 10 * 113'246'208.0 + 80 * (2 * 3 * 6144 * 9216.0 + 6144 * 32) + 2 * emb;
    CHECK(active - 2 * emb == Approx(45.9e9).epsilon(0.001));
    const ModelSpec m = io::load_model("--model", corpus("minimax-m1"));
    CHECK(m.linear_layers == 70);
    CHECK(m.attention_layers() == 10);
    CHECK(m.linear_kind == LinearKind::lightning);
    const double state = 70 * 64 * 128 * 128 * 2.0;
    CHECK(linear_state_bytes(m).raw() == state);
    // Decode: 5 FLOP per state element (decay, kᵀv, q·S), no convolution.
    CHECK(linear_state_flop_per_token(m) == 70 * 5 * 64 * 128 * 128.0);
    check_config(
        {"minimax-m1", total, active, DType::bf16, 2 * total, 40'960, 40'960.0 * 4096 + state, 40'960.0 * 65536 + state});
}
