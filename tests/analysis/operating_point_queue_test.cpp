// SPDX-License-Identifier: MIT
// Operating points where requests queue: an open loop beyond what memory holds
// saturates, and a request waiting for the chunk budget holds no KV.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/operating_point.hpp"

namespace kvroof {
namespace {

// Llama-3.1-8B on one H200, one class of isl input and osl output tokens.
Scenario h200_8b(double isl, double osl, double prefix = 0) {
    io::ScenarioInputs in;
    in.set("hardware", "h200");
    in.set("model", "llama-3.1-8b");
    Scenario s = io::build_scenario(in).scenario;
    CallClass c;
    c.name = "bench";
    c.s_cached = prefix;
    c.a_append = isl - prefix;
    c.o_output = osl;
    s.mix = Mix{{MixEntry{c, 1.0}}};
    return s;
}

}  // namespace

TEST_CASE("an open loop whose steady state does not fit in memory saturates at the memory-full point", "[point]") {
    // 2,000/500 tokens: memory fills at about 10.5 req/s, while the 2,048-token chunk budget would start
    // requests up to about 10.6 req/s. Between the two the engine admits only what fits and the rest queue.
    const Scenario s = h200_8b(2000, 500);
    const PreparedScenario ps(s);
    const OperatingPoint full = operating_point(ps, test::point_load(LoadMode::saturate, 0), 0.0, 0.0);
    REQUIRE(full.fits);
    const double r_mem = full.requests_per_s;
    CHECK(r_mem == Approx(10.5).margin(0.1));
    const OperatingPoint under = operating_point(ps, test::point_load(LoadMode::request_rate, 0.95 * r_mem), 0.0, 0.0);
    CHECK_FALSE(under.saturated);
    CHECK(under.fits);
    CHECK(under.requests_per_s == Approx(0.95 * r_mem));
    const OperatingPoint over = operating_point(ps, test::point_load(LoadMode::request_rate, 1.001 * r_mem), 0.0, 0.0);
    CHECK(over.saturated);  // not a point that holds more KV than HBM, which offload would then seem to fix
    CHECK(over.fits);
    CHECK(over.hbm_used <= over.hbm_capacity);
    // The memory-full point is a closed loop: a request's own prefill (1/C of the chunk stream) is not in its
    // steps, while every arrival of an open loop is someone else's. They part by 0.2 %.
    CHECK(over.throughput == Approx(full.throughput).epsilon(0.005));
    CHECK(over.throughput >= under.throughput);
    // At f = 0.01 too, the open loop is no faster than that f's memory-full point.
    const OperatingPoint over_f = operating_point(ps, test::point_load(LoadMode::request_rate, 1.001 * r_mem), 0.01, 0.0);
    const OperatingPoint full_f = operating_point(ps, test::point_load(LoadMode::saturate, 0), 0.01, 0.0);
    CHECK(over_f.throughput <= full_f.throughput * (1 + 1e-6));  // two searches' tolerances apart
}

TEST_CASE("a request waiting for the chunk budget holds no KV for its new tokens", "[point]") {
    // 8,000-token prompts: the 2,048-token chunk budget starts about one request every four steps, so beyond
    // some 52 running clients every further client waits in the queue. Waiting, it holds no KV: the memory
    // used and the requests running are the same at 60, 100 and 200 clients.
    const Scenario s = h200_8b(8000, 200);
    const PreparedScenario ps(s);
    const OperatingPoint c60 = operating_point(ps, test::point_load(LoadMode::concurrency, 60), 0.0, 0.0);
    REQUIRE(c60.prefill_bound);
    CHECK(c60.running == Approx(52.31).margin(0.01));
    for (const double c : {100.0, 200.0}) {
        const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::concurrency, c), 0.0, 0.0);
        CHECK(p.prefill_bound);
        CHECK_FALSE(p.memory_queued);  // memory is half empty: no request waits for it
        CHECK(p.running == Approx(c60.running));
        CHECK(p.hbm_used == Approx(c60.hbm_used));
        CHECK(p.kv_tokens == Approx(c60.kv_tokens));
        CHECK(p.throughput == Approx(c60.throughput));
        CHECK(p.ttft > c60.ttft);  // the extra clients only wait
    }
}

TEST_CASE("a queued request holds its cached prefix, none of its new tokens", "[point]") {
    // 16,000-token prompts of which 8,000 are cached: past the chunk budget (about 26 running) every further
    // client waits holding its 8,000 cached tokens, so 20 more clients hold 160,000 more tokens, 21.0 GB at
    // 131,072 B a token, and nothing else changes.
    const Scenario s = h200_8b(16000, 100, 8000);
    const PreparedScenario ps(s);
    const OperatingPoint c40 = operating_point(ps, test::point_load(LoadMode::concurrency, 40), 0.0, 0.0);
    const OperatingPoint c60 = operating_point(ps, test::point_load(LoadMode::concurrency, 60), 0.0, 0.0);
    REQUIRE(c40.prefill_bound);
    REQUIRE(c60.prefill_bound);
    CHECK_FALSE(c60.memory_queued);
    CHECK(c60.running == Approx(c40.running));
    CHECK(c60.throughput == Approx(c40.throughput));
    CHECK(c60.kv_tokens - c40.kv_tokens == Approx(20 * 8000.0).epsilon(1e-6));
    CHECK(c60.hbm_used - c40.hbm_used == Approx(20 * 8000.0 * 131072).epsilon(1e-6));
}

TEST_CASE("an open loop with idle sessions held serves its most past memory: throughput never falls as the rate rises",
          "[point]") {
    // The default scenario: codex calls with idle gaps, sessions held in HBM between them. A closed loop charges
    // those idle sessions' KV, an open loop does not, so past memory the open loop's own most is the point.
    const Scenario s = test::default_scenario();
    const PreparedScenario ps(s);
    double last = 0;
    int saturated = 0;
    for (int i = 0; i <= 50; ++i) {
        const double rate = 0.05 + 0.005 * i;
        const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::request_rate, rate), 0.0, 0.0);
        INFO("rate " << rate);
        CHECK(p.fits);
        CHECK(p.throughput >= last * (1 - 1e-9));
        if (p.saturated) {
            ++saturated;
            CHECK(p.requests_per_s < rate);
        }
        last = p.throughput;
    }
    CHECK(saturated > 0);
}

TEST_CASE("a run of N that does not all run at once: each request waits its share of the backlog", "[point]") {
    // 5,000 requests of 2,000/500 on one H200: about 250 run at once. Sent at once, request k is admitted when
    // the (k − n)-th completes: the mean wait is (N − n)²/(2·N·μ), whether asked as --concurrency max, as many
    // clients as requests, or an unbounded rate. It was 0 for the first two and the steady closed loop's
    // (N − n)/μ, every request behind all the others, for the third.
    const Scenario s = h200_8b(2000, 500);
    const PreparedScenario ps(s);
    const double N = 5000;
    auto run = [&](LoadMode m, double v) {
        LoadSpec l = test::point_load(m, v);
        l.requests = N;
        return operating_point(ps, l, 0.0, 0.0);
    };
    const OperatingPoint full = operating_point(ps, test::point_load(LoadMode::saturate, 0), 0.0, 0.0);
    const double n = full.running, mu = full.requests_per_s;
    REQUIRE(n < 0.1 * N);
    const double wait = (N - n) * (N - n) / (2 * N * mu);
    const OperatingPoint at_once = run(LoadMode::saturate, 0), clients = run(LoadMode::concurrency, N);
    CHECK(at_once.ttft == Approx(full.ttft + wait).epsilon(1e-9));
    CHECK(clients.ttft == Approx(at_once.ttft).epsilon(1e-9));
    CHECK(run(LoadMode::request_rate, 1e9).ttft == Approx(at_once.ttft).epsilon(1e-3));  // the arrivals take 5 µs
    // One client fewer than requests is almost the same run (the closed loop's formula at C = N − 1).
    CHECK(run(LoadMode::concurrency, N - 1).ttft == Approx(at_once.ttft).epsilon(1e-3));
    // Many requests per client: the steady closed loop's queue, (C − n)/μ, the first C's ramp aside.
    LoadSpec many = test::point_load(LoadMode::concurrency, 1000);
    const OperatingPoint steady = operating_point(ps, many, 0.0, 0.0);
    many.requests = 1e6;
    CHECK(operating_point(ps, many, 0.0, 0.0).ttft == Approx(steady.ttft).epsilon(1e-3));
    // A throughput over the run is the memory-full one's: the N requests finish (N − n)/μ + e2e after the start.
    CHECK(at_once.throughput == Approx(full.throughput).epsilon(1e-9));
}

TEST_CASE("a run of one request is that request alone, whatever the rate", "[point]") {
    // Llama-3.1-8B on one H200, 2,000/500: at 1,000 req/s the open loop's steady ITL shares its steps with others
    // that a run of one does not have (7.06 ms against 6.88 ms alone on an H100).
    const Scenario s = h200_8b(2000, 500);
    const PreparedScenario ps(s);
    for (const PrefillMode mode : {PrefillMode::chunked, PrefillMode::separate}) {
        LoadSpec one = test::point_load(LoadMode::concurrency, 1, mode);
        one.requests = 1;
        const OperatingPoint alone = operating_point(ps, one, 0.0, 0.0);
        CHECK(alone.ttft < 0.2);  // its own prefill; with separate prefill it once waited 1/(2·rate) for nothing
        for (const double rate : {0.001, 0.2, 1000.0}) {
            LoadSpec l = test::point_load(LoadMode::request_rate, rate, mode);
            l.requests = 1;
            const OperatingPoint p = operating_point(ps, l, 0.0, 0.0);
            CAPTURE(rate, name(mode));
            CHECK_FALSE(p.saturated);
            CHECK(p.itl == alone.itl);
            CHECK(p.ttft == alone.ttft);
            CHECK(p.throughput == alone.throughput);
        }
    }
}

TEST_CASE("a run held back by the chunk budget waits its share of the backlog too", "[point]") {
    // 1,000 requests of 8,000/100 tokens: the 2,048-token budget starts about a quarter of a request a step, so
    // most wait for it. As many clients as requests is the run sent at once; fewer clients wait less. The closed
    // loop's steady queue, every client behind all the others, gave 226.8 s at 1,000 clients beside max's 110.7 s.
    const Scenario s = h200_8b(8000, 100);
    const PreparedScenario ps(s);
    auto run = [&](LoadMode m, double c) {
        LoadSpec l = test::point_load(m, c);
        l.requests = 1000;
        return operating_point(ps, l, 0.0, 0.0);
    };
    const OperatingPoint all = run(LoadMode::concurrency, 1000), max = run(LoadMode::saturate, 0);
    const OperatingPoint half = run(LoadMode::concurrency, 500);
    REQUIRE(half.prefill_bound);
    CHECK(all.ttft == Approx(max.ttft).epsilon(0.01));
    CHECK(half.ttft < all.ttft);
    CHECK(run(LoadMode::concurrency, 999).ttft == Approx(all.ttft).epsilon(0.01));
}

TEST_CASE("a run's backlog counts idle clients as held, not queued: one client more adds one client's wait", "[point]") {
    // 2,000/500 tokens with 10 s idle gaps: about 201 clients fit, most of them idle between calls. The idle ones
    // were counted as queued, so the 202nd client took TTFT from 78.6 ms to 9.8 s.
    Scenario s = h200_8b(2000, 500);
    s.mix.entries[0].cls.idle_gap = Seconds(10.0);
    const PreparedScenario ps(s);
    LoadSpec l = test::point_load(LoadMode::concurrency, 1);
    l.requests = 5000;
    const OperatingPoint full = operating_point(ps, test::point_load(LoadMode::saturate, 0), 0.0, 0.0);
    const double n = full.concurrency;  // the clients the memory-full point holds, idle ones too
    REQUIRE(full.running < 0.8 * n);
    l.value = std::floor(n);
    const OperatingPoint below = operating_point(ps, l, 0.0, 0.0);
    l.value = std::floor(n) + 2;
    const OperatingPoint above = operating_point(ps, l, 0.0, 0.0);
    CHECK(above.ttft - below.ttft < 1.0);  // two clients' share of a 5,000-request run, not every idle client's
    // Many requests per client: the steady closed loop's queue, idle clients and all.
    LoadSpec many = test::point_load(LoadMode::concurrency, 1000);
    const OperatingPoint steady = operating_point(ps, many, 0.0, 0.0);
    many.requests = 1e6;
    CHECK(operating_point(ps, many, 0.0, 0.0).ttft == Approx(steady.ttft).epsilon(1e-3));
    // A run that all fits waits for nothing, even where no wave applies (separate prefill).
    LoadSpec sep = test::point_load(LoadMode::concurrency, 10, PrefillMode::separate);
    sep.requests = 10;
    const OperatingPoint ten = operating_point(ps, sep, 0.0, 0.0);
    CHECK(ten.queue_wait == 0);
    CHECK(ten.ttft < 1.0);
}

TEST_CASE("clients that fill the chunk budget with none queued hold exactly their number (Little's law)", "[point]") {
    // 2,048-token prompts of 2 output tokens on one H200: the budget starts one request a step. Two clients
    // sharing only each other's starts leave it short of full; sharing every start's they would hold 2.43
    // (the defect: 2.4 running of 2 clients, TTFT 71.6 ms). Between, they run it full with none queued.
    // Four clients of four output tokens likewise (the defect: 4.49 running).
    for (const double C : {2.0, 4.0}) {
        const Scenario s = h200_8b(2048, C);
        const PreparedScenario ps(s);
        const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::concurrency, C), 0.0, 0.0);
        CAPTURE(C);
        CHECK(p.prefill_bound);
        CHECK(p.queue_wait == 0.0);
        CHECK(p.running == Approx(C).epsilon(1e-9));
        CHECK(p.requests_per_s * p.e2e == Approx(C).epsilon(1e-9));
    }
    // A client more queues: the budget's rate stays, and its wait is in TTFT.
    const Scenario s = h200_8b(2048, 2);
    const PreparedScenario ps(s);
    const OperatingPoint two = operating_point(ps, test::point_load(LoadMode::concurrency, 2), 0.0, 0.0);
    const OperatingPoint three = operating_point(ps, test::point_load(LoadMode::concurrency, 3), 0.0, 0.0);
    CHECK(three.queue_wait > 0);
    CHECK(three.requests_per_s == Approx(two.requests_per_s).epsilon(1e-9));
    CHECK(three.ttft > two.ttft);
    CHECK(three.requests_per_s * three.e2e == Approx(3.0).epsilon(1e-9));
}

TEST_CASE("a finite open-loop run serves no less on a faster GPU where it leaves its wave", "[point][run]") {
    // Llama-3.1-70B on two GB200s, 100 requests of 4,000/200 at 1 req/s. Below about 440 TFLOPS the prefill of
    // all 100 outlasts their arrivals and the run is one wave; above it the run is its steady state and a drain.
    // That drain was the steady e2e, which charges the prefill interleaved while requests still arrive: at 450
    // TFLOPS the run served 108.5 tok/s against the wave's 171.9 at 400. It is now the last request's TTFT and
    // bare decode steps (no prefill is left by then): 188.3. Where the two models meet, at 441.1 TFLOPS, the
    // steady run's drain (the last request's TTFT, and bare steps at the steady batch) is 1.15 % longer than the
    // wave's decode: the one step down left, checked on a grid of 0.05 TFLOPS there.
    io::ScenarioInputs in;
    in.set("hardware", "gb200");
    in.set("gpus", "2");
    in.set("model", "llama-3.1-70b");
    LoadSpec load = test::point_load(LoadMode::request_rate, 1);
    load.requests = 100;
    double last = 0;
    bool waves = false, steady = false;
    std::vector<double> grid;
    for (double t = 400; t <= 460; t += 2) grid.push_back(t);
    for (double t = 440; t <= 442; t += 0.05) grid.push_back(t);
    std::sort(grid.begin(), grid.end());
    for (const double tflops : grid) {
        in.set("gpu-flops", fmt::format("{}TFLOPS", tflops));
        Scenario s = io::build_scenario(in).scenario;
        s.mix = h200_8b(4000, 200).mix;
        const OperatingPoint p = operating_point(PreparedScenario(s), load, 0.0, 0.0);
        CAPTURE(tflops);
        CHECK(p.throughput >= 0.988 * last);
        (p.one_wave ? waves : steady) = true;
        last = p.throughput;
    }
    CHECK(waves);
    CHECK(steady);
    CHECK(last > 180.0);
}

}  // namespace kvroof
