// SPDX-License-Identifier: MIT
#include "kvroof/io/shard.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kvroof/error.hpp"
#include "kvroof/io/parse.hpp"

namespace kvroof::io {

Shard parse_shard(std::string_view flag, std::string_view text) {
    const auto fail = [&] {
        return InputError(
            fmt::format("{}: expected K/N with whole numbers 1 <= K <= N <= {}, e.g. 3/16, got '{}'", flag, kMaxShards, text));
    };
    const size_t slash = text.find('/');
    if (slash == std::string_view::npos) throw fail();
    double k = 0, n = 0;
    try {
        k = parse_number(flag, text.substr(0, slash));
        n = parse_number(flag, text.substr(slash + 1));
    } catch (const InputError&) {
        throw fail();
    }
    // Range first: only then is the conversion to int defined.
    if (!(k >= 1) || !(n >= k) || n > kMaxShards || k != std::floor(k) || n != std::floor(n)) throw fail();
    return Shard{static_cast<int>(k), static_cast<int>(n)};
}

}  // namespace kvroof::io
