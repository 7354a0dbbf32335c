// SPDX-License-Identifier: MIT
#pragma once
// The accuracy table: public measured serving points (data/measurements/
// serving_points.json, embedded) beside kvroof's prediction at its defaults
// and a plain roofline's, with the mean absolute percentage error per metric.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvroof/analysis/operating_point.hpp"

namespace kvroof::io {

struct MeasuredPoint {
    std::string id, source_key, source_url, engine, engine_version;
    std::string gpu, model, weight_dtype, kv_dtype;  // kv_dtype empty: not stated
    int gpus = 1;  // one replica's GPUs: tp x pp
    int tp = 1, pp = 1, ep = 1;
    bool attention_dp = false;  // data-parallel attention (SGLang --enable-dp-attention), as --attention-dp 1
    double isl = 0, osl = 0, prefix = 0;
    std::string load;  // batch, concurrency, request_rate, max_throughput
    double load_value = 0;  // B, C or R; 0 for max_throughput
    std::optional<double> itl, ttft, throughput;  // s, s, output tokens/s
    // Engine conditions the source states, or whose documented default applies
    // (data/measurements/README.md, "Engine limits"): all optional.
    std::optional<double> num_requests;  // requests in the run: no more are ever in flight; an open loop is timed over it
    std::optional<double> max_seqs;  // the engine's running-request cap (max_num_seqs, max_batch_size)
    std::optional<double> max_num_tokens;  // the engine's per-step token budget (max_num_batched_tokens, max_num_tokens)
    bool peak_admission = false;  // admits a request only when its ISL+OSL KV fits (TensorRT-LLM GUARANTEED_NO_EVICT)
    // The share of GPU memory the engine gives its KV cache: of what the weights
    // and the preset's reserve leave (TensorRT-LLM's free-memory fraction), or of
    // the whole HBM, weights included (vLLM's gpu_memory_utilization).
    std::optional<double> kv_mem_fraction;
    bool kv_mem_of_total = false;
    // The efficiency of the engine's expert GEMMs (--eta-moe-gemm), from the
    // file's engine_kernels rule that matches the point's engine, weight dtype
    // and GPU (data/measurements/README.md, "Engine MoE kernels"); the rule's id.
    std::optional<double> eta_moe_gemm;
    std::string moe_kernel;
};

// A public kernel benchmark of one engine's MoE GEMMs, applied to the points
// that engine ran with those weights on those GPUs.
struct EngineKernel {
    std::string id, engine, weight_dtype, kernel, source;
    std::vector<std::string> gpus;
    double eta_moe_gemm = 0, lo = 0, hi = 0;  // the figure and the range the benchmark spans
};

// The plain roofline with the same peaks and efficiencies: six lines, docs/model.md "Accuracy".
struct RooflinePrediction {
    double batch = 0, itl = 0, ttft = 0, throughput = 0;
};

struct AccuracyRow {
    MeasuredPoint measured;
    OperatingPoint kvroof;
    double kvroof_itl = 0;  // s, the figure compared with the measured ITL (a static batch's: the decode step alone)
    bool ttft_compared = false;  // closed and open loops only: elsewhere TTFT is mostly queueing
    RooflinePrediction roofline;
};

struct MetricError {
    std::size_t n = 0;
    double mape_kvroof = 0, mape_roofline = 0;  // mean |predicted − measured| / measured
};

struct SourceError {
    std::string url;
    std::size_t points = 0;
    MetricError itl, throughput;
};

// How well the ratio of two throughputs is predicted: over every pair of
// points of one series (same source, engine, GPU and count, model and
// precisions; different workload or load), |ln(predicted ratio / measured
// ratio)|; its median, as a relative error exp(median) − 1. An offload gain is
// such a ratio (two configurations on one machine), so this is the gain's
// stated uncertainty (kGainUncertainty, analysis/verdict.hpp).
struct RatioError {
    std::size_t pairs = 0, series = 0;
    double median_kvroof = 0, median_roofline = 0;
};

struct AccuracyTable {
    std::vector<AccuracyRow> rows;
    RatioError gain;  // throughput ratios within a series
    MetricError itl, ttft, throughput;  // every point
    MetricError itl_one_gpu, throughput_one_gpu;  // single-GPU points (no tensor-parallel communication to model)
    // By model family, every GPU count: what an operating point states as its
    // measured error (kStatedError, analysis/operating_point.hpp).
    MetricError itl_dense, throughput_dense, ttft_dense, itl_moe, throughput_moe, ttft_moe;
    std::map<std::string, SourceError> by_source;  // by source key
};

// Every measured point, in file order (throws InputError naming the point on a bad entry).
[[nodiscard]] std::vector<MeasuredPoint> measured_points();
// The hold-out set (Llama-3.1/3.3-70B), never looked at while choosing defaults.
[[nodiscard]] std::vector<MeasuredPoint> holdout_points();
// The points of a file of serving_points.json's schema (data/measurements/README.md), `where` naming it in errors.
[[nodiscard]] std::vector<MeasuredPoint> measured_points_from(const std::string& where, const nlohmann::json& doc);
// The engine_kernels rules of such a file (none when it has no such key).
[[nodiscard]] std::vector<EngineKernel> engine_kernels_from(const std::string& where, const nlohmann::json& doc);
[[nodiscard]] std::vector<EngineKernel> engine_kernels();  // serving_points.json's
// One point's scenario at kvroof's defaults, the load it is asked at, and its row
// predicted on a given scenario (accuracy_table's; kvroof validate's refits change the efficiencies).
[[nodiscard]] Scenario point_scenario(const MeasuredPoint& m);
[[nodiscard]] LoadSpec point_load(const MeasuredPoint& m);
[[nodiscard]] AccuracyRow predict_row(const MeasuredPoint& m, const Scenario& s);
// Each point predicted at kvroof's defaults (and by the plain roofline), with the errors.
[[nodiscard]] AccuracyTable accuracy_table(const std::vector<MeasuredPoint>& points);

// `kernels`: the engine MoE kernel rules the table's points were predicted with.
[[nodiscard]] std::string render_accuracy_markdown(const AccuracyTable& t, const AccuracyTable& holdout,
                                                   const std::vector<EngineKernel>& kernels);

}  // namespace kvroof::io
