// SPDX-License-Identifier: MIT
#pragma once
// The one-dimensional search optimise_f.hpp runs on X(f): a sorted store of
// samples, the kink and parabola models, and the refinements around the best
// sample, from an edge, and of other cells that could hold a higher peak.
// Everything here sees X only through `eval(f)`; the method is explained in
// optimise_f.hpp's header comment.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

namespace kvroof {

namespace detail {

// Samples of X(f), sorted by f; a small fixed store (no allocation). One
// search takes at most 19 (scan) + 43 (edge) + 40 (refinement) + 1 (the end
// probe) + 3·41 (screening) = 226 samples, so it never fills.
struct FSamples {
    static constexpr std::size_t kCap = 256;
    std::array<double, kCap> f, x;  // the first n are set
    std::size_t n = 0;

    FSamples() noexcept {}  // NOLINT: f and x are read only below n

    // Index of the sample at f, inserting it (x from eval) when new.
    template <class Eval>
    std::size_t add(double at, Eval& eval) {
        const auto it = std::lower_bound(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n), at);
        const auto i = static_cast<std::size_t>(it - f.begin());
        if (i < n && f[i] == at) return i;
        if (n == kCap) return i < n ? i : n - 1;  // full: no new sample (never reached in practice)
        for (std::size_t j = n; j > i; --j) {
            f[j] = f[j - 1];
            x[j] = x[j - 1];
        }
        f[i] = at;
        x[i] = eval(at);
        ++n;
        return i;
    }
};

// Where the branch through samples i0, i1 (rising) meets the branch through
// i2, i3 (falling), each extended as a line in 1/X, the seconds per output
// token; writes the throughput there. In 1/X a branch is nearly straight: it
// is the binding resource's seconds per call over Σp·O, linear in f for the
// offloaded resources and, for the GPU with the batch capacity-bound, its
// step's weight read spread over B ∝ 1/(1 − f) — so the meeting is exact or
// close where lines in X itself (X = Σp·O / (a + b·f)) overshoot a curved branch.
inline bool kink_model(const FSamples& s, std::size_t i0, std::size_t i1, std::size_t i2, std::size_t i3, double& at,
                       double& height) noexcept {
    if (!(s.x[i0] > 0 && s.x[i1] > 0 && s.x[i2] > 0 && s.x[i3] > 0)) return false;
    const double y0 = 1.0 / s.x[i0], y1 = 1.0 / s.x[i1], y2 = 1.0 / s.x[i2], y3 = 1.0 / s.x[i3];
    const double sl = (y1 - y0) / (s.f[i1] - s.f[i0]);
    const double sr = (y3 - y2) / (s.f[i3] - s.f[i2]);
    if (!(sl < 0 && sr > 0)) return false;
    // y1 + sl·(u − f1) = y2 + sr·(u − f2)
    at = (y2 - y1 + sl * s.f[i1] - sr * s.f[i2]) / (sl - sr);
    height = 1.0 / (y1 + sl * (at - s.f[i1]));
    return std::isfinite(at) && std::isfinite(height);
}

// Vertex of the parabola through three samples, when it is a maximum.
inline bool parabola_model(const FSamples& s, std::size_t k, double& at) noexcept {
    const double a = s.f[k - 1], b = s.f[k], c = s.f[k + 1];
    const double fa = s.x[k - 1], fb = s.x[k], fc = s.x[k + 1];
    const double p = (b - a) * (fb - fc), q = (b - c) * (fb - fa);
    const double den = 2.0 * (p - q);
    if (!(den < 0 || den > 0)) return false;
    at = b - ((b - a) * p - (b - c) * q) / den;
    return std::isfinite(at) && (fb - fa) * (c - b) + (fb - fc) * (b - a) > 0;  // concave through the three
}

// Refine the peak of X among samples [lo_i, hi_i] (indices into s at the
// start; the window grows as samples are inserted inside it). Stops when the
// bracket around the best sample is below `tol` wide, or after `budget`
// evaluations.
template <class Eval>
void maximise_near(FSamples& s, std::size_t lo_i, std::size_t hi_i, Eval& eval, double tol, int budget) {
    const double lo = s.f[lo_i], hi = s.f[hi_i];
    double last_width = hi - lo;
    int stalls = 0;
    // The window [first, last] and its best sample k (the first of equal
    // ones), kept as samples are inserted: each lands strictly inside it.
    const auto first =
        static_cast<std::size_t>(std::lower_bound(s.f.begin(), s.f.begin() + static_cast<std::ptrdiff_t>(s.n), lo) - s.f.begin());
    auto last = static_cast<std::size_t>(std::upper_bound(s.f.begin(), s.f.begin() + static_cast<std::ptrdiff_t>(s.n), hi) -
                                         s.f.begin()) -
                1;
    std::size_t k = first;
    for (std::size_t i = first + 1; i <= last; ++i)
        if (s.x[i] > s.x[k]) k = i;
    while (budget > 0) {
        if (k == first || k == last || !(s.x[k] > 0)) return;  // no interior peak in the window
        const double a = s.f[k - 1], b = s.f[k], c = s.f[k + 1];
        if (c - a <= tol) return;
        if (s.x[k - 1] == s.x[k] && s.x[k + 1] == s.x[k]) return;  // flat: nothing to gain
        // Candidate points: the kink on either side of b (the higher meeting
        // wins; none closer than 1e-3 of the bracket to a sample), and a guard
        // just beyond it, so that a kink approached from one side (the lines
        // of a curved branch meet short of it) is bracketed from both; else
        // the parabola's vertex.
        // When b lies on both branches' lines (each model's lines meet at b,
        // at b's height) b is the kink: two points just either side of it,
        // within the tolerance, close the bracket.
        std::array<double, 2> next{-1.0, -1.0};
        const double margin = 1e-3 * (c - a);
        double at = 0, h = 0, kink = -1, kink_h = 0;
        const auto meets_at_b = [&] { return std::abs(at - b) <= margin && std::abs(h - s.x[k]) <= 1e-12 * s.x[k]; };
        bool right_at_b = false, left_at_b = false;
        if (k + 2 <= last && s.x[k + 2] > 0 && kink_model(s, k - 1, k, k + 1, k + 2, at, h)) {
            right_at_b = meets_at_b();
            if (at > b + margin && at < c - margin) {
                kink = at;
                kink_h = h;
            }
        }
        if (k >= first + 2 && s.x[k - 2] > 0 && kink_model(s, k - 2, k - 1, k, k + 1, at, h)) {
            left_at_b = meets_at_b();
            if (at > a + margin && at < b - margin && (kink < 0 || h > kink_h)) kink = at;
        }
        if (right_at_b && left_at_b && kink < 0) {
            next = {b - 0.4 * tol, b + 0.4 * tol};
        } else if (kink >= 0) {
            next = {kink, kink + (kink > b ? 1.0 : -1.0) * 0.02 * std::abs(kink - b)};
        } else if (parabola_model(s, k, at) && at > a && at < c) {
            next[0] = at;
        }
        if ((c - a) > 0.5 * last_width)
            ++stalls;
        else {
            last_width = c - a;
            stalls = 0;
        }
        if (stalls >= 3 || (next[0] < 0 && next[1] < 0)) {  // golden section into the wider side
            next = {b - a > c - b ? b - 0.381966 * (b - a) : b + 0.381966 * (c - b), -1.0};
            stalls = 0;
        }
        const double min_gap = 0.25 * tol;
        for (double u : next) {
            if (u < 0 || budget <= 0) continue;
            u = std::clamp(u, a + min_gap, c - min_gap);
            if (std::abs(u - b) < min_gap) u = b + (c - b > b - a ? min_gap : -min_gap);
            const std::size_t n = s.n, i = s.add(u, eval);
            --budget;  // per attempt, inserted or not: the loop always ends
            if (s.n == n) continue;  // an existing sample: nothing moved
            ++last;
            if (i <= k) ++k;
            if (s.x[i] > s.x[k] || (s.x[i] == s.x[k] && i < k)) k = i;
        }
    }
}

}  // namespace detail

namespace detail {
// The best sample k has no feasible sample on one side: f = 0 or 1, or its
// neighbour serves nothing. If that edge is not a known one (`exact_edge`),
// halve towards it while X keeps rising. Then probe the other side just
// inside (f = 0 itself is skipped: X jumps there as offload traffic starts):
// where X rises inwards, a peak lies in the cell and is refined.
template <class Eval>
void maximise_from_edge(FSamples& s, std::size_t k, bool exact_edge, Eval& eval, double tol, int budget) {
    const bool left_open = k > 0 && s.x[k - 1] > 0;  // a feasible sample on the left
    const int in = left_open ? -1 : 1;  // inwards
    const std::size_t out_i = in < 0 ? k + 1 : k - 1;
    const bool has_out = in < 0 ? k + 1 < s.n : k > 0;
    double edge = s.f[k], x_edge = s.x[k];
    if (has_out && !exact_edge) {
        double out = s.f[out_i];
        for (int i = 0; i < budget && std::abs(out - edge) > tol; ++i) {
            const double mid = 0.5 * (edge + out);
            const double x_mid = s.x[s.add(mid, eval)];
            if (!(x_mid > 0)) {
                out = mid;
            } else if (x_mid > x_edge) {
                edge = mid;
                x_edge = x_mid;
            } else {
                break;  // falling towards the edge: the peak is not there
            }
        }
    }
    const bool open_in = in < 0 ? left_open : k + 1 < s.n && s.x[k + 1] > 0;
    if (!open_in) return;
    constexpr double delta = 1e-6;  // probe spacing: slopes to ~1e-10 relative
    const double skip_zero = edge == 0.0 ? delta : 0.0;  // not f = 0 itself (the jump)
    const double p1 = edge + in * (skip_zero + delta), p2 = edge + in * (skip_zero + 2 * delta);
    const double x1 = s.x[s.add(p1, eval)], x2 = s.x[s.add(p2, eval)];
    if (!(x2 > x1)) return;  // falling inwards: the edge is the peak
    // Window: from the edge (or p1) to two samples inwards past p2.
    const std::size_t i_edge = s.add(skip_zero > 0 ? p1 : edge, eval);
    std::size_t far = s.add(p2, eval);
    for (int step = 0; step < 2; ++step) {
        if (in > 0 && far + 1 < s.n && s.x[far + 1] > 0) ++far;
        if (in < 0 && far > 0 && s.x[far - 1] > 0) --far;
    }
    maximise_near(s, std::min(i_edge, far), std::max(i_edge, far), eval, tol, budget);
}

// Other peaks: a cell of the scan (wider than kMinCell) whose two branches,
// extended as lines from the samples on either side (rising from the left,
// falling from the right), could meet near or above `best` may hide a higher
// peak: sample where they meet (or mid-cell when they meet beyond it) and refine.
template <class Eval>
void screen_cells(FSamples& s, Eval& eval, const double& best, const double& best_f, double tol, int budget) {
    constexpr double kMinCell = 1e-3, kMargin = 1e-2;
    // The last cell before the right end (f = 1, or where a session stops
    // fitting) has no falling branch sampled beyond it: a branch still rising
    // into it, extended as a line to the end, that could come within kMargin
    // of the best earns a probe just inside the end, whose line with the end
    // is the falling branch the screening below then meets.
    std::size_t e = s.n;
    while (e > 0 && !(s.x[e - 1] > 0)) --e;
    --e;  // the last feasible sample (wraps when there is none: the test below fails)
    if (e >= 2 && e < s.n && s.x[e - 1] > 0 && s.x[e - 2] > 0 && best_f < s.f[e - 1] && s.f[e] - s.f[e - 1] >= kMinCell) {
        const double sl = (s.x[e - 1] - s.x[e - 2]) / (s.f[e - 1] - s.f[e - 2]);
        if (sl > 0 && s.x[e - 1] + sl * (s.f[e] - s.f[e - 1]) > best * (1.0 - kMargin)) s.add(s.f[e] - 1e-6, eval);
    }
    for (int found = 0, i = 1; found < 3 && i + 2 < static_cast<int>(s.n); ++i) {
        const auto u = static_cast<std::size_t>(i);
        if (s.f[u + 1] - s.f[u] < kMinCell) continue;
        if (!(s.x[u - 1] > 0 && s.x[u] > 0 && s.x[u + 1] > 0 && s.x[u + 2] > 0)) continue;
        double at = 0, h = 0;
        if (!kink_model(s, u - 1, u, u + 1, u + 2, at, h)) continue;
        if (!(at > s.f[u] && at < s.f[u + 1])) {  // the lines meet outside: bound by each at the far end
            const double sl = (s.x[u] - s.x[u - 1]) / (s.f[u] - s.f[u - 1]);
            const double sr = (s.x[u + 2] - s.x[u + 1]) / (s.f[u + 2] - s.f[u + 1]);
            const double w = s.f[u + 1] - s.f[u];
            h = std::min(s.x[u] + sl * w, s.x[u + 1] - sr * w);
            at = s.f[u] + 0.5 * w;
        }
        // The lines miss the curvature of a branch (here up to 1e-4 of X):
        // refine any such peak within 1 % of the best, unless it is the best's.
        if (!(h > best * (1.0 - kMargin)) || (best_f >= s.f[u - 1] && best_f <= s.f[u + 2])) continue;
        ++found;
        const double lo = s.f[u - 1], hi = s.f[u + 2];
        s.add(at, eval);
        const auto first = static_cast<std::size_t>(
            std::lower_bound(s.f.begin(), s.f.begin() + static_cast<std::ptrdiff_t>(s.n), lo) - s.f.begin());
        const auto last = static_cast<std::size_t>(
            std::lower_bound(s.f.begin(), s.f.begin() + static_cast<std::ptrdiff_t>(s.n), hi) - s.f.begin());
        maximise_near(s, first, last, eval, tol, budget);
    }
}
}  // namespace detail

}  // namespace kvroof
