// SPDX-License-Identifier: MIT
#pragma once
// Text -> values for the CLI and config files. Every failure throws
// InputError naming the flag, the rule and the text.

#include <string>
#include <string_view>
#include <vector>

#include "kvroof/spec/knobs.hpp"
#include "kvroof/spec/model.hpp"
#include "kvroof/spec/policy.hpp"
#include "kvroof/spec/workload.hpp"
#include "kvroof/units.hpp"

namespace kvroof::io {

using kvroof::UnitKind;  // spec/knobs.hpp

// Parses "141GB", "4.8TB/s", "2.5PFLOPS", "50ms", "22GiB". A bare number is
// taken in `bare_unit` (e.g. "GB"), which must itself be a unit of `kind`.
// Returns SI base units (bytes, bytes/s, FLOP/s, seconds).
[[nodiscard]] double parse_quantity(std::string_view flag, std::string_view text, UnitKind kind, std::string_view bare_unit);

// A plain finite number ("0.85", "1e-3").
[[nodiscard]] double parse_number(std::string_view flag, std::string_view text);

[[nodiscard]] DType parse_dtype(std::string_view flag, std::string_view text);
[[nodiscard]] IdlePolicy parse_idle_policy(std::string_view flag, std::string_view text);
[[nodiscard]] SloTarget parse_slo_target(std::string_view flag, std::string_view text);

// "s_cached=16000,a_append=2000,o_output=400[,idle_gap=10.5s]" -> a class
// named `name`. s_cached, a_append and o_output are required.
[[nodiscard]] CallClass parse_workload_string(std::string_view flag, std::string_view text, std::string name = "custom");

// True when `text` looks like key=value pairs rather than a preset name.
[[nodiscard]] bool looks_like_workload_string(std::string_view text) noexcept;

struct MixPart {
    std::string name;
    double weight;
};
// "long:0.7,short:0.3" -> names and weights in [kMinMixWeight, kMaxMixWeight]
// (not yet normalised).
inline constexpr double kMinMixWeight = 1e-6, kMaxMixWeight = 1e6;
[[nodiscard]] std::vector<MixPart> parse_mix_string(std::string_view flag, std::string_view text);

// Whitespace trimmed from both ends; `s` split at `sep` with each part trimmed.
[[nodiscard]] std::string trim(std::string_view s);
// Whether `s` is well-formed UTF-8 (what a JSON output can carry: a path or a name read from a file goes into one).
[[nodiscard]] bool valid_utf8(std::string_view s) noexcept;
[[nodiscard]] std::vector<std::string> split(std::string_view s, char sep);

// Human-readable quantity, e.g. 1.41e11 bytes -> "141 GB".
[[nodiscard]] std::string format_bytes(double bytes);
[[nodiscard]] std::string format_bandwidth(double bytes_per_s);
[[nodiscard]] std::string format_flops(double flop_per_s);

}  // namespace kvroof::io
