// SPDX-License-Identifier: MIT
// `kvroof sweep --analysis prefill/layers`: each row is `kvroof prefill`'s or `kvroof layers`'s answer for its scenario.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kvroof/analysis/layers_study.hpp"
#include "kvroof/analysis/prefill_study.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/sweep.hpp"

using namespace kvroof;
using namespace kvroof::io;

namespace {
SweepSpec prefill_spec(std::initializer_list<const char*> grid, SweepFormat format = SweepFormat::jsonl) {
    SweepSpec s;
    s.analysis = SweepAnalysis::prefill;
    s.format = format;
    for (const char* g : grid) s.axes.push_back(parse_grid_entry(g));
    return s;
}
std::vector<std::string> run_lines(const SweepSpec& s, ColumnTap* tap = nullptr) {
    validate_sweep(s);
    std::string out;
    run_sweep(
        s, [&](std::string_view t) { out += t; }, {}, tap);
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}
// A row's number against the study's, to the six digits a row prints.
void check_cell(const nlohmann::json& row, const char* column, double want) {
    INFO(column);
    REQUIRE(row.at(column).is_number());
    CHECK(row.at(column).get<double>() == Approx(want).epsilon(1e-5));
}
}  // namespace

TEST_CASE("a prefill row equals kvroof prefill's answer at the same figures", "[sweep][prefill]") {
    const auto lines = run_lines(prefill_spec({"model=llama-3.1-70b,mixtral-8x7b", "c2c-bw=64,450", "gpus=1,2", "ov=0,1"}));
    REQUIRE(lines.size() == 16);
    size_t i = 0;
    for (const char* model : {"llama-3.1-70b", "mixtral-8x7b"})
        for (const char* bw : {"64", "450"})
            for (const char* gpus : {"1", "2"})
                for (const char* ov : {"0", "1"}) {
                    INFO(model << " c2c-bw " << bw << " gpus " << gpus << " ov " << ov);
                    PrefillInputs in;
                    in.scenario.set("model", model);
                    in.scenario.set("c2c-bw", bw);
                    in.scenario.set("gpus", gpus);
                    in.ov = ov;
                    const PrefillStudy st = prefill_study(resolve_prefill(in), PrefillQuestions{});
                    const auto row = nlohmann::json::parse(lines[i++]);
                    CHECK(row.at("model") == model);
                    CHECK(row.at("regime") == name(st.result.regime));
                    check_cell(row, "kappa_crit", st.result.kappa_crit);
                    check_cell(row, "kappa_ratio", st.result.kappa_ratio);
                    check_cell(row, "t_gpu_ms", st.result.t_gpu * 1e3);
                    check_cell(row, "t_link_ms", st.result.t_link * 1e3);
                    check_cell(row, "ttft_ms", st.result.ttft * 1e3);
                    check_cell(row, "ttft_serial_ms", st.result.ttft_serial * 1e3);
                    check_cell(row, "p_oh", st.result.p_oh);
                    check_cell(row, "utilisation", st.result.utilisation);
                    check_cell(row, "b_kv_bytes_per_token", st.b_kv.raw());
                    check_cell(row, "vram_GB", st.vram.raw() / 1e9);
                    REQUIRE(st.scheduler);
                    check_cell(row, "n_max_req", st.scheduler->n_max);
                }
}

TEST_CASE("prefill rows: kappa_crit by hand, linear in the link, TTFT combined by ov", "[sweep][prefill]") {
    const auto lines = run_lines(prefill_spec({"c2c-bw=225,900", "ov=0,1"}));
    REQUIRE(lines.size() == 4);
    const auto slow0 = nlohmann::json::parse(lines[0]), slow1 = nlohmann::json::parse(lines[1]);
    const auto fast0 = nlohmann::json::parse(lines[2]);
    // Llama-3.1-70B on one GB200 (verdict's default): F_pf = 2 x 70.55 G active parameters, B_kv = 80 layers x
    // 8 KV heads x 128 x 2 (K and V) x 2 bytes = 327,680 B, C_eff = 0.7 x 2.5 PFLOPS BF16:
    //   kappa_crit = F_pf / B_kv x link / C_eff = 141.104775168e9 / 327680 x 225e9 / 1.75e15 = 55.36512.
    check_cell(slow0, "kappa_crit", 141.104775168e9 / 327680 * 225e9 / 1.75e15);
    check_cell(fast0, "kappa_crit", 4 * slow0.at("kappa_crit").get<double>());
    // ov = 0: reload, then compute; ov = 1: the longer of the two.
    const double t_gpu = slow0.at("t_gpu_ms").get<double>(), t_link = slow0.at("t_link_ms").get<double>();
    check_cell(slow0, "ttft_ms", t_gpu + t_link);
    check_cell(slow1, "ttft_ms", std::max(t_gpu, t_link));
    check_cell(slow1, "ttft_serial_ms", t_gpu + t_link);
    check_cell(slow0, "link_share", t_link / (t_gpu + t_link));
}

TEST_CASE("a prefill row with no new token leaves the ratio and the scheduler empty", "[sweep][prefill]") {
    const auto lines = run_lines(prefill_spec({"workload=s_cached=1000,a_append=0,o_output=1"}, SweepFormat::csv));
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].rfind("workload,ov,regime,kappa_crit,kappa_ratio,", 0) == 0);
    CHECK(lines[1].find(",transfer-bound,") != std::string::npos);
    CHECK(lines[1].substr(lines[1].size() - 2) == ",,");  // n_max_req and t_sched_tok
}

TEST_CASE("a prefill sweep refuses f, a load and a mix, naming each", "[sweep][prefill][errors]") {
    auto fails_with = [](SweepSpec s, const char* what) {
        INFO(what);
        try {
            validate_sweep(s);
            FAIL("accepted");
        } catch (const InputError& e) {
            CHECK(std::string(e.what()).find(what) != std::string::npos);
        }
    };
    fails_with(prefill_spec({"f=0,0.5"}), "--grid f: the prefill analysis has no f");
    fails_with(prefill_spec({"concurrency=1,2"}), "takes no load");
    SweepSpec with_load = prefill_spec({"gpus=1,2"});
    with_load.load.batch = "8";
    fails_with(with_load, "takes no load");
    fails_with(prefill_spec({"mix=long:1"}), "give a --workload, not a --mix");
    CHECK_THROWS_AS(parse_sweep_analysis("--analysis", "layer"), InputError);
    CHECK(parse_sweep_analysis("--analysis", "prefill") == SweepAnalysis::prefill);
}

TEST_CASE("prefill rows tap their numbers and refuse the regime as a plot's y", "[sweep][prefill][tap]") {
    SweepSpec s = prefill_spec({"c2c-bw=50:500:50"}, SweepFormat::csv);
    ColumnTap tap{"kappa_crit", {}};
    const auto lines = run_lines(s, &tap);
    REQUIRE(tap.values.size() == 10);
    REQUIRE(lines.size() == 11);
    for (size_t i = 0; i < 10; ++i) {
        std::string shown;
        append_number6(shown, tap.values[i]);
        CHECK(lines[i + 1].find("," + shown + ",") != std::string::npos);
    }
    CHECK(tap.values[9] == Approx(10 * tap.values[0]));
    CHECK_THROWS_AS(check_tap_column(s, "regime"), InputError);
    CHECK_THROWS_AS(check_tap_column(s, "tps_con_tok_per_s"), InputError);  // a verdict column
}

TEST_CASE("a prefill sweep's provenance is a sweep file that asks for prefill rows again", "[sweep][prefill][provenance]") {
    const SweepSpec s = prefill_spec({"c2c-bw=64,450"});
    const nlohmann::json meta = sweep_provenance(s);
    CHECK(meta.at("analysis") == "prefill");
    const std::string path = "sweep_prefill_provenance_test.json";
    {
        std::ofstream f(path);
        f << meta.dump(2);
    }
    const SweepSpec again = load_sweep_file(path);
    std::remove(path.c_str());
    CHECK(again.analysis == SweepAnalysis::prefill);
    CHECK(sweep_provenance(prefill_spec({"c2c-bw=64,450"})).dump() == meta.dump());
    CHECK_FALSE(sweep_provenance(SweepSpec{}).contains("analysis"));  // verdict rows: the key is left out
}

TEST_CASE("a layers row equals kvroof layers --model's row at the same figures", "[sweep][layers]") {
    SweepSpec s = prefill_spec({"model=llama-3.1-70b,deepseek-v3", "c2c-bw=64,450", "gpus=1,2"});
    s.analysis = SweepAnalysis::layers;
    s.fixed.set("hardware", "h100-sxm");
    const auto lines = run_lines(s);
    REQUIRE(lines.size() == 8);
    size_t i = 0;
    for (const char* model : {"llama-3.1-70b", "deepseek-v3"})
        for (const char* bw : {"64", "450"})
            for (const char* gpus : {"1", "2"}) {
                INFO(model << " c2c-bw " << bw << " gpus " << gpus);
                LayersInputs in;
                in.scenario.set("model", model);
                in.scenario.set("c2c-bw", bw);
                in.tp = gpus;
                in.scenario.set("hardware", "h100-sxm");
                const LayersStudy st = run_layers_study(resolve_layers(in));
                REQUIRE(st.cells.size() == 1);
                const LayerOffloadRow& r = st.cells.front().row;
                const auto row = nlohmann::json::parse(lines[i++]);
                CHECK(row.at("status") == (!r.runs_on_card ? "does_not_fit" : r.offloaded > 0 ? "offload" : "fits"));
                CHECK(row.at("resident_layers") == r.resident);
                CHECK(row.at("offloaded_layers") == r.offloaded);
                check_cell(row, "layer_rank_GB", r.layer_rank.raw() / 1e9);
                check_cell(row, "copy_ms", r.copy_s * 1e3);
                check_cell(row, "compute_ms", r.compute_s * 1e3);
                if (r.offloaded == 0) {  // llama-3.1-70b in BF16 on two H100s: nothing moves
                    CHECK(row.at("overlap_tps_tok_per_s").is_null());
                    continue;
                }
                check_cell(row, "serial_tps_tok_per_s", r.serial_tps);
                check_cell(row, "overlap_tps_tok_per_s", r.overlap_tps);
                check_cell(row, "expert_overlap_tps_tok_per_s", r.expert_overlap_tps);
            }
}

TEST_CASE("layers rows: a layer halves with 8-bit weights and with two GPUs and every layer is somewhere", "[sweep][layers]") {
    SweepSpec s = prefill_spec({"weight-dtype=bf16,fp8", "gpus=1,2", "hbm-cap=80,1000"});
    s.analysis = SweepAnalysis::layers;
    const auto lines = run_lines(s);
    REQUIRE(lines.size() == 8);
    std::vector<nlohmann::json> rows;
    for (const auto& l : lines) rows.push_back(nlohmann::json::parse(l));
    const double bf16 = rows[0].at("layer_rank_GB").get<double>();
    check_cell(rows[2], "layer_rank_GB", bf16 / 2);  // bf16, two GPUs
    check_cell(rows[4], "layer_rank_GB", bf16 / 2);  // fp8, one GPU
    for (const auto& r : rows) CHECK(r.at("resident_layers").get<int>() + r.at("offloaded_layers").get<int>() == 80);
    // 1,000 GB holds every layer: nothing moves, so no link ceiling (empty, null in JSON).
    CHECK(rows[1].at("status") == "fits");
    CHECK(rows[1].at("offloaded_layers") == 0);
    CHECK(rows[1].at("overlap_tps_tok_per_s").is_null());
}

TEST_CASE("a layers sweep refuses f, ov and a load", "[sweep][layers][errors]") {
    for (const char* g : {"f=0,0.5", "ov=0,1", "concurrency=1,2"}) {
        SweepSpec s = prefill_spec({g});
        s.analysis = SweepAnalysis::layers;
        INFO(g);
        CHECK_THROWS_AS(validate_sweep(s), InputError);
    }
    CHECK(parse_sweep_analysis("--analysis", "layers") == SweepAnalysis::layers);
}
