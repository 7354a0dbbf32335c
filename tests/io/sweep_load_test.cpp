// SPDX-License-Identifier: MIT
// Sweeps under a load: each row is the operating point `kvroof verdict
// --concurrency N` shows (analysis/operating_point.hpp), at f = 0 or at each f
// of an f axis.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kvroof/analysis/operating_point.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/sweep.hpp"

using namespace kvroof;
using namespace kvroof::io;

namespace {
// Llama-3.1-8B in FP8 on one H100, ISL 2,000 / OSL 500 with no idle gap.
SweepSpec benchmark_spec(std::initializer_list<const char*> grid, SweepFormat format = SweepFormat::jsonl) {
    SweepSpec s;
    s.fixed.set("hardware", "h100-sxm");
    s.fixed.set("model", "llama-3.1-8b");
    s.fixed.set("weight-dtype", "fp8");
    s.fixed.set("workload", "s_cached=0,a_append=2000,o_output=500,idle_gap=0s");
    for (const char* g : grid) s.axes.push_back(parse_grid_entry(g));
    s.format = format;
    return s;
}
std::vector<nlohmann::json> run_rows(const SweepSpec& s) {
    validate_sweep(s);
    std::string out;
    run_sweep(s, [&](std::string_view t) { out += t; });
    std::vector<nlohmann::json> rows;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) rows.push_back(nlohmann::json::parse(l));
    return rows;
}
}  // namespace

TEST_CASE("a concurrency axis: each row is the operating point at that many clients", "[sweep][load]") {
    const std::vector<nlohmann::json> rows = run_rows(benchmark_spec({"concurrency=1,8,64"}));
    REQUIRE(rows.size() == 3);
    const Scenario sc = build_scenario(benchmark_spec({}).fixed).scenario;
    const PreparedScenario ps(sc);
    const double clients[] = {1, 8, 64};
    double last_tps = 0;
    for (size_t i = 0; i < 3; ++i) {
        LoadSpec load;
        load.mode = LoadMode::concurrency;
        load.value = clients[i];
        const OperatingPoint p = operating_point(ps, load, 0.0, 0.0);
        const nlohmann::json& r = rows[i];
        CHECK(r.at("load_clients").get<double>() == clients[i]);
        CHECK(r.at("f").get<double>() == 0.0);
        CHECK(r.at("status") == "ok");
        // Six significant digits, as every sweep cell.
        CHECK(r.at("itl_ms").get<double>() == Approx(p.itl * 1e3).epsilon(1e-5));
        CHECK(r.at("ttft_ms").get<double>() == Approx(p.ttft * 1e3).epsilon(1e-5));
        CHECK(r.at("tps_tok_per_s").get<double>() == Approx(p.throughput).epsilon(1e-5));
        CHECK(r.at("batch_seq").get<double>() == Approx(p.batch).epsilon(1e-5));
        // What one user sees: a token every ITL.
        CHECK(r.at("tps_per_user_tok_per_s").get<double>() == Approx(1e3 / r.at("itl_ms").get<double>()).epsilon(1e-5));
        // Closed loop: more clients never lower the throughput.
        CHECK(r.at("tps_tok_per_s").get<double>() >= last_tps);
        last_tps = r.at("tps_tok_per_s").get<double>();
    }
    // One client alone: nothing queues and it decodes by itself (batch below 1, the share of its time decoding).
    CHECK(rows[0].at("batch_seq").get<double>() < 1.0);
    CHECK(rows[0].at("running_req").get<double>() == Approx(1.0).epsilon(1e-5));
}

TEST_CASE("a concurrency axis may end in max: every request at once, as --concurrency max", "[sweep][load]") {
    // The memory-full point beside a benchmark's clients (it was refused: "expected a number, got 'max'").
    const std::vector<nlohmann::json> rows = run_rows(benchmark_spec({"concurrency=8,max"}));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].at("load_clients").get<double>() == 8);
    CHECK(rows[1].at("load_clients") == "max");
    const Scenario sc = build_scenario(benchmark_spec({}).fixed).scenario;
    const PreparedScenario ps(sc);
    LoadSpec load;
    load.mode = LoadMode::saturate;
    const OperatingPoint p = operating_point(ps, load, 0.0, 0.0);
    CHECK(rows[1].at("tps_tok_per_s").get<double>() == Approx(p.throughput).epsilon(1e-5));
    CHECK(rows[1].at("running_req").get<double>() == Approx(p.running).epsilon(1e-5));
    // As full as memory allows: more requests run than 8 clients send, and no fewer tokens come out.
    CHECK(rows[1].at("running_req").get<double>() > rows[0].at("running_req").get<double>());
    CHECK(rows[1].at("tps_tok_per_s").get<double>() >= rows[0].at("tps_tok_per_s").get<double>());
    // In CSV the cell is the text too.
    const SweepSpec csv = benchmark_spec({"concurrency=max"}, SweepFormat::csv);
    validate_sweep(csv);
    std::string out;
    run_sweep(csv, [&](std::string_view t) { out += t; });
    CHECK(out.find("\nmax,0,0,ok,") != std::string::npos);
    // max is concurrency's alone.
    CHECK_THROWS_WITH(parse_grid_entry("request-rate=1,max"), Catch::Contains("'max'"));
}

TEST_CASE("a load flag with an f axis: the operating point at each f", "[sweep][load]") {
    SweepSpec s = benchmark_spec({"f=0,0.5"});
    s.load.batch = "16";
    const std::vector<nlohmann::json> rows = run_rows(s);
    REQUIRE(rows.size() == 2);
    const Scenario sc = build_scenario(s.fixed).scenario;
    const PreparedScenario ps(sc);
    LoadSpec load;
    load.mode = LoadMode::batch;
    load.value = 16;
    for (size_t i = 0; i < 2; ++i) {
        const double f = static_cast<double>(i) * 0.5;
        const OperatingPoint p = operating_point(ps, load, f, 0.0);
        CHECK(rows[i].at("f").get<double>() == f);
        CHECK(rows[i].at("step_ms").get<double>() == Approx(p.step * 1e3).epsilon(1e-5));
        CHECK(rows[i].at("binding") == std::string(name(p.binding)));
    }
    // A fixed batch decodes exactly that many sequences.
    CHECK(rows[0].at("batch_seq").get<double>() == Approx(16).epsilon(1e-5));
}

TEST_CASE("a fixed batch of one-token calls decodes nothing: no_decode, empty cells", "[sweep][load]") {
    SweepSpec s = benchmark_spec({"batch=4"});
    s.fixed.set("workload", "s_cached=0,a_append=2000,o_output=1,idle_gap=0s");
    const std::vector<nlohmann::json> rows = run_rows(s);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at("status") == "no_decode");
    CHECK(rows[0].at("itl_ms").is_null());
    CHECK(rows[0].at("tps_tok_per_s").is_null());
}

TEST_CASE("a load sweep's CSV header: the axes, then the operating-point columns", "[sweep][load]") {
    const SweepSpec s = benchmark_spec({"hbm-bw=3.35TB/s,4.8TB/s", "concurrency=1:4:1"}, SweepFormat::csv);
    validate_sweep(s);
    CHECK(sweep_header(s) ==
          "hbm_bw_TBps,load_clients,f,ov,status,batch_seq,running_req,itl_ms,step_ms,ttft_ms,e2e_ms,tps_tok_per_s,"
          "tps_per_gpu_tok_per_s,tps_per_user_tok_per_s,requests_per_s,hbm_used_GB,binding\n");
    CHECK(sweep_points(s) == 8);
}

TEST_CASE("sweep loads: one at a time, engine flags only with one, values in range", "[sweep][load]") {
    CHECK_THROWS_WITH(validate_sweep(benchmark_spec({"concurrency=1,2", "batch=1,2"})), Catch::Contains("one load axis at most"));
    SweepSpec both = benchmark_spec({"concurrency=1,2"});
    both.load.batch = "8";
    CHECK_THROWS_WITH(validate_sweep(both), Catch::Contains("a second load beside --batch"));
    SweepSpec engine_only = benchmark_spec({"f=0,1"});
    engine_only.load.prefill = "chunked";
    CHECK_THROWS_WITH(validate_sweep(engine_only), Catch::Contains("--prefill: needs a load"));
    CHECK_THROWS_WITH(validate_sweep(benchmark_spec({"concurrency=0,2"})), Catch::Contains("--grid concurrency=0"));
    SweepSpec bad_prefill = benchmark_spec({"concurrency=1"});
    bad_prefill.load.prefill = "interleaved";
    CHECK_THROWS_WITH(validate_sweep(bad_prefill), Catch::Contains("must be chunked or separate"));
}

TEST_CASE("a load sweep's provenance carries its load and reads back", "[sweep][load]") {
    SweepSpec s = benchmark_spec({"concurrency=1,2"});
    s.load.prefill = "separate";
    s.load.max_seqs = "256";
    const nlohmann::json meta = sweep_provenance(s);
    CHECK(meta.at("load") == nlohmann::json({{"prefill", "separate"}, {"max-seqs", "256"}}));
    const LoadText back = load_text_from_json("meta", meta.at("load"));
    CHECK(back.prefill == s.load.prefill);
    CHECK(back.max_seqs == s.load.max_seqs);
    CHECK(!back.any_load());
    CHECK_THROWS_WITH(load_text_from_json("meta", nlohmann::json({{"clients", "4"}})), Catch::Contains("unknown key 'clients'"));
}

TEST_CASE("a load sweep with replicas: tok/s and requests/s of all of them, per GPU one replica's", "[sweep][load]") {
    const std::vector<nlohmann::json> one = run_rows(benchmark_spec({"concurrency=16"}));
    SweepSpec s = benchmark_spec({"concurrency=16"});
    s.fixed.set("dp", "3");
    const std::vector<nlohmann::json> three = run_rows(s);
    REQUIRE(one.size() == 1);
    REQUIRE(three.size() == 1);
    // Each replica serves its own 16 clients: three replicas triple the total and leave everything per replica alone.
    CHECK(three[0].at("tps_tok_per_s").get<double>() == Approx(3 * one[0].at("tps_tok_per_s").get<double>()).epsilon(1e-5));
    CHECK(three[0].at("requests_per_s").get<double>() == Approx(3 * one[0].at("requests_per_s").get<double>()).epsilon(1e-5));
    CHECK(three[0].at("tps_per_gpu_tok_per_s") == one[0].at("tps_per_gpu_tok_per_s"));
    CHECK(three[0].at("itl_ms") == one[0].at("itl_ms"));
}
