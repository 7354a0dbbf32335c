// SPDX-License-Identifier: MIT
#include "kvroof/analysis/verdict.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"

using namespace kvroof;

TEST_CASE("the optimiser's f is at least as good as every grid point", "[verdict]") {
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("cpus-per-gpu", "4");
        in.set("sparse", "0.1");
        in.set("workload", "s_cached=16000,a_append=2000,o_output=400");
    });
    const PreparedScenario ps(s);
    for (double ov : {0.0, 1.0}) {
        const ServingPoint best = optimise_f(ps, ov);
        for (int i = 0; i <= 40; ++i) CHECK(best.throughput >= evaluate(ps, i / 40.0, ov).throughput);
    }
}

TEST_CASE("the default verdict: weights leave ~2 resident 64k sessions and HBM capacity binds", "[verdict]") {
    const Verdict v = make_verdict(test::default_scenario());
    CHECK(v.baseline.conservative.headline == Resource::hbm_capacity);
    CHECK(v.gain_optimistic >= v.gain_conservative);
    CHECK(v.parking_gain_conservative > 1.0);
    const Scenario sc = test::default_scenario();
    const PreparedScenario ps(sc);
    CHECK(ps.hbm_free_bytes() / (64000.0 * 327680) == Approx(2.05).epsilon(0.01));
}

TEST_CASE("fit_overlap recovers the overlap that produced a throughput", "[verdict][calibration]") {
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("cpus-per-gpu", "1");
        in.set("sparse", "0.1");
    });
    const PreparedScenario ps(s);
    const double f = 0.5;
    const double measured = evaluate(ps, f, 0.3).throughput;
    const auto ov = fit_overlap(ps, f, measured);
    REQUIRE(ov.has_value());
    CHECK(evaluate(ps, f, *ov).throughput == Approx(measured).epsilon(1e-9));
    CHECK_FALSE(fit_overlap(ps, f, evaluate(ps, f, 1.0).throughput * 1.5).has_value());
    CHECK_FALSE(fit_overlap(ps, f, evaluate(ps, f, 0.0).throughput * 0.5).has_value());
}

TEST_CASE("a model that does not fit gives a does-not-fit verdict", "[verdict]") {
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "h100-sxm");
        in.set("model", "llama-3.1-405b");
    });
    CHECK(make_verdict(s).kind == VerdictKind::does_not_fit);
}

TEST_CASE("an SLO tighter than the weight read is infeasible", "[verdict]") {
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) { in.set("slo-tpot", "10ms"); });
    CHECK(make_verdict(s).kind == VerdictKind::infeasible);
}

TEST_CASE("where neither point serves, a gain is no ratio (NaN), not 1", "[verdict]") {
    ServingPoint none, some;
    some.throughput = 5.0;
    CHECK(std::isnan(gain(none, none)));
    CHECK(gain(some, none) == kUnbounded);
    CHECK(gain(none, some) == 0.0);
    CHECK(offload_kind(true, gain(none, none), true, gain(none, none)) == VerdictKind::keep_on_gpu);  // never read as a gain
    // Infeasible (the SLO) and does-not-fit (the weights): every gain of the verdict is NaN, the idle policy's too.
    const Scenario tight = test::scenario_with([](io::ScenarioInputs& in) { in.set("slo-tpot", "1ms"); });
    const Scenario big = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "h100-sxm");
        in.set("model", "llama-3.1-405b");
    });
    for (const Scenario& sc : {tight, big}) {
        const Verdict v = make_verdict(sc);
        CHECK((v.kind == VerdictKind::infeasible || v.kind == VerdictKind::does_not_fit));
        CHECK(std::isnan(v.gain_bankable));
        CHECK(std::isnan(v.gain_pipelined));
        CHECK(std::isnan(v.gain_conservative));
        CHECK(std::isnan(v.gain_optimistic));
        CHECK(std::isnan(v.parking_gain_conservative));
    }
}

TEST_CASE("a fixed f is evaluated, not optimised", "[verdict]") {
    VerdictOptions o;
    o.fixed_f = 0.25;
    const Verdict v = make_verdict(test::default_scenario(), o);
    CHECK(v.f == 0.25);
    CHECK(v.f_fixed);
    CHECK(v.at_f.conservative.f == 0.25);
}

TEST_CASE("the optimiser at both band ends at once equals two single searches", "[verdict]") {
    for (const char* mix : {"long:0.5,mid:0.3,short:0.2", "long:1"}) {
        io::ScenarioInputs in;
        in.set("mix", mix);
        in.set("sparse", "0.1");
        in.set("cpus-per-gpu", "1");
        const Scenario s = io::build_scenario(in).scenario;
        const PreparedScenario ps(s);
        const auto both = optimise_f_band(ps);
        for (int end = 0; end < 2; ++end) {
            const ServingPoint one = optimise_f(ps, end == 0 ? 0.0 : 1.0);
            CHECK(both[static_cast<size_t>(end)].f == one.f);
            CHECK(both[static_cast<size_t>(end)].throughput == one.throughput);
        }
    }
}

TEST_CASE("throughput alone equals the full evaluation's", "[serving]") {
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("cpus-per-gpu", "4");
        in.set("sparse", "0.1");
        in.set("slo-tpot", "50ms");
    });
    const PreparedScenario ps(s);
    for (int i = 0; i <= 20; ++i) {
        const double f = i / 20.0;
        const MixDemand md = mix_demand(ps, f);
        for (double ov : {0.0, 0.5, 1.0}) CHECK(throughput(ps, md, ov) == Approx(evaluate(ps, md, ov).throughput).epsilon(1e-12));
    }
}

TEST_CASE("the verdict's classes: a gain under the stated uncertainty is MARGINAL, each end judged at its own f", "[verdict]") {
    const double clear = 1 + kGainUncertainty;
    Verdict v;
    v.baseline.conservative.feasible = true;
    v.best_conservative.f = 0.5;
    v.best_optimistic.f = 0.6;
    const ServingPoint& base = v.baseline.conservative;
    auto kind = [&](double bankable, double pipelined) {
        v.gain_bankable = bankable;
        v.gain_pipelined = pipelined;
        return classify(v, base);
    };
    CHECK(kind(clear, clear) == VerdictKind::offload);  // the line itself is clear
    CHECK(kind(2.0, 1.0) == VerdictKind::offload);
    CHECK(kind(1.0, clear) == VerdictKind::offload_with_overlap);
    CHECK(kind(1.0, clear - 1e-9) == VerdictKind::marginal);
    CHECK(kind(1.05, 0.9) == VerdictKind::marginal);
    CHECK(kind(1.0, 1.0) == VerdictKind::keep_on_gpu);
    CHECK(kind(0.8, 0.95) == VerdictKind::keep_on_gpu);
    v.best_conservative.f = 0;  // a gain at f = 0 is no offload gain
    v.best_optimistic.f = 0;
    CHECK(kind(1.5, 1.5) == VerdictKind::keep_on_gpu);
}

TEST_CASE("the bankable and pipelined gains are each end's own best over f = 0", "[verdict]") {
    const Verdict v = make_verdict(test::default_scenario());
    CHECK(v.gain_bankable == Approx(v.best_conservative.throughput / v.baseline.conservative.throughput));
    CHECK(v.gain_pipelined == Approx(v.best_optimistic.throughput / v.baseline.optimistic.throughput));
    // The default: nothing bankable (f*_con = 0), the pipelined end gains more than the uncertainty at its own f.
    CHECK(v.best_conservative.f == 0);
    CHECK(v.gain_bankable == 1.0);
    CHECK(v.best_optimistic.f > 0.1);
    CHECK(v.gain_pipelined > 1 + kGainUncertainty);
    CHECK(v.kind == VerdictKind::offload_with_overlap);
    CHECK(v.f == v.best_optimistic.f);
}

TEST_CASE("a verdict without the parking comparison or the checks changes nothing else", "[verdict]") {
    // The sweep's verdict (one per row): every field a row reads equals the full verdict's, bit for bit.
    for (const IdlePolicy idle : {IdlePolicy::hold, IdlePolicy::park}) {
        Scenario s = test::scenario_with([](io::ScenarioInputs& in) { in.set("cpus-per-gpu", "2"); });
        s.policy.idle = idle;
        VerdictOptions lean;
        lean.parking = false;
        lean.checked = true;
        const Verdict full = make_verdict(s), v = make_verdict(s, lean);
        CHECK(v.kind == full.kind);
        CHECK(v.f == full.f);
        for (const auto& [a, b] : {std::pair{&v.baseline, &full.baseline}, {&v.at_f, &full.at_f}}) {
            for (const auto& [x, y] : {std::pair{&a->conservative, &b->conservative}, {&a->optimistic, &b->optimistic}}) {
                CHECK(x->throughput == y->throughput);
                CHECK(x->batch == y->batch);
                CHECK(x->tpot == y->tpot);
                CHECK(x->ttft == y->ttft);
                CHECK(x->headline == y->headline);
                CHECK(x->feasible == y->feasible);
            }
        }
        CHECK(v.best_conservative.f == full.best_conservative.f);
        CHECK(v.best_optimistic.f == full.best_optimistic.f);
        CHECK(v.best_conservative.throughput == full.best_conservative.throughput);
        CHECK(v.best_optimistic.throughput == full.best_optimistic.throughput);
        CHECK(v.gain_bankable == full.gain_bankable);
        CHECK(v.gain_pipelined == full.gain_pipelined);
        CHECK(v.gain_conservative == full.gain_conservative);
        CHECK(v.gain_optimistic == full.gain_optimistic);
        // What was skipped is left at its defaults, not half computed.
        CHECK(v.parked_baseline.conservative.throughput == 0);
        CHECK(v.parking_gain_conservative == 1);
        CHECK(full.parked_baseline.conservative.throughput > 0);
    }
    // Without `checked`, a bad scenario is refused as before.
    Scenario bad = test::default_scenario();
    bad.policy.sparse = 2;
    CHECK_THROWS_AS(make_verdict(bad), InputError);
}
