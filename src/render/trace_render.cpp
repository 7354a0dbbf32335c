// SPDX-License-Identifier: MIT
// `kvroof trace` as text, JSON and markdown, from one TraceReport.
#include "kvroof/io/trace_render.hpp"

#include <fmt/format.h>

#include "kvroof/io/trace_io.hpp"

namespace kvroof::io {

namespace {
const char* method_name(BinMethod m) { return m == BinMethod::kmeans ? "k-means" : "quantile"; }

std::string gap_cell(double s, GapFit f) { return f == GapFit::none ? "—" : fmt::format("{:.3g} s", s); }

// One row per class: the cells of the text and markdown tables.
std::vector<std::string> class_cells(const TraceClass& c) {
    return {c.name,
            fmt::format("{:.3f}", c.share),
            fmt::format("{}", c.calls),
            fmt::format("{:.0f}-{:.0f}", c.context_lo, c.context_hi),
            fmt::format("{:.0f}", c.mean_cached),
            fmt::format("{:.0f}", c.mean_append),
            fmt::format("{:.0f}", c.mean_output),
            fmt::format("{}", c.gaps.count),
            name(c.gaps.fit),
            gap_cell(c.gaps.median_s, c.gaps.fit),
            gap_cell(c.gaps.p99_s, c.gaps.fit),
            gap_cell(c.gaps.mean_s, c.gaps.fit)};
}

const std::vector<std::string> kHeads = {"class",  "share", "calls",   "input tokens", "S_c mean", "A mean",
                                         "O mean", "gaps",  "gap fit", "gap median",   "gap P99",  "gap mean"};

std::string gap_basis(const TraceClasses& t) {
    if (t.untimed)
        return t.gaps > 0 ? "the trace has no times: the idle gaps are the lognormal of --idle-median and --idle-p99"
                          : "the trace has no times: no idle gap is measured (give one with --idle-median and --idle-p99)";
    if (t.gaps == 0) return "no idle gaps: no session makes a second call";
    if (t.start_to_start) return "idle gaps from one call's start to the next (the trace has no end times)";
    if (t.gaps_from_start > 0)
        return fmt::format(
            "idle gaps from one call's end to the next call's start; {} of them follow a call with no end time "
            "and run from its start, so they hold that call's own time",
            t.gaps_from_start);
    return "idle gaps from one call's end to the next call's start";
}
// How the calls were read, for a conversations file (else empty).
std::string format_note(const TraceReport& r) {
    if (r.format != TraceFormat::conversations) return "";
    return fmt::format(
        "Read as a conversations file: one call per response, its input every earlier message of the session and "
        "the new prompt, cached the earlier messages; tokens = UTF-8 bytes / {:g} (--bytes-per-token), an estimate "
        "(docs/trace.md).\n",
        r.bytes_per_token);
}
}  // namespace

std::string trace_summary_line(const TraceClasses& t) {
    return fmt::format(
        "TRACE: {} calls in {} sessions ({:.2f} calls/session), {} idle gaps; {} classes by {} binning ({} "
        "context x {} output bins)",
        t.calls, t.sessions, t.calls_per_session, t.gaps, t.classes.size(), method_name(t.method), t.context_bins, t.output_bins);
}

std::string render_trace_text(const TraceReport& r) {
    std::string s = trace_summary_line(r.classes) + "\n\n";
    const std::vector<int> w = {6, 6, 6, 16, 9, 8, 7, 5, 12, 11, 11, 11};
    auto row = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (std::size_t i = 0; i < cells.size(); ++i)
            line += (i ? " " : "") +
                    (i == 0 || i == 8 ? fmt::format("{:<{}}", cells[i], w[i]) : fmt::format("{:>{}}", cells[i], w[i]));
        return line + "\n";
    };
    s += row(kHeads);
    for (const auto& c : r.classes.classes) s += row(class_cells(c));
    s += fmt::format("\nS_c: cached prefix tokens, A: appended (uncached) input tokens, O: output tokens (means per call); {}.\n",
                     gap_basis(r.classes));
    s += format_note(r);
    if (!r.out.empty())
        s += fmt::format("wrote {}: use it with  kvroof verdict --mix {}  or  kvroof sim --mix {}\n", r.out, r.out, r.out);
    return s;
}

nlohmann::ordered_json trace_report_json(const TraceReport& r) {
    const TraceClasses& t = r.classes;
    nlohmann::ordered_json classes = nlohmann::ordered_json::array();
    for (const auto& c : t.classes)
        classes.push_back({{"name", c.name},
                           {"calls", c.calls},
                           {"share", c.share},
                           {"input_tokens_min", c.context_lo},
                           {"input_tokens_max", c.context_hi},
                           {"output_tokens_min", c.output_lo},
                           {"output_tokens_max", c.output_hi},
                           {"s_cached_mean", c.mean_cached},
                           {"a_append_mean", c.mean_append},
                           {"o_output_mean", c.mean_output},
                           {"gaps", c.gaps.count},
                           {"gap_fit", name(c.gaps.fit)},
                           {"gap_mean_s", c.gaps.mean_s},
                           {"gap_median_s", c.gaps.median_s},
                           {"gap_p99_s", c.gaps.p99_s},
                           {"gap_sigma", c.gaps.sigma}});
    return {{"tool", "kvroof"},
            {"version", KVROOF_VERSION},
            {"command", "trace"},
            {"trace", r.trace},
            {"format", name(r.format)},
            {"bytes_per_token", r.format == TraceFormat::conversations ? nlohmann::ordered_json(r.bytes_per_token) : nullptr},
            {"untimed", t.untimed},
            {"calls", t.calls},
            {"sessions", t.sessions},
            {"calls_per_session", t.calls_per_session},
            {"gaps", t.gaps},
            {"gaps_start_to_start", t.start_to_start},
            {"gaps_from_start", t.gaps_from_start},
            {"method", method_name(t.method)},
            {"context_bins", t.context_bins},
            {"output_bins", t.output_bins},
            {"classes", classes},
            {"mix", classes_mix_json(t, r.trace)}};
}

std::string render_trace_markdown(const TraceReport& r) {
    std::string s = fmt::format("# kvroof trace: workload classes of {}\n\nGenerated by kvroof {} (`kvroof trace {}`).\n\n",
                                r.trace, KVROOF_VERSION, r.trace);
    s += trace_summary_line(r.classes) + "\n\n|";
    for (const auto& h : kHeads) s += " " + h + " |";
    s += "\n|";
    for (std::size_t i = 0; i < kHeads.size(); ++i) s += i == 0 || i == 8 ? "---|" : "---:|";
    s += "\n";
    for (const auto& c : r.classes.classes) {
        s += "|";
        for (const auto& cell : class_cells(c)) s += " " + cell + " |";
        s += "\n";
    }
    s += fmt::format("\nS_c: cached prefix tokens, A: appended (uncached) input tokens, O: output tokens (means per call); {}.\n",
                     gap_basis(r.classes));
    s += format_note(r);
    return s;
}

}  // namespace kvroof::io
