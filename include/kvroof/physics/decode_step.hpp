// SPDX-License-Identifier: MIT
#pragma once
// The time of one batched decode step as a function of the batch B, and the
// inverse problems the capacity and SLO ceilings need.
//
//   step(B) = combine( max(gc·B, w + gm·B) + g0 + gx·B,  k0 + k·B,  ov ) + c0
//
// gc: GPU FLOP-time per sequence, gm: HBM time per sequence (its KV share),
// w: the weight read (once per step), g0 + gx·B: serial GPU work after the
// roofline (the tensor-parallel all-reduces: α per all-reduce, bytes per
// sequence; 0 at one GPU; and in g0 the MoE layers' fixed latency), k: the
// offloaded path per sequence
// (max(CPU compute, CPU DRAM) + link), k0: a constant time per step on the
// offloaded path (L layers × a per-layer link latency; 0 until a latency is
// given), c0: a fixed time per step outside both paths (kernel launch and
// scheduling; 0 unless given). All coefficients in seconds, all >= 0.
//
// For fixed w the step is continuous, increasing and piecewise linear in B:
// it is built from three lines, g0 + (gc+gx)·B, w + g0 + (gm+gx)·B and k0 + k·B, by max and
// combine, so its slope can change only where two of them cross. Those (at
// most three) crossings are the breakpoints; between consecutive ones the step
// is one line, and the solvers below are exact on each, whatever the lines'
// coefficients: a new term linear in B (a per-step constant like k0, or a
// per-sequence one) moves a line, and the breakpoints follow.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "kvroof/physics/combine.hpp"

namespace kvroof {

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

struct StepShape {
    double w = 0;  // s, weight read per step
    double gc = 0;  // s per sequence, GPU compute
    double gm = 0;  // s per sequence, HBM (KV) traffic
    double k = 0;  // s per sequence, offloaded path (CPU + link)
    double ov = 0;
    double k0 = 0;  // s per step, offloaded path (link latency, charged once per layer)
    double c0 = 0;  // s per step, serial overhead outside both paths (launch, scheduling)
    double g0 = 0;  // s per step on the GPU path after its roofline (all-reduce latencies, MoE layers' fixed latency)
    double gx = 0;  // s per sequence on the GPU path after its roofline (all-reduce bytes)

    [[nodiscard]] double gpu_roofline(double b) const noexcept { return std::max(gc * b, w + gm * b); }
    [[nodiscard]] double gpu_comm(double b) const noexcept { return g0 + gx * b; }
    [[nodiscard]] double gpu_path(double b) const noexcept { return gpu_roofline(b) + gpu_comm(b); }
    [[nodiscard]] double offload_path(double b) const noexcept { return k0 + k * b; }
    [[nodiscard]] double step(double b) const noexcept {
        return combine(Seconds(gpu_path(b)), Seconds(offload_path(b)), ov).raw() + c0;
    }

    struct Line {
        double at0, slope;  // at0 + slope·B
    };
    // The lines the step is built from: GPU compute, GPU memory, offloaded path.
    [[nodiscard]] std::array<Line, 3> lines() const noexcept { return {{{g0, gc + gx}, {w + g0, gm + gx}, {k0, k}}}; }

    // Candidate points where the step changes slope, ascending, kUnbounded
    // where there are fewer: every B > 0 where the two GPU lines cross and,
    // when ov > 0, where the offloaded line crosses either (at ov = 0 the
    // combine is the plain sum, whose slope changes only with the GPU path's).
    // A superset of the true kinks: a crossing hidden under the third line
    // only splits a linear piece in two.
    [[nodiscard]] std::array<double, 3> breakpoints() const noexcept {
        const auto ls = lines();
        auto cross = [](Line p, Line q) {
            const double ds = p.slope - q.slope;
            if (ds == 0) return kUnbounded;  // parallel: equal everywhere or nowhere
            const double b = (q.at0 - p.at0) / ds;
            return b > 0 && b < kUnbounded ? b : kUnbounded;
        };
        std::array<double, 3> bp{cross(ls[0], ls[1]), kUnbounded, kUnbounded};
        if (ov != 0) {
            bp[1] = cross(ls[0], ls[2]);
            bp[2] = cross(ls[1], ls[2]);
            if (bp[0] > bp[1]) std::swap(bp[0], bp[1]);
            if (bp[1] > bp[2]) std::swap(bp[1], bp[2]);
            if (bp[0] > bp[1]) std::swap(bp[0], bp[1]);
        }
        return bp;
    }
};

// The step's linear pieces for one shape: its breakpoints and the step at
// each and at 0, computed once and shared by every solve on that shape.
struct StepPieces {
    StepShape sh;
    std::array<double, 3> bp, step_bp;  // the first n are set
    std::size_t n = 0;  // finite breakpoints
    double step0 = 0;

    StepPieces() noexcept {}  // NOLINT: bp and step_bp are read only below n
    explicit StepPieces(const StepShape& s) noexcept : sh(s), step0(s.step(0.0)) {
        for (double b : s.breakpoints()) {
            if (!std::isfinite(b)) break;
            bp[n] = b;
            step_bp[n] = s.step(b);
            ++n;
        }
    }
};

namespace detail {
// Smallest B >= 0 with h(B, step(B)) = target for h increasing in B;
// `piece_root(s, i)` solves the equation on a piece where step(B) = s·B + i.
// The first piece that reaches the target holds the root; its line is read
// off the step at the piece's ends (exact: the step is linear between
// breakpoints).
template <class H, class Root>
double solve_on_pieces(const StepPieces& p, double target, H h, Root piece_root) noexcept {
    double lo = 0.0, step_lo = p.step0;
    for (std::size_t j = 0; j < p.n; ++j) {
        const double bp = p.bp[j], step_bp = p.step_bp[j];
        if (h(bp, step_bp) >= target) {
            const double s = (step_bp - step_lo) / (bp - lo);
            return std::clamp(piece_root(s, step_lo - s * lo), lo, bp);
        }
        lo = bp;
        step_lo = step_bp;
    }
    const double x2 = lo * 2.0 + 1.0;
    const double s = (p.sh.step(x2) - step_lo) / (x2 - lo);
    return std::max(lo, piece_root(s, step_lo - s * lo));
}
}  // namespace detail

// Largest batch whose step time stays within `slo` seconds (0 when even an
// empty step, combine(w, k0, ov), reaches it).
[[nodiscard]] inline double batch_for_step_time(const StepPieces& p, double slo) noexcept {
    if (p.step0 >= slo) return 0.0;
    return detail::solve_on_pieces(
        p, slo, [](double, double step) { return step; }, [&](double s, double i) { return s > 0 ? (slo - i) / s : kUnbounded; });
}
[[nodiscard]] inline double batch_for_step_time(const StepShape& sh, double slo) noexcept {
    return batch_for_step_time(StepPieces(sh), slo);
}

// Largest batch whose inter-token latency a user sees, step(B) + κ·B, stays
// within `slo` seconds: κ·B is the prefill time interleaved per decode token
// (κ = mean TTFT / Σ p·O). step + κ·B is piecewise linear on the step's pieces.
[[nodiscard]] inline double batch_for_itl(const StepPieces& p, double slo, double kappa) noexcept {
    if (p.step0 >= slo) return 0.0;
    return detail::solve_on_pieces(
        p, slo, [&](double b, double step) { return step + kappa * b; },
        [&](double s, double i) { return s + kappa > 0 ? (slo - i) / (s + kappa) : kUnbounded; });
}

// Largest batch whose memory footprint m1·B + m2·B/(step(B) + κ·B) stays
// within `capacity` bytes. m1: bytes per decoding sequence; m2: byte-seconds
// per unit of decode rate, i.e. what sessions hold while prefilling or idle
// (Little's law); B/(step + κ·B) the tokens decoded per second, κ·B the
// prefill time interleaved per decode token (as batch_for_itl's). Unbounded
// when nothing is held.
[[nodiscard]] inline double batch_for_capacity(const StepPieces& p, double capacity, double m1, double m2,
                                               double kappa) noexcept {
    if (m1 <= 0 && m2 <= 0) return kUnbounded;
    if (capacity <= 0) return 0.0;
    auto h = [&](double b, double step) { return b <= 0 ? 0.0 : m1 * b + m2 * b / (step + kappa * b); };
    return detail::solve_on_pieces(p, capacity, h, [&](double s_step, double i) {
        const double s = s_step + kappa;  // the line of step + κ·B on this piece
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
[[nodiscard]] inline double batch_for_capacity(const StepPieces& p, double capacity, double m1, double m2) noexcept {
    return batch_for_capacity(p, capacity, m1, m2, 0.0);
}
[[nodiscard]] inline double batch_for_capacity(const StepShape& sh, double capacity, double m1, double m2) noexcept {
    return batch_for_capacity(StepPieces(sh), capacity, m1, m2);
}

}  // namespace kvroof
