// SPDX-License-Identifier: MIT
// A sweep file (--config FILE): loaded and validated as `kvroof sweep` does
// before it writes anything; a valid one has its first rows computed.
#include "fuzz_support.hpp"
#include "kvroof/io/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    const std::string& path = fuzz::write_scratch(fuzz::text(data, size));
    try {
        io::SweepSpec spec = io::load_sweep_file(path);
        io::validate_sweep(spec);
        if (io::sweep_points(spec) > 64) return 0;  // bound the work per input
        std::string out = io::sweep_header(spec);
        io::run_sweep(spec, [&](std::string_view block) { out.append(block); });
        fuzz::require_no_nonfinite_token(out);
    } catch (const InputError&) {
    }
    return 0;
}
