// SPDX-License-Identifier: MIT
#pragma once
// A fabricated `kvroof probe --cpu` result for the tests: host "box", 4
// threads, 64 GB, one all-thread triad of 10^6 elements in 1 ms (24e6 B / 1 ms
// = 24 GB/s) and one attention run at `context` keys taking `attention_s`.

#include "kvroof/io/probe.hpp"

namespace kvroof::test {

inline io::ProbeResult probe_box(int context, double attention_s) {
    io::ProbeResult r;
    r.hostname = "box";
    r.date = "2026-12-01";
    r.threads = 4;
    r.memory_bytes = 64e9;
    io::TriadRun t;
    t.scope = "all", t.threads = 4, t.elements = 1'000'000, t.repetitions = 3, t.best_s = 0.001;
    r.triad = {t};
    io::AttentionRun a;
    a.shape.context = context, a.repetitions = 3, a.best_s = attention_s;
    r.attention = {a};
    return r;
}

}  // namespace kvroof::test
