// SPDX-License-Identifier: MIT
// --mix "long:0.7,short:0.3": the string parser, then the verdict on the mix.
#include "fuzz_support.hpp"
#include "kvroof/io/parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    const std::string_view t = fuzz::text(data, size);
    try {
        (void)io::parse_mix_string("--mix", t);
        io::ScenarioInputs in;
        in.set("mix", std::string(t));
        fuzz::run_verdict(in);
    } catch (const InputError&) {
    }
    return 0;
}
