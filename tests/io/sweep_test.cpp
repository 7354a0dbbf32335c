// SPDX-License-Identifier: MIT
#include "kvroof/io/sweep.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kvroof/analysis/verdict.hpp"
#include "kvroof/error.hpp"

using namespace kvroof;
using namespace kvroof::io;

namespace {
SweepSpec spec_of(std::initializer_list<const char*> grid, int threads = 1) {
    SweepSpec s;
    for (const char* g : grid) s.axes.push_back(parse_grid_entry(g));
    s.threads = threads;
    validate_sweep(s);
    return s;
}
std::string run_to_string(const SweepSpec& s) {
    std::string out;
    run_sweep(s, [&](std::string_view t) { out += t; });
    return out;
}
std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> lines;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string c; std::getline(in, c, ',');) out.push_back(c);
    return out;
}
}  // namespace

TEST_CASE("grid entries: ranges are inclusive, lists keep their order, units convert", "[sweep][grid]") {
    const GridAxis f = parse_grid_entry("f=0:1:0.05");
    CHECK(f.size() == 21);
    CHECK(f.number(20) == Approx(1.0));
    const GridAxis bw = parse_grid_entry("c2c-bw=64GB/s,450GB/s,1TB/s");
    CHECK(bw.column == "c2c_bw_GBps");
    REQUIRE(bw.size() == 3);
    CHECK(bw.number(2) == Approx(1000));
    const GridAxis hbm = parse_grid_entry("hbm-bw=2TB/s:8TB/s:2TB/s");
    CHECK(hbm.size() == 4);
    CHECK(hbm.number(3) == Approx(8));
    CHECK(hbm.value(3) == "8");  // passed on in the bare unit, TB/s
    const GridAxis mix = parse_grid_entry("mix=long:0.7,short:0.3;long:1");
    CHECK(mix.size() == 2);
    CHECK(mix.value(0) == "long:0.7,short:0.3");
}

TEST_CASE("bad grid entries name the entry and the rule", "[sweep][grid]") {
    CHECK_THROWS_WITH(parse_grid_entry("bogus=1,2"), Catch::Contains("--grid 'bogus=1,2'") && Catch::Contains("unknown knob"));
    CHECK_THROWS_WITH(parse_grid_entry("f=1:0:0.1"), Catch::Contains("empty range"));
    CHECK_THROWS_WITH(parse_grid_entry("f=0:1:0"), Catch::Contains("step must be > 0"));
    CHECK_THROWS_WITH(parse_grid_entry("f=0:1:-0.1"), Catch::Contains("step must be > 0"));
    CHECK_THROWS_WITH(parse_grid_entry("hbm-bw=4.8GB"), Catch::Contains("unknown unit 'GB'"));
    CHECK_THROWS_WITH(parse_grid_entry("sparse=0.1,,1"), Catch::Contains("empty value"));
    CHECK_THROWS_WITH(parse_grid_entry("sparse"), Catch::Contains("knob=values"));
    CHECK_THROWS_AS(spec_of({"model=llama-3.1-70b,nope"}), InputError);
    CHECK_THROWS_WITH(spec_of({"f=0,1.5"}), Catch::Contains("--grid f=1.5"));
    CHECK_THROWS_WITH(spec_of({"sparse=0,1"}), Catch::Contains("--grid sparse=0"));
    CHECK_THROWS_WITH(spec_of({"f=0,1", "f=0.5"}), Catch::Contains("given twice"));
}

TEST_CASE("the CSV header names every varying knob and carries units", "[sweep][csv]") {
    const SweepSpec s = spec_of({"hbm-bw=4.8,8", "slo-tpot=50ms,100ms", "f=0,0.5"});
    const std::string h = sweep_header(s);
    CHECK(h.rfind("hbm_bw_TBps,slo_tpot_ms,f,", 0) == 0);
    CHECK(h.find("tps_con_tok_per_s") != std::string::npos);
    CHECK(h.find("tpot_con_ms") != std::string::npos);
    const auto lines = split_lines(run_to_string(s));
    REQUIRE(lines.size() == 1 + 8);
    CHECK(cells(lines[1])[0] == "4.8");
    CHECK(cells(lines[1])[1] == "50");
}

TEST_CASE("one thread and several threads give byte-identical output", "[sweep][threads]") {
    // 3 x 2 x 2001 points: several 4096-point chunks, so workers interleave.
    const SweepSpec one = spec_of({"cpus-per-gpu=0.5,1,4", "sparse=0.1,1", "f=0:1:0.0005"}, 1);
    SweepSpec many = one;
    many.threads = 3;
    CHECK(run_to_string(one) == run_to_string(many));
}

TEST_CASE("shards concatenated in order equal the whole sweep", "[sweep][shard]") {
    SweepSpec s = spec_of({"cpus-per-gpu=0.5,1,4", "f=0:1:0.001"}, 2);
    const std::string whole = run_to_string(s);
    for (int n : {2, 3, 7}) {
        std::string joined;
        for (int k = 1; k <= n; ++k) {
            s.shard_index = k;
            s.shard_count = n;
            joined += run_to_string(s);
        }
        CHECK(joined == whole);
    }
}

TEST_CASE("a sweep point without an f grid is the verdict for the same inputs", "[sweep][verdict]") {
    const SweepSpec s = spec_of({"cpus-per-gpu=0.5,4", "sparse=0.1,1"});
    const auto lines = split_lines(run_to_string(s));
    REQUIRE(lines.size() == 5);
    const auto header = cells(lines[0]);
    auto col = [&](const char* name) {
        for (size_t i = 0; i < header.size(); ++i)
            if (header[i] == name) return i;
        FAIL("no column " << name);
        return size_t{0};
    };
    const char* cpus[] = {"0.5", "0.5", "4", "4"};
    const char* sparse[] = {"0.1", "1", "0.1", "1"};
    for (int i = 0; i < 4; ++i) {
        ScenarioInputs in;
        in.set("cpus-per-gpu", cpus[i]);
        in.set("sparse", sparse[i]);
        const Verdict v = make_verdict(build_scenario(in).scenario);
        const auto row = cells(lines[static_cast<size_t>(i) + 1]);
        INFO("cpus-per-gpu " << cpus[i] << " sparse " << sparse[i]);
        CHECK(std::stod(row[col("f")]) == Approx(v.f).epsilon(1e-5));
        CHECK(std::stod(row[col("gain_con")]) == Approx(v.gain_conservative).epsilon(1e-5));
        CHECK(std::stod(row[col("gain_opt")]) == Approx(v.gain_optimistic).epsilon(1e-5));
        CHECK(std::stod(row[col("tps_con_tok_per_s")]) == Approx(v.at_f.conservative.throughput).epsilon(1e-5));
        CHECK(row[col("binding_con")] == std::string(name(v.at_f.conservative.headline)));
    }
}

TEST_CASE("an SLO axis takes none as --slo-tpot does: an empty cell, and the verdict without that SLO", "[sweep][grid]") {
    const GridAxis a = parse_grid_entry("slo-tpot=20ms,none");
    REQUIRE(a.size() == 2);
    CHECK(a.number(0) == Approx(20));
    CHECK(std::isnan(a.number(1)));
    CHECK(a.value(1) == "none");
    const auto lines = split_lines(run_to_string(spec_of({"slo-tpot=20ms,none"})));
    REQUIRE(lines.size() == 3);
    const auto header = cells(lines[0]);
    const auto at = std::find(header.begin(), header.end(), "tps_con_tok_per_s") - header.begin();
    REQUIRE(header[0] == "slo_tpot_ms");
    const auto tight = cells(lines[1]), none = cells(lines[2]);
    CHECK(tight[0] == "20");
    CHECK(none[0].empty());
    ScenarioInputs in;
    in.set("slo-tpot", "none");
    const Verdict v = make_verdict(build_scenario(in).scenario);
    CHECK(std::stod(none[static_cast<size_t>(at)]) == Approx(v.at_f.conservative.throughput).epsilon(1e-5));
    CHECK(std::stod(none[static_cast<size_t>(at)]) >= std::stod(tight[static_cast<size_t>(at)]));  // no SLO caps no batch
    CHECK_THROWS_WITH(parse_grid_entry("slo-tpot=20ms,nothing"), Catch::Contains("slo-tpot"));
}

TEST_CASE("a sweep point with an f grid is the band at that f", "[sweep][verdict]") {
    const SweepSpec s = spec_of({"f=0.3"});
    const auto lines = split_lines(run_to_string(s));
    const auto row = cells(lines.at(1));
    const auto header = cells(lines.at(0));
    const auto col = [&](const char* name) {
        return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    const Scenario sc = build_scenario(ScenarioInputs{}).scenario;
    const PreparedScenario ps(sc);
    CHECK(row.at(col("status")) == "ok");
    CHECK(std::stod(row.at(col("tps_con_tok_per_s"))) == Approx(evaluate(ps, 0.3, 0.0).throughput).epsilon(1e-5));
    CHECK(std::stod(row.at(col("tps_opt_tok_per_s"))) == Approx(evaluate(ps, 0.3, 1.0).throughput).epsilon(1e-5));
    // The baseline (f = 0) and the per-GPU columns.
    CHECK(std::stod(row.at(col("tps_base_con_tok_per_s"))) == Approx(evaluate(ps, 0.0, 0.0).throughput).epsilon(1e-5));
    CHECK(std::stod(row.at(col("tps_base_opt_tok_per_s"))) == Approx(evaluate(ps, 0.0, 1.0).throughput).epsilon(1e-5));
    const double gpus = sc.hardware.deployment.gpus;
    CHECK(std::stod(row.at(col("tps_con_per_gpu_tok_per_s"))) == Approx(evaluate(ps, 0.3, 0.0).throughput / gpus).epsilon(1e-5));
    CHECK(std::stod(row.at(col("tps_base_opt_per_gpu_tok_per_s"))) ==
          Approx(evaluate(ps, 0.0, 1.0).throughput / gpus).epsilon(1e-5));
}

TEST_CASE("per-GPU columns divide by --gpus", "[sweep][csv]") {
    const auto lines = split_lines(run_to_string(spec_of({"gpus=4", "f=0.2"})));
    const auto header = cells(lines.at(0)), row = cells(lines.at(1));
    const auto col = [&](const char* name) {
        return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    CHECK(std::stod(row.at(col("tps_con_per_gpu_tok_per_s"))) ==
          Approx(std::stod(row.at(col("tps_con_tok_per_s"))) / 4).epsilon(1e-5));
    CHECK(std::stod(row.at(col("tps_base_con_per_gpu_tok_per_s"))) ==
          Approx(std::stod(row.at(col("tps_base_con_tok_per_s"))) / 4).epsilon(1e-5));
}

TEST_CASE("per-GPU columns divide the replicas' total by every GPU: dp replicas of one GPU", "[sweep][csv]") {
    // dp = 2 replicas of one GPU: the totals are twice a replica's, the per-GPU cells a replica's (as verdict
    // --dp 2 prints them). The one-GPU shortcut copied the total's text into them: 49.88 for 24.94 on gb200.
    const auto lines = split_lines(run_to_string(spec_of({"gpus=1", "dp=1,2", "f=0.2"})));
    const auto header = cells(lines.at(0));
    const auto col = [&](const char* name) {
        return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    REQUIRE(lines.size() == 3);
    const auto one = cells(lines[1]), two = cells(lines[2]);
    for (const char* c : {"tps_con_per_gpu_tok_per_s", "tps_opt_per_gpu_tok_per_s", "tps_base_con_per_gpu_tok_per_s"}) {
        INFO(c);
        CHECK(two.at(col(c)) == one.at(col(c)));
    }
    CHECK(std::stod(two.at(col("tps_con_tok_per_s"))) == Approx(2 * std::stod(one.at(col("tps_con_tok_per_s")))).epsilon(1e-5));
}

TEST_CASE("on one GPU the per-GPU cells are the totals' text, in CSV and JSON Lines", "[sweep][csv][jsonl]") {
    // x / 1 == x: the sweep copies the total's text into the per-GPU cell; the
    // cells must read exactly as the totals, including the empty cell and null
    // where nothing fits (hbm-cap=10 GB holds no 70B weights).
    SweepSpec s = spec_of({"gpus=1", "hbm-cap=10,186", "f=0,0.35"});
    const auto lines = split_lines(run_to_string(s));
    const auto header = cells(lines.at(0));
    const auto col = [&](const char* name) {
        return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    REQUIRE(lines.size() == 5);
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto row = cells(lines[i]);
        INFO(lines[i]);
        CHECK(row.at(col("tps_con_per_gpu_tok_per_s")) == row.at(col("tps_con_tok_per_s")));
        CHECK(row.at(col("tps_opt_per_gpu_tok_per_s")) == row.at(col("tps_opt_tok_per_s")));
    }
    CHECK(cells(lines[1]).at(col("tps_con_per_gpu_tok_per_s")).empty());  // does not fit
    CHECK(!cells(lines[4]).at(col("tps_con_per_gpu_tok_per_s")).empty());
    s.format = SweepFormat::jsonl;
    for (const auto& line : split_lines(run_to_string(s))) {
        const auto j = nlohmann::json::parse(line);
        CHECK(j.at("tps_con_per_gpu_tok_per_s") == j.at("tps_con_tok_per_s"));
        CHECK(j.at("tps_opt_per_gpu_tok_per_s") == j.at("tps_opt_tok_per_s"));
    }
}

TEST_CASE("a point that does not fit has its status and empty cells, not gain 1 and 0 tok/s", "[sweep][status]") {
    // 10 GB of HBM cannot hold Llama-3.1-70B's weights (186 GB can); 1 ms TPOT is met by no batch.
    SweepSpec s = spec_of({"hbm-cap=10,186", "slo-tpot=1ms,50ms", "f=0,0.5"});
    const auto lines = split_lines(run_to_string(s));
    REQUIRE(lines.size() == 1 + 8);
    const auto header = split_lines(sweep_header(s));
    const std::string want_header =
        "hbm_cap_GB,slo_tpot_ms,f,status,f_star_con,f_star_opt,tps_base_con_tok_per_s,tps_base_opt_tok_per_s,"
        "tps_base_con_per_gpu_tok_per_s,tps_base_opt_per_gpu_tok_per_s,tps_con_tok_per_s,tps_opt_tok_per_s,"
        "tps_con_per_gpu_tok_per_s,tps_opt_per_gpu_tok_per_s,gain_con,gain_opt,batch_con_seq,tpot_con_ms,ttft_con_ms,"
        "binding_con,binding_opt,verdict";
    CHECK(lines[0] == want_header);
    // Every number of a row that does not fit is an empty cell.
    CHECK(lines[1] == "10,1,0,does_not_fit,,,,,,,,,,,,,,,,hbm_capacity,hbm_capacity,does_not_fit");
    CHECK(lines[4] == "10,50,0.5,does_not_fit,,,,,,,,,,,,,,,,hbm_capacity,hbm_capacity,does_not_fit");
    // Fits but no batch meets the SLO: 0 tok/s is a fact; the gain over a baseline serving nothing and f* are not.
    const auto inf = cells(lines[5]);
    CHECK(inf.at(3) == "infeasible");
    CHECK(inf.at(4).empty());  // f_star_con
    CHECK(inf.at(10) == "0");  // tps_con
    CHECK(inf.at(14).empty());  // gain_con
    CHECK(inf.at(17).empty());  // tpot_con: no step runs
    CHECK(cells(lines[7]).at(3) == "ok");
    s.format = SweepFormat::jsonl;
    const auto j = nlohmann::json::parse(split_lines(run_to_string(s)).at(0));
    CHECK(j.at("status") == "does_not_fit");
    CHECK(j.at("tps_con_tok_per_s").is_null());
    CHECK(j.at("gain_con").is_null());
    CHECK(j.at("tps_base_con_tok_per_s").is_null());
    CHECK(j.at("f_star_con").is_null());
    const auto ok = nlohmann::json::parse(split_lines(run_to_string(s)).at(7));
    CHECK(ok.at("status") == "ok");
    CHECK(ok.at("tps_con_per_gpu_tok_per_s").get<double>() > 0);
}

TEST_CASE("JSON Lines rows parse and carry the same numbers as CSV", "[sweep][jsonl]") {
    SweepSpec s = spec_of({"model=llama-3.1-70b,llama-3.1-8b", "f=0,0.5"});
    s.format = SweepFormat::jsonl;
    const auto lines = split_lines(run_to_string(s));
    REQUIRE(lines.size() == 4);
    const auto j = nlohmann::json::parse(lines[3]);
    CHECK(j.at("model") == "llama-3.1-8b");
    CHECK(j.at("f") == 0.5);
    CHECK(j.at("tps_con_tok_per_s").get<double>() > 0);
}

TEST_CASE("sweep numbers have six significant digits and round like printf's %.6g", "[sweep][csv]") {
    auto f6 = [](double v) {
        std::string s;
        append_number6(s, v);
        return s;
    };
    CHECK(f6(0) == "0");
    CHECK(f6(0.15992337758647268) == "0.159923");
    CHECK(f6(28.38619724546298) == "28.3862");
    CHECK(f6(1) == "1");
    CHECK(f6(50) == "50");
    CHECK(f6(49.99999999999999) == "50");
    CHECK(f6(999999.7) == "1000000");
    CHECK(f6(1234567) == "1234570");
    CHECK(f6(-2.5e-7) == "-2.5e-07");
    CHECK(f6(0.00012345678) == "0.000123457");
    CHECK(f6(1e300) == "1e+300");
    // Against the C library on a spread of magnitudes: the same decimal value.
    double v = 1.2345678901e-12;
    for (int i = 0; i < 400; ++i, v *= 1.3711) {
        char ref[64];
        std::snprintf(ref, sizeof ref, "%.6g", v);
        INFO(v);
        CHECK(std::stod(f6(v)) == std::stod(ref));
    }
    // Ties and near-ties are decided on the exact value, as %.6g does: half to even at an exact tie, down for a
    // double just below one (both had rounded up: 1015.63, 12345.7, 2.00001).
    CHECK(f6(1015.625) == "1015.62");
    CHECK(f6(1015.635) == "1015.63");  // a double just below its tie
    CHECK(f6(12345.65) == "12345.6");
    CHECK(f6(2.000005) == "2");
    CHECK(f6(-1015.625) == "-1015.62");
    // ... in the same layout as their neighbours (a tie had switched to exponent notation: 1e+06, 1.00002e+06).
    CHECK(f6(1000005) == "1000000");
    CHECK(f6(1000015) == "1000020");
    CHECK(f6(999999.5) == "1000000");
    CHECK(f6(-1234565) == "-1234560");
    CHECK(f6(0.0000123456) == "0.0000123456");  // the fixed layout below 1e-4 ...
    char near[64];
    std::snprintf(near, sizeof near, "%.6g", 1.234565e-5);  // ... for a near-tie there too
    CHECK(std::stod(f6(1.234565e-5)) == std::stod(near));
    CHECK(f6(1.234565e-5).rfind("0.0000", 0) == 0);
    for (int k = 0; k < 2000; ++k) {  // d.ddddd5 and dddddd.5 at every decade from 1e-10 to 1e10
        const double t = (123456.5 + 7.0 * k) * std::pow(10.0, k % 21 - 15);
        char ref[64];
        std::snprintf(ref, sizeof ref, "%.6g", t);
        INFO(t);
        CHECK(std::stod(f6(t)) == std::stod(ref));
    }
}

TEST_CASE("a quantity axis shows the value as given: divided by its unit, not multiplied by an inexact inverse", "[sweep]") {
    // 1015.625 GB is 1.015625e12 B; times 1e-9 it was 1015.6250000000001, shown 1015.63.
    CHECK(parse_grid_entry("hbm-cap=1015.625").number(0) == 1015.625);
    CHECK(parse_grid_entry("hbm-cap=1000:1100:15.625").number(1) == 1015.625);
}

TEST_CASE("a row does not inherit the row before it: the same model gives the same row", "[sweep][grid]") {
    // deepseek-v3's checkpoint is FP8; qwen3-235b-a22b has no format of its own (BF16). A worker
    // updating its scenario in place kept the FP8 for the second qwen row (κ_crit halved).
    for (const char* analysis : {"verdict", "prefill", "layers"}) {
        SweepSpec s;
        s.axes.push_back(parse_grid_entry("model=qwen3-235b-a22b,deepseek-v3,qwen3-235b-a22b"));
        s.fixed.set("hardware", "h200");
        s.fixed.set("gpus", "8");
        s.analysis = parse_sweep_analysis("--analysis", analysis);
        validate_sweep(s);
        const auto lines = split_lines(run_to_string(s));
        REQUIRE(lines.size() == 4);
        CHECK(lines[1] == lines[3]);
        CHECK(lines[1] != lines[2]);
    }
}

TEST_CASE("with an f grid the verdict column is kvroof verdict --f's at that f", "[sweep][verdict]") {
    // It was the solved verdict's kind on every row (marginal) where verdict --f 0.3 says keep the KV on the GPU.
    SweepSpec s;
    s.axes.push_back(parse_grid_entry("f=0,0.3,1"));
    for (auto [k, v] : {std::pair{"hardware", "h200"}, {"gpus", "4"}, {"model", "qwen3-235b-a22b"}, {"kv-dtype", "fp8"}})
        s.fixed.set(k, v);
    validate_sweep(s);
    const auto lines = split_lines(run_to_string(s));
    const auto header = cells(lines.at(0));
    const auto col = static_cast<size_t>(std::find(header.begin(), header.end(), "verdict") - header.begin());
    const Scenario sc = build_scenario(s.fixed).scenario;
    const double fs[] = {0.0, 0.3, 1.0};
    for (size_t i = 0; i < 3; ++i) {
        VerdictOptions o;
        o.fixed_f = fs[i];
        CHECK(cells(lines.at(i + 1)).at(col) == name(make_verdict(sc, o).kind));
    }
}
