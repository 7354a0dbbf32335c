// SPDX-License-Identifier: MIT
// kvroof validate: the fit recovers efficiencies the model itself generated,
// leave one out is exact on such points, the floor check flags impossible
// measurements, and bad files are refused naming the field.
#include "kvroof/io/validate.hpp"

#include <catch2/catch.hpp>
#include <cmath>

#include "kvroof/error.hpp"
#include "kvroof/physics/model_quantities.hpp"
#include "kvroof/spec/knobs.hpp"

namespace kvroof::io {
namespace {

const MeasuredPoint& point(const std::vector<MeasuredPoint>& all, const std::string& id) {
    for (const MeasuredPoint& m : all)
        if (m.id == id) return m;
    FAIL("no point " << id);
    return all.front();
}

// The points, their measured figures replaced by kvroof's predictions at `truth`.
std::vector<MeasuredPoint> synthetic(const std::vector<std::string>& ids, const std::vector<double>& truth) {
    const std::vector<MeasuredPoint> all = measured_points();
    std::vector<MeasuredPoint> out;
    for (const std::string& id : ids) {
        MeasuredPoint m = point(all, id);
        Scenario s = point_scenario(m);
        apply_fit(s, truth);
        const AccuracyRow row = predict_row(m, s);
        if (m.itl) m.itl = row.kvroof_itl;
        if (m.ttft) m.ttft = row.kvroof.ttft;
        if (m.throughput) m.throughput = row.kvroof.throughput;
        out.push_back(m);
    }
    return out;
}

// eta-compute, eta-mem, step-overhead (s), moe-layer-latency (s)
const std::vector<double> kTruth = {0.55, 0.65, 2.5e-3, 60e-6};
// The same with the MoE layer latency at its default: dense points cannot move it, so a fit to
// dense points alone leaves it where it starts.
const std::vector<double> kDenseTruth = {0.55, 0.65, 2.5e-3, 27e-6};
}  // namespace

TEST_CASE("validate: the fit recovers the efficiencies that generated the points", "[validate]") {
    const auto pts = synthetic({"vllm-fp8kv-llama31-8b-h100-kvbf16-c8", "trt014-serve-llama31-8b-h100-bf16-467-256-qps32",
                                "trt014-serve-llama31-8b-h200-bf16-467-256-qps2", "lmdeploy-llama2-7b-a100-fp16-b16-2048-128",
                                "trt10-llama31-8b-h200-fp8-1000-1000", "trt017-mixtral-8x7b-h100-fp8-tp1-1000-1000",
                                "gpustack-dsr1-h200x8-vllm-fp8-tp8-sharegpt-c4"},
                               kTruth);
    const FitResult f = fit_efficiencies(pts);  // starts at the defaults 0.7, 0.85, 1.5 ms, 27 us
    REQUIRE(f.values.size() == 4);
    for (std::size_t j = 0; j < 4; ++j) CHECK(f.values[j] == Approx(kTruth[j]).epsilon(1e-3));
    CHECK(f.ssr < 1e-8);
    REQUIRE(f.identified.size() == 4);
    for (std::size_t j = 0; j < 4; ++j) CHECK(f.identified[j]);  // two MoE points move the fourth
}

TEST_CASE("validate: leave one out on four model-generated points predicts each exactly", "[validate]") {
    const auto pts =
        synthetic({"vllm-fp8kv-llama31-8b-h100-kvbf16-c8", "trt014-serve-llama31-8b-h100-bf16-467-256-qps32",
                   "trt014-serve-llama31-8b-h200-bf16-467-256-qps2", "trt014-serve-llama31-8b-h100-bf16-467-256-qps8"},
                  kDenseTruth);
    const ValidationResult r = validate(pts, "synthetic");
    REQUIRE(r.points.size() == 4);
    REQUIRE(r.metrics.size() == 3);
    for (const MetricSummary& m : r.metrics) {
        CHECK(m.n == 4);  // every point measures ITL, TTFT (open and closed loop) and throughput
        CHECK(m.mape_loo < 1e-3);
        CHECK(std::abs(m.q_lo) < 1e-3);
        CHECK(std::abs(m.q_hi) < 1e-3);
    }
    CHECK(r.data_defects == 0);
    CHECK(r.model_defects == 0);
    // Dense points cannot move the MoE layer latency: it is reported as not fitted, at its start, with no σ.
    REQUIRE(r.params.size() == 4);
    for (std::size_t j = 0; j < 3; ++j) CHECK(r.params[j].identified);
    CHECK_FALSE(r.params[3].identified);
    CHECK(r.params[3].value == r.params[3].start);
    CHECK(r.params[3].sigma == 0);
    CHECK_FALSE(r.params[3].at_bound);
    CHECK(render_validate_text(r).find("not fitted") != std::string::npos);
    CHECK(calibration_json(r)["knobs"]["moe-layer-latency"]["sigma"].is_null());
    // A point kept out, generated at the same efficiencies: exact at the fit, not at the defaults.
    ValidationResult held = r;
    check_holdout(held, synthetic({"lmdeploy-llama2-7b-a100-fp16-b16-2048-128"}, kDenseTruth));
    CHECK(held.holdout_points == 1);
    REQUIRE(held.holdout.size() == 3);
    CHECK(held.holdout.back().mape_fitted < 1e-3);  // throughput
    CHECK(held.holdout.back().mape_defaults > 0.01);
    // The calibration file reads back what was written.
    const CalibrationFile c = read_calibration("fit.json", calibration_json(r));
    REQUIRE(c.values.size() == 4);
    for (std::size_t j = 0; j < 4; ++j) CHECK(c.values[j] == r.fit.values[j]);
    CHECK(c.points == 4);
}

TEST_CASE("validate: a measurement faster than the physical floor is a data defect", "[validate]") {
    MeasuredPoint m = point(measured_points(), "lmdeploy-llama2-7b-a100-fp16-b1-128-128");
    const Scenario s = point_scenario(m);
    const AccuracyRow row = predict_row(m, s);
    // Batch 1, KV dtype not stated: the floor is the fp16 weights a token multiplies over the peak HBM bandwidth.
    const double W = (param_counts(s.model).active - 32000.0 * 4096.0) * 2.0;
    const FloorCheck ok = floor_check(m, s, row);
    CHECK(ok.itl_floor == Approx(W / s.hardware.gpu.hbm_bandwidth.raw()));
    CHECK(ok.itl_floor < 10e-3);  // the measured 10 ms is above it
    CHECK(ok.data_defects.empty());
    CHECK(ok.model_defects.empty());
    m.itl = 0.5 * ok.itl_floor;  // fabricated: twice as fast as reading the weights once allows
    m.throughput = 10 * ok.throughput_ceiling;
    const FloorCheck bad = floor_check(m, s, row);
    REQUIRE(bad.data_defects.size() == 2);
    CHECK(bad.data_defects[0].find("measured ITL") != std::string::npos);
    CHECK(bad.data_defects[1].find("measured throughput") != std::string::npos);
}

TEST_CASE("validate: the shipped points, their floor check and the fit's bounds", "[validate]") {
    const ValidationResult r = validate(measured_points(), "shipped");
    CHECK(r.points.size() == measured_points().size());
    CHECK(r.model_defects == 0);  // no prediction beats the floor
    for (const FitParameter& p : r.params) {
        CHECK(p.value >= p.lo);
        CHECK(p.value <= p.hi);
        CHECK(p.sigma >= 0);
    }
    for (const MetricSummary& m : r.metrics) {
        CHECK(m.q_lo <= m.q_hi);
        CHECK(m.mape_loo >= 0);
    }
}

TEST_CASE("validate: the leave-one-out refits give the same result on one thread or several", "[validate]") {
    // Measured, not synthetic: the refits move, so an order- or thread-dependent result would show.
    const std::vector<MeasuredPoint> all = measured_points();
    std::vector<MeasuredPoint> pts;
    for (const char* id : {"vllm-fp8kv-llama31-8b-h100-kvbf16-c8", "trt014-serve-llama31-8b-h100-bf16-467-256-qps32",
                           "trt014-serve-llama31-8b-h200-bf16-467-256-qps2", "lmdeploy-llama2-7b-a100-fp16-b16-2048-128",
                           "trt017-mixtral-8x7b-h100-fp8-tp1-1000-1000", "gpustack-dsr1-h200x8-vllm-fp8-tp8-sharegpt-c4"})
        pts.push_back(point(all, id));
    const ValidationResult one = validate(pts, "six", 1);
    const std::string expected = validate_json(one).dump();
    for (int threads : {2, 3, 6, 64}) CHECK(validate_json(validate(pts, "six", threads)).dump() == expected);
    REQUIRE(one.points.size() == pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) CHECK(one.points[i].measured.id == pts[i].id);  // in the points' order
}

TEST_CASE("validate: a bad points or calibration file is refused naming the field", "[validate]") {
    const nlohmann::json no_isl = nlohmann::json::parse(R"({"points":[{"id":"a","source":{"key":"k","url":"u"},"engine":"e",
        "engine_version":null,"gpu":"h100-sxm","gpus":1,"model":"llama-3.1-8b","weight_dtype":"bf16","kv_dtype":null,
        "osl":10,"prefix":0,"load":{"mode":"concurrency","concurrency":1},"measured":{"itl_ms":10}}]})");
    CHECK_THROWS_WITH(measured_points_from("p.json", no_isl), Catch::Contains("p.json: point a") && Catch::Contains("isl"));
    nlohmann::json zero = no_isl;
    zero["points"][0]["isl"] = 0;
    CHECK_THROWS_WITH(measured_points_from("p.json", zero), Catch::Contains("isl/osl: must be >= 1"));
    CHECK_THROWS_WITH(measured_points_from("p.json", nlohmann::json::object()), Catch::Contains("points: must be an array"));
    CHECK_THROWS_AS(validate({}, "empty"), InputError);
    nlohmann::json cal = {
        {"kind", "kvroof-calibration"}, {"version", 1}, {"points", 3}, {"knobs", {{"eta-compute", {{"value", 2.0}}}}}};
    CHECK_THROWS_WITH(read_calibration("fit.json", cal), Catch::Contains("knobs.eta-compute.value: must be in"));
    CHECK_THROWS_WITH(read_calibration("fit.json", nlohmann::json::object()), Catch::Contains("kind"));
    // A measured figure far outside what a benchmark reports is a slip, not a point (it would dominate the fit).
    nlohmann::json tiny = no_isl;
    tiny["points"][0]["isl"] = 100;
    tiny["points"][0]["measured"] = {{"throughput_tok_s", 1e-300}};
    CHECK_THROWS_WITH(measured_points_from("p.json", tiny), Catch::Contains("measured.throughput_tok_s: must be in"));
    tiny["points"][0]["measured"] = {{"itl_ms", 1e12}};
    CHECK_THROWS_WITH(measured_points_from("p.json", tiny), Catch::Contains("measured.itl_ms: must be in"));
}

TEST_CASE("a calibration file is read only as validate writes it: version, knobs and bounded widths", "[validate]") {
    nlohmann::json knobs;
    for (std::string_view k : kFitKnobs) knobs[std::string(k)] = {{"value", knob(k).lo}};
    const nlohmann::json good = {{"kind", "kvroof-calibration"},
                                 {"version", 1},
                                 {"points", 10},
                                 {"knobs", knobs},
                                 {"metrics", {{"throughput", {{"log_error_q05", -0.2}, {"log_error_q95", 0.3}}}}},
                                 {"gain", {{"log_half_width_q90", 0.1}}}};
    const CalibrationFile c = read_calibration("fit.json", good);
    CHECK(c.points == 10);
    CHECK(c.gain_half_width == 0.1);
    auto with = [&](const nlohmann::json::json_pointer& at, nlohmann::json v) {
        nlohmann::json j = good;
        j[at] = std::move(v);
        return j;
    };
    using P = nlohmann::json::json_pointer;
    // A wide interval validate itself wrote (one point 250x slower than predicted) reads back.
    CHECK(read_calibration("fit.json", with(P("/metrics/throughput/log_error_q95"), 5.54)).throughput_q_hi == 5.54);
    CHECK_THROWS_WITH(read_calibration("fit.json", with(P("/version"), 9)), Catch::Contains("version: must be 1"));
    CHECK_THROWS_WITH(read_calibration("fit.json", with(P("/knobs/eta-foo"), {{"value", 1}})),
                      Catch::Contains("knobs.eta-foo: unknown knob"));
    CHECK_THROWS_WITH(read_calibration("fit.json", with(P("/gain/log_half_width_q90"), 1000)),
                      Catch::Contains("log_half_width_q90: must be in [0, 30]"));
    CHECK_THROWS_WITH(read_calibration("fit.json", with(P("/metrics/throughput/log_error_q05"), -1000)),
                      Catch::Contains("log_error_q05: must be in [-30, 30]"));
    CHECK_THROWS_WITH(read_calibration("fit.json", with(P("/points"), 0)), Catch::Contains("points: must be a whole number"));
    CHECK_THROWS_WITH(read_calibration("fit.json", with(P("/points"), 7.5)), Catch::Contains("points: must be a whole number"));
}

}  // namespace kvroof::io
