// SPDX-License-Identifier: MIT
#pragma once
// The simulator's decode demand per step, and the dynamic GPU/CPU split
// (sim_engine.hpp states the model; docs/model.md, "Discrete-event
// simulation", what the dynamic policy assumes).
//
// decode_demand is linear in the context, so a step of n decoding calls with
// Σ context keys demands n·d0 + Σcontext·d1 of every resource (DecodeLines).
// It is also affine in f for f > 0 (a jump at f = 0: the per-token query and
// output traffic and the offload round trip start), so the step at any f in
// (0, 1] is the line through its values at f = 1/2 and f = 1 (SplitLines).
// step_time is convex in f on (0, 1]: the GPU path is a sum of maxima of
// lines falling in f, the offloaded path of maxima of lines rising in f, and
// combine(a, b, ov) = (1 − ov)·(a + b) + ov·max(a, b). choose_split keeps the
// f in [0, f_max] whose step is shortest: a golden-section search on (0,
// f_max] against f = 0 itself. At ov = 1 that is the f where the two paths
// balance, when it lies inside; at ov = 0 the paths add up and the search
// lands on an end.

#include <algorithm>
#include <cmath>
#include <string_view>

#include "kvroof/analysis/point_step.hpp"

namespace kvroof {

// How the simulator picks each step's offload fraction: `fixed` (shown as
// "static"), f for every step; `dynamic`, the f in [0, f] whose step is
// shortest for the calls in it.
enum class FPolicy { fixed, dynamic };

[[nodiscard]] constexpr std::string_view name(FPolicy p) noexcept { return p == FPolicy::fixed ? "static" : "dynamic"; }

namespace detail {

// Per decode token: demand at context 0, and its slope per key of context.
struct DecodeLines {
    DecodeDemand d0{}, d1{};
};

// decode_demand at `pol` read at 0 and 2^20 keys (an exact power of two).
[[nodiscard]] inline DecodeLines decode_lines(const PreparedScenario& ps, const PolicySpec& pol) noexcept {
    constexpr double kRef = 1048576.0;
    DecodeLines l;
    l.d0 = decode_demand(ps.mc, ps.sys, pol, 0.0);
    const DecodeDemand far = decode_demand(ps.mc, ps.sys, pol, kRef);
    for (double DecodeDemand::*m : kDecodeLines) l.d1.*m = (far.*m - l.d0.*m) / kRef;
    return l;
}

// Adds n decoding calls reading Σ context keys in all; `lin`, the GEMM
// seconds per token, stays out of attn_c (step_time charges it once).
inline void add_decode(StepContent& s, const DecodeLines& l, double n, double sum_context, double lin) noexcept {
    s.decode_tokens += n;
    s.attn_c += n * (l.d0.gpu_compute - lin) + sum_context * l.d1.gpu_compute;
    s.attn_m += n * l.d0.gpu_hbm + sum_context * l.d1.gpu_hbm;
    s.cpu_c += n * l.d0.cpu_compute + sum_context * l.d1.cpu_compute;
    s.cpu_d += n * l.d0.cpu_dram + sum_context * l.d1.cpu_dram;
    s.h2d += n * l.d0.link_h2d + sum_context * l.d1.link_h2d;
    s.d2h += n * l.d0.link_d2h + sum_context * l.d1.link_d2h;
}

// The decode lines at f = 0, 1/2 and 1, and the most a step may offload.
struct SplitLines {
    DecodeLines zero, half, one;
    double f_max = 0;
};

[[nodiscard]] inline SplitLines split_lines(const PreparedScenario& ps, PolicySpec pol, double f_max) noexcept {
    SplitLines s;
    s.f_max = f_max;
    for (auto [f, out] : {std::pair{0.0, &s.zero}, std::pair{0.5, &s.half}, std::pair{1.0, &s.one}}) {
        pol.f = f;
        *out = decode_lines(ps, pol);
    }
    return s;
}

// A step's content at f from the same step at f = 1/2, 1 and 0: at 0 itself,
// else on the line through 1/2 and 1.
[[nodiscard]] inline StepContent content_at(const StepContent& half, const StepContent& one, const StepContent& zero,
                                            double f) noexcept {
    if (!(f > 0)) return zero;
    const double u = 2.0 * (f - 1.0);  // one + (f − 1)·(one − half)/(1/2)
    StepContent s = one;
    for (double StepContent::*m : {&StepContent::attn_c, &StepContent::attn_m, &StepContent::cpu_c, &StepContent::cpu_d,
                                   &StepContent::h2d, &StepContent::d2h})
        s.*m += u * (one.*m - half.*m);
    return s;
}

struct Split {
    double f = 0;  // chosen
    StepContent content;  // the step at f
    double interior = 0;  // the shortest step's f in (0, f_max] (0: not searched): the next step's hint
};

// The f in [0, f_max] whose step (base + n calls decoding over Σ context keys)
// is shortest; ties go to the smaller f, so f = 0 wins when offloading does not
// shorten the step. `hint`: the previous step's interior minimum; when the step
// is no shorter a bracket's width either side of it, the minimum lies within
// that width of it (convexity), as close as the golden section brings it, and
// the search is skipped (4 step times instead of 23; consecutive steps differ
// by a token of context, so their minima barely move).
[[nodiscard]] inline Split choose_split(const PreparedScenario& ps, const SplitLines& l, const StepContent& base, double n,
                                        double sum_context, double lin, double ov, double hint = 0) {
    Split best{0.0, base};
    add_decode(best.content, l.zero, n, sum_context, lin);
    if (!(l.f_max > 0) || !(n > 0)) return best;
    StepContent half = base, one = base;
    add_decode(half, l.half, n, sum_context, lin);
    add_decode(one, l.one, n, sum_context, lin);
    const auto time = [&](double f) { return step_time(ps, content_at(half, one, best.content, f), f, ov); };
    const double t0 = time(0.0);
    constexpr double kInv = 0.6180339887498949;  // (√5 − 1) / 2
    constexpr int kRounds = 20;  // the bracket shrinks to 0.618^20 ≈ 7e-5 of f_max: 23 step times a step
    const double width = 6.6e-5 * l.f_max;  // 0.618^20 of it: the golden section's last bracket
    double f = 0, t = 0;
    if (hint > 0 && hint <= width) {  // at the left end: the step rises from just above 0
        const double ta = time(0.5 * width);
        if (time(width) >= ta) f = 0.5 * width, t = ta;
    } else if (hint > 0 && hint + width > l.f_max) {  // at the right end: it falls all the way to f_max
        const double tm = time(l.f_max);
        if (time(l.f_max - width) >= tm) f = l.f_max, t = tm;
    } else if (hint > 0) {
        const double th = time(hint);
        if (time(hint - width) >= th && time(hint + width) >= th) f = hint, t = th;
    }
    if (!(f > 0)) {  // golden section on (0, f_max]: a convex function, so the bracket keeps its minimum
        double a = 0, b = l.f_max;
        double x1 = b - kInv * (b - a), x2 = a + kInv * (b - a);
        double t1 = time(x1), t2 = time(x2);
        for (int i = 0; i < kRounds; ++i) {
            if (t1 <= t2) {
                b = x2, x2 = x1, t2 = t1;
                x1 = b - kInv * (b - a);
                t1 = time(x1);
            } else {
                a = x1, x1 = x2, t1 = t2;
                x2 = a + kInv * (b - a);
                t2 = time(x2);
            }
        }
        f = t1 <= t2 ? x1 : x2, t = std::min(t1, t2);
        if (const double t_max = time(l.f_max); t_max < t) f = l.f_max, t = t_max;
    }  // else f_max is no shorter than the bracket's middle (convexity)
    best.interior = f;
    if (t < t0) {
        best.f = f;
        best.content = content_at(half, one, best.content, f);
    }
    return best;
}

}  // namespace detail
}  // namespace kvroof
