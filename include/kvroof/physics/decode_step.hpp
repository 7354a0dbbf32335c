// SPDX-License-Identifier: MIT
#pragma once
// The time of one batched decode step as a function of the batch B, and the
// inverse problems the capacity and SLO ceilings need.
//
//   step(B) = combine( max(gc·B, w + gm·B),  k·B,  ov )
//
// gc: GPU FLOP-time per sequence, gm: HBM time per sequence (its KV share),
// w: the weight read (once per step), k: the offloaded path per sequence
// (max(CPU compute, CPU DRAM) + link). All coefficients in seconds. For a
// fixed w the step is continuous, increasing and piecewise linear in B, with
// at most two breakpoints; the solvers below are exact on each piece.

#include <algorithm>
#include <array>
#include <cmath>
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

    [[nodiscard]] double gpu_path(double b) const noexcept { return std::max(gc * b, w + gm * b); }
    [[nodiscard]] double offload_path(double b) const noexcept { return k * b; }
    [[nodiscard]] double step(double b) const noexcept {
        return combine(Seconds(gpu_path(b)), Seconds(offload_path(b)), ov).raw();
    }

    // Points where the step changes slope, ascending, finite and > 0.
    [[nodiscard]] std::array<double, 2> breakpoints() const noexcept {
        double b1 = (gc > gm && w > 0) ? w / (gc - gm) : kUnbounded;  // compute overtakes HBM
        double b2 = (k > gm && w > 0) ? w / (k - gm) : kUnbounded;     // offload path overtakes memory path
        if (b2 > b1) b2 = kUnbounded;  // past b1 the GPU path is gc·B, parallel crossing only at 0
        return {std::min(b1, b2), std::max(b1, b2)};
    }
};

namespace detail {
// Smallest B >= 0 with h(B) = target for h increasing; `piece_root(lo, s, i)`
// solves the equation on a piece where step(B) = s·B + i.
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
// empty step, the weight read, exceeds it).
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
