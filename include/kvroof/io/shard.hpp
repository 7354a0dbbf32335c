// SPDX-License-Identifier: MIT
#pragma once
// --shard K/N: run the K-th of N equal slices of a sweep (1-based).

#include <string_view>

namespace kvroof::io {

inline constexpr int kMaxShards = 1000000;

struct Shard {
    int index = 1;  // K
    int count = 1;  // N
};

// "3/16" -> {3, 16}. Throws InputError naming `flag` unless K and N are whole
// numbers with 1 <= K <= N <= kMaxShards.
[[nodiscard]] Shard parse_shard(std::string_view flag, std::string_view text);

}  // namespace kvroof::io
