// SPDX-License-Identifier: MIT
// `kvroof trace FILE`: the text as JSON Lines, as CSV and as a conversations file, each trace that parses
// classified (quantile and k-means) and written back as a mix file the loader must accept.
#include "fuzz_support.hpp"
#include "kvroof/io/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    const std::string_view t = fuzz::text(data, size);
    for (const io::TraceFormat f : {io::TraceFormat::jsonl, io::TraceFormat::csv, io::TraceFormat::conversations}) {
        try {
            const std::vector<TraceCall> calls = io::parse_trace_text("trace t", t, f);
            for (const BinMethod m : {BinMethod::quantile, BinMethod::kmeans}) {
                TraceClasses c = classify_trace(calls, 3, 2, m);
                if (c.untimed) assign_untimed_gaps(c, 5.2, 81.4);
                (void)io::classes_mix(c, "t");
            }
        } catch (const InputError&) {
        }
    }
    return 0;
}
