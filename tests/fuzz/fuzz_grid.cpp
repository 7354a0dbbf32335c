// SPDX-License-Identifier: MIT
// --grid "knob=list" or "knob=lo:hi:step": the entry parser and, for a parsed
// axis, its size and first and last values (a range is generated lazily).
#include "fuzz_support.hpp"
#include "kvroof/io/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    try {
        const io::GridAxis a = io::parse_grid_entry(fuzz::text(data, size));
        const std::uint64_t n = a.size();
        if (n == 0) std::abort();  // an empty axis must have been refused
        (void)a.value(0);
        (void)a.value(n - 1);
    } catch (const InputError&) {
    }
    return 0;
}
