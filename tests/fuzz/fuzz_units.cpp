// SPDX-License-Identifier: MIT
// Unit-bearing values ("141GB", "4.8TB/s", "2.5PFLOPS", "50ms") and plain
// numbers, as every hardware flag and SLO takes them.
#include "fuzz_support.hpp"
#include "kvroof/io/parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    const std::string_view t = fuzz::text(data, size);
    struct Kind {
        io::UnitKind kind;
        const char* bare;
    };
    for (const Kind k : {Kind{io::UnitKind::bytes, "GB"}, Kind{io::UnitKind::bandwidth, "TB/s"},
                         Kind{io::UnitKind::flop_rate, "TFLOPS"}, Kind{io::UnitKind::time, "ms"}}) {
        try {
            const double v = io::parse_quantity("--x", t, k.kind, k.bare);
            if (!std::isfinite(v)) std::abort();  // a parsed quantity is always finite
        } catch (const InputError&) {
        }
    }
    try {
        if (!std::isfinite(io::parse_number("--x", t))) std::abort();
    } catch (const InputError&) {
    }
    try {
        (void)io::parse_dtype("--kv-dtype", t);
    } catch (const InputError&) {
    }
    try {
        (void)io::parse_idle_policy("--idle", t);
    } catch (const InputError&) {
    }
    return 0;
}
