// SPDX-License-Identifier: MIT
#pragma once
// Break-even answers: the smallest (or largest) value of one knob at which a
// target holds — "how many CPUs per GPU for a 1.2x bankable gain", "what link
// bandwidth breaks even", "how long a context fits" — by root finding over
// the same verdict the CLI prints.
//
// The knob is scanned at kSolveScan points over [lo, hi] (geometric when
// lo > 0, else even), then the first change of the target between two scan
// points is bisected to a relative width of 1e-6 (whole knobs: to adjacent
// integers). The target met below the change and not above it gives "at
// most", the reverse "at least". When it changes more than once in the scan
// the first change is the answer and `crossings` says how many were seen.

#include <cmath>
#include <optional>
#include <string>

#include "kvroof/analysis/verdict_report.hpp"
#include "kvroof/spec/knobs.hpp"

namespace kvroof {

enum class SolveTarget {
    gain_bankable,  // the bankable offload gain (ov = 0, best f > 0) >= value; 1: offload helps at all
    gain_pipelined,  // the pipelined offload gain (ov = 1, best f > 0) >= value
    throughput,  // the best bankable output tokens/s (f = 0 or offload) >= value
    fits,  // f = 0 holds the weights and one session of every class
};

[[nodiscard]] constexpr std::string_view name(SolveTarget t) noexcept {
    switch (t) {
        case SolveTarget::gain_bankable: return "gain_bankable";
        case SolveTarget::gain_pipelined: return "gain_pipelined";
        case SolveTarget::throughput: return "throughput";
        case SolveTarget::fits: return "fits";
    }
    return "?";
}

// The pseudo-knob `context`: the tokens one call's session holds at its
// prefill, S_c + A (single-class workloads; S_c = context − A).
inline constexpr std::string_view kContextKnob = "context";

struct SolveSpec {
    std::string knob;  // a numeric knob of the knob table, or kContextKnob
    SolveTarget target = SolveTarget::gain_bankable;
    double value = 1;  // the gain or tokens/s the target asks (unused for fits)
    double lo = 0, hi = 0;  // SI, lo < hi
};

enum class SolveOutcome { at_least, at_most, every_value, no_value };

struct SolveResult {
    SolveSpec spec;
    bool whole = false;  // a whole-number knob (GPUs): answers are integers
    SolveOutcome outcome = SolveOutcome::no_value;
    double answer = 0;  // SI: the least (at_least) or greatest (at_most) value that meets the target
    double metric_at_answer = 0;  // the target's quantity there (gain, tok/s; 1/0 for fits)
    double beyond = 0, metric_beyond = 0;  // the nearest value found that misses it, and its quantity
    double metric_lo = 0, metric_hi = 0;  // at the range's ends
    int crossings = 0;  // changes of the target seen in the scan
    int evaluations = 0;
    VerdictReport at_answer;  // everything `kvroof verdict` shows at `answer` (at lo when nothing meets the target)
};

inline constexpr int kSolveScan = 48;

namespace detail {
[[nodiscard]] inline Scenario with_knob(const Scenario& base, const Knob* k, double x) {
    Scenario sc = base;
    if (k) {
        k->access.apply(sc, KnobValue(x));
        return sc;
    }
    CallClass& c = sc.mix.entries.front().cls;  // context: one class (checked in solve())
    c.s_cached = x - c.a_append;
    return sc;
}

// The target's figure for verdict v of scenario sc (a throughput is every one of its dp replicas', as compare's
// and a sweep's are; a gain is the same per replica). `fits` asks for one session of every class at its longest,
// S + O, as the operating point and the simulator hold it (the solved verdict's own check stops at S).
[[nodiscard]] inline double solve_metric(const SolveSpec& s, const Verdict& v, const Scenario& sc) {
    const double dp = sc.hardware.deployment.dp;
    const ServingPoint& b = v.baseline.conservative;
    switch (s.target) {
        // A gain target counts an offload only (f* > 0): f = 0 is 1x by definition.
        case SolveTarget::gain_bankable: return v.best_conservative.f > 0 ? v.gain_bankable : 0.0;
        case SolveTarget::gain_pipelined: return v.best_optimistic.f > 0 ? v.gain_pipelined : 0.0;
        case SolveTarget::throughput: return std::max(b.throughput, v.best_conservative.throughput) * dp;
        case SolveTarget::fits: {
            if (v.kind == VerdictKind::does_not_fit || !b.fits || !b.session_fits) return 0.0;
            const PreparedScenario ps(sc);
            return ps.session_fits_hbm_peak(0.0) && ps.session_fits_dram_peak(0.0) ? 1.0 : 0.0;
        }
    }
    return 0;
}
}  // namespace detail

namespace detail {
// One search: a scan of kSolveScan points over the range, then a bisection of the first cell where the target
// changes. Each evaluation is a verdict at one value of the knob.
class Solver {
public:
    Solver(const Scenario& base, const SolveSpec& spec, const Knob* k, SolveResult& r) : base_(base), spec_(spec), k_(k), r_(r) {}

    struct Seen {
        double m;
        VerdictKind kind;
    };
    Seen seen(double x) {
        ++r_.evaluations;
        try {
            const Scenario sc = with_knob(base_, k_, x);
            const Verdict v = make_verdict(sc);
            return {solve_metric(spec_, v, sc), v.kind};
        } catch (const InputError& e) {  // a value the search reached, not one the user gave: say so
            throw InputError("solve " + spec_.knob + ": a value the search reached is not valid: " + e.what() +
                             "; a search needs every value of its range to be valid (compare the valid ones instead)");
        }
    }
    double metric(double x) { return seen(x).m; }
    // The metric at the answer, with everything `kvroof verdict` shows there.
    double finish(double x) {
        ++r_.evaluations;
        const Scenario sc = with_knob(base_, k_, x);
        r_.at_answer = verdict_report(sc);
        return solve_metric(spec_, r_.at_answer.verdict, sc);
    }
    [[nodiscard]] bool meets(double m) const { return spec_.target == SolveTarget::fits ? m > 0.5 : m >= spec_.value; }
    [[nodiscard]] double mid(double a, double b) const { return r_.whole ? std::floor(0.5 * (a + b)) : 0.5 * (a + b); }

    // Between two scan points that agree on the target (`side`) but not on the verdict (--hbm-cap: does not fit at
    // 142.6 GB, keeps its KV on the GPU at 170.3) a window narrower than the scan's step can hide (offload pays from
    // 143.1 to 165.5 GB): bisect on the verdict's changes for a value on the target's other side.
    std::optional<double> window(double a, VerdictKind ka, double b, VerdictKind kb, bool side, int depth) {
        const double x = mid(a, b);
        if (depth == 0 || window_budget_ <= 0 || !(x > a && x < b)) return std::nullopt;
        --window_budget_;
        const Seen at = seen(x);
        if (meets(at.m) != side) return x;
        if (at.kind != ka)
            if (const auto w = window(a, ka, x, at.kind, side, depth - 1)) return w;
        if (at.kind != kb) return window(x, at.kind, b, kb, side, depth - 1);
        return std::nullopt;
    }

    // The scan: the range's ends' metrics, the changes of the target, and the cell of the first.
    std::optional<std::pair<double, double>> scan() {
        const bool geometric = spec_.lo > 0;
        auto at = [&](int i) {
            const double t = static_cast<double>(i) / (kSolveScan - 1);
            const double x = geometric ? spec_.lo * std::pow(spec_.hi / spec_.lo, t) : spec_.lo + t * (spec_.hi - spec_.lo);
            return r_.whole ? std::round(x) : x;
        };
        double prev_x = r_.whole ? std::ceil(spec_.lo) : spec_.lo;
        Seen prev = seen(prev_x);
        r_.metric_lo = prev.m;
        std::optional<std::pair<double, double>> cell;  // the scan cell of the first change
        for (int i = 1; i < kSolveScan; ++i) {
            const double x = std::min(at(i), r_.whole ? std::floor(spec_.hi) : spec_.hi);
            if (x <= prev_x) continue;
            const Seen now = seen(x);
            if (meets(now.m) != meets(prev.m)) {
                ++r_.crossings;
                if (!cell) cell = {prev_x, x};
            } else if (now.kind != prev.kind) {
                if (const auto w = window(prev_x, prev.kind, x, now.kind, meets(prev.m), 16)) {
                    r_.crossings += 2;  // into the window and out of it
                    if (!cell) cell = {prev_x, *w};
                }
            }
            prev_x = x;
            prev = now;
        }
        r_.metric_hi = prev.m;
        return cell;
    }

private:
    const Scenario& base_;
    const SolveSpec& spec_;
    const Knob* k_;
    SolveResult& r_;
    int window_budget_ = 256;  // verdicts the window searches may take in all (a verdict flipping along a range)
};
}  // namespace detail

[[nodiscard]] inline SolveResult solve(const Scenario& base, const SolveSpec& spec) {
    const Knob* k = spec.knob == kContextKnob ? nullptr : find_knob(spec.knob);
    if (spec.knob != kContextKnob && (!k || !k->numeric() || k->grid_only || !k->access.apply))
        throw InputError("solve: '" + spec.knob + "' is not a numeric scenario knob");
    if (!k && base.mix.entries.size() != 1) throw InputError("solve: context needs a single-class workload (not a mix)");
    if (!(spec.lo < spec.hi)) throw InputError("solve: the range must have lo < hi");
    if (!k && spec.lo < base.mix.entries.front().cls.a_append)
        throw InputError("solve: a context range must start at the call's new input tokens or above");
    SolveResult r;
    r.spec = spec;
    r.whole = !k || k->type == KnobType::whole;  // a context is a whole number of tokens, as GPUs are whole
    if (r.whole && std::ceil(spec.lo) > std::floor(spec.hi)) throw InputError("solve: the range holds no whole value");
    detail::Solver solver(base, spec, k, r);
    const auto cell = solver.scan();
    const bool first = solver.meets(r.metric_lo);
    if (!cell) {
        r.outcome = first ? SolveOutcome::every_value : SolveOutcome::no_value;
        r.answer = r.whole ? std::ceil(spec.lo) : spec.lo;
        r.metric_at_answer = solver.finish(r.answer);
        return r;
    }
    auto [a, b] = *cell;  // meets(a) == first, meets(b) != first
    while (r.whole ? b - a > 1 : (b - a) > 1e-6 * std::max(std::abs(a), std::abs(b))) {
        const double mid = solver.mid(a, b);
        (solver.meets(solver.metric(mid)) == first ? a : b) = mid;
    }
    r.outcome = first ? SolveOutcome::at_most : SolveOutcome::at_least;
    r.answer = first ? a : b;
    r.beyond = first ? b : a;
    r.metric_at_answer = solver.finish(r.answer);
    r.metric_beyond = solver.metric(r.beyond);
    return r;
}

}  // namespace kvroof
