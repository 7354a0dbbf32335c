// SPDX-License-Identifier: MIT
#pragma once
// `kvroof trace --synthesize`: a trace drawn from class statistics, the same
// for a seed (the simulator's splitmix64 and its own distributions).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kvroof/analysis/sim_random.hpp"
#include "kvroof/analysis/trace_classes.hpp"

namespace kvroof {

// The statistics a synthesized trace is drawn from: one class of a classes file.
struct SynthClass {
    std::string name;
    double share = 1;
    double s_cached = 0, a_append = 0, o_output = 1;
    GapFit gap = GapFit::none;  // lognormal (median, sigma), exponential (mean) or none (every gap 0)
    double gap_median_s = 0, gap_sigma = 0, gap_mean_s = 0;
};

struct SynthSpec {
    std::vector<SynthClass> classes;
    double calls_per_session = 1;  // mean of the geometric number of calls in a session
    std::size_t calls = 1;
    std::uint64_t seed = 1;
    double spread = 0.2;  // each token count uniform in mean·(1 ± spread), rounded
    double session_spacing_s = 60;  // session k starts at k·spacing (no class statistic depends on it)
};

namespace trace_detail {
[[nodiscard]] inline double draw_tokens(SimRng& rng, double mean, double spread) {
    return std::round(mean * (1.0 + spread * (2.0 * rng.uniform() - 1.0)));
}

[[nodiscard]] inline double draw_gap(SimRng& rng, const SynthClass& c) {
    switch (c.gap) {
        case GapFit::lognormal: return c.gap_median_s * std::exp(c.gap_sigma * rng.normal());
        case GapFit::exponential: return -c.gap_mean_s * std::log(rng.uniform());
        case GapFit::none: return 0.0;
    }
    return 0.0;
}

[[nodiscard]] inline std::size_t draw_class(SimRng& rng, const std::vector<SynthClass>& classes, double total_share) {
    const double u = rng.uniform() * total_share;
    double acc = 0;
    for (std::size_t k = 0; k < classes.size(); ++k) {
        acc += classes[k].share;
        if (u < acc) return k;
    }
    return classes.size() - 1;
}

// Calls in a session: 1 + a geometric count, mean `mean` (>= 1).
[[nodiscard]] inline std::size_t draw_session_length(SimRng& rng, double mean) {
    if (mean <= 1) return 1;
    const double p = 1.0 / mean;  // chance that a call is the session's last
    return 1 + static_cast<std::size_t>(std::floor(std::log(rng.uniform()) / std::log1p(-p)));
}
}  // namespace trace_detail

// Sessions one after another until `calls` calls: each call's class drawn by
// share, its tokens around the class means, the gap after it from its class.
// Calls take no time (no end times): a gap runs from one start to the next.
[[nodiscard]] inline std::vector<TraceCall> synthesize_trace(const SynthSpec& spec) {
    if (spec.classes.empty()) throw InputError("trace synthesis: no classes");
    double total = 0;
    for (const auto& c : spec.classes) total += c.share;
    SimRng rng(spec.seed);
    std::vector<TraceCall> out;
    out.reserve(spec.calls);
    for (std::size_t session = 0; out.size() < spec.calls; ++session) {
        const std::size_t n = trace_detail::draw_session_length(rng, spec.calls_per_session);
        double t = static_cast<double>(session) * spec.session_spacing_s;
        const std::string id = "s" + std::to_string(session + 1);
        for (std::size_t j = 0; j < n && out.size() < spec.calls; ++j) {
            const SynthClass& c = spec.classes[trace_detail::draw_class(rng, spec.classes, total)];
            TraceCall x;
            x.session = id;
            x.start_s = std::round(t * 1000.0) / 1000.0;  // the millisecond the trace file keeps
            // Each count within what a trace may hold (limits::kMaxTokens), so the trace reads back.
            x.cached = std::clamp(trace_detail::draw_tokens(rng, c.s_cached, spec.spread), 0.0, limits::kMaxTokens);
            // A call has an input and an output token at least (the reader's rule): a class whose mean is near 0 or 1
            // comes back a little higher (docs/trace.md).
            x.input = std::clamp(x.cached + std::max(0.0, trace_detail::draw_tokens(rng, c.a_append, spec.spread)), 1.0,
                                 limits::kMaxTokens);
            x.output = std::clamp(trace_detail::draw_tokens(rng, c.o_output, spec.spread), 1.0, limits::kMaxTokens);
            out.push_back(std::move(x));
            t += trace_detail::draw_gap(rng, c);
        }
    }
    return out;
}

}  // namespace kvroof
