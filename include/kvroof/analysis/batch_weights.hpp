// SPDX-License-Identifier: MIT
#pragma once
// The batch ceilings' solvers over a step shape whose weight read may depend
// on the batch (MoE): the step's pieces at a fixed w, kept for the ceilings of
// one shape, and the ceiling when w follows the batch (batch_with_weights).

#include <algorithm>
#include <cmath>

#include "kvroof/physics/call_demand.hpp"
#include "kvroof/physics/decode_step.hpp"
#include "kvroof/physics/monotone_root.hpp"

namespace kvroof {

namespace detail {
// The step's pieces at a fixed w for one shape: the batch ceilings ask for the
// same one or two w (dense: the one weight read; MoE: the bracket ends), so
// two are kept.
struct PiecesAt {
    const StepShape& shape;
    StepPieces cache[2];
    double cached_w[2] = {-1.0, -1.0};

    explicit PiecesAt(const StepShape& s) noexcept : shape(s) {}
    const StepPieces& operator()(double w) noexcept {
        const int j = cached_w[0] == w || cached_w[0] < 0 ? 0 : cached_w[1] == w || cached_w[1] < 0 ? 1 : 0;
        if (cached_w[j] != w) {
            StepShape s = shape;
            s.w = w;
            cache[j] = StepPieces(s);
            cached_w[j] = w;
        }
        return cache[j];
    }
};
}  // namespace detail

namespace detail {
// The batch ceiling when the weight read per step depends on the batch (MoE):
// the largest B with `excess(B) <= 0`, where excess evaluates the constraint
// (footprint − capacity, or step − SLO) with w(B) = weights_read(B) / hbm_bw
// at that same B.
//
// Why this is well posed. w(B) = w0 + wr·(1 − q^B) is increasing and concave
// with w(0) = w0 > 0, so w(B)/B is non-increasing. The step is positively
// homogeneous in its coefficients, step(B)/B = combine(max(gc, w(B)/B + gm),
// k0/B + k, ov), and combine is non-decreasing in each operand for ov in
// [0, 1] (the all-reduces add g0/B + gx, also non-increasing); hence step(B)/B is non-increasing and the decode rate B/step(B) is
// non-decreasing. So both constraints are monotone in B: the footprint
// m1·B + m2·B/step(B) (capacity) and step(B) itself (SLO) never decrease, and
// the feasible set is an interval [0, B*].
//
// Bracket. For a fixed w, `solve(w)` is the exact ceiling (decode_step.hpp).
// Since w0 <= w(B) <= w_max = w(∞), the true constraint lies between the two
// fixed-w ones: step_w0(B) <= step(B) <= step_wmax(B) for every B. For the
// SLO this gives solve(w_max) <= B* <= solve(w0); for capacity the footprint
// falls as the step grows, so solve(w0) <= B* <= solve(w_max). Either way B*
// lies between solve(w0) and solve(w_max). In that bracket excess is
// continuous and non-decreasing (smooth between the step's breakpoints), so
// the Illinois root finder (monotone_root.hpp) converges to B*, to a relative
// width of 1e-12, in a handful of evaluations, and returns a feasible B.
//
// (An earlier version iterated B = solve(w(B)) assuming B − solve(w(B)) is
// increasing. With held idle sessions the capacity solve(w) *rises* with w —
// a slower step holds fewer idle sessions per decoding one, by Little's law —
// so that difference is not monotone and the bracket [0, solve(w0)] missed the
// root: better HBM bandwidth could shrink b_cap_hbm from 21 to 1.8.)
template <class Solve, class Excess>
double batch_with_weights(const ModelConstants& mc, double hbm_bw, Solve solve, Excess excess) {
    if (!mc.moe) return solve(mc.weights_read(1.0).raw() / hbm_bw);
    const double a = solve(mc.weights_read(0.0).raw() / hbm_bw);
    const double b = solve(mc.weights_read(kUnbounded).raw() / hbm_bw);
    double lo = std::min(a, b), hi = std::max(a, b);
    if (!std::isfinite(lo)) return lo;  // unbounded for every w
    if (!(lo >= 0)) lo = 0.0;
    if (!std::isfinite(hi)) {  // grow a finite upper end, or the ceiling is unbounded
        hi = std::max(1.0, 2.0 * lo);
        while (excess(hi) <= 0) {
            if (hi > 1e30) return kUnbounded;
            lo = hi;
            hi *= 2.0;
        }
    }
    if (hi - lo <= 1e-12 * hi) return lo;
    const double g_lo = excess(lo), g_hi = excess(hi);
    if (g_lo > 0) return lo;  // rounding at the proven lower end
    if (g_hi <= 0) return hi;  // the upper end is itself feasible
    return last_feasible(excess, lo, g_lo, hi, g_hi, 1e-12);
}
}  // namespace detail

}  // namespace kvroof
