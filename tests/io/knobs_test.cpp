// SPDX-License-Identifier: MIT
#include "kvroof/spec/knobs.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "kvroof/analysis/verdict.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/io/sweep.hpp"

using namespace kvroof;
using namespace kvroof::io;

namespace {
Scenario default_scenario() { return build_scenario(ScenarioInputs{}).scenario; }
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
// The unit as a column or JSON key spells it: "GB/s" -> "GBps".
std::string key_unit(std::string_view bare) {
    std::string s(bare);
    if (const auto slash = s.find("/s"); slash != std::string::npos) s.replace(slash, 2, "ps");
    return s;
}
}  // namespace

TEST_CASE("every knob has one name, one column and one preset key", "[knobs]") {
    std::set<std::string> names, columns, keys;
    for (const Knob& k : knobs()) {
        INFO(k.name);
        CHECK(names.insert(std::string(k.name)).second);
        CHECK(columns.insert(std::string(k.column)).second);
        if (!k.preset_key.empty()) CHECK(keys.insert(std::string(k.preset_key)).second);
        CHECK(!k.help.empty());
        CHECK((k.type == KnobType::text) == (k.decode != nullptr));
        CHECK((k.grid_only || k.access.apply != nullptr));
        CHECK(find_knob(k.name) == &k);
    }
}

TEST_CASE("a knob's bare number, column and preset key share one unit", "[knobs]") {
    for (const Knob& k : knobs()) {
        if (k.type != KnobType::quantity) continue;
        INFO(k.name);
        const double bare = std::get<double>(decode_knob(k, k.flag(), "3"));
        const double with_unit = std::get<double>(decode_knob(k, k.flag(), "3" + std::string(k.bare)));
        CHECK(bare == with_unit);
        const std::string unit = key_unit(k.bare);
        CHECK(std::string(k.column).substr(k.column.size() - unit.size()) == unit);
        if (!k.preset_key.empty()) CHECK(std::string(k.preset_key).substr(k.preset_key.size() - unit.size()) == unit);
        CHECK(parse_grid_entry(std::string(k.name) + "=3").number(0) == Approx(3));  // the column reads in the bare unit
    }
}

TEST_CASE("applying a numeric knob through the table changes exactly its field", "[knobs]") {
    const Scenario base = default_scenario();
    for (const Knob& k : knobs()) {
        if (k.grid_only || !k.numeric() || !k.access.get) continue;
        if (k.name == "ep") continue;  // a divisor of gpus on a MoE model: its own test below
        if (k.name == "attention-dp") continue;  // 1 only on an MLA model: tests/analysis/attention_dp_test.cpp
        INFO(k.name);
        const double now = k.access.get(base);
        double v = std::isnan(now) ? 1.0 : now * 2;
        if (v > k.hi) v = now / 2;
        Scenario s = base;
        k.access.apply(s, v);
        CHECK(k.access.get(s) == Approx(v));
        // tp is the explicit name of gpus: the two read and set one field.
        const auto alias = [&](const Knob& o) {
            return (k.name == "tp" && o.name == "gpus") || (k.name == "gpus" && o.name == "tp");
        };
        for (const Knob& other : knobs())
            if (&other != &k && other.access.get && !alias(other)) CHECK(same(other.access.get(s), other.access.get(base)));
        // The same value given as text builds the same field, and the builder records the flag.
        ScenarioInputs in;
        in.set(k, check::show(k.type == KnobType::quantity ? v / std::get<double>(decode_knob(k, "", "1")) : v));
        const BuiltScenario b = build_scenario(in);
        CHECK(k.access.get(b.scenario) == Approx(v));
        REQUIRE(b.overrides.size() == 1);
        CHECK(b.overrides[0].first == k.flag());
    }
}

TEST_CASE("eta sets both efficiencies and eta-compute, eta-mem override it", "[knobs]") {
    ScenarioInputs in;
    in.set("eta", "0.7");
    in.set("eta-mem", "0.3");
    const Scenario s = build_scenario(in).scenario;
    CHECK(s.hardware.gpu.eta_compute == 0.7);
    CHECK(s.hardware.gpu.eta_mem == 0.3);
}

TEST_CASE("c2c-bw overrides the link preset's bandwidth whatever the order given", "[knobs]") {
    ScenarioInputs in;
    in.set("c2c-bw", "100");
    in.set("link", "pcie-gen5");
    const Scenario s = build_scenario(in).scenario;
    CHECK(s.hardware.link.bandwidth.raw() == Approx(100e9));
    CHECK(s.hardware.link.name == "custom");
    ScenarioInputs only_link;
    only_link.set("link", "pcie-gen5");
    const Scenario l = build_scenario(only_link).scenario;
    CHECK(l.hardware.link.bandwidth.raw() == Approx(63e9));
    CHECK(l.hardware.link.name == "pcie-gen5");
}

TEST_CASE("a link preset's figures are read through the table", "[knobs][presets]") {
    const auto link = load_link_preset("--link", "nvlink-c2c");
    REQUIRE(!link->figures.empty());
    CHECK(link->figures[0].first->name == "c2c-bw");
    CHECK_THROWS_WITH(load_link_preset("--link", "nope"), Catch::Contains("--link: unknown links preset 'nope'"));
}

TEST_CASE("a command-line value overrides the same --config value and says so", "[knobs][sweep]") {
    ScenarioInputs file, cli;
    set_scenario_flag(file, "hardware", "h200", "--config s.json");
    set_scenario_flag(file, "sparse", "0.5", "--config s.json");
    cli.set("hardware", "gb200");
    cli.set("gpus", "2");
    file.override_with(cli);
    CHECK(file.get("hardware")->text == "gb200");
    CHECK(file.get("hardware")->origin == Origin::command_line_over_config);
    CHECK(file.get("sparse")->origin == Origin::config);
    CHECK(file.get("gpus")->origin == Origin::command_line);
    SweepSpec spec;
    spec.fixed = file;
    spec.axes.push_back(parse_grid_entry("f=0,0.5"));
    const nlohmann::json meta = sweep_provenance(spec);
    CHECK(meta.at("fixed").at("hardware") == "gb200");
    CHECK(meta.at("kvroof").at("version") == KVROOF_VERSION);
    bool said = false;
    for (const auto& i : meta.at("kvroof").at("inputs"))
        if (i.at("knob") == "hardware") said = i.at("from") == "command line, overrides --config";
    CHECK(said);
    CHECK_THROWS_WITH(set_scenario_flag(file, "f", "0.5", "--config s.json"),
                      Catch::Contains("--config s.json: unknown flag 'f'"));
}

TEST_CASE("earlier defects stay fixed: a knob given at its default still conflicts with its axis", "[knobs][sweep]") {
    SweepSpec spec;
    spec.fixed.set("hardware", kDefaultHardware);
    spec.axes.push_back(parse_grid_entry("hardware=h200,b200"));
    CHECK_THROWS_WITH(validate_sweep(spec), Catch::Contains("--grid hardware: also given as --hardware"));
}

TEST_CASE("a sweep point assembled from typed values equals the scenario built from text", "[knobs][sweep]") {
    SweepSpec spec;
    spec.fixed.set("c2c-bw", "100GB/s");
    spec.fixed.set("eta-mem", "0.4");
    for (const char* g : {"hardware=h200,gb200", "link=pcie-gen5,nvlink-c2c", "eta=0.3,0.6", "gpus=2:4:2", "f=0.25"})
        spec.axes.push_back(parse_grid_entry(g));
    validate_sweep(spec);
    std::string out;
    run_sweep(spec, [&](std::string_view t) { out += t; });
    // The last row: gb200, nvlink-c2c, eta 0.6, 4 GPUs; --c2c-bw and --eta-mem still win.
    ScenarioInputs in = spec.fixed;
    for (const char* kv : {"hardware=gb200", "link=nvlink-c2c", "eta=0.6", "gpus=4"}) {
        const std::string s(kv);
        in.set(s.substr(0, s.find('=')), s.substr(s.find('=') + 1));
    }
    const Scenario sc = build_scenario(in).scenario;
    CHECK(sc.hardware.link.bandwidth.raw() == Approx(100e9));
    CHECK(sc.hardware.gpu.eta_mem == 0.4);
    const PreparedScenario ps(sc);
    std::string want;
    append_number6(want, band(ps, 0.25).conservative.throughput);
    const std::string last = out.substr(out.rfind('\n', out.size() - 2) + 1);
    CHECK(last.find("," + want + ",") != std::string::npos);
}

TEST_CASE("the echo lists every numeric knob by its column, in its bare unit", "[knobs]") {
    const nlohmann::json j = knob_values(default_scenario());
    for (const Knob& k : knobs())
        if (k.access.get) CHECK(j.contains(std::string(k.column)));
    CHECK(j.at("hbm_bw_TBps") == Approx(8.0));
    CHECK(j.at("c2c_bw_GBps") == Approx(225.0));
    CHECK(j.at("slo_tpot_ms") == Approx(50.0));
    CHECK(j.at("slo_ttft_ms").is_null());
}

TEST_CASE("a row's bounds are the range its spec check enforces", "[knobs]") {
    Scenario base = default_scenario();
    base.hardware.gpu.hbm_reserve = Bytes(0.0);  // hbm-reserve < hbm-cap would otherwise bound hbm-cap from below
    for (const Knob& k : knobs()) {
        if (k.grid_only || !k.access.get || !std::isfinite(k.lo) || !std::isfinite(k.hi)) continue;
        if (k.name == "ep") continue;  // a divisor of gpus on a MoE model: its own test below
        if (k.name == "attention-dp") continue;  // 1 only on an MLA model: tests/analysis/attention_dp_test.cpp
        if (k.name == "tp") continue;  // the explicit name of gpus: its checks name gpus
        if (k.name == "pp") continue;  // at most the model's layers: tests/analysis/pipeline_test.cpp
        if (k.name == "pp-microbatches") continue;  // 0 or 1 at pp 1: tests/analysis/pipeline_test.cpp
        INFO(k.name);
        Scenario s = base;
        k.access.apply(s, k.lo);
        CHECK_NOTHROW(check_scenario(s));
        if (k.name != "hbm-reserve") {  // its upper end is hbm-cap's value, below the documented 1e18
            s = base;
            k.access.apply(s, k.hi);
            CHECK_NOTHROW(check_scenario(s));
        }
        s = base;
        k.access.apply(s, k.lo > 0 ? k.lo / 2 : -1.0);
        CHECK_THROWS_WITH(check_scenario(s), Catch::Contains(k.flag()));
        s = base;
        k.access.apply(s, k.hi * 2);
        CHECK_THROWS_WITH(check_scenario(s), Catch::Contains(k.flag()));
    }
}

TEST_CASE("ep takes any divisor of gpus on a MoE model, and nothing else", "[knobs]") {
    auto with_ep = [](const char* model, const char* ep) {
        ScenarioInputs in;
        in.set("model", model);
        in.set("gpus", "8");
        in.set("ep", ep);
        return build_scenario(in).scenario;
    };
    for (const char* ep : {"1", "2", "4", "8"}) CHECK(with_ep("deepseek-v3", ep).hardware.deployment.ep == std::stoi(ep));
    CHECK_THROWS_WITH(with_ep("deepseek-v3", "3"), "--ep: must divide gpus (8), got 3");
    CHECK_THROWS_WITH(with_ep("deepseek-v3", "16"), "--ep: must divide gpus (8), got 16");
    CHECK_THROWS_WITH(with_ep("deepseek-v3", "0"), Catch::Contains("--ep: must be in [1, "));
    CHECK(with_ep("llama-3.1-70b", "1").hardware.deployment.ep == 1);
    CHECK_THROWS_WITH(with_ep("llama-3.1-70b", "8"), Catch::Contains("--ep: the model has no routed experts (dense)"));
}
