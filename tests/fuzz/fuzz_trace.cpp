// SPDX-License-Identifier: MIT
// `kvroof trace FILE`: the text as JSON Lines, as CSV and as a conversations file, each trace that parses
// classified (quantile and k-means) and written back as a mix file the loader must accept.
#include "fuzz_support.hpp"
#include "kvroof/io/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kvroof;
    const std::string_view t = fuzz::text(data, size);
    for (const io::TraceFormat f : {io::TraceFormat::jsonl, io::TraceFormat::csv, io::TraceFormat::conversations}) {
        std::vector<TraceCall> calls;
        try {
            calls = io::parse_trace_text("trace t", t, f);
        } catch (const InputError&) {
            continue;
        }
        for (const BinMethod m : {BinMethod::quantile, BinMethod::kmeans}) {
            TraceClasses c;
            try {
                c = classify_trace(calls, 3, 2, m);  // a gap past an idle gap's bound is bad input
            } catch (const InputError&) {
                continue;
            }
            if (c.untimed) assign_untimed_gaps(c, 5.2, 81.4);
            (void)io::classes_mix(c, "t");  // what kvroof trace writes, --mix must read: any throw is a defect
        }
    }
    return 0;
}
