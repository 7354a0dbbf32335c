// SPDX-License-Identifier: MIT
#pragma once
// `kvroof validate`: measured serving points (data/measurements/, or a user's
// file of the same schema) checked against the physical floor, and the
// per-resource efficiencies refitted to them. docs/model.md, "Validation".
//
// Floor: a decode step reads at least the weights a token touches (active
// parameters less the embedding table, which is looked up) and, where the KV
// dtype is stated, the B sequences' KV at context ISL, over the peak HBM
// bandwidth, and does at least 2·(those parameters)·B FLOP over the peak GEMM
// rate; a first token needs 2·P·(ISL − prefix) FLOP. A measurement faster than
// that is a defect in the data or in the model's inputs; a prediction faster
// than it is a defect in the model.
//
// Fit: the knobs kFitKnobs, bounded to the knob table's ranges, minimise the
// sum of squared log errors ln(predicted / measured) over every measured
// metric (ITL, TTFT where compared, output throughput), each point predicted
// by accuracy.hpp's predict_row (the operating-point engine): projected
// Levenberg–Marquardt with a central-difference Jacobian. Uncertainty: the
// square roots of the diagonal of s²·(JᵀJ)⁻¹, s² = SSR / (m − p). Leave one
// out: each point predicted by the fit to the others. Intervals: the 5th and
// 95th percentiles of the leave-one-out log errors, per metric.

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/io/accuracy.hpp"
#include "kvroof/io/plot.hpp"

namespace kvroof::io {

// The MoE layer latency is fitted too: only MoE points move it, so a mixed set
// separates what MoE layers cost from the efficiencies every model shares.
inline constexpr std::array<std::string_view, 4> kFitKnobs = {"eta-compute", "eta-mem", "step-overhead", "moe-layer-latency"};
inline constexpr double kIntervalLo = 0.05, kIntervalHi = 0.95;  // the prediction interval's quantiles

// One point's three metrics (s, s, output tokens/s); 0: not measured or not compared.
struct Metrics {
    double itl = 0, ttft = 0, throughput = 0;
};

// The physical floor of one point and what falls below it.
struct FloorCheck {
    double itl_floor = 0, ttft_floor = 0, throughput_ceiling = 0;  // s, s, tokens/s
    std::vector<std::string> data_defects, model_defects;  // one line each
};

struct FitParameter {
    std::string knob;
    double lo = 0, hi = 0, start = 0, value = 0, sigma = 0;  // SI (step-overhead and moe-layer-latency in s)
    bool at_bound = false;
    // False when no prediction moves with the knob at the fit (the MoE layer
    // latency over dense points only): it stays at its start, with no uncertainty.
    bool identified = true;
};

struct FitResult {
    std::vector<double> values;  // per kFitKnobs, SI
    std::vector<double> sigma;
    std::vector<bool> identified;  // per kFitKnobs: some residual moves with it
    double ssr = 0;
    std::size_t residuals = 0;
    int iterations = 0;
};

struct ValidatedPoint {
    MeasuredPoint measured;
    Metrics observed, at_defaults, fitted, loo;
    FloorCheck floor;
};

struct MetricSummary {
    std::string name;  // itl, ttft, throughput
    std::size_t n = 0;
    double mape_defaults = 0, mape_fitted = 0, mape_loo = 0;
    double q_lo = 0, q_hi = 0;  // quantiles of the LOO log error ln(pred / measured)
};

struct ValidationResult {
    std::string source;  // where the points came from
    std::vector<FitParameter> params;
    FitResult fit;
    std::vector<ValidatedPoint> points;
    std::vector<MetricSummary> metrics;  // itl, ttft, throughput
    std::size_t gain_pairs = 0;
    double gain_half_width = 0;  // 90th percentile of |LOO log error difference| over the pairs of a series
    std::size_t data_defects = 0, model_defects = 0;
    // Points kept out of the fit, at the defaults and at the fit (mape_loo: the fit's too); empty: none.
    std::vector<MetricSummary> holdout;
    std::size_t holdout_points = 0;
};

// The fit's knob values applied to a scenario, through the knob table.
void apply_fit(Scenario& s, const std::vector<double>& values);
// The errors at the defaults and at r's fit over points kept out of it (r.holdout).
void check_holdout(ValidationResult& r, const std::vector<MeasuredPoint>& points);
// The floor check of one point, with kvroof's prediction `row`.
[[nodiscard]] FloorCheck floor_check(const MeasuredPoint& m, const Scenario& s, const AccuracyRow& row);
// Fit kFitKnobs to points (start: the knobs' defaults); `starts` overrides the start.
[[nodiscard]] FitResult fit_efficiencies(const std::vector<MeasuredPoint>& points, const std::vector<double>& starts = {});
// Everything `kvroof validate` shows (throws InputError on fewer than 4 points).
// The points' leave-one-out refits run on `threads` workers (0: one per core);
// the result is the same for every thread count.
[[nodiscard]] ValidationResult validate(const std::vector<MeasuredPoint>& points, const std::string& source, int threads = 0);

[[nodiscard]] std::string render_validate_text(const ValidationResult& r);
[[nodiscard]] nlohmann::json validate_json(const ValidationResult& r);
// outputs/validation.md, with configs/report.json's description when given.
[[nodiscard]] std::string render_validate_markdown(const ValidationResult& r, const std::string& description = "");
// outputs/validation_throughput.svg: predicted / measured throughput against the measured,
// at the defaults and leave one out, with the 90 % interval.
[[nodiscard]] PlotSpec validation_plot(const ValidationResult& r);
// The calibration file `kvroof verdict --calibration` reads: the fit and the intervals.
[[nodiscard]] nlohmann::json calibration_json(const ValidationResult& r);

// A calibration file read back (throws InputError naming the field).
struct CalibrationFile {
    std::vector<double> values;  // per kFitKnobs, SI
    double throughput_q_lo = 0, throughput_q_hi = 0, gain_half_width = 0;
    std::size_t points = 0;
    // Pairs of one series the gain band was measured on; 0: none, and the band is kvroof's built-in median error on
    // a gain (kGainUncertainty), not a 90 % band.
    std::size_t gain_pairs = 0;
};
[[nodiscard]] CalibrationFile read_calibration(const std::string& where, const nlohmann::json& j);

// A prediction with the interval a calibration puts around it: a throughput
// T → [T·e^(−q95), T·e^(−q05)] (where the measurement falls, 90 % of the
// leave-one-out errors), a gain G → G·e^(±h) (h: the gain band).
struct CalibratedFigure {
    std::string name;
    double value = 0, lo = 0, hi = 0;
    bool gain = false;
};
[[nodiscard]] CalibratedFigure calibrated_throughput(const CalibrationFile& c, std::string name, double tps);
[[nodiscard]] CalibratedFigure calibrated_gain(const CalibrationFile& c, std::string name, double gain);
// The CALIBRATED: block `kvroof verdict --calibration` adds under its output, and its JSON.
// `kind`: the solved verdict's class with the fit's gain band in place of kGainUncertainty
// (empty: not given, as at an operating point).
[[nodiscard]] std::string render_calibrated_text(const CalibrationFile& c, const std::string& where,
                                                 const std::vector<CalibratedFigure>& figures, const std::string& kind);
[[nodiscard]] nlohmann::json calibrated_json(const CalibrationFile& c, const std::string& where,
                                             const std::vector<CalibratedFigure>& figures, const std::string& kind);

}  // namespace kvroof::io
