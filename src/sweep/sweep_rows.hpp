// SPDX-License-Identifier: MIT
#pragma once
// Private to src/sweep/: one worker's row computation and formatting.

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kvroof/analysis/verdict.hpp"
#include "typed_grid.hpp"

namespace kvroof::io::sweep_detail {

// The result columns, in order (docs/model.md, "Sweeps and reports", says what
// each means). tps_base_* is the band at f = 0; *_per_gpu_* is over --gpus.
inline constexpr const char* kResultColumns[] = {"f",
                                                 "status",
                                                 "f_star_con",
                                                 "f_star_opt",
                                                 "tps_base_con_tok_per_s",
                                                 "tps_base_opt_tok_per_s",
                                                 "tps_base_con_per_gpu_tok_per_s",
                                                 "tps_base_opt_per_gpu_tok_per_s",
                                                 "tps_con_tok_per_s",
                                                 "tps_opt_tok_per_s",
                                                 "tps_con_per_gpu_tok_per_s",
                                                 "tps_opt_per_gpu_tok_per_s",
                                                 "gain_con",
                                                 "gain_opt",
                                                 "batch_con_seq",
                                                 "tpot_con_ms",
                                                 "ttft_con_ms",
                                                 "binding_con",
                                                 "binding_opt",
                                                 "verdict"};

// A row's status at its f: does_not_fit (the weights or one session's KV do
// not fit at this f), infeasible (it fits, but no batch meets the SLOs at
// either end of the band), ok.
[[nodiscard]] inline std::string_view row_status(const Band& b) noexcept {
    const ServingPoint& c = b.conservative;
    if (!c.fits || !c.session_fits) return "does_not_fit";
    if (!c.feasible && !b.optimistic.feasible) return "infeasible";
    return "ok";
}
// Throughput of a serving point, or NaN (an empty cell, null) when nothing fits there.
[[nodiscard]] inline double tps_or_none(const ServingPoint& p) noexcept {
    return p.fits && p.session_fits ? p.throughput : std::numeric_limits<double>::quiet_NaN();
}

// A CSV cell for a number that has none (a gain over a baseline that serves
// nothing, an unbounded batch) is empty: the CSV convention for a missing value.
inline void append_number(std::string& out, double v) {
    if (std::isfinite(v)) append_number6(out, v);
}
inline void append_json_number(std::string& out, double v) {
    if (std::isfinite(v))
        append_number6(out, v);
    else
        out += "null";
}
void append_csv_text(std::string& out, const std::string& s);

// What a row needs that depends only on the knobs other than f and ov: the
// scenario, its verdict (the f* optimum, ~130 model evaluations) and the text
// of the cells that do not change with f.
struct CachedPoint {
    Scenario scenario;
    std::optional<PreparedScenario> prepared;  // points into scenario: a CachedPoint never moves
    Verdict verdict;
    std::string prefix;  // the non-f axis cells, each with its separator
    // f_star_con, f_star_opt and the four tps_base cells, each with its separator
    std::string fstar;
    std::array<double, 6> fstar_numbers{};  // the same six as numbers
};

// The columns of the sweep's rows, in order (sweep_header's names), and where
// `column` stands among them (-1: not there).
[[nodiscard]] std::vector<std::string_view> sweep_columns(const SweepSpec& spec);
[[nodiscard]] int tap_index(const SweepSpec& spec, std::string_view column);

// What a worker thread holds: it computes and formats rows [begin, end) in
// order and, given `tap`, appends each row's number in the tapped column.
class RowSource {
public:
    virtual ~RowSource() = default;
    virtual void rows(std::uint64_t begin, std::uint64_t end, std::string& out, std::vector<double>* tap) = 0;
};
// The worker for this sweep's rows: verdicts, or operating points under a load;
// `tap_column` is the tapped column's index in sweep_columns (-1: none).
[[nodiscard]] std::unique_ptr<RowSource> make_row_source(const SweepSpec& spec, const TypedGrid& grid, int tap_column = -1);

// The workers for prefill and layer-offload rows (prefill_rows.cpp).
[[nodiscard]] std::unique_ptr<RowSource> make_prefill_rows(const SweepSpec& spec, const TypedGrid& grid, int tap_column);
[[nodiscard]] std::unique_ptr<RowSource> make_layers_rows(const SweepSpec& spec, const TypedGrid& grid, int tap_column);

// The columns of an operating-point row after its axes (docs/model.md, "Sweeps and reports").
inline constexpr const char* kPointColumns[] = {"f",
                                                "ov",
                                                "status",
                                                "batch_seq",
                                                "running_req",
                                                "itl_ms",
                                                "step_ms",
                                                "ttft_ms",
                                                "e2e_ms",
                                                "tps_tok_per_s",
                                                "tps_per_gpu_tok_per_s",
                                                "tps_per_user_tok_per_s",
                                                "requests_per_s",
                                                "hbm_used_GB",
                                                "binding"};

// The columns of a prefill row after its axes (docs/model.md, "Sweeps and
// reports"): each with its plot label; `text` for a column of words.
struct ColumnInfo {
    const char* name;
    const char* label;
    bool text = false;
};
inline constexpr ColumnInfo kPrefillColumns[] = {
    {"ov", "overlap of reload and compute ov"},
    {"regime", "regime", true},
    {"kappa_crit", "κ_crit (cached tokens per new token)"},
    {"kappa_ratio", "κ_ratio = K/T (cached tokens per new token)"},
    {"t_gpu_ms", "prefill compute time T_gpu (ms)"},
    {"t_link_ms", "cached-KV reload time T_link (ms)"},
    {"ttft_ms", "TTFT at ov (ms)"},
    {"ttft_serial_ms", "TTFT, reload then compute (ms)"},
    {"p_oh", "reload over compute time P_OH"},
    {"link_share", "share of the serial TTFT on the link"},
    {"utilisation", "GPU utilisation 1/(1 + P_OH)"},
    {"f_pf_GFLOP_per_token", "prefill FLOPs per new token F_pf (GFLOP)"},
    {"b_kv_bytes_per_token", "reloaded KV per cached token B_kv (bytes)"},
    {"vram_GB", "VRAM for prefill KV V_eff (GB)"},
    {"n_max_req", "requests whose KV fits in V_eff"},
    {"t_sched_tok", "tokens per scheduler iteration"},
};

// The columns of a layer-offload row after its axes. Decode tok/s of one
// sequence; empty where no layer is offloaded (not bounded by the link).
inline constexpr ColumnInfo kLayersColumns[] = {
    {"status", "status", true},
    {"layer_rank_GB", "one layer on one GPU (GB)"},
    {"resident_layers", "layers resident in HBM"},
    {"offloaded_layers", "layers offloaded to the host"},
    {"transfer_per_token_GB", "bytes moved per token per GPU (GB)"},
    {"copy_ms", "copy time per token (ms)"},
    {"compute_ms", "compute time of the offloaded layers per token (ms)"},
    {"serial_tps_tok_per_s", "decode tok/s, copy then compute"},
    {"overlap_tps_tok_per_s", "decode tok/s, copy under compute"},
    {"max_hideable", "share of the copy compute can hide"},
    {"expert_transfer_per_token_GB", "bytes per token per GPU, only the experts used (GB)"},
    {"expert_serial_tps_tok_per_s", "decode tok/s, only the experts used, serial"},
    {"expert_overlap_tps_tok_per_s", "decode tok/s, only the experts used, overlapped"},
};

// The declared columns of an analysis's rows after their axes (none for the
// verdict, whose columns depend on the grid: sweep_columns).
[[nodiscard]] inline std::span<const ColumnInfo> analysis_columns(SweepAnalysis a) noexcept {
    if (a == SweepAnalysis::prefill) return kPrefillColumns;
    if (a == SweepAnalysis::layers) return kLayersColumns;
    return {};
}

// The scenario knobs an analysis's rows read (all of them for the verdict: empty here). Prefill reads what
// prefill_setup does (analysis/prefill_study.hpp), layers what layers_question does (analysis/layers_study.hpp);
// an axis of any other knob would repeat one row, so validate_sweep refuses it. Not `eta`: it sets the link's
// efficiency too, which neither analysis reads (as `kvroof prefill` and `kvroof layers` take no --eta).
inline constexpr std::string_view kPrefillKnobs[] = {
    "hardware",    "deployment",  "model",     "workload",      "link",          "c2c-bw",
    "gpus",        "tp",          "gpu-flops", "gpu-flops-fp8", "gpu-flops-fp4", "hbm-cap",
    "hbm-reserve", "eta-compute", "kv-dtype",  "weight-dtype",  "compute-dtype"};
inline constexpr std::string_view kLayersKnobs[] = {"hardware", "deployment", "model",   "weight-dtype", "link",   "c2c-bw",
                                                    "gpus",     "tp",         "hbm-cap", "hbm-bw",       "eta-mem"};
[[nodiscard]] inline std::span<const std::string_view> analysis_knobs(SweepAnalysis a) noexcept {
    if (a == SweepAnalysis::prefill) return kPrefillKnobs;
    if (a == SweepAnalysis::layers) return kLayersKnobs;
    return {};
}

// One row's cells in column order, as CSV or as one JSON object, keeping the
// number of the tapped column (`tap_column`, an index into sweep_columns; -1: none).
class CellWriter {
public:
    CellWriter(bool csv, int tap_column) noexcept : csv_(csv), tap_column_(tap_column) {}
    void begin(std::string& out) noexcept;
    void number(std::string& out, std::string_view column, double v);  // NaN or ±inf: an empty cell, null
    void text(std::string& out, std::string_view column, std::string_view v);
    void none(std::string& out, std::string_view column);  // a text cell with nothing in it: empty, null in JSON
    // The non-f/ov axes' cells of point `idx`, in spec order.
    void axes(std::string& out, const SweepSpec& spec, const std::vector<std::uint64_t>& idx);
    void end(std::string& out) const;
    [[nodiscard]] double tapped() const noexcept { return tapped_; }
    [[nodiscard]] bool tapping() const noexcept { return tap_column_ >= 0; }

private:
    void separate(std::string& out);
    bool csv_, first_ = true;
    int tap_column_, column_ = 0;
    double tapped_ = std::numeric_limits<double>::quiet_NaN();
};

// One worker: computes and formats rows in order. Points are kept by their
// non-f/ov index, so a row costs the same in any axis order (with f the slow
// axis a chunk revisits the same few non-f points): in a direct table when
// the non-f grid is small, else in a hash map cleared when full (the values do
// not depend on what is kept). Without an f or ov axis no point repeats and
// nothing is kept.
class RowWorker final : public RowSource {
public:
    RowWorker(const SweepSpec& spec, const TypedGrid& grid, int tap_column);
    // Appends the rows of points [begin, end) to `out`, and their tapped numbers to `tap`.
    void rows(std::uint64_t begin, std::uint64_t end, std::string& out, std::vector<double>* tap) override;

private:
    const CachedPoint& point();
    void fill(CachedPoint& p);
    // The row's cells after its axes that hold numbers (NaN where empty or text),
    // in kResultColumns order, then the ov axis's three.
    using Numbers = std::array<double, std::size(kResultColumns) + 3>;
    void append_row(const CachedPoint& p, std::string& out, Numbers* numbers);
    template <bool Csv>
    void append_row_as(const CachedPoint& p, std::string& out, Numbers* numbers);
    // ov, tps_ov and gain_ov at the row's ov (NaN without an ov axis).
    [[nodiscard]] std::array<double, 3> ov_cells(const CachedPoint& p, double f, bool fits) const;

    static constexpr std::uint64_t kDirectMax = 1 << 16, kMapMax = 1024;
    const SweepSpec& spec_;
    const TypedGrid& grid_;
    int f_axis_, ov_axis_;
    bool csv_;
    std::vector<size_t> key_axes_;  // the axes other than f and ov
    std::uint64_t key_count_ = 1;
    std::vector<std::uint64_t> idx_;
    std::vector<std::unique_ptr<CachedPoint>> direct_;
    std::unordered_map<std::uint64_t, std::unique_ptr<CachedPoint>> map_;
    std::unique_ptr<CachedPoint> scratch_;  // no f or ov axis: every point new
    Scenario work_;  // the last point assembled (kept points copy it)
    std::vector<std::uint64_t> work_idx_;
    bool work_fresh_ = true;
    CachedPoint* last_ = nullptr;
    std::uint64_t last_key_ = UINT64_MAX;
    int tap_column_;  // index in sweep_columns, or -1
};

}  // namespace kvroof::io::sweep_detail
