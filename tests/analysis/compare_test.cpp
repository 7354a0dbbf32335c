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
        const double g = copy[i].second.hardware.gpus;
        CHECK(r.baseline_per_gpu == Approx(v.baseline.conservative.throughput / g));
        CHECK(r.best_per_gpu >= r.baseline_per_gpu);
    }
    for (const CompareRow& r : st.rows) CHECK(r.best_per_gpu <= st.rows[st.best].best_per_gpu);
}
