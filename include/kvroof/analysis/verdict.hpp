// SPDX-License-Identifier: MIT
#pragma once
// The one-shot answer: the throughput band at f = 0 and at the best f, the
// binding resources, the gain idle-session parking alone gives, and an
// optional calibration of ov against one measured throughput.

#include <limits>
#include <optional>

#include "kvroof/analysis/optimise_f.hpp"
#include "kvroof/analysis/serving.hpp"

namespace kvroof {

// A gain below this is treated as no gain where a search needs a stopping
// rule (the ladder, the operating-point scan's choice of f).
inline constexpr double kGainThreshold = 1.02;

// How well kvroof predicts the ratio of two throughputs on one machine — an
// offload gain is such a ratio: the median error of the predicted ratio over
// every pair of measured points of one series in the accuracy table
// (outputs/accuracy.md, "How well a gain is predicted"; 90 pairs, 14 series).
// Derived from the table, not chosen: tests/io/accuracy_test.cpp recomputes
// it and fails when the two differ. A gain below 1 + this is MARGINAL.
inline constexpr double kGainUncertainty = 0.084;

struct Band {
    ServingPoint conservative;  // ov = 0
    ServingPoint optimistic;  // ov = 1
};

[[nodiscard]] inline Band band(const PreparedScenario& ps, double f) {
    const MixDemand d = mix_demand(ps, f);  // shared by both ends
    return {evaluate(ps, d, 0.0), evaluate(ps, d, 1.0)};
}

// The band as a table row needs it (a sweep's): every field of band(ps, f)
// but the batch ceilings that do not set the batch, left unbounded (a ceiling
// is solved only where the batch so far violates its constraint). The same
// throughput, batch, TPOT, TTFT and bindings as band(ps, f), cheaper.
[[nodiscard]] inline Band band_row(const PreparedScenario& ps, double f) {
    const MixDemand d = mix_demand(ps, f);
    const detail::BatchShape lo = detail::batch_shape(ps, d, 0.0);  // the two ends differ only in ov
    detail::BatchShape hi = lo;
    hi.shape.ov = 1.0;
    return {detail::evaluate_full(ps, d, lo, detail::Detail::row), detail::evaluate_full(ps, d, hi, detail::Detail::row)};
}

// Throughput at f over the baseline's: kUnbounded where only the point serves, NaN where neither does (0 over 0
// is no ratio: shown "—", null in JSON; every comparison with it is false, so it never reads as a gain).
[[nodiscard]] inline double gain(const ServingPoint& at_f, const ServingPoint& baseline) noexcept {
    if (!(baseline.throughput > 0)) return at_f.throughput > 0 ? kUnbounded : std::numeric_limits<double>::quiet_NaN();
    return at_f.throughput / baseline.throughput;
}

// ov in [0, 1] at which the model's throughput at f equals `measured` tokens/s
// (bisection; throughput does not decrease with ov). Empty when the
// measurement lies outside the band: then something other than overlap is off.
[[nodiscard]] inline std::optional<double> fit_overlap(const PreparedScenario& ps, double f, double measured) {
    const double lo_tps = evaluate(ps, f, 0.0).throughput;
    const double hi_tps = evaluate(ps, f, 1.0).throughput;
    const double tol = 1e-9 * std::max(1.0, hi_tps);
    if (measured < lo_tps - tol || measured > hi_tps + tol) return std::nullopt;
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 60; ++i) {
        const double mid = 0.5 * (lo + hi);
        (evaluate(ps, f, mid).throughput < measured ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

enum class VerdictKind {
    offload,  // bankable: the conservative end gains more than the stated uncertainty
    offload_with_overlap,  // only the optimistic end does: needs a layer-ahead pipeline
    marginal,  // an end gains, but less than the model's stated uncertainty (kGainUncertainty)
    keep_on_gpu,  // no end of the band gains
    does_not_fit,  // weights exceed HBM, or one session's KV fits at no f
    infeasible,  // no batch meets the SLOs even without offload
};

// The spelling in JSON, CSV and reports.
[[nodiscard]] constexpr std::string_view name(VerdictKind k) noexcept {
    switch (k) {
        case VerdictKind::offload: return "offload";
        case VerdictKind::offload_with_overlap: return "offload_with_overlap";
        case VerdictKind::marginal: return "marginal";
        case VerdictKind::keep_on_gpu: return "keep_on_gpu";
        case VerdictKind::does_not_fit: return "does_not_fit";
        case VerdictKind::infeasible: return "infeasible";
    }
    return "?";
}

struct Calibration {
    double measured_tps = 0;
    double f = 0;
    std::optional<double> ov;  // empty: outside the band
    double band_low = 0, band_high = 0;  // tok/s at f, ov = 0 and 1
    double calibrated_gain = 0;  // measured / baseline
    std::optional<ServingPoint> best_at_ov;  // best f at the fitted ov
};

struct Verdict {
    VerdictKind kind = VerdictKind::keep_on_gpu;
    bool session_does_not_fit = false;  // does_not_fit because of one session's KV, not the weights
    std::optional<double> smallest_f_that_fits;  // the least f at which one session of the longest class fits
    bool f_fixed = false;  // the user chose f; no optimisation
    double f = 0;  // the recommended (or chosen) offload fraction
    Band baseline;  // f = 0
    Band at_f;  // at the recommended f
    ServingPoint best_conservative;  // f*_con at ov = 0: the bankable offload
    ServingPoint best_optimistic;  // f*_opt at ov = 1: the pipelined offload
    // Each best end over f = 0 at its own ov, each at its own f: two facts, not one band.
    double gain_bankable = 1, gain_pipelined = 1;
    double gain_conservative = 1, gain_optimistic = 1;  // both ends at the one f (the band at f)
    // Idle sessions: the verdict's policy and what parking alone (f = 0) gives.
    IdlePolicy idle = IdlePolicy::hold;
    Band parked_baseline;  // f = 0 with idle sessions parked in CPU DRAM
    double parking_gain_conservative = 1, parking_gain_optimistic = 1;
    std::optional<Calibration> calibration;
};

// The offload answer from the two ends' gains, each counted only where that
// end offloads (f > 0): OFFLOAD when the bankable end gains more than the
// stated uncertainty, OFFLOAD ONLY WITH OVERLAP when only the pipelined end
// does, MARGINAL when an end gains less than that, KEEP KV ON GPU when none
// gains. The solved verdict and the operating point both answer by it.
[[nodiscard]] constexpr VerdictKind offload_kind(bool bankable_offloads, double gain_bankable, bool pipelined_offloads,
                                                 double gain_pipelined, double uncertainty = kGainUncertainty) noexcept {
    const double clear = 1.0 + uncertainty;
    if (bankable_offloads && gain_bankable >= clear) return VerdictKind::offload;
    if (pipelined_offloads && gain_pipelined >= clear) return VerdictKind::offload_with_overlap;
    if ((bankable_offloads && gain_bankable > 1.0) || (pipelined_offloads && gain_pipelined > 1.0)) return VerdictKind::marginal;
    return VerdictKind::keep_on_gpu;
}

// Which end's f the band is shown at: the bankable one when it gains clearly,
// else the end that gains more.
[[nodiscard]] constexpr bool show_bankable_end(double gain_bankable, double gain_pipelined) noexcept {
    const double clear = 1.0 + kGainUncertainty;
    return gain_bankable >= clear || (gain_pipelined < clear && gain_bankable >= gain_pipelined);
}

[[nodiscard]] inline VerdictKind classify(const Verdict& v, const ServingPoint& base_c,
                                          double uncertainty = kGainUncertainty) noexcept {
    if (!base_c.feasible && !v.at_f.conservative.feasible && !v.at_f.optimistic.feasible) return VerdictKind::infeasible;
    const bool con = v.f_fixed ? v.f > 0 : v.best_conservative.f > 0;
    const bool opt = v.f_fixed ? v.f > 0 : v.best_optimistic.f > 0;
    return offload_kind(con, v.gain_bankable, opt, v.gain_pipelined, uncertainty);
}

struct VerdictOptions {
    std::optional<double> fixed_f;
    std::optional<double> measured_tps;
    // What a caller that shows neither may skip (a sweep row: one verdict per
    // row): the baseline under the other idle policy (parked_baseline and the
    // parking gains are then left at their defaults; nothing else reads them),
    // and the scenario's checks, where the caller has run them on this very
    // scenario (a sweep checks every point before its first row).
    bool parking = true;
    bool checked = false;
};

// DOES NOT FIT at the f the user chose only: the scenario serves at other f (the baseline and the best f stand).
[[nodiscard]] inline bool chosen_f_does_not_fit(const Verdict& v) noexcept {
    return v.f_fixed && !v.session_does_not_fit && v.kind == VerdictKind::does_not_fit && v.at_f.conservative.fits;
}

[[nodiscard]] inline Verdict make_verdict(const Scenario& scenario, const VerdictOptions& opt = {}) {
    if (!opt.checked) scenario.check_validity();
    const PreparedScenario ps(scenario);
    Verdict v;
    v.idle = scenario.policy.idle;
    v.smallest_f_that_fits = ps.smallest_f_that_fits();
    v.baseline = band(ps, 0.0);
    const auto best = optimise_f_band(ps, {&v.baseline.conservative, &v.baseline.optimistic});
    v.best_conservative = best[0];
    v.best_optimistic = best[1];

    if (opt.parking) {  // the baseline under the other idle policy; the scenario's own is v.baseline
        const bool holds = scenario.policy.idle == IdlePolicy::hold;
        const Band other_baseline = band(ps.with_idle(holds ? IdlePolicy::park : IdlePolicy::hold), 0.0);
        v.parked_baseline = holds ? other_baseline : v.baseline;
        const Band& held_baseline = holds ? v.baseline : other_baseline;
        v.parking_gain_conservative = gain(v.parked_baseline.conservative, held_baseline.conservative);
        v.parking_gain_optimistic = gain(v.parked_baseline.optimistic, held_baseline.optimistic);
    }

    const auto& base_c = v.baseline.conservative;
    const auto& base_o = v.baseline.optimistic;
    v.gain_bankable = gain(v.best_conservative, base_c);
    v.gain_pipelined = gain(v.best_optimistic, base_o);
    if (!base_c.fits || !ps.smallest_f_that_fits()) {
        v.kind = VerdictKind::does_not_fit;
        v.session_does_not_fit = base_c.fits;
        v.at_f = v.baseline;
        v.gain_conservative = gain(v.at_f.conservative, base_c);
        v.gain_optimistic = gain(v.at_f.optimistic, base_o);
        return v;
    }
    if (opt.fixed_f) {
        v.f_fixed = true;
        v.f = *opt.fixed_f;
    } else {
        v.f = show_bankable_end(v.gain_bankable, v.gain_pipelined) ? v.best_conservative.f : v.best_optimistic.f;
    }
    // The end searched at v.f is already evaluated there (the same evaluate).
    if (!v.f_fixed && v.f == v.best_conservative.f)
        v.at_f = {v.best_conservative, evaluate(ps, v.f, 1.0)};
    else if (!v.f_fixed && v.f == v.best_optimistic.f)
        v.at_f = {evaluate(ps, v.f, 0.0), v.best_optimistic};
    else
        v.at_f = band(ps, v.f);
    v.gain_conservative = gain(v.at_f.conservative, base_c);
    v.gain_optimistic = gain(v.at_f.optimistic, base_o);
    if (v.f_fixed) {  // the chosen f is judged, not the best ones
        v.gain_bankable = v.gain_conservative;
        v.gain_pipelined = v.gain_optimistic;
    }
    v.kind = classify(v, base_c);
    // A chosen f at which one session's KV does not fit (its GPU share in HBM, its CPU share in DRAM) is no serving
    // point at all: DOES NOT FIT at that f, with the f it needs (it read INFEASIBLE, "no batch fits").
    if (v.f_fixed && !v.at_f.conservative.session_fits) v.kind = VerdictKind::does_not_fit;

    if (opt.measured_tps) {
        Calibration c;
        c.measured_tps = *opt.measured_tps;
        c.f = v.f;
        c.band_low = v.at_f.conservative.throughput;
        c.band_high = v.at_f.optimistic.throughput;
        c.ov = fit_overlap(ps, v.f, c.measured_tps);
        if (c.ov) {
            // Over f = 0 at the fitted ov, as every gain at a given ov (parked reloads overlap at f = 0 too).
            const double base = evaluate(ps, 0.0, *c.ov).throughput;
            c.calibrated_gain = base > 0 ? c.measured_tps / base : 0.0;
            c.best_at_ov = optimise_f(ps, *c.ov);
        }
        v.calibration = c;
    }
    return v;
}

}  // namespace kvroof
