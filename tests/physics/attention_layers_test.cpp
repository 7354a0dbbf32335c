// SPDX-License-Identifier: MIT
// Per-layer attention (physics/attention_layers.hpp): KV held and read at a
// context S by layer kind, checked by hand on a tiny windowed model, and the
// serving model's limiting cases (a window no context reaches is full
// attention; a larger window never raises throughput).
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/physics/call_demand.hpp"

using namespace kvroof;

namespace {
// 4 layers, 2 of them with a 100-token window; 2 KV heads of dim 16: bf16 KV
// 2·2·16·2 = 128 B per token and layer, 512 B per token over the 4 layers.
ModelSpec windowed(int window = 100) {
    ModelSpec m;
    m.name = "windowed";
    m.layers = 4;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 16;
    m.intermediate = 128;
    m.vocab = 100;
    m.window_layers = 2;
    m.window = window;
    return m;
}
}  // namespace

TEST_CASE("a window caps the KV a layer holds and reads at W tokens (by hand)", "[attention-layers]") {
    const ModelSpec m = windowed();
    REQUIRE_NOTHROW(m.check_validity());
    PolicySpec p;
    p.kv_dtype = DType::bf16;
    const ModelConstants mc = model_constants(m, p);
    REQUIRE(mc.kv_per_token.raw() == 512.0);
    // Below W every layer holds all S = 50 tokens: 512·50.
    CHECK(kv_held(mc, 50).raw() == 25'600.0);
    // Above W: 2 full layers 128·1000 each + 2 window layers 128·100 each.
    CHECK(kv_held(mc, 1000).raw() == Approx(2 * 128 * 1000 + 2 * 128 * 100).epsilon(1e-15));  // 281,600, not 512,000
    // A decode query at S = 1000 attends 1000 keys in a full layer, 100 in a window layer: 550 on average.
    CHECK(decode_keys(mc.layout, 1000) == Approx(550).epsilon(1e-15));
    CHECK(decode_tokens_read(mc.layout, 1000, 1.0) * 512 == Approx(281'600).epsilon(1e-15));
    CHECK(decode_tokens_read(mc.layout, 1000, 0.5) == Approx(275).epsilon(1e-15));
}

TEST_CASE("prefill over a window layer attends at most W keys per query (by hand)", "[attention-layers]") {
    PolicySpec p;
    const ModelConstants mc = model_constants(windowed(), p);
    // 300 new tokens, nothing cached: full layers Σ q = 300²/2 = 45,000 keys;
    // window layers 100²/2 + 100·200 = 25,000; the mean of the two kinds.
    CHECK(prefill_keys(mc.layout, 0, 300, 0, 0).gpu == Approx(35'000).epsilon(1e-15));
    // 100 new after 50 cached, all cached KV on the CPU (f = 1, r = 0).
    // Full layers: 100·50 = 5,000 cached keys (CPU), 100²/2 = 5,000 new (GPU).
    // Window layers: F(150) − F(50) = (5,000 + 100·50) − 1,250 = 8,750 keys, of
    // them cached: queries 0..50 see all 50 (2,500), queries 50..100 see W − j (1,250).
    const PrefillKeys k = prefill_keys(mc.layout, 50, 100, 1.0, 0.0);
    CHECK(k.cpu_per_query * 100 == Approx(0.5 * 5'000 + 0.5 * 3'750).epsilon(1e-15));
    CHECK(k.gpu == Approx(0.5 * 5'000 + 0.5 * (8'750 - 3'750)).epsilon(1e-15));
}

TEST_CASE("a window no context reaches gives exactly the full-attention figures", "[attention-layers]") {
    PolicySpec p;
    ModelSpec full = windowed();
    full.window_layers = 0;
    full.window = 0;
    const ModelConstants wide = model_constants(windowed(1'000'000), p), plain = model_constants(full, p);
    for (double S : {1.0, 100.0, 4096.0, 65536.0}) {
        CHECK(kv_held(wide, S).raw() == Approx(kv_held(plain, S).raw()).epsilon(1e-15));
        CHECK(decode_keys(wide.layout, S) == Approx(S).epsilon(1e-15));
        CHECK(prefill_keys(wide.layout, S, 512, 0.3, 0.5).gpu ==
              Approx(prefill_keys(plain.layout, S, 512, 0.3, 0.5).gpu).epsilon(1e-12));
    }
    // The whole serving model: the default scenario with its model windowed beyond its context.
    Scenario a = test::default_scenario(), b = a;
    b.model.window_layers = b.model.layers / 2;
    b.model.window = 10'000'000;
    const PreparedScenario pa(a), pb(b);
    for (double f : {0.0, 0.4, 0.9}) {
        const ServingPoint x = evaluate(pa, f, 0.5), y = evaluate(pb, f, 0.5);
        CHECK(y.throughput == Approx(x.throughput).epsilon(1e-12));
        CHECK(y.batch == Approx(x.batch).epsilon(1e-12));
    }
}

TEST_CASE("a larger window never raises throughput, and a smaller one holds less KV per session", "[attention-layers]") {
    Scenario sc = test::default_scenario();
    sc.model.window_layers = sc.model.layers / 2;
    double last_throughput = kUnbounded, last_session = 0;
    for (int w : {128, 1024, 4096, 16384, 65536, 1 << 20}) {
        INFO("window " << w);
        sc.model.window = w;
        const PreparedScenario ps(sc);
        double best = 0;
        for (double f : {0.0, 0.25, 0.5, 0.75}) best = std::max(best, evaluate(ps, f, 0.0).throughput);
        CHECK(best <= last_throughput * (1 + 1e-12));
        CHECK(ps.session_kv_max >= last_session);
        last_throughput = best;
        last_session = ps.session_kv_max;
    }
}

TEST_CASE("layer counts are validated against the layers", "[attention-layers][ranges]") {
    ModelSpec m = windowed();
    m.window_layers = 5;
    CHECK_THROWS_WITH(m.check_validity(), Catch::Contains("window_layers (5) + linear_layers (0) must be <= layers (4)"));
    m = windowed(0);
    CHECK_THROWS_WITH(m.check_validity(), Catch::Contains("window must be in [1, 100000000], got 0"));
    m = windowed();
    m.window_layers = 0;
    m.linear_layers = 4;  // no attention layer left
    CHECK_THROWS_WITH(m.check_validity(), Catch::Contains("linear_key_heads must be in"));
    m.linear_key_heads = m.linear_value_heads = m.linear_key_head_dim = m.linear_value_head_dim = m.linear_conv_kernel = 1;
    CHECK_THROWS_WITH(m.check_validity(), Catch::Contains("with at least one attention layer"));
}

TEST_CASE("DSA: a larger top-k never raises throughput, and a top-k beyond the context reads all of the KV",
          "[attention-layers]") {
    Scenario sc = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "h200");
        in.set("gpus", "8");
        in.set("model", "deepseek-v3");
        in.set("weight-dtype", "fp8");
    });
    sc.model.index_heads = 64;  // DeepSeek-V3.2's indexer
    sc.model.index_head_dim = 128;
    const double context = sc.mix.entries.front().cls.context();
    double last = kUnbounded;
    for (int k : {256, 2048, 16384, 1 << 24}) {
        INFO("top-k " << k);
        sc.model.index_topk = k;
        REQUIRE_NOTHROW(sc.check_validity());
        const PreparedScenario ps(sc);
        double best = 0;
        for (double f : {0.0, 0.5}) best = std::max(best, evaluate(ps, f, 0.0).throughput);
        CHECK(best <= last * (1 + 1e-12));
        last = best;
        // Everything is held whatever k; what a decode token reads is capped.
        CHECK(kv_held(ps.mc, context).raw() == Approx(ps.mc.kv_per_token.raw() * context).epsilon(1e-15));
        if (k > context)
            CHECK(kv_read_per_decode_token(ps.mc, context, 1.0).raw() == Approx(kv_held(ps.mc, context).raw()).epsilon(1e-12));
    }
}

TEST_CASE("seed 001's B_kv is the KV the K cached tokens hold, per token", "[attention-layers][prefill]") {
    // 281,600 B held at K = 1,000 (above): 281.6 B per cached token, not 512; below W all 512.
    CHECK(reload_bytes_per_cached_token(windowed(), DType::bf16, 1000).raw() == Approx(281.6).epsilon(1e-15));
    CHECK(reload_bytes_per_cached_token(windowed(), DType::bf16, 50).raw() == Approx(512).epsilon(1e-15));
    ModelSpec full = windowed();
    full.window_layers = 0;
    CHECK(reload_bytes_per_cached_token(full, DType::bf16, 1000).raw() == 512);
}
