// SPDX-License-Identifier: MIT
#include "kvroof/io/parse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "kvroof/error.hpp"

namespace kvroof::io {
namespace {

struct Unit {
    std::string_view name;
    UnitKind kind;
    double scale;
};

constexpr std::array kUnits = {
    Unit{"B", UnitKind::bytes, 1.0},
    Unit{"KB", UnitKind::bytes, 1e3},
    Unit{"MB", UnitKind::bytes, 1e6},
    Unit{"GB", UnitKind::bytes, 1e9},
    Unit{"TB", UnitKind::bytes, 1e12},
    Unit{"KiB", UnitKind::bytes, 1024.0},
    Unit{"MiB", UnitKind::bytes, 1048576.0},
    Unit{"GiB", UnitKind::bytes, 1073741824.0},
    Unit{"TiB", UnitKind::bytes, 1099511627776.0},
    Unit{"B/s", UnitKind::bandwidth, 1.0},
    Unit{"KB/s", UnitKind::bandwidth, 1e3},
    Unit{"MB/s", UnitKind::bandwidth, 1e6},
    Unit{"GB/s", UnitKind::bandwidth, 1e9},
    Unit{"TB/s", UnitKind::bandwidth, 1e12},
    Unit{"GiB/s", UnitKind::bandwidth, 1073741824.0},
    Unit{"MiB/s", UnitKind::bandwidth, 1048576.0},
    Unit{"TiB/s", UnitKind::bandwidth, 1099511627776.0},
    Unit{"GBps", UnitKind::bandwidth, 1e9},
    Unit{"TBps", UnitKind::bandwidth, 1e12},
    // Bits per second, as NICs and links are sold: 400Gb/s = 50 GB/s.
    Unit{"Mb/s", UnitKind::bandwidth, 1e6 / 8},
    Unit{"Gb/s", UnitKind::bandwidth, 1e9 / 8},
    Unit{"Tb/s", UnitKind::bandwidth, 1e12 / 8},
    Unit{"Mbps", UnitKind::bandwidth, 1e6 / 8},
    Unit{"Gbps", UnitKind::bandwidth, 1e9 / 8},
    Unit{"Tbps", UnitKind::bandwidth, 1e12 / 8},
    Unit{"Gbit/s", UnitKind::bandwidth, 1e9 / 8},
    Unit{"Tbit/s", UnitKind::bandwidth, 1e12 / 8},
    Unit{"FLOPS", UnitKind::flop_rate, 1.0},
    Unit{"GFLOPS", UnitKind::flop_rate, 1e9},
    Unit{"TFLOPS", UnitKind::flop_rate, 1e12},
    Unit{"PFLOPS", UnitKind::flop_rate, 1e15},
    Unit{"EFLOPS", UnitKind::flop_rate, 1e18},
    Unit{"GF", UnitKind::flop_rate, 1e9},
    Unit{"TF", UnitKind::flop_rate, 1e12},
    Unit{"PF", UnitKind::flop_rate, 1e15},
    Unit{"s", UnitKind::time, 1.0},
    Unit{"ms", UnitKind::time, 1e-3},
    Unit{"us", UnitKind::time, 1e-6},
    Unit{"min", UnitKind::time, 60.0},
};

const char* kind_example(UnitKind k) {
    switch (k) {
        case UnitKind::bytes: return "a size like 141GB or 22GiB";
        case UnitKind::bandwidth: return "a bandwidth like 4.8TB/s or 900GB/s";
        case UnitKind::flop_rate: return "a FLOP rate like 2.5PFLOPS or 989TFLOPS";
        case UnitKind::time: return "a time like 50ms or 2s";
    }
    return "";
}

// Leading number of `s`; sets `rest` to what follows. Empty optional on failure.
bool leading_number(const std::string& s, double& value, std::string& rest) {
    const char* begin = s.c_str();
    char* end = nullptr;
    value = std::strtod(begin, &end);
    if (end == begin) return false;
    // Decimal only: strtod also reads hexadecimal ("0x10" = 16), which no knob's unit means.
    if (std::find_if(begin, static_cast<const char*>(end), [](char c) { return c == 'x' || c == 'X'; }) != end) return false;
    if (value == 0) value = 0.0;  // -0 is 0: echoed "0", never "-0"
    rest = trim(std::string_view(end));
    return true;
}

// Equal but for letter case, except b and B: bits and bytes are never guessed ("gbps" is Gbps, "80gb" no unit).
bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               if (x == 'b' || x == 'B' || y == 'b' || y == 'B') return x == y;
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

const Unit* find_unit(std::string_view text, UnitKind kind) {
    // Exact case first, then case-insensitive but for b and B (iequals).
    for (const auto& u : kUnits)
        if (u.kind == kind && u.name == text) return &u;
    for (const auto& u : kUnits)
        if (u.kind == kind && iequals(u.name, text)) return &u;
    return nullptr;
}

}  // namespace

bool valid_utf8(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        // Sequence length and the smallest code point it may encode (no overlong forms, no surrogates, <= U+10FFFF).
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        std::uint32_t cp = n == 1 ? c : c & (0x7Fu >> n);
        for (std::size_t k = 1; k < n; ++k) {
            const auto t = static_cast<unsigned char>(s[i + k]);
            if ((t >> 6) != 0x2) return false;
            cp = (cp << 6) | (t & 0x3Fu);
        }
        static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

std::string trim(std::string_view s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return std::string(s.substr(a, b - a));
}

std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t pos = s.find(sep, start);
        out.push_back(trim(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start)));
        if (pos == std::string_view::npos) break;
        start = pos + 1;
    }
    return out;
}

double parse_number(std::string_view flag, std::string_view text) {
    const std::string t = trim(text);
    double v = 0;
    std::string rest;
    if (t.empty() || !leading_number(t, v, rest) || !rest.empty())
        throw InputError(fmt::format("{}: expected a number, got '{}'", flag, text));
    if (!std::isfinite(v)) throw InputError(fmt::format("{}: must be a finite number, got '{}'", flag, text));
    return v;
}

double parse_quantity(std::string_view flag, std::string_view text, UnitKind kind, std::string_view bare_unit) {
    const std::string t = trim(text);
    double v = 0;
    std::string rest;
    if (t.empty() || !leading_number(t, v, rest))
        throw InputError(
            fmt::format("{}: expected {} (a bare number means {}), got '{}'", flag, kind_example(kind), bare_unit, text));
    if (!std::isfinite(v)) throw InputError(fmt::format("{}: must be a finite number, got '{}'", flag, text));
    const Unit* u = find_unit(rest.empty() ? bare_unit : std::string_view(rest), kind);
    if (!u)
        throw InputError(
            fmt::format("{}: unknown unit '{}' for {} (e.g. {}), got '{}'", flag, rest, kind_example(kind), bare_unit, text));
    const double scaled = v * u->scale;
    if (!std::isfinite(scaled)) throw InputError(fmt::format("{}: must be a finite number, got '{}'", flag, text));
    return scaled;
}

DType parse_dtype(std::string_view flag, std::string_view text) {
    const std::string t = trim(text);
    if (iequals(t, "bf16") || iequals(t, "fp16")) return DType::bf16;
    if (iequals(t, "fp8")) return DType::fp8;
    if (iequals(t, "int8")) return DType::int8;
    if (iequals(t, "int4")) return DType::int4;
    if (iequals(t, "fp4") || iequals(t, "nvfp4")) return DType::fp4;
    if (iequals(t, "mxfp4")) return DType::mxfp4;
    throw InputError(fmt::format("{}: must be one of bf16, fp16, fp8, int8, int4, fp4 (nvfp4), mxfp4, got '{}'", flag, text));
}

SloTarget parse_slo_target(std::string_view flag, std::string_view text) {
    const std::string t = trim(text);
    if (t == "itl") return SloTarget::itl;
    if (t == "step") return SloTarget::step;
    throw InputError(fmt::format("{}: must be itl or step, got '{}'", flag, text));
}

IdlePolicy parse_idle_policy(std::string_view flag, std::string_view text) {
    const std::string t = trim(text);
    if (t == "hold") return IdlePolicy::hold;
    if (t == "park") return IdlePolicy::park;
    throw InputError(fmt::format("{}: must be one of hold, park, got '{}'", flag, text));
}

bool looks_like_workload_string(std::string_view text) noexcept { return text.find('=') != std::string_view::npos; }

CallClass parse_workload_string(std::string_view flag, std::string_view text, std::string name) {
    CallClass c;
    c.name = std::move(name);
    bool have_s = false, have_a = false, have_o = false, have_idle = false;
    for (const auto& part : split(text, ',')) {
        const size_t eq = part.find('=');
        if (part.empty() || eq == std::string::npos)
            throw InputError(fmt::format(
                "{}: expected key=value pairs like 's_cached=16000,a_append=2000,o_output=400', got '{}'", flag, text));
        const std::string key = trim(std::string_view(part).substr(0, eq));
        const std::string val = trim(std::string_view(part).substr(eq + 1));
        const std::string where = fmt::format("{} {}", flag, key);
        auto tokens = [&](bool& seen) {
            if (seen) throw InputError(fmt::format("{}: given twice in '{}'", where, text));
            seen = true;
            const double v = parse_number(where, val);
            if (v < 0) throw InputError(fmt::format("{}: must be >= 0 tokens, got '{}'", where, val));
            return v;
        };
        if (key == "s_cached")
            c.s_cached = tokens(have_s);
        else if (key == "a_append")
            c.a_append = tokens(have_a);
        else if (key == "o_output") {
            c.o_output = tokens(have_o);
            if (!(c.o_output > 0)) throw InputError(fmt::format("{}: must be > 0 tokens, got '{}'", where, val));
        } else if (key == "idle_gap") {
            if (have_idle) throw InputError(fmt::format("{}: given twice in '{}'", where, text));
            have_idle = true;
            c.idle_gap = Seconds(parse_quantity(where, val, UnitKind::time, "s"));
            if (c.idle_gap.raw() < 0) throw InputError(fmt::format("{}: must be >= 0, got '{}'", where, val));
        } else {
            throw InputError(fmt::format("{}: unknown key '{}'; allowed: s_cached, a_append, o_output, idle_gap", flag, key));
        }
    }
    if (!have_s || !have_a || !have_o)
        throw InputError(fmt::format("{}: s_cached, a_append and o_output are all required, got '{}'", flag, text));
    c.check_validity(flag);
    return c;
}

std::vector<MixPart> parse_mix_string(std::string_view flag, std::string_view text) {
    std::vector<MixPart> out;
    for (const auto& part : split(text, ',')) {
        const size_t colon = part.find(':');
        if (part.empty() || colon == std::string::npos)
            throw InputError(fmt::format("{}: expected class:weight pairs like 'long:0.7,short:0.3', got '{}'", flag, text));
        MixPart m{trim(std::string_view(part).substr(0, colon)), 0.0};
        if (m.name.empty()) throw InputError(fmt::format("{}: empty class name in '{}'", flag, text));
        m.weight = parse_number(fmt::format("{} {}", flag, m.name), std::string_view(part).substr(colon + 1));
        if (!(m.weight > 0))
            throw InputError(fmt::format("{} {}: weight must be > 0, got '{}'", flag, m.name, part.substr(colon + 1)));
        check::in_range(fmt::format("{} {}: weight", flag, m.name), m.weight, kMinMixWeight, kMaxMixWeight);
        for (const auto& prev : out)
            if (prev.name == m.name) throw InputError(fmt::format("{}: class '{}' given twice", flag, m.name));
        out.push_back(std::move(m));
    }
    return out;
}

namespace {
std::string format_scaled(double v, const std::array<std::pair<double, const char*>, 5>& scales) {
    for (const auto& [scale, unit] : scales) {
        if (std::fabs(v) >= scale) return fmt::format("{:.4g} {}", v / scale, unit);
    }
    return fmt::format("{:.4g} {}", v / scales.back().first, scales.back().second);
}
}  // namespace

std::string format_bytes(double b) {
    return format_scaled(b, {{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}, {1.0, "B"}}});
}
std::string format_bandwidth(double b) {
    return format_scaled(b, {{{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}, {1.0, "B/s"}}});
}
std::string format_flops(double f) {
    return format_scaled(f, {{{1e15, "PFLOPS"}, {1e12, "TFLOPS"}, {1e9, "GFLOPS"}, {1e6, "MFLOPS"}, {1.0, "FLOPS"}}});
}

}  // namespace kvroof::io
