// SPDX-License-Identifier: MIT
// The simulator by attention layer kind: every kind is simulated (a call's
// linear state held beside its KV; window and DSA layers as knots in the
// decode demand, under the static and the dynamic split, with or without
// preemption).
#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"
#include "kvroof/analysis/sim.hpp"
#include "sim_support.hpp"

namespace kvroof {
namespace {

using test::closed_loop;

}  // namespace

TEST_CASE("sliding-window layers: far beyond W the limiting case agrees within 2 percent", "[sim]") {
    // gpt-oss-20b (12 of 24 layers with a 128-token window) on one H200: every context is past W, so the decode
    // demand is a line again and the fluid closed form is every step.
    const Scenario sc = test::bench_scenario("h200", "gpt-oss-20b", 2048, 256);
    REQUIRE(PreparedScenario(sc).mc.layout.window_share > 0);
    const SimResult r = simulate(sc, closed_loop(256, 20000, GapDist::deterministic));
    REQUIRE(r.feasible);
    CHECK(r.throughput == Approx(r.closed.throughput).epsilon(0.02));
    CHECK(r.itl.mean == Approx(r.closed.itl).epsilon(0.02));
    CHECK(r.output_tokens == r.expected_output_tokens);
    CHECK(r.hbm_used <= r.hbm_capacity);
}

TEST_CASE("sliding-window layers: a window no call reaches runs as full attention", "[sim]") {
    // Every context below W: each call's min(S, W) is S, so the run is the full-attention model's up to rounding.
    Scenario full = test::bench_scenario("h200", "llama-3.1-8b", 2000, 500);
    Scenario windowed = full;
    windowed.model.window_layers = windowed.model.layers / 2;
    windowed.model.window = 1 << 20;
    const SimSpec s = closed_loop(32, 2000);
    const SimResult a = simulate(full, s), b = simulate(windowed, s);
    CHECK(b.throughput == Approx(a.throughput).epsilon(1e-9));
    CHECK(b.itl.mean == Approx(a.itl.mean).epsilon(1e-9));
    CHECK(b.hbm_used == Approx(a.hbm_used).epsilon(1e-9));
}

namespace {

// One client, one call of 500 prompt tokens and 300 outputs on `sc`, whose layers bend the decode demand at 512
// tokens: its decode steps read S + 1 ... S + O − 1 keys, crossing the knot at the 12th. Their times, by hand from
// decode_lines at each context, are the run's time less that of the same call with one output (its prefill alone).
void check_one_call_crossing_512(Scenario sc) {
    sc.mix.entries[0].cls.a_append = 500;
    sc.mix.entries[0].cls.s_cached = 0;
    sc.mix.entries[0].cls.o_output = 300;
    SimSpec s = closed_loop(1, 1, GapDist::deterministic);
    s.warmup = 0;
    const SimResult run = simulate(sc, s);
    Scenario one = sc;
    one.mix.entries[0].cls.o_output = 1;
    const SimResult prefill = simulate(one, s);
    const PreparedScenario ps(sc);
    PolicySpec pol = sc.policy;
    pol.f = 0;
    pol.ov = 0;
    pol.idle = ps.idle;
    const detail::DecodeLines l = detail::decode_lines(ps, pol);
    REQUIRE(l.knots == 1);
    CHECK(l.knot[0] == 512);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    double by_hand = 0;
    for (int k = 1; k < 300; ++k) {
        detail::StepContent c;
        const double context = 500 + k;
        detail::add_decode(c, l, 1.0, context, lin, {std::min(context, 512.0), 0.0});
        // The same content straight from decode_demand at that context: the knots reproduce it.
        const DecodeDemand d = decode_demand(ps.mc, ps.sys, pol, context);
        CHECK(c.attn_m == Approx(d.gpu_hbm).epsilon(1e-12));
        CHECK(c.attn_c + lin == Approx(d.gpu_compute).epsilon(1e-12));
        by_hand += detail::step_time(ps, c, 0.0, 0.0);
    }
    CHECK(run.sim_time - prefill.sim_time == Approx(by_hand).epsilon(1e-12));
}

}  // namespace

TEST_CASE("sliding-window layers: one call crossing W steps as the decode demand at each of its contexts", "[sim]") {
    Scenario sc = test::bench_scenario("h200", "llama-3.1-8b", 500, 300);
    sc.model.window_layers = sc.model.layers / 2;  // a 512-token window on half the layers
    sc.model.window = 512;
    check_one_call_crossing_512(sc);
}

TEST_CASE("DSA layers: one call crossing the top k steps as the decode demand at each of its contexts", "[sim]") {
    // DeepSeek-V3 with DeepSeek-V3.2's indexer (64 heads of 128) and a top k of 512, FP8 on 8 H200s.
    Scenario sc = test::bench_scenario("h200", "deepseek-v3", 500, 300, 8);
    sc.policy.weight_dtype = DType::fp8;
    sc.model.index_heads = 64;
    sc.model.index_head_dim = 128;
    sc.model.index_topk = 512;
    check_one_call_crossing_512(sc);
    // Preemption runs with DSA (what it holds grows a whole token per decode token): tokens are conserved.
    SimSpec s = closed_loop(16, 200);
    s.preempt = Preempt::swap;
    const SimResult r = simulate(sc, s);
    REQUIRE(r.feasible);
    CHECK(r.output_tokens == r.expected_output_tokens);
    CHECK(r.hbm_used <= r.hbm_capacity);
}

TEST_CASE("sliding-window layers: the KV held returns to nothing after each call that crosses W", "[sim]") {
    // One client of identical calls (500 prompt tokens, 1,000 outputs, W = 1,024): the mean HBM used is the same over
    // 300 calls as over 3,000. A call's window layers grow while it holds fewer than W tokens, one step longer than it
    // reads fewer than W keys; counted as the latter, each call left -w tokens behind and the mean fell 1.2 %.
    const Scenario sc = test::bench_scenario("h200", "gemma-3-27b", 500, 1000);
    SimSpec s = closed_loop(1, 300, GapDist::deterministic);
    const SimResult a = simulate(sc, s);
    s.calls = 3000;
    const SimResult b = simulate(sc, s);
    CHECK(b.hbm_used == Approx(a.hbm_used).epsilon(1e-9));
    CHECK(a.hbm_used > PreparedScenario(sc).mc.weights.raw());
}

TEST_CASE("dynamic split with window layers: each f's content is the decode demand's at that f, bends included", "[sim][split]") {
    // Llama-3.1-70B on GB200 at ov = 1 with a 1,024-token window on half its layers; 8 calls of 3,000 keys each,
    // so Σ min(S, W) = 8·1,024. The split's content at the f it picks equals add_decode of the lines read at that f.
    Scenario sc = test::default_scenario();
    sc.model.window_layers = sc.model.layers / 2;
    sc.model.window = 1024;
    const PreparedScenario ps(sc);
    PolicySpec pol = sc.policy;
    pol.ov = 1;
    pol.idle = ps.idle;
    const detail::SplitLines l = detail::split_lines(ps, pol, 1.0);
    REQUIRE(l.one.knots == 1);
    const double lin = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw(), n = 8, sum = 8 * 3000.0;
    const std::array<double, 2> sum_min{8 * 1024.0, 0.0};
    const detail::Split sp = detail::choose_split(ps, l, detail::StepContent{}, n, sum, sum_min, lin, 1.0);
    REQUIRE(sp.f > 0);
    REQUIRE(sp.f < 1);
    pol.f = sp.f;
    detail::StepContent direct;
    detail::add_decode(direct, detail::decode_lines(ps, pol), n, sum, lin, sum_min);
    CHECK(sp.content.attn_m == Approx(direct.attn_m).epsilon(1e-9));
    CHECK(sp.content.attn_c == Approx(direct.attn_c).epsilon(1e-9));
    CHECK(sp.content.cpu_d == Approx(direct.cpu_d).epsilon(1e-9));
    CHECK(sp.content.h2d == Approx(direct.h2d).epsilon(1e-9));
    CHECK(sp.time == Approx(detail::step_time(ps, direct, sp.f, 1.0)).epsilon(1e-9));
    // Leaving the window's sums out would charge the window layers nothing: a different, cheaper step.
    const detail::Split without = detail::choose_split(ps, l, detail::StepContent{}, n, sum, {}, lin, 1.0);
    CHECK(without.time < sp.time);
}

TEST_CASE("dynamic split with window layers: a window no call reaches runs as full attention", "[sim][split]") {
    // As the static test above, under --f-policy dynamic at ov = 1 on GB200, where steps do offload.
    Scenario full = test::default_scenario();
    CallClass& c = full.mix.entries[0].cls;
    c.s_cached = 0;
    c.a_append = 2000;
    c.o_output = 200;
    c.idle_gap = Seconds(0);
    Scenario windowed = full;
    windowed.model.window_layers = windowed.model.layers / 2;
    windowed.model.window = 1 << 20;
    SimSpec s = closed_loop(16, 400);
    s.f_policy = FPolicy::dynamic;
    s.f = 1;
    s.ov = 1;
    const SimResult a = simulate(full, s), b = simulate(windowed, s);
    REQUIRE(a.feasible);
    CHECK(a.f_split.mean > 0);
    CHECK(b.throughput == Approx(a.throughput).epsilon(1e-9));
    CHECK(b.itl.mean == Approx(a.itl.mean).epsilon(1e-9));
    CHECK(b.f_split.mean == Approx(a.f_split.mean).epsilon(1e-9));
    CHECK(b.output_tokens == b.expected_output_tokens);
}

TEST_CASE("sliding-window layers under preemption: reservations grow as the KV does and return to nothing", "[sim]") {
    // Gemma-3-27B (W = 1,024) on one H200, 256 clients of 500/4,000 tokens: HBM runs short, calls are preempted,
    // and each crosses W. Once every call is done the calls reserve nothing: had a reservation grown a whole token
    // per decode token (the full-attention rule), each call crossing W would have left w·(tokens past W) behind.
    Scenario sc = test::bench_scenario("h200", "gemma-3-27b", 500, 4000);
    const PreparedScenario ps(sc);
    REQUIRE(ps.mc.layout.window_share > 0);
    for (const Preempt p : {Preempt::swap, Preempt::recompute}) {
        SimSpec s = closed_loop(256, 600, GapDist::deterministic);
        s.preempt = p;
        detail::SimEngine e(ps, s);
        e.run(0.0);
        INFO(name(p));
        CHECK(e.preemptions > 0);
        CHECK(e.output_tokens == e.expected_output);
        CHECK(std::abs(e.reserved_by_calls()) < 1e-6 * ps.mc.kv_gpu_per_token.raw());
    }
}

TEST_CASE("sliding-window layers under preemption: a window no call reaches runs as full attention", "[sim]") {
    Scenario full = test::bench_scenario("h200", "llama-3.1-8b", 8000, 2000);
    Scenario windowed = full;
    windowed.model.window_layers = windowed.model.layers / 2;
    windowed.model.window = 1 << 20;
    SimSpec s = closed_loop(256, 600);
    s.preempt = Preempt::swap;
    const SimResult a = simulate(full, s), b = simulate(windowed, s);
    REQUIRE(a.preemptions > 0);
    CHECK(b.preemptions == a.preemptions);
    CHECK(b.throughput == Approx(a.throughput).epsilon(1e-9));
    CHECK(b.itl.mean == Approx(a.itl.mean).epsilon(1e-9));
}

TEST_CASE("linear-attention layers: the limiting case agrees within 2 percent, and admission counts each call's state", "[sim]") {
    // Qwen3-Next-80B (36 linear-attention layers, a 39.5 MB state per sequence) with FP8 weights on one H200.
    Scenario sc = test::bench_scenario("h200", "qwen3-next-80b", 2048, 256);
    sc.policy.weight_dtype = DType::fp8;
    const PreparedScenario ps(sc);
    const double state = ps.mc.layout.state_tokens;
    REQUIRE(state > 1000);  // tokens of kv: the state outweighs a thousand tokens' keys and values
    const SimResult r = simulate(sc, closed_loop(256, 20000, GapDist::deterministic));
    REQUIRE(r.feasible);
    CHECK(r.throughput == Approx(r.closed.throughput).epsilon(0.02));
    CHECK(r.itl.mean == Approx(r.closed.itl).epsilon(0.02));
    CHECK(r.output_tokens == r.expected_output_tokens);
    // HBM holds k calls at their peak with the state, fewer than without it (the state is 7 % of a call here).
    Scenario tight = test::bench_scenario("h200", "qwen3-next-80b", 19900, 100);
    tight.policy.weight_dtype = DType::fp8;
    const PreparedScenario pt(tight);
    const double kv = pt.mc.kv_gpu_per_token.raw();
    const auto k = std::floor(pt.hbm_free_bytes() / (kv * (20000 + state)));
    REQUIRE(k >= 2);
    REQUIRE(std::floor(pt.hbm_free_bytes() / (kv * 20000)) > k);  // without the state more would run
    for (const Preempt mode : {Preempt::none, Preempt::swap}) {
        SimSpec s = closed_loop(2 * k, 4 * k);
        s.preempt = mode;
        const SimResult t = simulate(tight, s);
        INFO("preempt " << name(mode));
        REQUIRE(t.feasible);
        if (mode == Preempt::none) CHECK(t.max_running == k);
        CHECK(t.hbm_used <= t.hbm_capacity);
        CHECK(t.output_tokens == t.expected_output_tokens);
    }
}

}  // namespace kvroof
