// SPDX-License-Identifier: MIT
#pragma once
// Small validation helpers shared by the spec checks: each throws InputError
// naming the field, the rule and the offending value.

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "kvroof/error.hpp"

namespace kvroof::check {

// The shortest text that reads back as `v`, without an exponent from 1e-4 to
// 1e15 ("100000", "3000000000", "0.0001"), with one elsewhere ("1e-320", "1e+18").
inline std::string show(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::array<char, 32> buf{};
    const double a = std::fabs(v);
    const auto res = a == 0 || (a >= 1e-4 && a < 1e15)
                         ? std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed)
                         : std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), res.ptr);
}

inline void finite(std::string_view field, double v) {
    if (!std::isfinite(v)) throw InputError(std::string(field) + ": must be a finite number, got " + show(v));
}
inline void positive(std::string_view field, double v) {
    finite(field, v);
    if (!(v > 0)) throw InputError(std::string(field) + ": must be > 0, got " + show(v));
}
inline void non_negative(std::string_view field, double v) {
    finite(field, v);
    if (v < 0) throw InputError(std::string(field) + ": must be >= 0, got " + show(v));
}
inline void unit_interval(std::string_view field, double v) {
    finite(field, v);
    if (v < 0 || v > 1) throw InputError(std::string(field) + ": must be in [0, 1], got " + show(v));
}
inline void open_unit_interval_right(std::string_view field, double v) {
    finite(field, v);
    if (!(v > 0) || v > 1) throw InputError(std::string(field) + ": must be in (0, 1], got " + show(v));
}
// The documented range of a field, both ends included (docs/model.md, "Input ranges").
inline void in_range(std::string_view field, double v, double lo, double hi) {
    finite(field, v);
    if (v < lo || v > hi)
        throw InputError(std::string(field) + ": must be in [" + show(lo) + ", " + show(hi) + "], got " + show(v));
}
// The same, stated in the flag's own bare unit: v, lo and hi are in base units (bytes, FLOP/s) and each is
// shown divided by `scale` with `unit` after it, e.g. in_range("--vram", v, 0, hi, 1e9, "GB").
inline void in_range(std::string_view field, double v, double lo, double hi, double scale, std::string_view unit) {
    finite(field, v);
    if (v < lo || v > hi) {
        const auto g = [](double x) {  // six significant digits: a scaled bound shows no rounding residue
            std::array<char, 32> buf{};
            std::snprintf(buf.data(), buf.size(), "%g", x);
            return std::string(buf.data());
        };
        const std::string u = " " + std::string(unit);
        throw InputError(std::string(field) + ": must be in [" + g(lo / scale) + ", " + g(hi / scale) + "]" + u + ", got " +
                         g(v / scale) + u);
    }
}
// (lo, hi]: a quantity that must be positive, with its documented upper end.
inline void above_up_to(std::string_view field, double v, double lo, double hi) {
    finite(field, v);
    if (!(v > lo) || v > hi)
        throw InputError(std::string(field) + ": must be in (" + show(lo) + ", " + show(hi) + "], got " + show(v));
}
// A whole number in [lo, hi], checked before any conversion to int.
inline int whole_in_range(std::string_view field, double v, int lo, int hi) {
    in_range(field, v, lo, hi);
    if (v != std::floor(v)) throw InputError(std::string(field) + ": must be a whole number, got " + show(v));
    return static_cast<int>(v);
}

}  // namespace kvroof::check
