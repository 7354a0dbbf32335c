// SPDX-License-Identifier: MIT
#pragma once
// The offload question at a fixed operating point (operating_point.hpp): the
// point at f = 0 and at the best f, each at both ends of the overlap band, the
// smallest f at which the point fits, and the verdict.

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "kvroof/analysis/operating_point.hpp"
#include "kvroof/analysis/verdict.hpp"

namespace kvroof {

struct PointBand {
    OperatingPoint conservative;  // ov = 0
    OperatingPoint optimistic;  // ov = 1
};

// kvroof's measured error at its defaults on public serving points, by model
// family: the mean absolute percentage error of outputs/accuracy.md ("Summary":
// dense models over 18 ITL, 38 throughput and 10 TTFT points; MoE models over
// 10 ITL and 25 throughput points, their one TTFT point too few to state). An
// operating point states its family's figures beside its numbers. Derived from
// the table, not chosen: tests/io/accuracy_test.cpp recomputes them and fails
// when the two differ. NaN: not stated.
struct StatedError {
    bool moe;  // the family: MoE models, else dense
    double itl, throughput, ttft;
};
inline constexpr StatedError kStatedErrorDense{false, 0.127, 0.107, 0.374};
// MoE models are stated two ways: with the expert GEMMs' efficiency stated
// (--eta-moe-gemm, as the table does where the engine's kernel has a public
// benchmark), and without it (the table with every point at --eta-compute).
inline constexpr StatedError kStatedErrorMoe{true, 0.435, 0.799, std::numeric_limits<double>::quiet_NaN()};
inline constexpr StatedError kStatedErrorMoeUnstated{true, 0.473, 1.088, std::numeric_limits<double>::quiet_NaN()};

struct PointStudy {
    LoadSpec load;
    StatedError stated_error = kStatedErrorDense;  // the model's family's
    PointBand baseline;  // f = 0
    PointBand at_f;  // at the recommended (or given) f
    std::optional<double> smallest_f_that_fits;  // on the scan grid, at ov = 0
    VerdictKind kind = VerdictKind::keep_on_gpu;
    bool f_fixed = false;
    double f = 0;
    double gain_conservative = 1, gain_optimistic = 1;  // throughput at f over f = 0 (0 fits nothing: kUnbounded)
    // The best fitting f of each end, each over f = 0 at its own ov (the chosen f's when f is fixed).
    OperatingPoint bankable, pipelined;
    double gain_bankable = 1, gain_pipelined = 1;
    // Infeasible because the engine runs every request that fits and their steps break the TPOT SLO: the most
    // requests it may run at once (--max-seqs, whole) for which f = 0 keeps the SLOs at ov = 0, and that point.
    std::optional<OperatingPoint> slo_cap;
    double slo_max_seqs = 0;
};

// f is scanned on a grid of this step: the point's throughput is not smooth in
// f where the memory fit changes, and a scan finds the best fitting f plainly.
inline constexpr double kPointFStep = 0.01;

[[nodiscard]] inline PointBand point_band(const PreparedScenario& ps, const LoadSpec& load, double f) {
    return {operating_point(ps, load, f, 0.0), operating_point(ps, load, f, 1.0)};
}

// A point that runs as asked: it fits and keeps the TPOT and TTFT SLOs.
[[nodiscard]] inline bool within_slos(const OperatingPoint& p) noexcept {
    return p.fits && p.within_slo_tpot && p.within_slo_ttft;
}

namespace detail {
// Throughput at f over f = 0's; kUnbounded where only the point serves, or only it keeps the SLOs; 0 where only
// f = 0 keeps them.
[[nodiscard]] inline double point_gain(const OperatingPoint& at, const OperatingPoint& base) noexcept {
    if (!at.fits) return 0.0;
    if (!base.fits || !(base.throughput > 0)) return kUnbounded;
    if (within_slos(at) != within_slos(base)) return within_slos(at) ? kUnbounded : 0.0;  // only one keeps the SLOs
    return at.throughput / base.throughput;
}

// The better of two candidates for an end's best f: one within the SLOs first, then the higher throughput.
[[nodiscard]] inline bool better_point(const OperatingPoint& p, const std::optional<OperatingPoint>& best) noexcept {
    if (!best) return true;
    if (within_slos(p) != within_slos(*best)) return within_slos(p);
    return p.throughput > best->throughput;
}
}  // namespace detail

namespace detail {
// The largest whole --max-seqs n below the requests f = 0 runs whose point (ov = 0) keeps the SLOs; none where
// f = 0 breaks only the TTFT SLO (a cap lengthens the queue), the load is a fixed batch, or no cap helps. Fewer
// running requests shorten the step, so the TPOT SLO holds for every n up to a largest one (bisection); the TTFT
// SLO and, open loop, serving the rate asked are then checked at that n.
[[nodiscard]] inline std::optional<std::pair<double, OperatingPoint>> slo_cap(const PreparedScenario& ps, const LoadSpec& load,
                                                                              const OperatingPoint& base) {
    if (load.mode == LoadMode::batch || load.mode == LoadMode::best || !base.fits || base.within_slo_tpot) return {};
    const auto at = [&](double n) {
        LoadSpec l = load;
        l.max_seqs = n;
        return operating_point(ps, l, 0.0, 0.0);
    };
    double lo = 1, hi = std::ceil(std::min(base.running, load.max_seqs));
    if (hi <= lo || !at(lo).within_slo_tpot) return {};
    while (hi - lo > 1) {
        const double mid = std::floor(0.5 * (lo + hi));
        (at(mid).within_slo_tpot ? lo : hi) = mid;
    }
    const OperatingPoint p = at(lo);
    if (!within_slos(p) || p.saturated) return {};
    return std::make_pair(lo, p);
}
}  // namespace detail

[[nodiscard]] inline PointStudy point_study(const Scenario& sc, const LoadSpec& load, std::optional<double> fixed_f = {}) {
    sc.check_validity();
    load.check_validity();
    const PreparedScenario ps(sc);
    PointStudy s;
    s.load = load;
    s.stated_error = !sc.model.is_moe()                 ? kStatedErrorDense
                     : sc.hardware.gpu.eta_moe_gemm > 0 ? kStatedErrorMoe
                                                        : kStatedErrorMoeUnstated;
    s.baseline = point_band(ps, load, 0.0);
    // The best fitting f at each end of the band, and the smallest that fits.
    std::optional<OperatingPoint> best_con, best_opt;
    const int steps = static_cast<int>(std::lround(1.0 / kPointFStep));
    for (int i = 0; i <= steps; ++i) {
        const double f = i * kPointFStep;
        const PointBand b = point_band(ps, load, f);
        if (b.conservative.fits && !s.smallest_f_that_fits) s.smallest_f_that_fits = f;
        if (b.conservative.fits && detail::better_point(b.conservative, best_con)) best_con = b.conservative;
        if (b.optimistic.fits && detail::better_point(b.optimistic, best_opt)) best_opt = b.optimistic;
    }
    const double g_con = best_con ? detail::point_gain(*best_con, s.baseline.conservative) : 0.0;
    const double g_opt = best_opt ? detail::point_gain(*best_opt, s.baseline.optimistic) : 0.0;
    if (fixed_f) {
        s.f_fixed = true;
        s.f = *fixed_f;
    } else if (best_con) {
        s.f = !best_opt || show_bankable_end(g_con, g_opt) ? best_con->f : best_opt->f;
    }
    s.at_f = point_band(ps, load, s.f);
    s.gain_conservative = detail::point_gain(s.at_f.conservative, s.baseline.conservative);
    s.gain_optimistic = detail::point_gain(s.at_f.optimistic, s.baseline.optimistic);
    s.bankable = fixed_f || !best_con ? s.at_f.conservative : *best_con;
    s.pipelined = fixed_f || !best_opt ? s.at_f.optimistic : *best_opt;
    s.gain_bankable = fixed_f ? s.gain_conservative : g_con;
    s.gain_pipelined = fixed_f ? s.gain_optimistic : g_opt;
    const bool con = s.bankable.f > 0 && s.bankable.fits, opt = s.pipelined.f > 0 && s.pipelined.fits;
    // Infeasible: a point fits (the given f's, or the best), yet neither it nor f = 0 keeps the SLOs at either end;
    // the load asked cannot be served within them. A given f that does not fit is not an SLO question.
    const auto kept = [](const PointBand& b) { return within_slos(b.conservative) || within_slos(b.optimistic); };
    const bool fits_somewhere = fixed_f ? s.at_f.conservative.fits || s.at_f.optimistic.fits : best_con || best_opt;
    const bool kept_somewhere =
        kept(s.baseline) ||
        (fixed_f ? kept(s.at_f) : (best_con && within_slos(*best_con)) || (best_opt && within_slos(*best_opt)));
    // A chosen f at which the point fits at neither end is DOES NOT FIT there (it read KEEP KV ON GPU where f = 0
    // did not fit either); without a chosen f, where no f fits.
    const bool chosen_misses = fixed_f && !s.at_f.conservative.fits && !s.at_f.optimistic.fits;
    s.kind = chosen_misses || (!s.smallest_f_that_fits && !s.at_f.optimistic.fits) ? VerdictKind::does_not_fit
             : fits_somewhere && !kept_somewhere                                   ? VerdictKind::infeasible
                                                 : offload_kind(con, s.gain_bankable, opt, s.gain_pipelined);
    if (s.kind == VerdictKind::infeasible)
        if (const auto cap = detail::slo_cap(ps, load, s.baseline.conservative)) {
            s.slo_max_seqs = cap->first;
            s.slo_cap = cap->second;
        }
    return s;
}

}  // namespace kvroof
