// SPDX-License-Identifier: MIT
#pragma once
// A mix file: {"name": class, ...}, each class a data/workloads.json entry with
// a "share" (its call probability; the shares sum to 1 within 0.001 and are
// normalised). `kvroof trace` writes one; --mix FILE.json reads one.

#include <string_view>

#include "kvroof/spec/workload.hpp"

namespace kvroof::io {

// True when a --mix value names a mix file rather than
// class:weight pairs.
[[nodiscard]] inline bool is_mix_file(std::string_view text) noexcept {
    // A path as --model and --workload take one: a .json name, or any '/' (no class name has one), so a process
    // substitution (/dev/fd/63) or /dev/stdin reads as a file.
    return (text.size() > 5 && text.substr(text.size() - 5) == ".json") || text.find('/') != std::string_view::npos;
}

// Every failure is an InputError naming `flag`, the file and the class.
[[nodiscard]] Mix load_mix_file(std::string_view flag, std::string_view path);

}  // namespace kvroof::io
