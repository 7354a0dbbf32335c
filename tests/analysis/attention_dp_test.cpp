// SPDX-License-Identifier: MIT
// Data-parallel attention for MLA models (--attention-dp 1): each GPU holds
// only its own sequences' latent and a whole copy of the attention weights;
// the attention all-reduce is gone and each tensor-parallel FFN block is
// entered by an all-gather and left by a reduce-scatter (half a ring
// all-reduce's bytes each); MoE layers under EP use the all-to-alls instead.
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/optimise_f.hpp"
#include "kvroof/io/presets.hpp"

using namespace kvroof;

namespace {
Scenario on(const char* model, int gpus, int attention_dp, int ep = 1) {
    io::ScenarioInputs in;
    in.set("hardware", "h200");  // NVLink 450 GB/s per direction, η 0.80, α 5 µs
    in.set("model", model);
    in.set("gpus", std::to_string(gpus));
    in.set("weight-dtype", "fp8");  // DeepSeek-V3's own checkpoint: 1 B per weight
    in.set("attention-dp", std::to_string(attention_dp));
    in.set("ep", std::to_string(ep));
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("DeepSeek-V3 on 8 GPUs: latent bytes per token per GPU and weight bytes per GPU by hand", "[attention-dp]") {
    const Scenario tp = on("deepseek-v3", 8, 0), dp = on("deepseek-v3", 8, 1), dp_ep = on("deepseek-v3", 8, 1, 8);
    const PreparedScenario a(tp), b(dp), c(dp_ep);
    // Latent: (512 + 64) · 61 layers · 2 B = 70,272 B per token. Tensor-parallel attention holds
    // it on each of the 8 GPUs (70,272 B per token per GPU, 562,176 B for the group); data-parallel
    // attention on one GPU only: 70,272 B for the group, 8,784 B per token per GPU on average.
    CHECK(a.mc.kv_per_token.raw() == 70272.0);
    CHECK(a.mc.kv_gpu_per_token.raw() / 8 == 70272.0);
    CHECK(b.mc.kv_gpu_per_token.raw() == 70272.0);
    CHECK(b.mc.kv_gpu_per_token.raw() / 8 == 8784.0);
    CHECK(b.kv_replication == 1.0);
    // One session must still fit on one GPU: its KV counts 8 times against the group's free HBM.
    CHECK(b.kv_session_span == 8.0);
    CHECK(a.kv_session_span == 8.0);
    // Attention weights per layer: h·q_lora 11,010,048 + q_lora·H·(128+64) 37,748,736
    // + h·(512+64) 4,128,768 + 512·H·(128+128) 16,777,216 + H·128·h 117,440,512 = 187,105,280;
    // · 61 layers = 11,413,422,080 B in FP8. Data-parallel attention holds 7 more copies:
    // 79,893,954,560 B, 9,986,744,320 B more per GPU.
    const double attention = 187'105'280.0 * 61;
    CHECK(attention == 11'413'422'080.0);
    CHECK(b.mc.weights_replicated == 7 * attention);
    CHECK(b.mc.weights.raw() / 8 - a.mc.weights.raw() / 8 == Approx(9'986'744'320.0).epsilon(1e-12));
    CHECK(b.mc.weights_read(1.0).raw() - a.mc.weights_read(1.0).raw() == Approx(7 * attention).epsilon(1e-12));
    // Under EP 8 the shared expert runs data-parallel too: 58 layers · 3 · 7168 · 2048 = 2,554,331,136 B, 7 more copies.
    CHECK(c.mc.weights_replicated == 7 * (attention + 58.0 * 3 * 7168 * 2048));
    // Elementwise traffic per token, 2 B each: a fused add + norm before each of 122 blocks (4h) and the sum of 8
    // experts in 58 MoE layers (9h) run on every GPU under tensor-parallel attention, once under data-parallel:
    // 122 · 28,672 + 58 · 64,512 = 7,239,680; the activations (3 dense layers · 3 · 18,432 and 58 · 9 experts
    // · 3 · 2,048 = 3,373,056) are split either way.
    CHECK(a.mc.act_bytes_per_token == 2.0 * (8 * 7'239'680.0 + 3'373'056.0));
    CHECK(b.mc.act_bytes_per_token == 2.0 * (7'239'680.0 + 3'373'056.0));
    // Communication: the 61 attention all-reduces are gone; the 61 FFN blocks each pay an all-gather and a
    // reduce-scatter of 7,168 · 2 B per token, (t−1)/t of it per GPU each: half the bytes of the 122
    // all-reduces, the same 122 α. Under EP 8 only the 3 dense layers gather and scatter (6 collectives).
    CHECK(a.mc.allreduces_per_pass == 122.0);
    CHECK(b.mc.allreduces_per_pass == 122.0);
    CHECK(c.mc.allreduces_per_pass == 6.0);
    const double per_token_tp = 122 * 14336 * (2.0 * 7 / 8) / (0.8 * 450e9);  // 8.502e-6 s
    CHECK(per_token_tp == Approx(8.502e-6).epsilon(1e-3));
    CHECK(tp_comm_per_token(a.mc, a.sys) == Approx(per_token_tp).epsilon(1e-12));
    CHECK(tp_comm_per_token(b.mc, b.sys) == Approx(per_token_tp / 2).epsilon(1e-12));
    CHECK(tp_comm_per_token(c.mc, c.sys) == Approx(6 * 7168 * (2.0 * 7 / 8) / (0.8 * 450e9)).epsilon(1e-12));
    CHECK(b.tp_step_latency == Approx(122 * 5e-6).epsilon(1e-12));
    CHECK(c.tp_step_latency == Approx(6 * 5e-6).epsilon(1e-12));
}

TEST_CASE("attention-DP on one GPU, or off, changes nothing", "[attention-dp]") {
    const Scenario s_off = on("deepseek-v3", 1, 0), s_on = on("deepseek-v3", 1, 1);  // PreparedScenario points at them
    const PreparedScenario one_off(s_off), one_on(s_on);
    CHECK(one_on.mc.weights.raw() == one_off.mc.weights.raw());
    CHECK(one_on.mc.kv_gpu_per_token.raw() == one_off.mc.kv_gpu_per_token.raw());
    for (double f : {0.0, 0.5}) {
        CHECK(evaluate(one_on, f, 0.0).throughput == evaluate(one_off, f, 0.0).throughput);
        CHECK(evaluate(one_on, f, 1.0).tpot == evaluate(one_off, f, 1.0).tpot);
    }
}

TEST_CASE("attention-DP lets DeepSeek-V3 on 8 H200s hold 6.5 times the KV tokens, and serve more", "[attention-dp]") {
    // 8 · (141 − 2) GB of HBM less the FP8 weights leaves 439 GB for KV under tensor-parallel
    // attention, 8 copies of each token's latent (562,176 B); data-parallel attention leaves 79.9 GB
    // less (the attention copies) but holds one copy (70,272 B): 8 · 359/439 = 6.5 times the tokens.
    const Scenario s_a = on("deepseek-v3", 8, 0), s_b = on("deepseek-v3", 8, 1);  // PreparedScenario points at them
    const PreparedScenario a(s_a), b(s_b);
    const double free_a = a.hbm_free_bytes(), free_b = b.hbm_free_bytes();
    CHECK(free_a - free_b == Approx(7 * 11'413'422'080.0).epsilon(1e-12));
    const double tokens_a = free_a / a.mc.kv_gpu_per_token.raw(), tokens_b = free_b / b.mc.kv_gpu_per_token.raw();
    CHECK(tokens_b / tokens_a == Approx(8.0 * free_b / free_a).epsilon(1e-12));
    CHECK(tokens_b / tokens_a > 6.5);
    CHECK(tokens_b / tokens_a < 6.6);
    CHECK(evaluate(b, 0.0, 0.0).throughput > evaluate(a, 0.0, 0.0).throughput);
}

TEST_CASE("attention-DP is refused for GQA models and with an EP degree other than 1 or the group", "[attention-dp]") {
    CHECK_THROWS_WITH(on("llama-3.1-70b", 8, 1), Catch::Contains("--attention-dp: the model's attention is GQA"));
    CHECK_THROWS_WITH(on("deepseek-v3", 8, 1, 4), Catch::Contains("--ep: with attention-dp 1, must be 1 or gpus (8"));
    CHECK_THROWS_WITH(on("deepseek-v3", 8, 2), Catch::Contains("--attention-dp: must be in [0, 1], got 2"));
    CHECK_THROWS_WITH(on("deepseek-v3", 8, -1), Catch::Contains("--attention-dp: must be in [0, 1], got -1"));
    CHECK_NOTHROW(on("deepseek-v3", 8, 1, 8));
    CHECK_NOTHROW(on("kimi-k2", 8, 1));
}
