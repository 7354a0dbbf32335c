// SPDX-License-Identifier: MIT
#pragma once
// The simulator's decode demand per step, and the dynamic GPU/CPU split
// (sim_engine.hpp states the model; docs/model.md, "Discrete-event
// simulation", what the dynamic policy assumes).
//
// decode_demand is linear in the context (piecewise, with sliding-window or
// DSA layers: DecodeLines' knots), so a step of n decoding calls with Σ
// context keys demands n·d0 + Σcontext·d1 (+ Σ min(context, K)·e at each knot)
// of every resource (DecodeLines).
// It is also affine in f for f > 0 (a jump at f = 0: the per-token query and
// output traffic and the offload round trip start), so the step at any f in
// (0, 1] is the line through its values at f = 1/2 and f = 1 (SplitLines).
// step_time is convex in f on (0, 1]: the GPU path is a sum of maxima of
// lines falling in f, the offloaded path of maxima of lines rising in f, and
// combine(a, b, ov) = (1 − ov)·(a + b) + ov·max(a, b). choose_split keeps the
// f in [0, f_max] whose step is shortest: the exact minimum on (0, f_max]
// (shortest_split) against f = 0 itself. At ov = 1 that is the f where the
// two paths balance, when it lies inside; at ov = 0 the paths add up and the
// minimum is at an end or a kink.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "kvroof/analysis/point_step.hpp"
#include "kvroof/analysis/sim_stats.hpp"

namespace kvroof {

// How the simulator picks each step's offload fraction: `fixed` (shown as
// "static"), f for every step; `dynamic`, the f in [0, f] whose step is
// shortest for the calls in it.
enum class FPolicy { fixed, dynamic };

[[nodiscard]] constexpr std::string_view name(FPolicy p) noexcept { return p == FPolicy::fixed ? "static" : "dynamic"; }

namespace detail {

// Per decode token: demand at context 0, its slope per key of context, and
// where sliding-window or DSA layers bend it, a knot K_j (W, or the top k) and
// the change of slope e_j there: D(S) = d0 + d1·S + Σ_j e_j·min(S, K_j), e_j ≤ 0
// (physics/attention_layers.hpp: every demand is a line in S, min(S, W) and
// min(S, k)). A step of n calls then demands n·d0 + Σ S·d1 + Σ_j Σ min(S, K_j)·e_j.
struct DecodeLines {
    DecodeDemand d0{}, d1{};
    std::array<double, 2> knot{};  // K_j, tokens, ascending; the first `knots` are set
    std::array<DecodeDemand, 2> bend{};  // e_j
    std::size_t knots = 0;
};

// The knots of a layout: W where window layers exist, k where DSA's top-k does (one, when equal).
[[nodiscard]] inline DecodeLines layout_knots(const AttentionLayout& a) noexcept {
    DecodeLines l;
    if (a.window_share > 0) l.knot[l.knots++] = a.window;
    if (a.topk > 0 && !(l.knots == 1 && l.knot[0] == a.topk)) l.knot[l.knots++] = a.topk;
    if (l.knots == 2 && l.knot[1] < l.knot[0]) std::swap(l.knot[0], l.knot[1]);
    return l;
}

// decode_demand at `pol` read at 0 and 2^20 keys (an exact power of two); with
// knots, also at each knot and 2^20 keys beyond the last: the slope of each
// piece, and each bend the difference of two slopes.
[[nodiscard]] inline DecodeLines decode_lines(const PreparedScenario& ps, const PolicySpec& pol) noexcept {
    constexpr double kRef = 1048576.0;
    DecodeLines l = layout_knots(ps.mc.layout);
    const auto at = [&](double S) { return decode_demand(ps.mc, ps.sys, pol, S); };
    l.d0 = at(0.0);
    if (l.knots == 0) {
        const DecodeDemand far = at(kRef);
        for (double DecodeDemand::*m : kDecodeLines) l.d1.*m = (far.*m - l.d0.*m) / kRef;
        return l;
    }
    // Slopes of the pieces [0, K_1], [K_1, K_2] (two knots) and beyond the last.
    std::array<double, 4> x{0.0, l.knot[0], l.knot[l.knots - 1], l.knot[l.knots - 1] + kRef};
    std::array<DecodeDemand, 4> d{l.d0, at(x[1]), DecodeDemand{}, at(x[3])};
    d[2] = l.knots == 2 ? at(x[2]) : d[1];
    for (double DecodeDemand::*m : kDecodeLines) {
        const double first = (d[1].*m - d[0].*m) / x[1], last = (d[3].*m - d[2].*m) / kRef;
        const double middle = l.knots == 2 ? (d[2].*m - d[1].*m) / (x[2] - x[1]) : last;
        l.d1.*m = last;
        l.bend[0].*m = first - middle;
        l.bend[1].*m = middle - last;
    }
    return l;
}

// Adds n decoding calls reading Σ context keys in all (and Σ min(context, K_j)
// at each knot, `sum_min`, with knots); `lin`, the GEMM seconds per token,
// stays out of attn_c (step_time charges it once).
inline void add_decode(StepContent& s, const DecodeLines& l, double n, double sum_context, double lin,
                       const std::array<double, 2>& sum_min = {}) noexcept {
    s.decode_tokens += n;
    s.attn_c += n * (l.d0.gpu_compute - lin) + sum_context * l.d1.gpu_compute;
    s.attn_m += n * l.d0.gpu_hbm + sum_context * l.d1.gpu_hbm;
    s.cpu_c += n * l.d0.cpu_compute + sum_context * l.d1.cpu_compute;
    s.cpu_d += n * l.d0.cpu_dram + sum_context * l.d1.cpu_dram;
    s.h2d += n * l.d0.link_h2d + sum_context * l.d1.link_h2d;
    s.d2h += n * l.d0.link_d2h + sum_context * l.d1.link_d2h;
    for (std::size_t j = 0; j < l.knots; ++j) {
        const DecodeDemand& e = l.bend[j];
        const double m = sum_min[j];
        s.attn_c += m * e.gpu_compute;
        s.attn_m += m * e.gpu_hbm;
        s.cpu_c += m * e.cpu_compute;
        s.cpu_d += m * e.cpu_dram;
        s.h2d += m * e.link_h2d;
        s.d2h += m * e.link_d2h;
    }
}

// Adds step content s to sum, field by field.
inline void add_content(StepContent& sum, const StepContent& s) noexcept {
    sum.decode_tokens += s.decode_tokens;
    sum.prefill_tokens += s.prefill_tokens;
    sum.attn_c += s.attn_c;
    sum.attn_m += s.attn_m;
    sum.cpu_c += s.cpu_c;
    sum.cpu_d += s.cpu_d;
    sum.h2d += s.h2d;
    sum.d2h += s.d2h;
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

// One step's split: the f taken and the step's two paths combined there,
// without what a pipeline adds alike at every f (its stretch σ, transfers and
// c0), so the steps at two f compare as their step_time would.
struct SplitPoint {
    double f = 0, value = 0;
};

// The f in (0, f_max] whose step is shortest, exactly. `half` and `one` are
// the step's content at f = 1/2 and 1, `g` its GEMM terms (the same at every
// f: where attention runs does not change the tokens). Every field of the
// content is a line in f there (content_at), so each path is piecewise
// linear, with kinks only where two of its maxima's terms cross: GPU
// attention compute and HBM; CPU compute and DRAM; the link's two directions
// and link_time's shared term. Between those points the two paths are lines,
// and combine adds one kink where they cross: the step is convex, so its
// minimum is at one of these points, the smallest on a tie. The left end is
// taken just above 0 (f = 0 itself is another step: content_at).
[[nodiscard]] inline SplitPoint shortest_split(const PreparedScenario& ps, const GemmTerms& g, const StepContent& half,
                                               const StepContent& one, double ov, double f_max) noexcept {
    struct Line {
        double a, b;  // a + b·f
        [[nodiscard]] double at(double f) const noexcept { return a + b * f; }
    };
    const auto line = [&](double StepContent::*m) {
        const double b = 2.0 * (one.*m - half.*m);
        return Line{one.*m - b, b};
    };
    const Line ac = line(&StepContent::attn_c), am = line(&StepContent::attn_m), cc = line(&StepContent::cpu_c),
               cd = line(&StepContent::cpu_d), h = line(&StepContent::h2d), d = line(&StepContent::d2h);
    const double lo = 1e-9 * f_max;
    const auto paths_at = [&](double f) { return group_paths(ps, g, content_at(half, one, one, f), f, nullptr); };
    const auto value = [ov](double gpu, double off) { return combine(Seconds(gpu), Seconds(off), ov).raw(); };
    // The kinks inside (lo, f_max): where two lines' difference changes sign between the ends; kept
    // in order (insertion: at most five) between the ends.
    std::array<double, 7> at{lo};
    std::size_t n = 1;
    const auto cross = [&](Line x, Line y) {
        const double dl = x.at(lo) - y.at(lo), dh = x.at(f_max) - y.at(f_max);
        if (!((dl < 0 && dh > 0) || (dl > 0 && dh < 0))) return;
        const double c = lo + (f_max - lo) * (dl / (dl - dh));
        std::size_t j = n++;
        for (; j > 1 && at[j - 1] > c; --j) at[j] = at[j - 1];
        at[j] = c;
    };
    const double k = 2.0 * ps.sys.link_bidir - 1.0;  // link_time's shared term equals h2d where k·h2d = d2h
    cross(ac, am);
    cross(cc, cd);
    cross(h, d);
    cross({k * h.a, k * h.b}, d);
    cross(h, {k * d.a, k * d.b});
    at[n++] = f_max;
    std::array<GroupPaths, 7> p;  // NOLINT(cppcoreguidelines-pro-type-member-init): the first n are set
    for (std::size_t i = 0; i < n; ++i) p[i] = paths_at(at[i]);
    SplitPoint best{at[0], value(p[0].gpu, p[0].offload)};
    for (std::size_t i = 0; i + 1 < n; ++i) {
        const double d0 = p[i].gpu - p[i].offload, d1 = p[i + 1].gpu - p[i + 1].offload;
        if (ov > 0 && ((d0 < 0 && d1 > 0) || (d0 > 0 && d1 < 0))) {  // the paths cross inside: combine's kink
            const double x = d0 / (d0 - d1);
            const double gpu = p[i].gpu + x * (p[i + 1].gpu - p[i].gpu);
            const double off = p[i].offload + x * (p[i + 1].offload - p[i].offload);
            if (const double v = value(gpu, off); v < best.value) best = {at[i] + x * (at[i + 1] - at[i]), v};
        }
        if (const double v = value(p[i + 1].gpu, p[i + 1].offload); v < best.value) best = {at[i + 1], v};
    }
    return best;
}

struct Split {
    double f = 0;  // chosen
    StepContent content;  // the step at f
    double time = 0;  // s, its step_time at f
};

// The f in [0, f_max] whose step (base + n calls decoding over Σ context keys,
// Σ min(context, K_j) at each knot of the lines) is shortest: shortest_split
// on (0, f_max] against f = 0 itself; ties go to the smaller f, so f = 0 wins
// when offloading does not shorten the step. A
// pipeline's group runs 1/m of the step (group_share); its stretch and
// transfers are the same at every f, so the split compares the group's paths.
// The split comes with the time the engine charges: step_time, or in a
// pipeline whose base is prefill in whole pieces of at most `piece` tokens
// (piece > 0), piece_step_time, as the static policy's step. The f is still
// chosen on the evenly shared step (docs/model.md, "Discrete-event simulation").
[[nodiscard]] inline Split choose_split(const PreparedScenario& ps, const SplitLines& l, const StepContent& base, double n,
                                        double sum_context, const std::array<double, 2>& sum_min, double lin, double ov,
                                        double piece = 0) {
    StepContent zero, half, one;  // the decode alone at f = 0, 1/2 and 1 (the last two once needed)
    add_decode(zero, l.zero, n, sum_context, lin, sum_min);
    Split best{0.0, base + zero};
    const auto charge = [&] {  // half and one are set whenever best.f > 0
        if (!(ps.pipe.pp > 1 && piece > 0 && base.prefill_tokens > 0)) return step_time(ps, best.content, best.f, ov);
        return piece_step_time(ps, content_at(half, one, zero, best.f), base, piece, best.f, ov, nullptr);
    };
    if (!(l.f_max > 0) || !(n > 0)) {
        best.time = charge();
        return best;
    }
    add_decode(half, l.half, n, sum_context, lin, sum_min);
    add_decode(one, l.one, n, sum_context, lin, sum_min);
    const StepContent step_half = base + half, step_one = base + one;
    const StepContent at0 = group_share(ps.pipe, best.content);
    const GemmTerms g = gemm_terms(ps, at0.decode_tokens + at0.prefill_tokens);
    const GroupPaths p0 = group_paths(ps, g, at0, 0.0, nullptr);
    const double t0 = combine(Seconds(p0.gpu), Seconds(p0.offload), ov).raw();
    const SplitPoint s = shortest_split(ps, g, group_share(ps.pipe, step_half), group_share(ps.pipe, step_one), ov, l.f_max);
    if (s.value < t0) {
        best.f = s.f;
        best.content = content_at(step_half, step_one, best.content, s.f);
    }
    best.time = charge();
    return best;
}

// The splits of decode-only steps (nothing in the step but its decoding
// calls), kept by what the step holds: n calls reading Σ context keys (and,
// with knots, Σ min(context, K_j)). Within a run (one engine: its ps, lines,
// lin and ov fixed) choose_split of such a step is a function of those alone,
// and a run repeats them: every call of a class passes through the same
// contexts, one token a step, and at a batch of one the step is that call's
// alone. So each distinct step is solved once. Direct-mapped (a slot per key; a new key replaces the old):
// at n = 1 consecutive contexts take consecutive slots, so a call of up to
// 4,096 output tokens never evicts its own steps; other batches and
// overlapping classes may evict each other, which costs a solve, never a
// different answer. A kept split is the one choose_split returns, to the
// bit: a run is the same with the memo as without it. Memory: 4,096 slots of
// about 100 bytes, allocated on first use.
class SplitMemo {
public:
    // Slots, rounded up to a power of two; allocated on first use (a static-f run has none).
    explicit SplitMemo(std::size_t slots = 4096) noexcept : size_(std::bit_ceil(std::max<std::size_t>(slots, 1))) {}

    static constexpr std::size_t kNoBin = std::numeric_limits<std::size_t>::max();
    struct Kept {
        Split split;
        std::size_t time_bin = kNoBin;  // LogHistogram::index(split.time) (kNoBin: not kept)
    };

    // choose_split(ps, l, {}, n, sum_context, sum_min, lin, ov), from the memo when it holds it.
    [[nodiscard]] const Kept& decode_only(const PreparedScenario& ps, const SplitLines& l, double n, double sum_context,
                                          const std::array<double, 2>& sum_min, double lin, double ov) {
        if (slots_.empty()) slots_.resize(size_);
        // The key's bits: the token counts are whole, so their integer parts name the step (with knots, the
        // sums below them too: two steps of one n and Σ context may differ there).
        const auto mix = static_cast<std::uint64_t>(sum_context) + static_cast<std::uint64_t>(n) * 0x9E3779B97F4A7C15ULL +
                         static_cast<std::uint64_t>(sum_min[0]) * 0xC2B2AE3D27D4EB4FULL +
                         static_cast<std::uint64_t>(sum_min[1]) * 0x165667B19E3779F9ULL;
        Entry& e = slots_[mix & (slots_.size() - 1)];
        if (e.n != n || e.sum_context != sum_context || e.sum_min != sum_min) {
            e.n = n;
            e.sum_context = sum_context;
            e.sum_min = sum_min;
            e.kept.split = choose_split(ps, l, StepContent{}, n, sum_context, sum_min, lin, ov);
            e.kept.time_bin = LogHistogram::index(e.kept.split.time);
            ++solved;
        }
        return e.kept;
    }

    // A step's split, base being what the step holds besides its decoding
    // calls (prefill, in pieces of at most `piece` tokens): from decode_only
    // when that is nothing; else solved, not kept. The reference holds until
    // the next call.
    [[nodiscard]] const Kept& split(const PreparedScenario& ps, const SplitLines& l, const StepContent& base, double n,
                                    double sum_context, const std::array<double, 2>& sum_min, double lin, double ov,
                                    double piece = 0) {
        if (empty(base)) return decode_only(ps, l, n, sum_context, sum_min, lin, ov);
        other_.split = choose_split(ps, l, base, n, sum_context, sum_min, lin, ov, piece);
        return other_;
    }

    std::uint64_t solved = 0;  // splits solved (the rest came from the memo)

private:
    [[nodiscard]] static bool empty(const StepContent& s) noexcept {
        return s.decode_tokens == 0 && s.prefill_tokens == 0 && s.attn_c == 0 && s.attn_m == 0 && s.cpu_c == 0 && s.cpu_d == 0 &&
               s.h2d == 0 && s.d2h == 0;
    }
    struct Entry {
        double n = -1, sum_context = -1;  // no step: n >= 0
        std::array<double, 2> sum_min{};
        Kept kept;
    };
    std::size_t size_;
    std::vector<Entry> slots_;
    Kept other_;  // split's answer for a step with prefill (time_bin: kNoBin)
};

}  // namespace detail
}  // namespace kvroof
