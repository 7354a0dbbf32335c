// SPDX-License-Identifier: MIT
// The sweep's number and text cells, and its CSV header.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "kvroof/io/sweep.hpp"
#include "sweep_rows.hpp"

namespace kvroof::io {

void append_number6(std::string& out, double v) {
    if (!std::isfinite(v)) {
        out += std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == 0) {
        out += '0';
        return;
    }
    static constexpr double kPow10[] = {1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12,
                                        1e-11, 1e-10, 1e-9,  1e-8,  1e-7,  1e-6,  1e-5,  1e-4,  1e-3,  1e-2,  1e-1,
                                        1e0,   1e1,   1e2,   1e3,   1e4,   1e5,   1e6,   1e7,   1e8,   1e9,   1e10,
                                        1e11,  1e12,  1e13,  1e14,  1e15,  1e16,  1e17,  1e18,  1e19,  1e20,  1e21, 1e22};
    constexpr int kZero = 22;  // index of 1e0
    char buf[40];
    int n = 0;
    if (v < 0) {
        buf[n++] = '-';
        v = -v;
    }
    if (v < 1e-16 || v >= 1e16) {  // outside the table's reach for a 6-digit mantissa
        out.append(buf, static_cast<size_t>(n));
        fmt::format_to(std::back_inserter(out), "{:.6g}", v);
        return;
    }
    // Decade from the binary exponent: v in [2^b, 2^(b+1)) puts log10(v) in
    // [b·log10 2, (b+1)·log10 2), so the decade is e or e + 1.
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    const int b = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    int e = static_cast<int>(std::floor(b * 0.30102999566398120));
    if (kPow10[kZero + e + 1] <= v) ++e;
    const int shift = 5 - e;  // in [-10, 21]
    auto m = std::llround(v * kPow10[kZero + shift]);  // v > 0: half away from zero = half up
    if (m >= 1000000) {  // rounding carried into the next decade
        m = (m + 5) / 10;
        ++e;
    }
    char d[6];
    for (int i = 5; i >= 0; --i) {
        d[i] = static_cast<char>('0' + m % 10);
        m /= 10;
    }
    int nd = 6;
    while (nd > 1 && d[nd - 1] == '0') --nd;
    if (e >= 0 && e < 15) {
        for (int i = 0; i <= e; ++i) buf[n++] = i < nd ? d[i] : '0';
        if (nd > e + 1) {
            buf[n++] = '.';
            for (int i = e + 1; i < nd; ++i) buf[n++] = d[i];
        }
    } else if (e < 0 && e >= -5) {
        buf[n++] = '0';
        buf[n++] = '.';
        for (int i = 0; i < -e - 1; ++i) buf[n++] = '0';
        for (int i = 0; i < nd; ++i) buf[n++] = d[i];
    } else {
        buf[n++] = d[0];
        if (nd > 1) {
            buf[n++] = '.';
            for (int i = 1; i < nd; ++i) buf[n++] = d[i];
        }
        buf[n++] = 'e';
        buf[n++] = e < 0 ? '-' : '+';
        const int ae = e < 0 ? -e : e;
        buf[n++] = static_cast<char>('0' + ae / 10);
        buf[n++] = static_cast<char>('0' + ae % 10);
    }
    out.append(buf, static_cast<size_t>(n));
}

std::string sweep_header(const SweepSpec& spec) {
    if (spec.format != SweepFormat::csv) return {};
    std::string h;
    for (const auto& a : spec.axes)
        if (!sweep_detail::is_f_or_ov(a)) h += a.column + ",";
    for (const char* c : sweep_detail::kResultColumns) h += std::string(c) + ",";
    if (sweep_detail::axis_of(spec, "ov") >= 0) h += "ov,tps_ov_tok_per_s,gain_ov,";
    h.back() = '\n';
    return h;
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
