// SPDX-License-Identifier: MIT
// --workload "s_cached=…,a_append=…,o_output=…[,idle_gap=…]": the string
// parser, then the whole verdict on the class it yields.
#include "fuzz_support.hpp"
#include "kvroof/io/parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    const std::string_view t = fuzz::text(data, size);
    try {
        (void)io::parse_workload_string("--workload", t);
        io::ScenarioInputs in;
        in.set("workload", std::string(t));
        fuzz::run_verdict(in);
    } catch (const InputError&) {
    }
    return 0;
}
