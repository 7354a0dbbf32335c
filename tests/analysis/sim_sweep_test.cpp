// SPDX-License-Identifier: MIT
// The sweep behind outputs/sim_vs_closed_form.md: where the closed form is
// exact the two agree, and every gap over 10 % is named.
#include <catch2/catch.hpp>
#include <cmath>

#include "../test_support.hpp"
#include "kvroof/analysis/sim_sweep.hpp"
#include "kvroof/io/presets.hpp"

namespace kvroof {
namespace {

SimSweepSpec sweep_of(const nlohmann::json& sec, const nlohmann::json& s) {
    SimSweepSpec spec;
    spec.calls = s.value("calls", sec.at("calls").get<double>());  // a scenario may give its own
    spec.seed = sec.at("seed").get<std::uint64_t>();
    for (const GapDist d : {GapDist::exponential, GapDist::deterministic, GapDist::lognormal})
        if (s.at("gap_dist").get<std::string>() == name(d)) spec.gaps = d;
    spec.mode = s.contains("request_rate") ? LoadMode::request_rate : LoadMode::concurrency;
    spec.loads = s.at(spec.mode == LoadMode::request_rate ? "request_rate" : "concurrency").get<std::vector<double>>();
    return spec;
}

}  // namespace

TEST_CASE("sim sweep: C = O clients, no idle gap, deterministic: within 2 percent of the closed form", "[sim]") {
    // ISL 2,048 = the chunk, OSL 256: one start per step at C = 256, so every step is the fluid mean.
    io::ScenarioInputs in;
    in.set("hardware", "h200");
    in.set("model", "llama-3.1-8b");
    in.set("workload", "s_cached=0,a_append=2048,o_output=256,idle_gap=0");
    SimSweepSpec spec;
    spec.loads = {256};
    spec.gaps = GapDist::deterministic;
    spec.calls = 2000;
    const SimSweep s = sim_sweep(io::build_scenario(in).scenario, spec);
    REQUIRE(s.rows.size() == 1);
    const SimResult& r = s.rows.front();
    REQUIRE(r.feasible);
    CHECK(std::abs(r.gap_throughput) < 0.02);
    CHECK(std::abs(r.gap_itl) < 0.02);
    CHECK(r.mechanism == SimGap::none);
    CHECK(s.facts.agree == 1);
}

TEST_CASE("sim sweep: every row of the report's sweeps names its gap when it is over 10 percent", "[sim]") {
    const nlohmann::json& sec = io::embedded_config("report").at("sim_vs_closed_form");
    for (const auto& s : sec.at("scenarios")) {
        io::ScenarioInputs in;
        for (const auto& [k, v] : s.at("flags").items()) io::set_scenario_flag(in, k, v.get<std::string>(), "test");
        const SimSweep sw = sim_sweep(io::build_scenario(in).scenario, sweep_of(sec, s));
        int agree = 0;
        for (const SimResult& r : sw.rows) {
            INFO(s.at("name").get<std::string>() << " load " << r.spec.load.value);
            REQUIRE(r.feasible);
            const bool apart = std::abs(r.gap_throughput) > 0.1 || std::abs(r.gap_itl) > 0.1;
            CHECK(apart == (r.mechanism != SimGap::none));
            CHECK(r.mechanism != SimGap::unexplained);
            agree += apart ? 0 : 1;
        }
        CHECK(sw.facts.agree == agree);
    }
}

}  // namespace kvroof
