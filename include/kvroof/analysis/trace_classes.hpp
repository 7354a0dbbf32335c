// SPDX-License-Identifier: MIT
#pragma once
// `kvroof trace`: a request trace's calls binned into workload classes (call
// share, token means, idle-gap distribution), and a trace synthesized from
// class statistics. Pure: the trace is read and written by io/trace_io.hpp.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kvroof/analysis/sim_random.hpp"
#include "kvroof/error.hpp"
#include "kvroof/spec/check.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof {

// One call of a trace. `input` counts every prompt token, the cached prefix included.
struct TraceCall {
    std::string session;
    double start_s = 0;
    double end_s = -1;  // < 0: the trace has no end time for this call
    double input = 0;
    double cached = 0;  // of `input`, served from the prefix cache
    double output = 1;
};

// How a class's idle gaps are described: a lognormal (median, P99) or an
// exponential (its mean), chosen by AIC; none when the class has no gap.
enum class GapFit { none, lognormal, exponential };
[[nodiscard]] constexpr const char* name(GapFit f) noexcept {
    return f == GapFit::lognormal ? "lognormal" : f == GapFit::exponential ? "exponential" : "none";
}

struct GapStats {
    std::size_t count = 0;
    double mean_s = 0;  // sample mean
    double median_s = 0;  // of the fitted distribution
    double p99_s = 0;  // of the fitted distribution
    double sigma = 0;  // lognormal σ of ln(gap); 0 unless lognormal
    GapFit fit = GapFit::none;
    // The lognormal had the better AIC but a mean past limits::kMaxIdleGapS (a spread far wider than any
    // gap): the exponential, whose mean is the sample's, is kept, as a mix file could not hold the other.
    bool lognormal_too_wide = false;
};

// Fits the gaps (seconds, >= 0). Lognormal by maximum likelihood (μ, σ of
// ln g) when every gap is > 0 and its AIC beats the exponential's (mean);
// otherwise exponential.
[[nodiscard]] inline GapStats fit_gaps(const std::vector<double>& gaps) {
    GapStats g;
    g.count = gaps.size();
    if (gaps.empty()) return g;
    double sum = 0, sum_log = 0;
    bool all_positive = true;
    for (const double x : gaps) {
        sum += x;
        all_positive = all_positive && x > 0;
        if (x > 0) sum_log += std::log(x);
    }
    const double n = static_cast<double>(gaps.size());
    g.mean_s = sum / n;
    g.fit = GapFit::exponential;
    g.median_s = g.mean_s * std::log(2.0);
    g.p99_s = g.mean_s * std::log(100.0);
    if (!all_positive || gaps.size() < 2) return g;
    const double mu = sum_log / n;
    double ss = 0;
    for (const double x : gaps) ss += (std::log(x) - mu) * (std::log(x) - mu);
    const double sigma = std::sqrt(ss / n);
    const double ll_exp = -n * std::log(g.mean_s) - n;
    const double ll_logn =
        sigma > 0 ? -sum_log - n * std::log(sigma) - 0.5 * n * std::log(6.283185307179586) - 0.5 * n : HUGE_VAL;
    if (2 * 2 - 2 * ll_logn < 2 * 1 - 2 * ll_exp) {  // AIC: 2k − 2 ln L, k = 2 vs 1
        if (!(std::exp(mu + 0.5 * sigma * sigma) <= limits::kMaxIdleGapS)) {
            g.lognormal_too_wide = true;
            return g;
        }
        g.fit = GapFit::lognormal;
        g.sigma = sigma;
        g.median_s = std::exp(mu);
        g.p99_s = std::exp(mu + kZ99 * sigma);
    }
    return g;
}

enum class BinMethod { quantile, kmeans };

struct TraceClass {
    std::string name;
    std::size_t calls = 0;
    double share = 0;
    double context_lo = 0, context_hi = 0;  // input tokens of its calls, smallest and largest
    double output_lo = 0, output_hi = 0;
    double mean_cached = 0, mean_append = 0, mean_output = 0;
    GapStats gaps;  // the gaps that follow its calls within a session
    std::size_t untimed_gaps = 0;  // calls followed by another of their session in a trace with no times
};

struct TraceClasses {
    std::size_t calls = 0, sessions = 0, gaps = 0;
    double calls_per_session = 0;
    bool untimed = false;  // no call has a time (a conversations file): no gap is measured
    bool start_to_start = false;  // no call before a gap has an end time: every gap runs from a start
    std::size_t gaps_from_start = 0;  // gaps after a call with no end time (from its start, so holding its own time)
    BinMethod method = BinMethod::quantile;
    int context_bins = 0, output_bins = 0;
    std::vector<TraceClass> classes;  // by context, then output, ascending
};

namespace trace_detail {
// Bin of each value among `bins` equal-count quantile bins; ties share a bin
// (a value's bin is set by how many values are below it), empty bins vanish.
[[nodiscard]] inline std::vector<int> quantile_bins(const std::vector<double>& v, int bins) {
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const double n = static_cast<double>(v.size());
    std::vector<int> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto below = static_cast<double>(std::lower_bound(sorted.begin(), sorted.end(), v[i]) - sorted.begin());
        out[i] = std::min(bins - 1, static_cast<int>(std::floor(bins * below / n)));
    }
    return out;
}

// 1-D k-means (Lloyd) on ln(1 + x), started from the split at the bins - 1
// widest gaps between sorted values (so well-separated groups are found
// whatever their sizes; an isolated outlier may take a bin of its own); ends
// when no value changes cluster (at most 200 rounds).
[[nodiscard]] inline std::vector<int> kmeans_bins(const std::vector<double>& v, int bins) {
    std::vector<double> lx(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) lx[i] = std::log1p(v[i]);
    std::vector<double> sorted = lx;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<double, double>> gaps;  // (width, midpoint), widest first, then lowest
    for (std::size_t i = 1; i < sorted.size(); ++i)
        if (sorted[i] > sorted[i - 1]) gaps.emplace_back(sorted[i] - sorted[i - 1], 0.5 * (sorted[i] + sorted[i - 1]));
    std::stable_sort(gaps.begin(), gaps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<double> cuts;
    for (std::size_t g = 0; g < gaps.size() && cuts.size() + 1 < static_cast<std::size_t>(bins); ++g)
        cuts.push_back(gaps[g].second);
    std::sort(cuts.begin(), cuts.end());
    std::vector<int> b(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
        b[i] = static_cast<int>(std::lower_bound(cuts.begin(), cuts.end(), lx[i]) - cuts.begin());
    for (int round = 0; round < 200; ++round) {
        std::vector<double> sum(static_cast<std::size_t>(bins), 0.0), cnt(static_cast<std::size_t>(bins), 0.0);
        for (std::size_t i = 0; i < v.size(); ++i) {
            sum[static_cast<std::size_t>(b[i])] += lx[i];
            cnt[static_cast<std::size_t>(b[i])] += 1;
        }
        bool moved = false;
        for (std::size_t i = 0; i < v.size(); ++i) {
            int best = b[i];
            double best_d = HUGE_VAL;
            for (std::size_t k = 0; k < sum.size(); ++k) {
                if (cnt[k] == 0) continue;
                const double d = std::fabs(lx[i] - sum[k] / cnt[k]);
                if (d < best_d) best_d = d, best = static_cast<int>(k);
            }
            moved = moved || best != b[i];
            b[i] = best;
        }
        if (!moved) break;
    }
    return b;  // the centres start in ascending order and 1-D Lloyd keeps it
}

// Renumbers bin labels 0.. in ascending order of label, dropping empty ones.
[[nodiscard]] inline std::vector<int> compact(std::vector<int> b) {
    std::map<int, int> id;
    for (const int x : b) id.emplace(x, 0);
    int next = 0;
    for (auto& [k, v] : id) v = next++;
    for (int& x : b) x = id[x];
    return b;
}
}  // namespace trace_detail

// The class (0-based, ascending context then output) of each call.
[[nodiscard]] inline std::vector<int> assign_classes(const std::vector<TraceCall>& calls, int context_bins, int output_bins,
                                                     BinMethod method) {
    std::vector<double> ctx(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) ctx[i] = calls[i].input;
    const std::vector<int> cb =
        trace_detail::compact(method == BinMethod::kmeans ? trace_detail::kmeans_bins(ctx, context_bins)
                                                          : trace_detail::quantile_bins(ctx, context_bins));
    std::vector<int> label(calls.size());
    const int nc = cb.empty() ? 0 : *std::max_element(cb.begin(), cb.end()) + 1;
    for (int c = 0; c < nc; ++c) {
        std::vector<std::size_t> idx;
        std::vector<double> out;
        for (std::size_t i = 0; i < calls.size(); ++i)
            if (cb[i] == c) idx.push_back(i), out.push_back(calls[i].output);
        const std::vector<int> ob = trace_detail::quantile_bins(out, output_bins);
        for (std::size_t j = 0; j < idx.size(); ++j) label[idx[j]] = c * output_bins + ob[j];
    }
    return trace_detail::compact(label);
}

// Per call, the idle gap that follows it in its session (-1 for a session's
// last call): the next call's start less this call's end (its start when the
// trace has no end for it, counted in `from_start`), at least 0 (overlapping
// calls); NaN where either call has no time (start_s < 0: the session's order
// is the trace's).
[[nodiscard]] inline std::vector<double> gaps_after(const std::vector<TraceCall>& calls, std::size_t& from_start) {
    std::map<std::string, std::vector<std::size_t>> by_session;
    for (std::size_t i = 0; i < calls.size(); ++i) by_session[calls[i].session].push_back(i);
    std::vector<double> gap(calls.size(), -1.0);
    from_start = 0;
    for (auto& [s, idx] : by_session) {
        std::stable_sort(idx.begin(), idx.end(),
                         [&](std::size_t a, std::size_t b) { return calls[a].start_s < calls[b].start_s; });
        for (std::size_t j = 0; j + 1 < idx.size(); ++j) {
            const TraceCall& a = calls[idx[j]];
            if (a.start_s < 0 || calls[idx[j + 1]].start_s < 0) {
                gap[idx[j]] = std::numeric_limits<double>::quiet_NaN();
                continue;
            }
            const double from = a.end_s >= 0 ? a.end_s : a.start_s;
            from_start += a.end_s < 0 ? 1 : 0;
            gap[idx[j]] = std::max(0.0, calls[idx[j + 1]].start_s - from);
            if (gap[idx[j]] > limits::kMaxIdleGapS)
                throw InputError("session " + s + ": a gap of " + check::show(gap[idx[j]]) +
                                 " s between two calls, more than an idle gap may be (" + check::show(limits::kMaxIdleGapS) +
                                 " s)");
        }
    }
    return gap;
}

// The trace's classes. `context_bins` >= 1 bins on input tokens (quantiles or
// k-means), `output_bins` >= 1 splits each by output-token quantiles.
[[nodiscard]] inline TraceClasses classify_trace(const std::vector<TraceCall>& calls, int context_bins, int output_bins,
                                                 BinMethod method) {
    if (calls.empty()) throw InputError("trace: no calls");
    TraceClasses t;
    t.calls = calls.size();
    t.method = method;
    t.context_bins = context_bins;
    t.output_bins = output_bins;
    const std::vector<int> label = assign_classes(calls, context_bins, output_bins, method);
    const std::vector<double> gap = gaps_after(calls, t.gaps_from_start);
    const auto with_gap = static_cast<std::size_t>(std::count_if(gap.begin(), gap.end(), [](double g) { return g >= 0; }));
    t.start_to_start = t.gaps_from_start > 0 && t.gaps_from_start == with_gap;
    t.untimed = std::all_of(calls.begin(), calls.end(), [](const TraceCall& c) { return c.start_s < 0; });
    std::map<std::string, int> sessions;
    for (const auto& c : calls) sessions.emplace(c.session, 0);
    t.sessions = sessions.size();
    t.calls_per_session = static_cast<double>(t.calls) / static_cast<double>(t.sessions);
    const int k = *std::max_element(label.begin(), label.end()) + 1;
    t.classes.resize(static_cast<std::size_t>(k));
    std::vector<std::vector<double>> gaps(static_cast<std::size_t>(k));
    for (std::size_t i = 0; i < calls.size(); ++i) {
        TraceClass& c = t.classes[static_cast<std::size_t>(label[i])];
        const TraceCall& x = calls[i];
        c.context_lo = c.calls ? std::min(c.context_lo, x.input) : x.input;
        c.context_hi = c.calls ? std::max(c.context_hi, x.input) : x.input;
        c.output_lo = c.calls ? std::min(c.output_lo, x.output) : x.output;
        c.output_hi = c.calls ? std::max(c.output_hi, x.output) : x.output;
        c.calls += 1;
        c.mean_cached += x.cached;
        c.mean_append += x.input - x.cached;
        c.mean_output += x.output;
        if (gap[i] >= 0) gaps[static_cast<std::size_t>(label[i])].push_back(gap[i]);
        if (std::isnan(gap[i])) c.untimed_gaps += 1;
    }
    for (std::size_t j = 0; j < t.classes.size(); ++j) {
        TraceClass& c = t.classes[j];
        const double n = static_cast<double>(c.calls);
        c.name = "c" + std::to_string(j + 1);
        c.share = n / static_cast<double>(t.calls);
        c.mean_cached /= n, c.mean_append /= n, c.mean_output /= n;
        c.gaps = fit_gaps(gaps[j]);
        t.gaps += c.gaps.count;
    }
    return t;
}

// An untimed trace's classes given one idle gap, lognormal through `median_s`
// and `p99_s` (> median), after every call its session continues from.
inline void assign_untimed_gaps(TraceClasses& t, double median_s, double p99_s) {
    const double sigma = lognormal_sigma_from_median_p99(median_s, p99_s);
    for (TraceClass& c : t.classes) {
        if (c.untimed_gaps == 0) continue;
        c.gaps = {c.untimed_gaps, median_s * std::exp(0.5 * sigma * sigma), median_s, p99_s, sigma, GapFit::lognormal};
        t.gaps += c.untimed_gaps;
    }
}

}  // namespace kvroof
