// SPDX-License-Identifier: MIT
// The sweep behind outputs/sim_vs_closed_form.md: where the closed form is
// exact the two agree, and every gap over 10 % is named.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>

#include "../test_support.hpp"
#include "kvroof/analysis/sim_sweep.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/sim_render.hpp"

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

TEST_CASE("sim sweep: the report's codex rows decode more calls at once when idle sessions park than when they hold", "[sim]") {
    // What the park scenario's description says: parked sessions leave HBM to the running calls.
    const nlohmann::json& sec = io::embedded_config("report").at("sim_vs_closed_form");
    std::map<std::string, SimSweep> by_name;
    for (const auto& s : sec.at("scenarios")) {
        const std::string name = s.at("name").get<std::string>();
        if (name != "llama-3.1-8b-h200-codex-hold" && name != "llama-3.1-8b-h200-codex-park") continue;
        io::ScenarioInputs in;
        for (const auto& [k, v] : s.at("flags").items()) io::set_scenario_flag(in, k, v.get<std::string>(), "test");
        by_name.emplace(name, sim_sweep(io::build_scenario(in).scenario, sweep_of(sec, s)));
    }
    REQUIRE(by_name.size() == 2);
    const SimSweep& hold = by_name.at("llama-3.1-8b-h200-codex-hold");
    const SimSweep& park = by_name.at("llama-3.1-8b-h200-codex-park");
    REQUIRE(hold.rows.size() == park.rows.size());
    const SimResult& h = hold.rows.back();
    const SimResult& p = park.rows.back();  // the most clients: HBM is full in both
    CHECK(h.max_running <= 13);  // 13 peak KVs (68,849 tokens x 128 KiB) fit in the 122.9 GB beside the weights
    CHECK(p.max_running <= 13);
    CHECK(p.batch > 1.5 * h.batch);  // idle holds take about half the places under hold
    CHECK(p.throughput > h.throughput);
    CHECK(p.h2d.transfers > 0);  // every parked call's reload went through the link's queue
    CHECK(h.h2d.transfers == 0);
}

}  // namespace kvroof

namespace kvroof {

TEST_CASE("sim sweep table: a load of one output token shows no ITL, not 0.00 ms", "[sim]") {
    SimResult r;  // 3 clients at 2,000/1: no call makes a second token, so no ITL was measured
    r.spec.load.value = 3;
    r.itl_measured = false;
    r.throughput = 20;
    r.closed.throughput = 20;
    r.closed.itl = 0.05092;
    io::SimSweepPage page{"one token", "2,000/1", "kvroof sim", {}};
    page.sweep.rows = {r};
    page.sweep.facts = sim_sweep_facts(page.sweep.rows);
    const std::string md = io::sim_vs_closed_form_markdown("test", {page});
    CHECK(md.find("| 3 | 20 | 50.92 | 20 | — | — |") != std::string::npos);
    CHECK(md.find("| — | none |") != std::string::npos);  // the ITL gap column, then the mechanism
}

}  // namespace kvroof
