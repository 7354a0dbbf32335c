// SPDX-License-Identifier: MIT
// `kvroof trace`: binning, gap fits and the synthesize -> classify round trip.
#include <catch2/catch.hpp>
#include <cmath>

#include "kvroof/analysis/trace_classes.hpp"
#include "kvroof/analysis/trace_synth.hpp"

using namespace kvroof;

namespace {
TraceCall call(const char* session, double t, double input, double cached, double output, double end = -1) {
    TraceCall c;
    c.session = session;
    c.start_s = t;
    c.end_s = end;
    c.input = input;
    c.cached = cached;
    c.output = output;
    return c;
}

// Three codex-like classes (data/workloads.json short, mid, long: S_c, A, O and
// the codex idle gap, median 5.2 s and P99 81.4 s) at unequal shares.
SynthSpec codex_like(std::size_t calls, std::uint64_t seed) {
    SynthSpec s;
    const double sigma = std::log(81.4 / 5.2) / kZ99;
    s.classes = {{"short", 0.5, 8376, 3991, 520, GapFit::lognormal, 5.2, sigma, 0},
                 {"mid", 0.3, 44434, 3991, 520, GapFit::lognormal, 5.2, sigma, 0},
                 {"long", 0.2, 80491, 3991, 520, GapFit::exponential, 0, 0, 20.0}};
    s.calls_per_session = 33;
    s.calls = calls;
    s.seed = seed;
    return s;
}
}  // namespace

TEST_CASE("quantile bins keep ties together and follow the ranks") {
    // Sorted 1 3 3 5 7 9; a value's bin is floor(3 x (values below it) / 6): 5 has 3 below, 9 has 5.
    const std::vector<int> b = trace_detail::quantile_bins({5, 1, 3, 3, 9, 7}, 3);
    CHECK(b == std::vector<int>{1, 0, 0, 0, 2, 2});
    // All equal: one bin, whatever was asked.
    CHECK(trace_detail::compact(trace_detail::quantile_bins({4, 4, 4}, 3)) == std::vector<int>{0, 0, 0});
}

TEST_CASE("k-means finds unequal well-separated clusters that quantiles split") {
    std::vector<double> v;
    for (int i = 0; i < 70; ++i) v.push_back(1000 + i);
    for (int i = 0; i < 20; ++i) v.push_back(50000 + i);
    for (int i = 0; i < 10; ++i) v.push_back(200000 + i);
    const std::vector<int> k = trace_detail::compact(trace_detail::kmeans_bins(v, 3));
    std::vector<int> count(3, 0);
    for (const int x : k) ++count[static_cast<std::size_t>(x)];
    CHECK(count == std::vector<int>{70, 20, 10});
    const std::vector<int> q = trace_detail::quantile_bins(v, 3);  // bins of 34, 33 and 33 calls: the 70 small ones are cut
    CHECK(std::count(q.begin(), q.end(), 0) == 34);
}

TEST_CASE("gap fit: a zero gap or too few gaps give the exponential, its mean exact") {
    const GapStats z = fit_gaps({0.0, 2.0, 4.0});
    CHECK(z.fit == GapFit::exponential);
    CHECK(z.mean_s == Approx(2.0));
    CHECK(z.median_s == Approx(2.0 * std::log(2.0)));
    CHECK(fit_gaps({3.0}).fit == GapFit::exponential);
    CHECK(fit_gaps({}).fit == GapFit::none);
    // {1, e, e²}: ln L(lognormal) = -3 - 3 ln sqrt(2/3) - 1.5 ln 2π - 1.5 = -6.649,
    // ln L(exponential) = -3 ln(3.702) - 3 = -6.927; AIC 17.30 > 15.85: exponential.
    const GapStats h = fit_gaps({1.0, std::exp(1.0), std::exp(2.0)});
    CHECK(h.fit == GapFit::exponential);
    CHECK(h.mean_s == Approx((1 + std::exp(1.0) + std::exp(2.0)) / 3));
}

TEST_CASE("a lognormal whose mean no idle gap could have is not kept: the exponential's sample mean is") {
    // Gaps of 1 ms and 9e8 s alternating: ln g has mean ln(sqrt(9e5)) and sigma ln(9e11)/2 = 13.7, so the lognormal
    // wins on AIC but its mean, median·exp(sigma²/2), is astronomically past the 1e9 s bound an idle gap (and a mix
    // file's idle gap) may take. A classes file with it was refused by --mix; the sample mean, 4.5e8 s, is kept.
    std::vector<double> g;
    for (int i = 0; i < 20; ++i) g.push_back(i % 2 == 0 ? 1e-3 : 9e8);
    const GapStats f = fit_gaps(g);
    CHECK(f.fit == GapFit::exponential);
    CHECK(f.lognormal_too_wide);
    CHECK(f.mean_s == Approx(4.5e8 + 5e-4));
    CHECK_FALSE(fit_gaps({1.0, 2.0, 4.0, 8.0}).lognormal_too_wide);
}

TEST_CASE("gap fit recovers a lognormal's median and sigma within their standard errors") {
    SimRng rng(11);
    const double sigma = 1.18, median = 5.2;
    std::vector<double> g;
    for (int i = 0; i < 4000; ++i) g.push_back(median * std::exp(sigma * rng.normal()));
    const GapStats f = fit_gaps(g);
    REQUIRE(f.fit == GapFit::lognormal);
    // SE of ln(median) is sigma/sqrt(n) = 0.0187, of sigma about sigma/sqrt(2n) = 0.0132: 4 SE each.
    CHECK(std::fabs(std::log(f.median_s / median)) < 4 * sigma / std::sqrt(4000.0));
    CHECK(std::fabs(f.sigma - sigma) < 4 * sigma / std::sqrt(8000.0));
    CHECK(f.p99_s == Approx(f.median_s * std::exp(kZ99 * f.sigma)));
}

TEST_CASE("gaps run from a call's end to the session's next start, per session, at least 0") {
    std::size_t s2s = 0;
    const std::vector<TraceCall> calls = {call("a", 10, 100, 0, 5, 12), call("b", 0, 100, 0, 5, 1), call("a", 0, 100, 0, 5, 3),
                                          call("a", 11, 100, 0, 5, 13), call("b", 4, 100, 0, 5, 6)};
    const std::vector<double> g = gaps_after(calls, s2s);
    // Session a by start: t=0 (ends 3) -> t=10: 7; t=10 (ends 12) -> t=11 overlaps: 0; t=11 is last.
    CHECK(g == std::vector<double>{0.0, 3.0, 7.0, -1.0, -1.0});
    CHECK(s2s == 0);
    const std::vector<double> h = gaps_after({call("a", 0, 1, 0, 1), call("a", 5, 1, 0, 1)}, s2s);
    CHECK(h[0] == 5.0);
    CHECK(s2s == 1);
}

TEST_CASE("a trace with end times for some calls only: the gaps from a start are counted, not called the whole trace's") {
    // Session a: t=0 ends 3 -> t=10 (7, from the end); t=10 has no end -> t=20 (10, from its start). The text said
    // "the trace has no end times" for the whole trace.
    const std::vector<TraceCall> calls = {call("a", 0, 100, 0, 5, 3), call("a", 10, 100, 0, 5), call("a", 20, 100, 0, 5, 22)};
    const TraceClasses t = classify_trace(calls, 1, 1, BinMethod::quantile);
    CHECK(t.gaps_from_start == 1);
    CHECK_FALSE(t.start_to_start);
    const TraceClasses none = classify_trace({call("a", 0, 100, 0, 5), call("a", 10, 100, 0, 5)}, 1, 1, BinMethod::quantile);
    CHECK(none.start_to_start);
}

TEST_CASE("classes conserve calls: shares sum to 1 and share-weighted means are the trace's means") {
    const std::vector<TraceCall> calls = synthesize_trace(codex_like(3000, 5));
    const TraceClasses t = classify_trace(calls, 4, 2, BinMethod::quantile);
    double share = 0, cached = 0, out = 0, cached_all = 0, out_all = 0;
    std::size_t n = 0;
    for (const auto& c : t.classes)
        share += c.share, cached += c.share * c.mean_cached, out += c.share * c.mean_output, n += c.calls;
    for (const auto& c : calls) cached_all += c.cached / 3000.0, out_all += c.output / 3000.0;
    CHECK(n == 3000);
    CHECK(share == Approx(1.0));
    CHECK(cached == Approx(cached_all));
    CHECK(out == Approx(out_all));
    CHECK(t.classes.size() == 8);
    CHECK(t.gaps == t.calls - t.sessions);
}

TEST_CASE("synthesis is the same for a seed and differs between seeds") {
    const auto a = synthesize_trace(codex_like(500, 3)), b = synthesize_trace(codex_like(500, 3));
    const auto c = synthesize_trace(codex_like(500, 4));
    REQUIRE(a.size() == 500);
    bool same = true, differ = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        same = same && a[i].start_s == b[i].start_s && a[i].input == b[i].input && a[i].session == b[i].session;
        differ = differ || a[i].input != c[i].input;
    }
    CHECK(same);
    CHECK(differ);
}

// Synthesize -> classify recovers the statistics within 4 standard errors:
// a share p from N calls within 4 sqrt(p(1-p)/N); a token mean m (uniform in
// m(1 ± 0.2)) from n calls within 4 (0.2 m / sqrt 3) / sqrt n + 0.5 (rounding);
// a lognormal median within a factor exp(4 sigma / sqrt g) from g gaps, an
// exponential mean within a factor 1 ± 4 / sqrt g.
TEST_CASE("synthesize then classify: the same statistics within sampling error") {
    const SynthSpec spec = codex_like(20000, 42);
    const TraceClasses t = classify_trace(synthesize_trace(spec), 3, 1, BinMethod::kmeans);
    REQUIRE(t.classes.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
        const SynthClass& want = spec.classes[k];
        const TraceClass& got = t.classes[k];
        INFO(want.name);
        const double n = static_cast<double>(got.calls), g = static_cast<double>(got.gaps.count);
        CHECK(std::fabs(got.share - want.share) < 4 * std::sqrt(want.share * (1 - want.share) / 20000.0));
        auto tol = [&](double m) { return 4 * (0.2 * m / std::sqrt(3.0)) / std::sqrt(n) + 0.5; };
        CHECK(std::fabs(got.mean_cached - want.s_cached) < tol(want.s_cached));
        CHECK(std::fabs(got.mean_append - want.a_append) < tol(want.a_append));
        CHECK(std::fabs(got.mean_output - want.o_output) < tol(want.o_output));
        REQUIRE(got.gaps.fit == want.gap);
        if (want.gap == GapFit::lognormal)
            CHECK(std::fabs(std::log(got.gaps.median_s / want.gap_median_s)) < 4 * want.gap_sigma / std::sqrt(g));
        else
            CHECK(std::fabs(got.gaps.mean_s / want.gap_mean_s - 1) < 4 / std::sqrt(g));
    }
    CHECK(std::fabs(t.calls_per_session - 33) < 4 * std::sqrt(33.0 * 32.0) / std::sqrt(static_cast<double>(t.sessions)));
}

TEST_CASE("a synthesized trace stays within what a trace may hold, and a gap past an idle gap's bound is an error", "[trace]") {
    SynthSpec spec;
    SynthClass big;
    big.name = "big";
    big.s_cached = 0.9e9;  // a class the mix reader accepts; drawn ±20 %, its input would pass 1e9 tokens
    big.a_append = 0.5e9;
    big.o_output = 0.99e9;
    spec.classes = {big};
    spec.calls = 50;
    for (const TraceCall& c : synthesize_trace(spec)) {
        CHECK(c.input <= limits::kMaxTokens);
        CHECK(c.cached <= c.input);
        CHECK(c.output <= limits::kMaxTokens);
        CHECK(c.output >= 1);
    }
    // A class of no cached and few new tokens, drawn ±100 %: a draw that rounds to 0 new tokens is still a call
    // of one input token, as `kvroof trace` reads one (4,000 calls: ~10 such draws before).
    SynthClass tiny;
    tiny.name = "tiny";
    tiny.a_append = 100;
    tiny.o_output = 1;
    spec.classes = {tiny};
    spec.calls = 4000;
    spec.spread = 1;
    for (const TraceCall& c : synthesize_trace(spec)) {
        CHECK(c.input >= 1);
        CHECK(c.output >= 1);
    }
    // Two calls of one session 2e9 s apart: more than an idle gap may be (1e9 s), so no class could carry it.
    TraceCall a, b;
    a.session = b.session = "s";
    a.start_s = 0;
    b.start_s = 2e9;
    a.input = b.input = 10;
    std::size_t from_start = 0;
    CHECK_THROWS_WITH(gaps_after({a, b}, from_start), Catch::Contains("session s: a gap of 2000000000 s"));
    b.start_s = 1e9;
    CHECK(gaps_after({a, b}, from_start)[0] == 1e9);
}
