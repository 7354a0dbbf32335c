// SPDX-License-Identifier: MIT
#pragma once
// `kvroof probe --cpu`: this host measured (src/probe.cpp): DRAM bandwidth by a
// multi-threaded STREAM-style triad (all nodes, and per NUMA node when /sys
// shows more than one), and an FP32 GQA decode-attention kernel's achieved
// FLOP/s and bytes/s at a few context lengths; written as a data/hosts.json
// entry. Only the accounting below is pure; the rest times and reads /sys.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvroof::io {

// STREAM's accounting of a = b + s·c over n doubles: two reads and one write
// of 8 bytes each (the write-allocate read is not counted).
[[nodiscard]] constexpr double triad_bytes(std::size_t n) noexcept { return 24.0 * static_cast<double>(n); }

// One decode step of GQA attention for one sequence: `q_heads` query heads in
// groups over `kv_heads` KV heads of `head_dim`, over `context` cached tokens.
struct AttentionShape {
    int kv_heads = 8, group = 8, head_dim = 128, context = 1024;
    [[nodiscard]] constexpr int q_heads() const noexcept { return kv_heads * group; }
};
// q·Kᵀ and P·V: 2·d multiply-adds each per query head and token (softmax not counted).
[[nodiscard]] constexpr double attention_flops(const AttentionShape& s) noexcept {
    return 4.0 * s.q_heads() * static_cast<double>(s.context) * s.head_dim;
}
// K and V read once (FP32), q read and the output written.
[[nodiscard]] constexpr double attention_bytes(const AttentionShape& s) noexcept {
    return 4.0 * (2.0 * s.kv_heads * static_cast<double>(s.context) * s.head_dim + 2.0 * s.q_heads() * s.head_dim);
}

// The kernel: q [q_heads][d], k and v [kv_heads][context][d], out [q_heads][d];
// query head h reads KV head h / group. `threads` split the context and merge
// their partial softmaxes (flash-decoding), so any thread count gives the
// same output up to rounding.
void decode_attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out, int threads);

// One triad run over `elements` doubles per array with `threads` threads,
// pinned to `cpus` when not empty (the arrays first touched by those threads).
struct TriadRun {
    std::string scope;  // "all" or "node N"
    int threads = 0;
    std::size_t elements = 0;
    int repetitions = 0;
    double best_s = 0;  // the fastest repetition (STREAM reports the best)
    [[nodiscard]] double bandwidth() const noexcept { return triad_bytes(elements) / best_s; }
};

struct AttentionRun {
    AttentionShape shape;
    int repetitions = 0;
    double best_s = 0;
    [[nodiscard]] double flops_per_s() const noexcept { return attention_flops(shape) / best_s; }
    [[nodiscard]] double bytes_per_s() const noexcept { return attention_bytes(shape) / best_s; }
};

struct ProbeOptions {
    int threads = 0;  // 0: every CPU the process may run on
    double size_mb = 384;  // the triad's three arrays together, MB
    double seconds = 1.0;  // time spent on each measurement, about
};

struct ProbeResult {
    std::string hostname, date;  // date: YYYY-MM-DD (UTC)
    int threads = 0, numa_nodes = 1;
    double memory_bytes = 0;  // MemTotal of /proc/meminfo
    double llc_bytes = 0;  // last-level cache of cpu0 from /sys, 0 when unknown
    std::vector<TriadRun> triad;  // "all" first, then each node when more than one
    std::vector<AttentionRun> attention;  // contexts 1k, 8k, 32k
};

// Today's date in UTC, YYYY-MM-DD (a probe's date).
[[nodiscard]] std::string today_utc();
// A measured figure as a probe's preset file keeps it: four significant digits.
[[nodiscard]] double preset_figure(double x);

// Every figure measured. Throws InputError on a bad option.
[[nodiscard]] ProbeResult probe_cpu(const ProbeOptions& o);

// The host preset: {"probe-<hostname>": entry} with data/hosts.json's keys.
[[nodiscard]] nlohmann::ordered_json probe_host_preset(const ProbeResult& r);

[[nodiscard]] std::string render_probe_text(const ProbeResult& r, const std::string& out);
[[nodiscard]] nlohmann::ordered_json probe_json(const ProbeResult& r);
[[nodiscard]] std::string render_probe_markdown(const ProbeResult& r);

}  // namespace kvroof::io
