// SPDX-License-Identifier: MIT
// Sweep rows of the offload questions besides the verdict. --analysis prefill:
// each row is the κ_crit answer of its scenario at its ov
// (analysis/prefill_study.hpp), the numbers `kvroof prefill` shows for the
// same figures. --analysis layers: each row is the layer-offload row of its
// scenario (analysis/layers_study.hpp), `kvroof layers --model`'s.
#include <limits>

#include "kvroof/analysis/layers_study.hpp"
#include "kvroof/analysis/prefill_study.hpp"
#include "sweep_rows.hpp"

namespace kvroof::io::sweep_detail {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// A worker whose row is one function of the row's scenario (and its axes):
// the point's scenario brought up to date, then append_row, then the tap.
class ScenarioRowWorker : public RowSource {
public:
    ScenarioRowWorker(const SweepSpec& spec, const TypedGrid& grid, int tap_column)
        : spec_(spec), cells_(spec.format == SweepFormat::csv, tap_column), idx_(spec.axes.size()), grid_(grid) {}

    void rows(std::uint64_t begin, std::uint64_t end, std::string& out, std::vector<double>* tap) final {
        for (std::uint64_t p = begin; p < end; ++p) {
            decompose(spec_, p, idx_);
            grid_.update(idx_, work_idx_, fresh_, scenario_);
            append_row(out);
            if (tap && cells_.tapping()) tap->push_back(cells_.tapped());
        }
    }

protected:
    virtual void append_row(std::string& out) = 0;

    const SweepSpec& spec_;
    CellWriter cells_;
    std::vector<std::uint64_t> idx_;
    Scenario scenario_;

private:
    const TypedGrid& grid_;
    std::vector<std::uint64_t> work_idx_;
    bool fresh_ = true;
};

class PrefillRowWorker final : public ScenarioRowWorker {
public:
    PrefillRowWorker(const SweepSpec& spec, const TypedGrid& grid, int tap_column)
        : ScenarioRowWorker(spec, grid, tap_column), ov_axis_(axis_of(spec, "ov")) {}

private:
    void append_row(std::string& out) override {
        const double ov =
            ov_axis_ < 0 ? 0.0 : spec_.axes[static_cast<size_t>(ov_axis_)].number(idx_[static_cast<size_t>(ov_axis_)]);
        const PrefillPoint p = prefill_point(prefill_setup(scenario_, ov));
        const KappaResult& r = p.result;
        cells_.begin(out);
        cells_.axes(out, spec_, idx_);
        cells_.number(out, kPrefillColumns[0].name, ov);
        cells_.text(out, kPrefillColumns[1].name, name(r.regime));
        // In kPrefillColumns order from kappa_crit; κ_ratio is infinite (an empty cell) with no new token.
        const double nums[] = {r.kappa_crit,
                               r.kappa_ratio,
                               r.t_gpu * 1e3,
                               r.t_link * 1e3,
                               r.ttft * 1e3,
                               r.ttft_serial * 1e3,
                               r.p_oh,
                               r.link_share,
                               r.utilisation,
                               p.f_pf.raw() / 1e9,
                               p.b_kv.raw(),
                               p.vram.raw() > 0 ? p.vram.raw() / 1e9 : kNone,  // none left for KV: empty
                               p.scheduler ? p.scheduler->n_max : kNone,
                               p.scheduler ? p.scheduler->t_sched : kNone};
        static_assert(std::size(nums) + 2 == std::size(kPrefillColumns));
        for (size_t i = 0; i < std::size(nums); ++i) cells_.number(out, kPrefillColumns[i + 2].name, nums[i]);
        cells_.end(out);
    }

    int ov_axis_;
};

class LayersRowWorker final : public ScenarioRowWorker {
public:
    using ScenarioRowWorker::ScenarioRowWorker;

private:
    void append_row(std::string& out) override {
        const LayersQuestion q = layers_question(scenario_);
        const LayerOffloadRow r = layer_offload(q.checkpoint, q.host, q.tp);
        const bool any = r.has_ceiling();
        const auto tps = [any](double v) { return any ? v : kNone; };
        const auto runs = [&r](double v) { return r.runs_on_card ? v : kNone; };  // a card that runs no layer: empty
        cells_.begin(out);
        cells_.axes(out, spec_, idx_);
        cells_.text(out, kLayersColumns[0].name, !r.runs_on_card ? "does_not_fit" : any ? "offload" : "fits");
        // In kLayersColumns order from layer_rank_GB.
        const double nums[] = {r.layer_rank.raw() / 1e9,
                               runs(static_cast<double>(r.resident)),
                               runs(static_cast<double>(r.offloaded)),
                               runs(r.transfer_per_token.raw() / 1e9),
                               runs(r.copy_s * 1e3),
                               runs(r.compute_s * 1e3),
                               tps(r.serial_tps),
                               tps(r.overlap_tps),
                               tps(r.max_hideable),
                               runs(r.expert_transfer_per_token.raw() / 1e9),
                               tps(r.expert_serial_tps),
                               tps(r.expert_overlap_tps)};
        static_assert(std::size(nums) + 1 == std::size(kLayersColumns));
        for (size_t i = 0; i < std::size(nums); ++i) cells_.number(out, kLayersColumns[i + 1].name, nums[i]);
        cells_.end(out);
    }
};

}  // namespace

std::unique_ptr<RowSource> make_layers_rows(const SweepSpec& spec, const TypedGrid& grid, int tap_column) {
    return std::make_unique<LayersRowWorker>(spec, grid, tap_column);
}

std::unique_ptr<RowSource> make_prefill_rows(const SweepSpec& spec, const TypedGrid& grid, int tap_column) {
    return std::make_unique<PrefillRowWorker>(spec, grid, tap_column);
}

}  // namespace kvroof::io::sweep_detail
