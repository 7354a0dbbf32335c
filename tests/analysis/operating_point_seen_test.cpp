// SPDX-License-Identifier: MIT
// What one request sees (point_seen.hpp, point_at): it decodes beside the
// others and only their prefill lands in its steps. One client alone, one
// request at a light load and one request sent alone agree.
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/operating_point.hpp"
#include "sim_support.hpp"

namespace kvroof {

TEST_CASE("one client alone decodes as one request sent alone: no other prefill in its steps", "[point][seen]") {
    // Llama-3.1-8B on one H200, 100,000/1,000 tokens. One request sent alone (a run of one, one wave) prefills,
    // then decodes in a batch of one. A closed loop of one client is that request again and again: its own
    // prefill is over before it decodes, so its ITL is the same step, not a mean over its own prefill steps
    // (the fluid mean gave 10.96 ms and 58 tok/s here, against 8.41 ms and 69 tok/s).
    const Scenario s = test::bench_scenario("h200", "llama-3.1-8b", 100000, 1000);
    const PreparedScenario ps(s);
    const OperatingPoint one = operating_point(ps, test::point_load(LoadMode::concurrency, 1), 0.0, 0.0);
    LoadSpec alone_l = test::point_load(LoadMode::concurrency, 1);
    alone_l.requests = 1;
    const OperatingPoint alone = operating_point(ps, alone_l, 0.0, 0.0);
    REQUIRE(alone.one_wave);
    REQUIRE_FALSE(one.one_wave);
    CHECK(one.itl == Approx(alone.itl).epsilon(1e-12));
    CHECK(one.itl == Approx(one.step_bare).epsilon(1e-12));
    CHECK(one.ttft == Approx(alone.ttft).epsilon(1e-4));  // the wave's first chunk steps, taken as whole steps
    CHECK(one.throughput == Approx(alone.throughput).epsilon(1e-4));
    // 8.41 ms: the 16.1 GB of weights and 13.2 GB of KV (100,500 tokens of 131,072 B) at 0.85 of 4.8 TB/s,
    // plus the step overhead.
    CHECK(one.itl == Approx(8.41e-3).margin(0.01e-3));
    CHECK(one.throughput == Approx(68.74).margin(0.01));
}

TEST_CASE("an open loop at a light load: a request decodes at least alone, and ITL grows with the rate", "[point][seen]") {
    const Scenario s = test::bench_scenario("h200", "llama-3.1-8b", 100000, 1000);
    const PreparedScenario ps(s);
    const OperatingPoint one = operating_point(ps, test::point_load(LoadMode::concurrency, 1), 0.0, 0.0);
    // At 0.001 req/s the time-average batch is 0.008, but the one request there decodes in a batch of one
    // (the fluid mean step at B = 0.008 gave 5.23 ms, below the step of the request alone).
    const OperatingPoint light = operating_point(ps, test::point_load(LoadMode::request_rate, 0.001), 0.0, 0.0);
    CHECK(light.batch < 0.01);
    CHECK(light.itl >= one.itl);
    CHECK(light.itl == Approx(one.itl).epsilon(0.01));
    CHECK(light.ttft == Approx(one.ttft).epsilon(0.01));  // no step under way to wait for, almost always
    double last = 0;
    for (const double r : {0.001, 0.01, 0.03, 0.06}) {
        const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::request_rate, r), 0.0, 0.0);
        REQUIRE_FALSE(p.saturated);
        CHECK(p.itl >= last);
        last = p.itl;
    }
}

TEST_CASE("a request shares its steps with the others: more clients or a larger batch never shorten ITL", "[point][seen]") {
    const Scenario s = test::bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 500);
    const PreparedScenario ps(s);
    for (const PrefillMode m : {PrefillMode::chunked, PrefillMode::separate}) {
        double last_c = 0, last_b = 0;
        for (const double n : {1.0, 2.0, 4.0, 16.0, 64.0}) {
            const OperatingPoint c = operating_point(ps, test::point_load(LoadMode::concurrency, n, m), 0.0, 0.0);
            const OperatingPoint b = operating_point(ps, test::point_load(LoadMode::batch, n, m), 0.0, 0.0);
            CHECK(c.itl >= last_c);
            CHECK(b.itl >= last_b);
            last_c = c.itl;
            last_b = b.itl;
        }
        // A fixed batch of one keeps its replacements' prefill in the GPU's time: it serves about what one client does
        // (its replacement's chunks share the one sequence's steps: +0.2 % here, +2.9 % at 100,000/1,000 tokens).
        const OperatingPoint b1 = operating_point(ps, test::point_load(LoadMode::batch, 1, m), 0.0, 0.0);
        const OperatingPoint c1 = operating_point(ps, test::point_load(LoadMode::concurrency, 1, m), 0.0, 0.0);
        CHECK(b1.throughput <= c1.throughput * 1.02);
        CHECK(b1.itl > b1.step_bare);
    }
}

TEST_CASE("clients queued for --max-seqs share a request's steps with the requests that run, no more", "[point][seen]") {
    const Scenario s = test::bench_scenario("h200", "llama-3.1-8b", 100000, 1000);
    const PreparedScenario ps(s);
    const OperatingPoint one = operating_point(ps, test::point_load(LoadMode::concurrency, 1), 0.0, 0.0);
    // Two clients, one request at a time: the one running decodes alone, the other waits.
    LoadSpec two = test::point_load(LoadMode::concurrency, 2);
    two.max_seqs = 1;
    const OperatingPoint q = operating_point(ps, two, 0.0, 0.0);
    CHECK(q.memory_queued);
    CHECK(q.itl == Approx(one.itl).epsilon(1e-9));
    CHECK(q.throughput == Approx(one.throughput).epsilon(1e-6));
    // One request sent at once with separate prefill (no wave): the request alone, however it is asked.
    LoadSpec all = test::point_load(LoadMode::saturate, 0, PrefillMode::separate),
             c1 = test::point_load(LoadMode::concurrency, 1, PrefillMode::separate);
    all.requests = c1.requests = 1;
    const OperatingPoint a = operating_point(ps, all, 0.0, 0.0), b = operating_point(ps, c1, 0.0, 0.0);
    CHECK(a.itl == Approx(b.itl).epsilon(1e-9));
    CHECK(a.throughput == Approx(b.throughput).epsilon(1e-6));
}

TEST_CASE("more clients never lower throughput: across the chunk budget, --max-seqs and memory", "[point][seen]") {
    auto rising = [](const PreparedScenario& ps, LoadSpec l, double from, double to, double step) {
        double last = 0;
        for (double c = from; c <= to; c += step) {
            l.value = c;
            const OperatingPoint p = operating_point(ps, l, 0.0, 0.0);
            INFO("clients " << c);
            CHECK(p.throughput >= last * (1 - 1e-9));
            last = p.throughput;
        }
    };
    // 8,000-token prompts, 20 tokens out: prefill-heavy, the chunk budget binds from about 7 clients.
    const Scenario heavy_s = test::bench_scenario("h200", "llama-3.1-8b", 8000, 20);
    const PreparedScenario heavy(heavy_s);
    rising(heavy, test::point_load(LoadMode::concurrency, 1), 1, 12, 1);
    // The requests the engine runs capped at 4, and memory full at about 418 clients.
    const Scenario s = test::bench_scenario("h200", "llama-3.1-8b", 2000, 500);
    const PreparedScenario ps(s);
    for (const PrefillMode m : {PrefillMode::chunked, PrefillMode::separate}) {
        LoadSpec capped = test::point_load(LoadMode::concurrency, 1, m);
        capped.max_seqs = 4;
        rising(ps, capped, 1, 8, 0.5);
    }
    rising(ps, test::point_load(LoadMode::concurrency, 1), 400, 440, 2);
}

TEST_CASE("separate prefill stalls decode: ITL = bare step + the prefill passes per step", "[point][seen]") {
    const Scenario s = test::bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 101);
    const PreparedScenario ps(s);
    const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::batch, 32, PrefillMode::separate), 0.0, 0.0);
    // τ: the per-call prefill pass (seed 000's) and its elementwise kernels, 2,000 tokens of them.
    const double tau = mix_demand(ps, 0.0).pre[0].ttft + 2000 * ps.mc.act_bytes_per_token / ps.sys.hbm_bandwidth.raw();
    // A fixed batch of 32 is 32 sequences in every step, their replacements' prefill passes among them.
    CHECK(p.itl == Approx(p.step_bare + (32.0 / 100.0) * tau).epsilon(1e-12));
    // TTFT: its own pass after the residual of what runs when it arrives, a decode step T_b or one of the 0.32
    // passes a step: E[X²] / (2·E[X]) over them.
    const double x = 32.0 / 100.0, tb = p.step_bare;
    CHECK(p.ttft == Approx(tau + (tb * tb + x * tau * tau) / (2 * (tb + x * tau))).epsilon(1e-12));
    CHECK(p.ttft > tau + 0.5 * tb);  // a pass under way is longer than a step
    // Chunked prefill reads the weights once per step for both: never slower here.
    const OperatingPoint c = operating_point(ps, test::point_load(LoadMode::batch, 32), 0.0, 0.0);
    CHECK(c.itl < p.itl);
}

TEST_CASE("a pipeline carries a request's prefill chunk in one micro-batch, whoever decodes beside it",
          "[point][seen][pipeline]") {
    // Llama-3.1-70B at TP4 x PP2 on H100s, 2,000/500 tokens: the 2,000-token chunk fits one step's budget. It
    // takes its trip through both stages (about 136 ms alone) in one micro-batch. Split over the two
    // micro-batches as soon as two sequences decoded, it gave 141 ms at 2 clients and 76 ms at 3.
    const Scenario s = test::bench_scenario("h100-sxm", "llama-3.1-70b", 2000, 500, 4, 2);
    const PreparedScenario ps(s);
    REQUIRE(ps.pipe.microbatches == 2.0);
    double last_ttft = 0, last_itl = 0, last_b_itl = 0;
    for (const double n : {1.0, 2.0, 3.0, 4.0, 8.0}) {
        const OperatingPoint c = operating_point(ps, test::point_load(LoadMode::concurrency, n), 0.0, 0.0);
        const OperatingPoint b = operating_point(ps, test::point_load(LoadMode::batch, n), 0.0, 0.0);
        CAPTURE(n, c.ttft, c.itl, b.itl);
        CHECK(c.ttft >= last_ttft);
        CHECK(c.itl >= last_itl);
        CHECK(b.itl >= last_b_itl);  // a batch of 2 runs as two micro-batches of one: no shorter than a batch of 1
        last_ttft = c.ttft;
        last_itl = c.itl;
        last_b_itl = b.itl;
    }
    // Four stages of H100 x4 over the network, a 20,000-token prompt: the chunks' transfers are those of the
    // micro-batch that carries them, not a 1/m share (which made TTFT fall from 2 to 2.7 clients).
    const Scenario s4 = test::bench_scenario("h100-sxm", "llama-3.1-70b", 20000, 500, 4, 4);
    const PreparedScenario ps4(s4);
    double last4 = 0;
    for (const double n : {1.0, 1.5, 2.0, 2.7, 3.0, 4.0, 8.0}) {
        const OperatingPoint c = operating_point(ps4, test::point_load(LoadMode::concurrency, n), 0.0, 0.0);
        CAPTURE(n, c.ttft);
        CHECK(c.ttft >= last4);
        last4 = c.ttft;
    }
    // One client's TTFT is its chunk's trip: no micro-batch to share it with.
    const OperatingPoint one = operating_point(ps, test::point_load(LoadMode::concurrency, 1), 0.0, 0.0);
    CHECK(one.ttft == Approx(0.1364).margin(0.001));
}

TEST_CASE("a pipeline's one wave prefills a chunk per micro-batch, each in one piece: a second stage at most halves TTFT",
          "[point][seen][pipeline]") {
    // Llama-3.1-70B on TP4 H100s, 2,000/500, 10 and 50 requests sent at once. Each of PP2's two micro-batches has
    // its own token budget (vLLM: a virtual engine per stage), so a cycle prefills two requests' chunks where PP1's
    // step prefills one; each chunk rides whole in one micro-batch, so the cycle is still at least one chunk's trip
    // through both stages, the PP1 step's time. The wave's prefill therefore takes about half as long, no less.
    for (const double n : {10.0, 50.0}) {
        LoadSpec l = test::point_load(LoadMode::concurrency, n);
        l.requests = n;
        const Scenario s1 = test::bench_scenario("h100-sxm", "llama-3.1-70b", 2000, 500, 4, 1);
        const Scenario s2 = test::bench_scenario("h100-sxm", "llama-3.1-70b", 2000, 500, 4, 2);
        const PreparedScenario p1(s1), p2(s2);
        const OperatingPoint one = operating_point(p1, l, 0.0, 0.0), two = operating_point(p2, l, 0.0, 0.0);
        REQUIRE(one.one_wave);
        REQUIRE(two.one_wave);
        CAPTURE(n, one.ttft, two.ttft);
        CHECK(two.ttft >= 0.5 * one.ttft);
        CHECK(two.ttft <= 0.6 * one.ttft);
    }
}

TEST_CASE("a pipeline's one wave of one long request: a chunk a cycle, not a micro-batch's budget each", "[point][pipeline]") {
    // One 8,000-token prompt on TP1 PP2 H100s: the request rides in one micro-batch, 2,048 tokens a cycle, so it
    // takes 4 cycles as at PP1, not 2 (the wave's TTFT was 163 ms against the request alone's 218 ms; the
    // simulator gives 217.6 ms).
    const Scenario s = test::bench_scenario("h100-sxm", "llama-3.1-8b", 8000, 100, 1, 2);
    const PreparedScenario ps(s);
    LoadSpec l = test::point_load(LoadMode::concurrency, 1);
    const OperatingPoint steady = operating_point(ps, l, 0.0, 0.0);
    l.requests = 1;
    const OperatingPoint wave = operating_point(ps, l, 0.0, 0.0);
    REQUIRE(wave.one_wave);
    CHECK(wave.ttft == Approx(steady.ttft).epsilon(0.02));
    CHECK(wave.throughput == Approx(steady.throughput).epsilon(0.02));
}

TEST_CASE("a pipeline's cycle has a token budget per micro-batch: its starts are capped at m chunks, not one",
          "[point][pipeline]") {
    // Llama-3.1-8B, 2,000/200, 500 clients. One H100 starts at most 2,048 / 2,000 = 1.024 requests a step, so it
    // holds about 1.024 × 200 = 205 decoding and the rest wait for the budget. On TP1 PP4 each of the 4
    // micro-batches is scheduled with its own 2,048 tokens, so the cap is 4.096 a cycle and all 500 clients run.
    const LoadSpec l = test::point_load(LoadMode::concurrency, 500);
    const Scenario s1 = test::bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 200, 1, 1);
    const Scenario s4 = test::bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 200, 1, 4);
    const PreparedScenario p1(s1), p4(s4);
    CHECK(detail::cycle_budget(p1.pipe, 2048) == 2048);
    CHECK(detail::cycle_budget(p4.pipe, 2048) == 4 * 2048);
    const OperatingPoint one = operating_point(p1, l, 0.0, 0.0), four = operating_point(p4, l, 0.0, 0.0);
    CHECK(one.prefill_bound);
    CHECK(one.starts_per_step == Approx(2048.0 / 2000.0).epsilon(1e-9));
    CHECK_FALSE(four.prefill_bound);
    CHECK(four.starts_per_step < 4 * 2048.0 / 2000.0);
    CHECK(four.running == Approx(500).epsilon(1e-6));
    CHECK(four.batch > 2 * one.batch);
}

TEST_CASE("requests of one output token have no inter-token latency: the TPOT SLO holds", "[point][seen]") {
    // 2,000/1 tokens on Llama-3.1-70B at TP4 H100s, three clients, SLO TPOT 50 ms: the steps take longer than
    // 50 ms with a 2,000-token chunk in each, but no request waits between two tokens of its own.
    Scenario s = test::bench_scenario("h100-sxm", "llama-3.1-70b", 2000, 1, 4, 1);
    s.policy.slo_tpot = Seconds(0.050);
    const PreparedScenario ps(s);
    const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::concurrency, 3), 0.0, 0.0);
    CHECK(p.itl > 0.050);  // the step, others' chunks in it
    CHECK(p.within_slo_tpot);
    s.mix.entries.front().cls.o_output = 2;  // one gap: bounded again
    const PreparedScenario ps2(s);
    CHECK_FALSE(operating_point(ps2, test::point_load(LoadMode::concurrency, 3), 0.0, 0.0).within_slo_tpot);
}

TEST_CASE("requests of one output token sent at once are one wave of prefill: N clients and 'max' agree", "[point][seen]") {
    // Llama-3.1-8B on one H100, 2,000/1, 3 requests at once. Nothing decodes, so the wave is its prefill alone:
    // 6,000 tokens in steps of K = 2,048, n_p = 6,000/2,048 = 2.93 steps of t_p; the first first token at step
    // max(1, 2,000/2,048) = 1, the rest evenly to n_p: TTFT = t_p + (n_p − 1)·t_p/2, and the run lasts n_p·t_p.
    // Before, 'max' (no wave where nothing decodes) gave one request's 49.8 ms and 3 clients 149 ms.
    const Scenario s = test::bench_scenario("h100-sxm", "llama-3.1-8b", 2000, 1, 1, 1);
    const PreparedScenario ps(s);
    LoadSpec three = test::point_load(LoadMode::concurrency, 3);
    three.requests = 3;
    LoadSpec max = test::point_load(LoadMode::saturate, 0);
    max.requests = 3;
    const OperatingPoint a = operating_point(ps, three, 0.0, 0.0), b = operating_point(ps, max, 0.0, 0.0);
    REQUIRE(a.one_wave);
    REQUIRE(b.one_wave);
    const double steps = 6000.0 / 2048.0, t_p = a.itl;  // the step a request sees: the wave's prefill step
    CHECK(a.ttft == Approx(t_p + 0.5 * (steps - 1.0) * t_p).epsilon(1e-12));
    CHECK(a.throughput == Approx(3.0 / (steps * t_p)).epsilon(1e-12));
    CHECK(b.ttft == Approx(a.ttft).epsilon(1e-12));
    CHECK(b.throughput == Approx(a.throughput).epsilon(1e-12));
    CHECK(a.batch == 0.0);
    // A 2,048-token step, compute-bound: 2,048 × 2 × 8.03 GFLOP at 0.7 of 989.4 TFLOP/s is 47.5 ms, plus the 1.5 ms
    // step overhead and the elementwise traffic: 50.92 ms (docs/model.md, "One wave").
    CHECK(t_p == Approx(0.05092).epsilon(1e-3));
    CHECK(a.step_bare == t_p);  // the step that runs is the prefill's: no decode step runs
}

}  // namespace kvroof
