// SPDX-License-Identifier: MIT
// Sweep rows under a load: each row is the operating point of its scenario at
// its load, f and ov (analysis/operating_point.hpp), the same function
// `kvroof verdict --concurrency N` shows.
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "kvroof/analysis/operating_point.hpp"
#include "sweep_rows.hpp"

namespace kvroof::io::sweep_detail {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// A row's status: no_decode (a fixed batch of calls with one output token),
// does_not_fit (weights, one session or the occupancy exceed memory),
// saturated (requests arrive faster than the system serves them: shown as full
// as memory allows), over_slo (outside --slo-tpot or --slo-ttft), ok.
std::string_view point_status(const OperatingPoint& r) noexcept {
    if (!r.fits) return "does_not_fit";
    if (r.saturated) return "saturated";
    if (!r.within_slo_tpot || !r.within_slo_ttft) return "over_slo";
    return "ok";
}

class PointRowWorker final : public RowSource {
public:
    PointRowWorker(const SweepSpec& spec, const TypedGrid& grid, const LoadSpec& load, int tap_column)
        : spec_(spec),
          grid_(grid),
          load_(load),
          f_axis_(axis_of(spec, "f")),
          ov_axis_(axis_of(spec, "ov")),
          load_axis_(load_axis(spec)),
          cells_(spec.format == SweepFormat::csv, tap_column),
          idx_(spec.axes.size()) {
        for (size_t i = 0; i < spec.axes.size(); ++i)
            if (!spec.axes[i].row->grid_only) scenario_axes_.push_back(i);
    }

    void rows(std::uint64_t begin, std::uint64_t end, std::string& out, std::vector<double>* tap) override {
        for (std::uint64_t p = begin; p < end; ++p) {
            decompose(spec_, p, idx_);
            append_row(out);
            if (tap && cells_.tapping()) tap->push_back(cells_.tapped());
        }
    }

private:
    // The scenario of the current point, prepared again only when a scenario axis moved.
    const PreparedScenario& prepared() {
        bool moved = !prepared_;
        for (size_t i : scenario_axes_) moved = moved || work_idx_[i] != idx_[i];
        if (moved) {
            prepared_.reset();
            grid_.update(idx_, work_idx_, fresh_, scenario_);
            prepared_.emplace(scenario_);
        }
        return *prepared_;
    }

    [[nodiscard]] double axis_value(int axis, double absent) const {
        return axis < 0 ? absent : spec_.axes[static_cast<size_t>(axis)].number(idx_[static_cast<size_t>(axis)]);
    }

    void append_row(std::string& out) {
        const PreparedScenario& ps = prepared();
        LoadSpec load = load_;
        if (load_axis_ >= 0) load.value = axis_value(load_axis_, load.value);
        if (load.value == std::numeric_limits<double>::infinity()) load.mode = LoadMode::saturate;  // --grid concurrency=max
        const double f = axis_value(f_axis_, 0.0), ov = axis_value(ov_axis_, 0.0);
        const bool no_decode = load.mode == LoadMode::batch && !scenario_.mix.second_token();
        OperatingPoint r;
        if (!no_decode) r = operating_point(ps, load, f, ov);
        const bool shown = !no_decode && r.fits;
        const auto cell = [shown](double v) { return shown ? v : kNone; };
        cells_.begin(out);
        cells_.axes(out, spec_, idx_);
        cells_.number(out, "f", f);
        cells_.number(out, "ov", ov);
        cells_.text(out, "status", no_decode ? "no_decode" : point_status(r));
        // Throughput and requests of every replica together (dp of them); the rest are one replica's.
        const double dp = scenario_.hardware.deployment.dp;
        const double nums[] = {cell(r.batch),
                               cell(r.running),
                               cell(r.itl * 1e3),
                               cell(r.step * 1e3),
                               cell(r.ttft * 1e3),
                               cell(r.e2e * 1e3),
                               cell(r.throughput * dp),
                               cell(r.throughput_per_gpu),
                               cell(r.throughput_per_user),
                               cell(r.requests_per_s * dp),
                               no_decode ? kNone : r.hbm_used / 1e9};
        for (size_t i = 0; i < std::size(nums); ++i) cells_.number(out, kPointColumns[3 + i], nums[i]);
        if (shown)
            cells_.text(out, "binding", name(r.binding));
        else
            cells_.none(out, "binding");  // nothing runs: no resource binds (null, as every other cell of the row)
        cells_.end(out);
    }

    const SweepSpec& spec_;
    const TypedGrid& grid_;
    const LoadSpec load_;
    int f_axis_, ov_axis_, load_axis_;
    CellWriter cells_;
    std::vector<std::uint64_t> idx_, work_idx_;
    std::vector<size_t> scenario_axes_;
    bool fresh_ = true;
    Scenario scenario_;
    std::optional<PreparedScenario> prepared_;  // points into scenario_: the worker never moves (held by unique_ptr)
};

}  // namespace

std::unique_ptr<RowSource> make_row_source(const SweepSpec& spec, const TypedGrid& grid, int tap_column) {
    if (spec.analysis == SweepAnalysis::prefill) return make_prefill_rows(spec, grid, tap_column);
    if (spec.analysis == SweepAnalysis::layers) return make_layers_rows(spec, grid, tap_column);
    if (const std::optional<LoadSpec> load = sweep_load(spec))
        return std::make_unique<PointRowWorker>(spec, grid, *load, tap_column);
    return std::make_unique<RowWorker>(spec, grid, tap_column);
}

}  // namespace kvroof::io::sweep_detail
