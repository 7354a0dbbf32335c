// SPDX-License-Identifier: MIT
// A preset file as --hardware/--model/--workload FILE (and a checkpoint as
// `kvroof layers --checkpoint FILE`): the first byte picks which, the rest is
// the file. A file that loads is run through the verdict.
#include "fuzz_support.hpp"
#include "kvroof/io/presets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    if (size == 0) return 0;
    const int which = data[0] % 4;
    const std::string& path = fuzz::write_scratch(fuzz::text(data + 1, size - 1));
    try {
        io::ScenarioInputs in;
        switch (which) {
            case 0: in.set("hardware", path); break;
            case 1: in.set("model", path); break;
            case 2: in.set("workload", path); break;
            default: (void)io::load_checkpoint("--checkpoint", path); return 0;
        }
        fuzz::run_verdict(in);
    } catch (const InputError&) {
    }
    return 0;
}
