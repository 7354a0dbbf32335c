// SPDX-License-Identifier: MIT
#pragma once
// The time of one batched decode step as a function of the batch B, and the
// inverse problems the capacity and SLO ceilings need.
//
//   step(B) = combine( max(gc·B, w + gm·B),  k0 + k·B,  ov )
//
// gc: GPU FLOP-time per sequence, gm: HBM time per sequence (its KV share),
// w: the weight read (once per step), k: the offloaded path per sequence
// (max(CPU compute, CPU DRAM) + link), k0: a constant time per step on the
// offloaded path (L layers × a per-layer link latency; 0 until a latency is
// given). All coefficients in seconds, all >= 0.
//
// For fixed w the step is continuous, increasing and piecewise linear in B:
// it is built from three lines, gc·B, w + gm·B and k0 + k·B, by max and
// combine, so its slope can change only where two of them cross. Those (at
// most three) crossings are the breakpoints; between consecutive ones the step
// is one line, and the solvers below are exact on each. A new per-step term
// that is linear in B needs only its line added to `lines()`.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kvroof/physics/combine.hpp"

namespace kvroof {

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

struct StepShape {
    double w = 0;   // s, weight read per step
    double gc = 0;  // s per sequence, GPU compute
    double gm = 0;  // s per sequence, HBM (KV) traffic
    double k = 0;   // s per sequence, offloaded path (CPU + link)
    double ov = 0;
    double k0 = 0;  // s per step, offloaded path (link latency, charged once per layer)

    [[nodiscard]] double gpu_path(double b) const noexcept { return std::max(gc * b, w + gm * b); }
    [[nodiscard]] double offload_path(double b) const noexcept { return k0 + k * b; }
    [[nodiscard]] double step(double b) const noexcept {
        return combine(Seconds(gpu_path(b)), Seconds(offload_path(b)), ov).raw();
    }

    struct Line {
        double at0, slope;  // at0 + slope·B
    };
    // The lines the step is built from: GPU compute, GPU memory, offloaded path.
    [[nodiscard]] std::array<Line, 3> lines() const noexcept { return {{{0.0, gc}, {w, gm}, {k0, k}}}; }

    // Candidate points where the step changes slope: every B > 0 where two of
    // its lines cross, ascending, kUnbounded where there are fewer. A superset
    // of the true breakpoints (a crossing hidden under a third line is kept;
    // it only splits a linear piece in two).
    [[nodiscard]] std::array<double, 3> breakpoints() const noexcept {
        const auto ls = lines();
        std::array<double, 3> bp{kUnbounded, kUnbounded, kUnbounded};
        std::size_t n = 0;
        for (std::size_t i = 0; i < ls.size(); ++i) {
            for (std::size_t j = i + 1; j < ls.size(); ++j) {
                const double ds = ls[i].slope - ls[j].slope, d0 = ls[j].at0 - ls[i].at0;
                if (ds == 0) continue;  // parallel: equal everywhere or nowhere
                const double b = d0 / ds;
                if (b > 0 && std::isfinite(b)) bp[n++] = b;
            }
        }
        std::sort(bp.begin(), bp.end());
        return bp;
    }
};

namespace detail {
// Smallest B >= 0 with h(B) = target for h increasing; `piece_root(s, i)`
// solves the equation on a piece where step(B) = s·B + i. The first piece
// that reaches the target holds the root; its line is read off the step at
// the piece's ends (exact, since the step is linear between breakpoints).
template <class H, class Root>
double solve_on_pieces(const StepShape& sh, double target, H h, Root piece_root) noexcept {
    double lo = 0.0;
    for (double bp : sh.breakpoints()) {
        if (!std::isfinite(bp)) break;
        if (h(bp) >= target) {
            const double s = (sh.step(bp) - sh.step(lo)) / (bp - lo);
            return std::clamp(piece_root(s, sh.step(lo) - s * lo), lo, bp);
        }
        lo = bp;
    }
    const double x2 = lo * 2.0 + 1.0;
    const double s = (sh.step(x2) - sh.step(lo)) / (x2 - lo);
    return std::max(lo, piece_root(s, sh.step(lo) - s * lo));
}
}  // namespace detail

// Largest batch whose step time stays within `slo` seconds (0 when even an
// empty step, combine(w, k0, ov), reaches it).
[[nodiscard]] inline double batch_for_step_time(const StepShape& sh, double slo) noexcept {
    if (sh.step(0.0) >= slo) return 0.0;
    return detail::solve_on_pieces(
        sh, slo, [&](double b) { return sh.step(b); },
        [&](double s, double i) { return s > 0 ? (slo - i) / s : kUnbounded; });
}

// Largest batch whose memory footprint m1·B + m2·B/step(B) stays within
// `capacity` bytes. m1: bytes per decoding sequence; m2: byte-seconds per unit
// of decode rate, i.e. what sessions hold while prefilling or idle (Little's
// law). Unbounded when nothing is held.
[[nodiscard]] inline double batch_for_capacity(const StepShape& sh, double capacity, double m1, double m2) noexcept {
    if (m1 <= 0 && m2 <= 0) return kUnbounded;
    if (capacity <= 0) return 0.0;
    auto h = [&](double b) { return b <= 0 ? 0.0 : m1 * b + m2 * b / sh.step(b); };
    return detail::solve_on_pieces(sh, capacity, h, [&](double s, double i) {
        // m1·B + m2·B/(s·B + i) = C  ⇔  m1·s·B² + (m1·i + m2 − C·s)·B − C·i = 0
        const double a = m1 * s, bq = m1 * i + m2 - capacity * s, c = -capacity * i;
        if (a <= 0) {
            if (m1 <= 0) {  // m2·B/(sB+i) = C
                const double den = m2 - capacity * s;
                return den > 0 ? capacity * i / den : kUnbounded;
            }
            // s == 0: m1·B + m2·B/i = C
            return capacity / (m1 + (i > 0 ? m2 / i : 0.0));
        }
        const double disc = std::sqrt(std::max(0.0, bq * bq - 4 * a * c));
        // positive root, computed without cancellation
        return bq >= 0 ? (2 * -c) / (bq + disc) : (-bq + disc) / (2 * a);
    });
}

}  // namespace kvroof
