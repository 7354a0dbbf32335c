// SPDX-License-Identifier: MIT
// --shard K/N.
#include "fuzz_support.hpp"
#include "kvroof/io/shard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    try {
        const io::Shard s = io::parse_shard("--shard", fuzz::text(data, size));
        if (s.index < 1 || s.index > s.count || s.count > io::kMaxShards) std::abort();
    } catch (const InputError&) {
    }
    return 0;
}
