// SPDX-License-Identifier: MIT
// `kvroof compare`: each row is that scenario's verdict, per GPU, and the best row is the most per GPU.
#include <catch2/catch.hpp>

#include "kvroof/analysis/compare.hpp"
#include "kvroof/io/scenario_builder.hpp"

using namespace kvroof;

TEST_CASE("compare: each row is the scenario's own verdict, divided per GPU, and the best is the most per GPU", "[compare]") {
    std::vector<std::pair<std::string, Scenario>> in;
    for (const char* gpus : {"1", "2", "4"}) {
        io::ScenarioInputs s;
        s.set("hardware", "h200");
        s.set("gpus", gpus);
        in.emplace_back(std::string("gpus=") + gpus, io::build_scenario(s).scenario);
    }
    const auto copy = in;
    const CompareStudy st = compare_study(in);
    REQUIRE(st.rows.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        const CompareRow& r = st.rows[i];
        CHECK(r.label == copy[i].first);
        const Verdict v = make_verdict(copy[i].second);
        CHECK(r.verdict.baseline.conservative.throughput == v.baseline.conservative.throughput);
        CHECK(r.verdict.best_conservative.throughput == v.best_conservative.throughput);
        const double g = copy[i].second.hardware.deployment.gpus;
        CHECK(r.baseline_per_gpu == Approx(v.baseline.conservative.throughput / g));
        CHECK(r.best_per_gpu >= r.baseline_per_gpu);
    }
    for (const CompareRow& r : st.rows) CHECK(r.best_per_gpu <= st.rows[st.best].best_per_gpu);
}

TEST_CASE("compare: a row's per-user tokens/s is 1 / the inter-token time, and its levers are the verdict's", "[compare]") {
    io::ScenarioInputs s;  // the default scenario: HBM capacity binds, a second GPU is the best lever (README)
    const Scenario sc = io::build_scenario(s).scenario;
    const CompareStudy st = compare_study({{"default", sc}});
    REQUIRE(st.rows.size() == 1);
    const CompareRow& r = st.rows[0];
    const ServingPoint& b = r.verdict.baseline.conservative;
    CHECK(r.baseline_per_user == Approx(1.0 / b.tpot_observed));
    CHECK(r.baseline_per_user == Approx(b.throughput / b.batch));  // B sequences share the throughput
    const std::vector<LadderRung> levers = single_levers(sc, r.verdict);
    REQUIRE(r.levers.size() == levers.size());
    REQUIRE_FALSE(r.levers.empty());
    CHECK(r.levers.front().gain == levers.front().gain);
    CHECK(r.levers.front().gain > 1.0);
}

TEST_CASE("compare: a scenario that does not fit serves nothing per GPU or per user", "[compare]") {
    io::ScenarioInputs s;
    s.set("hardware", "h100-sxm");  // llama-3.1-70b's 141 GB of bf16 weights exceed one H100's 80 GB
    const CompareStudy st = compare_study({{"h100", io::build_scenario(s).scenario}});
    REQUIRE(st.rows.size() == 1);
    CHECK(st.rows[0].verdict.kind == VerdictKind::does_not_fit);
    CHECK(st.rows[0].baseline_per_gpu == 0.0);
    CHECK(st.rows[0].baseline_per_user == 0.0);
}
