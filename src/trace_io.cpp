// SPDX-License-Identifier: MIT
// Trace files (JSON Lines, CSV) and the classes file of `kvroof trace`.
#include "kvroof/io/trace_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "kvroof/io/mix_file.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/spec/workload.hpp"
#include "presets_json.hpp"

namespace kvroof::io {

namespace {
using nlohmann::json;

constexpr double kMaxTimestampS = 1e10;
constexpr std::array<const char*, 5> kNumberFields = {"timestamp_s", "end_s", "input_tokens", "cached_tokens", "output_tokens"};

// One line's fields before their checks: index as kNumberFields.
struct RawCall {
    std::string session;
    std::array<std::optional<double>, 5> v;
};

double whole_tokens(const std::string& at, const char* key, const std::optional<double>& v, double lo) {
    if (!v) throw InputError(fmt::format("{}: missing field '{}'", at, key));
    if (!(*v >= lo && *v <= limits::kMaxTokens) || *v != std::floor(*v))
        throw InputError(
            fmt::format("{}: '{}' must be a whole number in [{:.0f}, {:.0f}], got {}", at, key, lo, limits::kMaxTokens, *v));
    return *v;
}

TraceCall checked_call(const std::string& at, const RawCall& r) {
    if (r.session.empty()) throw InputError(fmt::format("{}: missing field 'session_id'", at));
    TraceCall c;
    c.session = r.session;
    if (!r.v[0]) throw InputError(fmt::format("{}: missing field 'timestamp_s'", at));
    c.start_s = *r.v[0];
    // Seconds from any origin before the trace (a Unix time, or the run's start), at most 1e10 s (317 years): every
    // gap between two calls stays a finite number the workload's idle_gap bound can judge.
    if (!(c.start_s >= 0 && c.start_s <= kMaxTimestampS))
        throw InputError(fmt::format("{}: 'timestamp_s' must be in [0, 1e10] s, got {}", at, c.start_s));
    if (r.v[1]) {
        c.end_s = *r.v[1];
        if (!(c.end_s <= kMaxTimestampS))
            throw InputError(fmt::format("{}: 'end_s' must be at most 1e10 s, got {}", at, c.end_s));
        if (!(c.end_s >= c.start_s))
            throw InputError(fmt::format("{}: 'end_s' ({}) must be >= timestamp_s ({})", at, c.end_s, c.start_s));
    }
    c.input = whole_tokens(at, "input_tokens", r.v[2], 1);  // a call attends over at least one token
    c.cached = whole_tokens(at, "cached_tokens", r.v[3], 0);
    c.output = whole_tokens(at, "output_tokens", r.v[4], 1);
    if (c.cached > c.input)
        throw InputError(fmt::format("{}: 'cached_tokens' ({}) must be <= input_tokens ({})", at, c.cached, c.input));
    return c;
}

RawCall raw_from_json(const std::string& at, std::string_view line) {
    const json j = parse_json_text(at, line);
    if (!j.is_object()) throw InputError(fmt::format("{}: expected a JSON object, got {}", at, j.type_name()));
    RawCall r;
    if (j.contains("session_id")) {
        const json& s = j.at("session_id");
        if (s.is_string())
            r.session = s.get<std::string>();
        else if (s.is_number_integer() || s.is_number_unsigned())
            r.session = s.dump();
        else
            throw InputError(fmt::format("{}: 'session_id' must be a string or a whole number, got {}", at, s.type_name()));
    }
    for (std::size_t k = 0; k < kNumberFields.size(); ++k) {
        if (!j.contains(kNumberFields[k]) || j.at(kNumberFields[k]).is_null()) continue;
        const json& v = j.at(kNumberFields[k]);
        if (!v.is_number())
            throw InputError(fmt::format("{}: '{}' must be a number, got {} {}", at, kNumberFields[k], v.type_name(), v.dump()));
        r.v[k] = v.get<double>();
    }
    return r;
}

std::vector<std::string> split_csv(std::string_view line) {
    std::vector<std::string> out(1);
    for (const char c : line) {
        if (c == ',')
            out.emplace_back();
        else
            out.back() += c;
    }
    for (auto& f : out) {
        const auto b = f.find_first_not_of(" \t"), e = f.find_last_not_of(" \t");
        f = b == std::string::npos ? std::string() : f.substr(b, e - b + 1);
    }
    return out;
}

double csv_number(const std::string& at, const char* key, const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    // Decimal only, as every number kvroof reads: strtod also takes hexadecimal ("0x10" = 16).
    const bool hex = text.find_first_of("xX") != std::string::npos;
    // An underflow (5e-324) gives the nearest double; an overflow gives ±inf, refused below.
    if (text.empty() || hex || end != text.c_str() + text.size() || !std::isfinite(v))
        throw InputError(fmt::format("{}: '{}' must be a number, got '{}'", at, key, text));
    return v;
}

// Column index of each field in a CSV header (-1 when absent).
struct CsvColumns {
    int session = -1;
    std::array<int, 5> num{-1, -1, -1, -1, -1};
    std::size_t count = 0;
};

CsvColumns csv_header(const std::string& at, std::string_view line) {
    CsvColumns c;
    const auto names = split_csv(line);
    c.count = names.size();
    for (std::size_t i = 0; i < names.size(); ++i) {
        const bool read =
            names[i] == "session_id" || std::find(kNumberFields.begin(), kNumberFields.end(), names[i]) != kNumberFields.end();
        for (std::size_t j = 0; j < i; ++j)  // a column the trace is read from, named twice (others are ignored)
            if (read && names[j] == names[i])
                throw InputError(fmt::format("{}: the header names column '{}' twice", at, names[i]));
        if (names[i] == "session_id") c.session = static_cast<int>(i);
        for (std::size_t k = 0; k < kNumberFields.size(); ++k)
            if (names[i] == kNumberFields[k]) c.num[k] = static_cast<int>(i);
    }
    const char* required[] = {"session_id", "timestamp_s", "input_tokens", "cached_tokens", "output_tokens"};
    const int index[] = {c.session, c.num[0], c.num[2], c.num[3], c.num[4]};
    for (std::size_t k = 0; k < 5; ++k)
        if (index[k] < 0)
            throw InputError(
                fmt::format("{}: the header lacks column '{}' (columns: session_id, timestamp_s, end_s "
                            "(optional), input_tokens, cached_tokens, output_tokens)",
                            at, required[k]));
    return c;
}

RawCall raw_from_csv(const std::string& at, std::string_view line, const CsvColumns& cols) {
    const auto f = split_csv(line);
    if (f.size() != cols.count)
        throw InputError(
            fmt::format("{}: {} fields, the header has {} (quoted fields are not supported)", at, f.size(), cols.count));
    RawCall r;
    r.session = f[static_cast<std::size_t>(cols.session)];
    if (!valid_utf8(r.session)) throw InputError(fmt::format("{}: 'session_id' is not valid UTF-8", at));
    for (std::size_t k = 0; k < kNumberFields.size(); ++k) {
        if (cols.num[k] < 0) continue;
        const std::string& text = f[static_cast<std::size_t>(cols.num[k])];
        if (k == 1 && text.empty()) continue;  // end_s may be left empty
        r.v[k] = csv_number(at, kNumberFields[k], text);
    }
    return r;
}
}  // namespace

TraceFormat trace_format_of(std::string_view path) noexcept {
    return path.size() > 4 && path.substr(path.size() - 4) == ".csv" ? TraceFormat::csv : TraceFormat::jsonl;
}

std::vector<TraceCall> parse_trace_text(std::string_view where, std::string_view text, TraceFormat format,
                                        double bytes_per_token) {
    if (format == TraceFormat::conversations) return parse_conversations_text(where, text, bytes_per_token);
    std::vector<TraceCall> calls;
    std::optional<CsvColumns> cols;
    std::size_t line_no = 0, pos = 0;
    while (pos < text.size()) {
        const std::size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find_first_not_of(" \t") == std::string_view::npos || line.front() == '#') continue;
        const std::string at = fmt::format("{}: line {}", where, line_no);
        if (format == TraceFormat::csv && !cols) {
            cols = csv_header(at, line);
            continue;
        }
        calls.push_back(checked_call(at, format == TraceFormat::csv ? raw_from_csv(at, line, *cols) : raw_from_json(at, line)));
    }
    if (calls.empty()) throw InputError(fmt::format("{}: no calls in the trace", where));
    return calls;
}

TraceFormat trace_format_of(std::string_view path, std::string_view text) noexcept {
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && text[first] == '[' ? TraceFormat::conversations : trace_format_of(path);
}

TraceFile read_trace(std::string_view flag, std::string_view path, double bytes_per_token) {
    const std::string text = read_text_file(flag, path, "a trace file");
    // A UTF-8 byte-order mark (spreadsheet exports) is skipped; nlohmann skips one itself, so a conversations file
    // is parsed whole and the byte a JSON error names is the file's.
    const std::string_view body = text.rfind("\xEF\xBB\xBF", 0) == 0 ? std::string_view(text).substr(3) : std::string_view(text);
    TraceFile f;
    f.format = trace_format_of(path, body);
    f.calls = parse_trace_text(fmt::format("{} {}", flag, path), f.format == TraceFormat::conversations ? text : body, f.format,
                               bytes_per_token);
    return f;
}

std::vector<TraceCall> read_trace_file(std::string_view flag, std::string_view path) { return read_trace(flag, path).calls; }

std::string trace_jsonl(const std::vector<TraceCall>& calls) {
    std::string out;
    for (const auto& c : calls) {
        out += fmt::format("{{\"session_id\":{},\"timestamp_s\":{:.3f}", json(c.session).dump(), c.start_s);
        if (c.end_s >= 0) out += fmt::format(",\"end_s\":{:.3f}", c.end_s);
        out += fmt::format(",\"input_tokens\":{:.0f},\"cached_tokens\":{:.0f},\"output_tokens\":{:.0f}}}\n", c.input, c.cached,
                           c.output);
    }
    return out;
}

namespace {
// Six significant digits: what the classes file keeps of a statistic.
double sig6(double x) { return std::strtod(fmt::format("{:.6g}", x).c_str(), nullptr); }

std::string gap_note(const TraceClasses& t, const TraceClass& c) {
    if (t.untimed && c.gaps.fit == GapFit::lognormal)
        return fmt::format(
            "the trace has no times: idle gap given (--idle-median, --idle-p99), lognormal, after its {} calls that a "
            "session continues from",
            c.gaps.count);
    if (t.untimed && c.untimed_gaps > 0)
        return "the trace has no times: no idle gap measured (idle_gap_s 0; give one with --idle-median and --idle-p99)";
    const std::string how = t.start_to_start ? "start to next start (the trace has no end times)"
                            : t.gaps_from_start > 0
                                ? fmt::format("end to next start ({} from a start: no end time)", t.gaps_from_start)
                                : "end to next start";
    switch (c.gaps.fit) {
        case GapFit::lognormal:
            return fmt::format(
                "{} idle gaps ({}), lognormal by maximum likelihood (sigma {:.3f}; AIC beats the exponential); "
                "sample mean {:.4g} s",
                c.gaps.count, how, c.gaps.sigma, c.gaps.mean_s);
        case GapFit::exponential:
            return fmt::format("{} idle gaps ({}), exponential (its mean; {})", c.gaps.count, how,
                               c.gaps.count < 2 ? "too few gaps for a lognormal"
                               : c.gaps.lognormal_too_wide
                                   ? "a lognormal fits better, but its mean passes the 1e9 s an idle gap may be"
                                   : "a zero gap or a better AIC");
        case GapFit::none: return "no idle gap follows a call of this class (each is its session's last): idle_gap_s 0";
    }
    return "";
}
}  // namespace

Mix classes_mix(const TraceClasses& t, std::string_view source) {
    return mix_from_json(fmt::format("the classes of {}", source), json::parse(classes_mix_json(t, source).dump()));
}

nlohmann::ordered_json classes_mix_json(const TraceClasses& t, std::string_view source) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& c : t.classes) {
        nlohmann::ordered_json e;
        e["description"] = fmt::format("trace class {}: {} calls, input {:.0f}-{:.0f} tokens, output {:.0f}-{:.0f} tokens",
                                       c.name, c.calls, c.context_lo, c.context_hi, c.output_lo, c.output_hi);
        e["share"] = sig6(c.share);
        e["s_cached_tokens"] = sig6(c.mean_cached);
        e["a_append_tokens"] = sig6(c.mean_append);
        e["o_output_tokens"] = sig6(c.mean_output);
        e["calls_per_session"] = sig6(t.calls_per_session);
        if (c.gaps.fit == GapFit::lognormal) {
            e["idle_gap_median_s"] = sig6(c.gaps.median_s);
            e["idle_gap_p99_s"] = sig6(c.gaps.p99_s);
        } else {
            e["idle_gap_s"] = sig6(c.gaps.mean_s);
        }
        e["source"] = std::string(source);
        e["note"] =
            fmt::format("kvroof trace ({} binning, {} context x {} output bins); token means per call; {}",
                        t.method == BinMethod::kmeans ? "k-means" : "quantile", t.context_bins, t.output_bins, gap_note(t, c));
        out[c.name] = std::move(e);
    }
    return out;
}

SynthSpec load_synth_spec(std::string_view flag, std::string_view path) {
    // Read once (a pipe has no second reading), every key and value checked as --mix would.
    const json j = read_json_file(flag, path);
    (void)mix_from_json(fmt::format("{} {}", flag, path), j);
    SynthSpec s;
    bool first = true;
    for (const auto& [name, e] : j.items()) {
        const std::string where = fmt::format("{} {}: {}", flag, path, name);
        if (!e.contains("calls_per_session") || !e.at("calls_per_session").is_number())
            throw InputError(fmt::format("{}: 'calls_per_session' must be a number (the mean session length)", where));
        const double cps = e.at("calls_per_session").get<double>();
        if (!(cps >= 1 && cps <= 1e6))
            throw InputError(fmt::format("{}: 'calls_per_session' must be in [1, 1000000], got {}", where, cps));
        if (first) s.calls_per_session = cps;
        first = false;
        SynthClass c;
        c.name = name;
        c.share = e.at("share").get<double>();
        c.s_cached = e.at("s_cached_tokens").get<double>();
        c.a_append = e.at("a_append_tokens").get<double>();
        c.o_output = e.at("o_output_tokens").get<double>();
        if (e.contains("idle_gap_median_s")) {
            c.gap = GapFit::lognormal;
            c.gap_median_s = e.at("idle_gap_median_s").get<double>();
            c.gap_sigma = lognormal_sigma_from_median_p99(c.gap_median_s, e.at("idle_gap_p99_s").get<double>());
        } else if (e.contains("idle_gap_s") && e.at("idle_gap_s").get<double>() > 0) {
            c.gap = GapFit::exponential;
            c.gap_mean_s = e.at("idle_gap_s").get<double>();
        }
        s.classes.push_back(std::move(c));
    }
    return s;
}

}  // namespace kvroof::io
