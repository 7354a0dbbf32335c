// SPDX-License-Identifier: MIT
#pragma once
// Small validation helpers shared by the spec checks: each throws InputError
// naming the field, the rule and the offending value.

#include <cmath>
#include <string>
#include <string_view>

#include "kvroof/error.hpp"

namespace kvroof::check {

inline std::string show(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::string s = std::to_string(v);
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
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

}  // namespace kvroof::check
