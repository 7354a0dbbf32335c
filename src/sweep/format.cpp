// SPDX-License-Identifier: MIT
// The sweep's number and text cells, and its CSV header.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "kvroof/io/sweep.hpp"
#include "sweep_rows.hpp"

namespace kvroof::io {

namespace {
// Outside the fast path's reach: non-finite, or a magnitude below 1e-16 or at
// least 1e16. Kept out of line so the fast path needs no stack frame for fmt.
[[gnu::noinline]] char* write_number6_rare(char* p, double v) {
    if (!std::isfinite(v)) {
        const std::string_view t = std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
        std::memcpy(p, t.data(), t.size());
        return p + t.size();
    }
    return fmt::format_to(p, "{:.6g}", v);
}
// The six significant digits of a > 0 as printf rounds them (the exact value, ties to even) and its decade:
// a = m · 10^(e − 5), m in [100000, 999999]. Returned by value: taking m and e by reference put them in memory on the
// fast path (+20 instructions a number).
struct Digits {
    std::uint32_t m;
    int e;
};
[[gnu::noinline]] Digits exact_digits(double a) {
    char buf[32];
    const char* end = fmt::format_to(buf, "{:.5e}", a);  // d.ddddde±XX
    Digits d{0, 0};
    const char* c = buf;
    for (; *c != 'e'; ++c)
        if (*c != '.') d.m = d.m * 10 + static_cast<std::uint32_t>(*c - '0');
    d.e = std::atoi(std::string(c + 1, end).c_str());
    return d;
}
// The six digits of m in [100000, 999999], a number m · 10^(e − 5), laid out as write_number6 shows it.
[[gnu::always_inline]] inline char* place_digits(char* p, std::uint32_t m, int e) {
    // Six digits, two at a time, then '0's: d[i] is digit i of the mantissa
    // for any i < 16, so the integer part is one fixed-size copy.
    static constexpr char kPairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char d[16];
    const std::uint32_t hi = m / 10000, mid = m / 100 % 100, lo = m % 100;
    std::memcpy(d, kPairs + 2 * std::size_t{hi}, 2);
    std::memcpy(d + 2, kPairs + 2 * std::size_t{mid}, 2);
    std::memcpy(d + 4, kPairs + 2 * std::size_t{lo}, 2);
    std::memset(d + 6, '0', 10);
    // Significant digits: six less the trailing zeros (m has no leading zero).
    // Trailing decimal zeros of a two-digit pair, read from a table (00: 2; hi >= 10 is never 00).
    static constexpr auto kTrailing = [] {
        std::array<unsigned char, 100> t{};
        for (std::size_t i = 0; i < t.size(); ++i) t[i] = i == 0 ? 2 : i % 10 == 0 ? 1 : 0;
        return t;
    }();
    const int nd = lo != 0 ? 6 - kTrailing[lo] : mid != 0 ? 4 - kTrailing[mid] : 2 - kTrailing[hi];
    if (e >= 0 && e < 15) {  // dddd[.ddd]: the integer part is d[0..e], zeros past nd
        std::memcpy(p, d, 16);
        p += e + 1;
        if (nd > e + 1) {
            *p = '.';
            std::memcpy(p + 1, d + e + 1, 8);
            p += nd - e;
        }
    } else if (e < 0 && e >= -5) {  // 0.000ddd
        std::memcpy(p, "0.00000", 8);
        p += 1 - e;
        std::memcpy(p, d, 8);
        p += nd;
    } else {
        *p++ = d[0];
        if (nd > 1) {
            *p = '.';
            std::memcpy(p + 1, d + 1, 8);
            p += nd;
        }
        *p++ = 'e';
        *p++ = e < 0 ? '-' : '+';
        const int ae = e < 0 ? -e : e;
        *p++ = static_cast<char>('0' + ae / 10);
        *p++ = static_cast<char>('0' + ae % 10);
    }
    return p;
}
}  // namespace

char* write_number6(char* p, double v) {
    if (v == 0) {
        *p++ = '0';
        return p;
    }
    const double a = v < 0 ? -v : v;
    if (!(a >= 1e-16 && a < 1e16)) return write_number6_rare(p, v);  // NaN fails both
    static constexpr double kPow10[] = {1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11,
                                        1e-10, 1e-9,  1e-8,  1e-7,  1e-6,  1e-5,  1e-4,  1e-3,  1e-2,  1e-1,  1e0,   1e1,
                                        1e2,   1e3,   1e4,   1e5,   1e6,   1e7,   1e8,   1e9,   1e10,  1e11,  1e12,  1e13,
                                        1e14,  1e15,  1e16,  1e17,  1e18,  1e19,  1e20,  1e21,  1e22};
    constexpr int kZero = 22;  // index of 1e0
    // Decade from the binary exponent: v in [2^b, 2^(b+1)) puts log10(v) in
    // [b·log10 2, (b+1)·log10 2), so the decade is e or e + 1.
    std::uint64_t bits;
    std::memcpy(&bits, &a, sizeof bits);
    const int b = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    int e = (b * 78913) >> 18;  // floor(b·log10 2), exact for |b| < 1100; no libm call
    if (kPow10[kZero + e + 1] <= a) ++e;
    const int shift = 5 - e;  // in [-10, 21]
    // x = a·10^shift in about [1e5, 1e6), under 2^20: x·2^32 is exact and under 2^52, so its integer part q holds x
    // to 2^-32; q + 2^31 is x + 0.5 in those units, and its top bits are x rounded half up (no libm call).
    // 32-bit: m < 2^20, and a division of it by a constant is one 32-bit multiply.
    const auto q = static_cast<std::int64_t>(a * kPow10[kZero + shift] * 4294967296.0) + (std::int64_t{1} << 31);
    auto m = static_cast<std::uint32_t>(q >> 32);
    // Within 5·2^-32 (1.2e-9) of a tie, more than the product's error (under 2.4e-10: one rounding in 10^shift, one
    // in the product), the exact value decides, as %.6g's does: 1015.625 is 1015.62 (half to even), 12345.65 (a
    // double just below the tie) 12345.6. Both had rounded up. fmt's six correctly rounded digits and exponent then
    // take the layout below, as every other number's do.
    if (((static_cast<std::uint64_t>(q) + 5) & 0xFFFFFFFFu) < 10) [[unlikely]] {
        const Digits exact = exact_digits(a);
        m = exact.m;
        e = exact.e;
    }
    if (v < 0) *p++ = '-';
    if (m >= 1000000) {  // rounding carried into the next decade
        m = (m + 5) / 10;
        ++e;
    }
    return place_digits(p, m, e);
}

void append_number6(std::string& out, double v) {
    char buf[kNumber6Max];
    out.append(buf, static_cast<size_t>(write_number6(buf, v) - buf));
}

namespace sweep_detail {
void CellWriter::begin(std::string& out) noexcept {
    first_ = true;
    column_ = 0;
    tapped_ = std::numeric_limits<double>::quiet_NaN();
    if (!csv_) out += '{';
}

void CellWriter::separate(std::string& out) {
    if (!first_) out += ',';
    first_ = false;
    ++column_;
}

void CellWriter::number(std::string& out, std::string_view column, double v) {
    if (column_ == tap_column_) tapped_ = v;
    separate(out);
    if (csv_) {
        append_number(out, v);
        return;
    }
    out.append("\"").append(column).append("\":");
    append_json_number(out, v);
}

void CellWriter::text(std::string& out, std::string_view column, std::string_view v) {
    separate(out);
    if (csv_)
        append_csv_text(out, std::string(v));
    else
        out.append("\"").append(column).append("\":").append(nlohmann::json(std::string(v)).dump());
}

void CellWriter::none(std::string& out, std::string_view column) {
    separate(out);
    if (!csv_) out.append("\"").append(column).append("\":null");
}

void CellWriter::axes(std::string& out, const SweepSpec& spec, const std::vector<std::uint64_t>& idx) {
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        const GridAxis& a = spec.axes[i];
        if (is_f_or_ov(a)) continue;
        if (a.text())
            text(out, a.column, a.cell(idx[i]));
        else if (!a.row->top_text.empty() && a.number(idx[i]) == std::numeric_limits<double>::infinity())
            text(out, a.column, a.row->top_text);  // concurrency's max: its text, as on the command line
        else
            number(out, a.column, a.number(idx[i]));
    }
}

void CellWriter::end(std::string& out) const {
    if (!csv_) out += '}';
    out += '\n';
}

std::vector<std::string_view> sweep_columns(const SweepSpec& spec) {
    std::vector<std::string_view> cols;
    for (const auto& a : spec.axes)
        if (!is_f_or_ov(a)) cols.emplace_back(a.column);
    if (spec.analysis != SweepAnalysis::verdict) {
        for (const ColumnInfo& c : analysis_columns(spec.analysis)) cols.emplace_back(c.name);
        return cols;
    }
    if (sweep_load(spec)) {  // operating-point rows
        cols.insert(cols.end(), std::begin(kPointColumns), std::end(kPointColumns));
        return cols;
    }
    cols.insert(cols.end(), std::begin(kResultColumns), std::end(kResultColumns));
    if (axis_of(spec, "ov") >= 0) cols.insert(cols.end(), {"ov", "tps_ov_tok_per_s", "gain_ov"});
    return cols;
}

int tap_index(const SweepSpec& spec, std::string_view column) {
    const std::vector<std::string_view> cols = sweep_columns(spec);
    const auto it = std::find(cols.begin(), cols.end(), column);
    return it == cols.end() ? -1 : static_cast<int>(it - cols.begin());
}
}  // namespace sweep_detail

std::string sweep_header(const SweepSpec& spec) {
    if (spec.format != SweepFormat::csv) return {};
    std::string h;
    for (std::string_view c : sweep_detail::sweep_columns(spec)) h.append(c).append(",");
    h.back() = '\n';
    return h;
}

void check_tap_column(const SweepSpec& spec, std::string_view column) {
    const std::vector<std::string_view> cols = sweep_detail::sweep_columns(spec);
    if (std::find(cols.begin(), cols.end(), column) == cols.end())
        throw InputError(fmt::format("--y: unknown column '{}'; allowed: {}", column, fmt::join(cols, ",")));
    static constexpr std::string_view kText[] = {"status", "binding_con", "binding_opt", "verdict", "binding"};
    bool text = std::find(std::begin(kText), std::end(kText), column) != std::end(kText);
    for (const sweep_detail::ColumnInfo& c : sweep_detail::analysis_columns(spec.analysis))
        text = text || (c.text && c.name == column);
    for (const auto& a : spec.axes) text = text || (a.column == column && a.text());
    if (text) throw InputError(fmt::format("--y: column '{}' is not numeric", column));
}

std::string sweep_column_label(std::string_view column) {
    static constexpr std::pair<std::string_view, std::string_view> kResults[] = {
        {"f", "offload fraction f"},
        {"f_star_con", "best f at ov = 0"},
        {"f_star_opt", "best f at ov = 1"},
        {"tps_base_con_tok_per_s", "throughput at f = 0, ov = 0 (tok/s)"},
        {"tps_base_opt_tok_per_s", "throughput at f = 0, ov = 1 (tok/s)"},
        {"tps_base_con_per_gpu_tok_per_s", "throughput per GPU at f = 0, ov = 0 (tok/s)"},
        {"tps_base_opt_per_gpu_tok_per_s", "throughput per GPU at f = 0, ov = 1 (tok/s)"},
        {"tps_con_tok_per_s", "throughput, ov = 0 (tok/s)"},
        {"tps_opt_tok_per_s", "throughput, ov = 1 (tok/s)"},
        {"tps_con_per_gpu_tok_per_s", "throughput per GPU, ov = 0 (tok/s)"},
        {"tps_opt_per_gpu_tok_per_s", "throughput per GPU, ov = 1 (tok/s)"},
        {"gain_con", "gain over f = 0, ov = 0 (x)"},
        {"gain_opt", "gain over f = 0, ov = 1 (x)"},
        {"batch_con_seq", "batch, ov = 0 (sequences)"},
        {"tpot_con_ms", "TPOT, ov = 0 (ms)"},
        {"ttft_con_ms", "TTFT, ov = 0 (ms)"},
        {"ov", "overlap ov"},
        {"tps_ov_tok_per_s", "throughput at ov (tok/s)"},
        {"gain_ov", "gain over f = 0 at ov (x)"},
        // Operating-point rows (a load) and their load axes.
        {"load_batch_seq", "fixed batch (sequences)"},
        {"load_clients", "concurrency (clients)"},
        {"load_request_rate_per_s", "request rate (requests/s)"},
        {"batch_seq", "sequences decoding (mean)"},
        {"running_req", "requests running"},
        {"itl_ms", "ITL (ms)"},
        {"step_ms", "decode step with its prefill (ms)"},
        {"ttft_ms", "TTFT (ms)"},
        {"e2e_ms", "end-to-end latency (ms)"},
        {"tps_tok_per_s", "throughput (tok/s)"},
        {"tps_per_gpu_tok_per_s", "throughput per GPU (tok/s)"},
        {"tps_per_user_tok_per_s", "throughput per user (tok/s)"},
        {"requests_per_s", "requests per second"},
        {"hbm_used_GB", "HBM used (GB)"},
    };
    for (const auto& [c, label] : kResults)
        if (c == column) return std::string(label);
    for (SweepAnalysis a : {SweepAnalysis::prefill, SweepAnalysis::layers})
        for (const sweep_detail::ColumnInfo& c : sweep_detail::analysis_columns(a))
            if (c.name == column) return c.label;
    for (const Knob& k : knobs()) {
        if (k.column != column || k.type == KnobType::text) continue;
        // The help's first phrase ("HBM bandwidth per GPU, e.g. …" -> "HBM bandwidth per GPU") and the bare unit.
        std::string_view h = k.help.substr(0, k.help.find_first_of(",:(;"));
        while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
        std::string label = h.empty() ? std::string(k.name) : std::string(h);
        if (!k.bare.empty()) label += " (" + std::string(k.bare) + ")";
        return label;
    }
    return {};
}

namespace sweep_detail {

void append_csv_text(std::string& out, const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) {
        out += s;
        return;
    }
    out += '"';
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
}

}  // namespace sweep_detail
}  // namespace kvroof::io
