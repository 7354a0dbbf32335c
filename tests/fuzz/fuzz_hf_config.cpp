// SPDX-License-Identifier: MIT
// A Hugging Face config.json as --model FILE, run through the verdict.
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    const std::string& path = fuzz::write_scratch(fuzz::text(data, size));
    try {
        io::ScenarioInputs in;
        in.set("model", path);
        fuzz::run_verdict(in);
    } catch (const InputError&) {
    }
    return 0;
}
