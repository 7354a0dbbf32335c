// SPDX-License-Identifier: MIT
#pragma once
// The right end of a feasible interval: the largest x in [lo, hi] with
// g(x) <= 0, for g continuous and non-decreasing with g(lo) <= 0 < g(hi).
//
// Regula falsi with the Illinois modification (Dowell & Jarratt 1971): each
// step interpolates g linearly between the two ends of the bracket, and an end
// kept twice in a row has its g halved, so both ends converge (superlinearly,
// order ≈ 1.44, where g is smooth; in one step where g is linear). Every step
// stays strictly inside the bracket and keeps g(lo) <= 0 < g(hi), so the
// answer is always feasible; a step that fails to halve the bracket in three
// tries is replaced by a bisection, so the worst case is bisection's.

#include <algorithm>
#include <cmath>

namespace kvroof::detail {

template <class G>
[[nodiscard]] double last_feasible(G g, double lo, double g_lo, double hi, double g_hi, double rel_tol) {
    int kept = 0;  // +n: lo kept n times in a row, −n: hi
    double width = hi - lo;
    int slow = 0;
    for (int i = 0; i < 200 && hi - lo > rel_tol * std::abs(hi); ++i) {
        double x = (lo * g_hi - hi * g_lo) / (g_hi - g_lo);
        if (!(x > lo && x < hi) || slow >= 3) {
            x = 0.5 * (lo + hi);
            slow = 0;
        }
        const double gx = g(x);
        if (gx <= 0) {
            lo = x;
            g_lo = gx;
            if (kept < 0) g_hi *= 0.5;  // hi kept again
            kept = kept < 0 ? kept - 1 : -1;
        } else {
            hi = x;
            g_hi = gx;
            if (kept > 0) g_lo *= 0.5;
            kept = kept > 0 ? kept + 1 : 1;
        }
        if (gx == 0) break;  // x is the root itself
        if (hi - lo > 0.5 * width) {
            ++slow;
        } else {
            width = hi - lo;
            slow = 0;
        }
    }
    return lo;
}

}  // namespace kvroof::detail
