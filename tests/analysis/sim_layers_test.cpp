// SPDX-License-Identifier: MIT
// The simulator by attention layer kind: full and linear-attention layers are
// simulated (a call's linear state held beside its KV), sliding-window and DSA
// layers refused by name.
#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"
#include "kvroof/analysis/sim.hpp"
#include "sim_support.hpp"

namespace kvroof {
namespace {

using test::closed_loop;

}  // namespace

TEST_CASE("a model with sliding-window layers is refused by name, not simulated as full attention", "[sim]") {
    Scenario sc = test::default_scenario();
    sc.model.window_layers = sc.model.layers / 2;
    sc.model.window = 4096;
    CHECK_THROWS_WITH(simulate(sc, closed_loop(4, 100)), Catch::Contains("sliding-window") && Catch::Contains("not simulated"));
    sc.model.window_layers = 0;  // the control: full attention runs
    CHECK(simulate(sc, closed_loop(4, 100)).feasible);
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
