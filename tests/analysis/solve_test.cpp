// SPDX-License-Identifier: MIT
// Break-even answers (analysis/solve.hpp): each answer checked by hand or
// against the verdict on either side of it.
#include "kvroof/analysis/solve.hpp"

#include <catch2/catch.hpp>

#include "../test_support.hpp"

using namespace kvroof;

namespace {
SolveSpec spec(const char* knob, SolveTarget t, double value, double lo, double hi) {
    SolveSpec s;
    s.knob = knob;
    s.target = t;
    s.value = value;
    s.lo = lo;
    s.hi = hi;
    return s;
}
Scenario with_value(const Scenario& base, const char* knob, double x) {
    Scenario sc = base;
    find_knob(knob)->access.apply(sc, KnobValue(x));
    return sc;
}
}  // namespace

TEST_CASE("the HBM that fits Llama-3.1-405B and one codex session is weights + reserve + that session's KV at its longest",
          "[solve]") {
    const Scenario base = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "h100-sxm");
        in.set("model", "llama-3.1-405b");
    });
    const SolveResult r = solve(base, spec("hbm-cap", SolveTarget::fits, 0, 10e9, 5e12));
    REQUIRE(r.outcome == SolveOutcome::at_least);
    const ScenarioFacts& f = r.at_answer.facts;
    // The session at its longest, S + O = 68,329 + 520 tokens (full attention: KV proportional to its tokens).
    const CallClass& c = base.mix.entries.front().cls;
    const double peak = f.session_kv_max.raw() * (c.context() + c.o_output) / c.context();
    const double by_hand = f.weights.raw() + base.hardware.gpu.hbm_reserve.raw() + peak;
    CHECK(r.answer == Approx(by_hand).epsilon(1e-5));
    CHECK(r.metric_at_answer == 1.0);
    CHECK(r.at_answer.verdict.kind != VerdictKind::does_not_fit);
    const Scenario below = with_value(base, "hbm-cap", r.answer * (1 - 1e-5));
    CHECK_FALSE(PreparedScenario(below).session_fits_hbm_peak(0.0));
}

TEST_CASE("a bankable-gain target: met at the answer, missed just below it, and the gain rises with CPUs per GPU", "[solve]") {
    const Scenario base = test::default_scenario();
    const SolveResult r = solve(base, spec("cpus-per-gpu", SolveTarget::gain_bankable, 1.2, 0.01, 32));
    REQUIRE(r.outcome == SolveOutcome::at_least);
    CHECK(r.crossings == 1);
    const Verdict at = make_verdict(with_value(base, "cpus-per-gpu", r.answer));
    const Verdict below = make_verdict(with_value(base, "cpus-per-gpu", r.answer * (1 - 1e-5)));
    CHECK(at.gain_bankable >= 1.2);
    CHECK(at.best_conservative.f > 0);
    CHECK(below.gain_bankable < 1.2);
    CHECK(r.answer > base.hardware.host.cpus_per_gpu);  // the machine's half Grace does not bank 1.2x (the default's verdict)
}

TEST_CASE("a whole knob answers in whole numbers: the GPUs for a throughput, and one fewer misses it", "[solve]") {
    const Scenario base = test::default_scenario();
    const SolveResult r = solve(base, spec("gpus", SolveTarget::throughput, 1000, 1, 64));
    REQUIRE(r.outcome == SolveOutcome::at_least);
    CHECK(r.whole);
    CHECK(r.answer == std::round(r.answer));
    CHECK(r.beyond == r.answer - 1);
    CHECK(r.metric_at_answer >= 1000);
    CHECK(r.metric_beyond < 1000);
}

TEST_CASE("the longest context that fits is an upper bound: the session fits there and not one token beyond", "[solve]") {
    const Scenario base =
        test::scenario_with([](io::ScenarioInputs& in) { in.set("workload", "s_cached=60000,a_append=2000,o_output=400"); });
    const SolveResult r = solve(base, spec("context", SolveTarget::fits, 0, 2000, 4e6));
    REQUIRE(r.outcome == SolveOutcome::at_most);
    // A context is whole tokens: the answer fits and the next token does not (it was a real number, 130,905.82, shown
    // rounded up to 130,906, which does not fit).
    CHECK(r.whole);
    CHECK(r.answer == std::round(r.answer));
    CHECK(r.beyond == r.answer + 1);
    CHECK(r.metric_at_answer == 1.0);
    CHECK(r.metric_beyond == 0.0);
    // By hand: the HBM left for KV over the KV of one token is the most tokens one session may hold at its longest (S + O).
    const ScenarioFacts& f = r.at_answer.facts;
    const double tokens = f.hbm_free.raw() / (f.session_kv_max.raw() / r.answer);  // its KV held at S = the answer
    CHECK(r.answer + 400 == std::floor(tokens));
}

TEST_CASE("a throughput target counts every replica: --dp N serves N times one replica", "[solve]") {
    // It counted one replica's: `--solve dp --target tps=100` found no dp up to 64 where compare and sweep serve 116 tok/s at 3.
    const Scenario base = test::default_scenario();
    const Verdict one = make_verdict(base);
    const double per_replica = std::max(one.baseline.conservative.throughput, one.best_conservative.throughput);
    const double target = 2.5 * per_replica;
    const SolveResult r = solve(base, spec("dp", SolveTarget::throughput, target, 1, 64));
    REQUIRE(r.outcome == SolveOutcome::at_least);
    CHECK(r.answer == 3);
    CHECK(r.metric_at_answer == Approx(3 * per_replica).epsilon(1e-12));
    CHECK(r.metric_beyond == Approx(2 * per_replica).epsilon(1e-12));
}

TEST_CASE("every value or no value: the answer says so, and a bad request names what is wrong", "[solve]") {
    const Scenario base = test::default_scenario();
    const SolveResult every = solve(base, spec("hbm-bw", SolveTarget::throughput, 1e-3, 5e12, 2e13));
    CHECK(every.outcome == SolveOutcome::every_value);
    const SolveResult none = solve(base, spec("hbm-bw", SolveTarget::throughput, 1e12, 1e12, 2e13));
    CHECK(none.outcome == SolveOutcome::no_value);
    CHECK(none.metric_hi < 1e12);
    CHECK_THROWS_AS(solve(base, spec("hardware", SolveTarget::fits, 0, 1, 2)), InputError);
    CHECK_THROWS_AS(solve(base, spec("cpus-per-gpu", SolveTarget::fits, 0, 2, 1)), InputError);
}

TEST_CASE("a window narrower than the scan's step is found where the verdict changes between two scan points", "[solve]") {
    // The default scenario (GB200, Llama-3.1-70B BF16, codex): at 142.6 GB of HBM the weights and reserve leave no
    // session, at 170.3 GB the KV stays on the GPU; in between, from 143.1 to 165.5 GB, f = 0 holds no session and
    // offloading serves it (an unbounded gain). The 48-point scan steps over the window; it used to answer "no value".
    const Scenario base = test::scenario_with([](io::ScenarioInputs&) {});
    const double hbm = base.hardware.gpu.hbm_capacity.raw();
    const SolveResult r = solve(base, spec("hbm-cap", SolveTarget::gain_bankable, 1.1, hbm / 64, hbm * 64));
    REQUIRE(r.outcome == SolveOutcome::at_least);
    CHECK(r.crossings == 2);
    CHECK(r.answer > 143e9);
    CHECK(r.answer < 143.2e9);
    // Met at the answer, missed just below it (nothing fits there).
    CHECK(detail::solve_metric(r.spec, make_verdict(with_value(base, "hbm-cap", r.answer)),
                               with_value(base, "hbm-cap", r.answer)) >= 1.1);
    const Scenario below = with_value(base, "hbm-cap", r.beyond);
    CHECK(detail::solve_metric(r.spec, make_verdict(below), below) < 1.1);
}
