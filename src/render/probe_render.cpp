// SPDX-License-Identifier: MIT
// `kvroof probe` as text, JSON and markdown, and its host preset.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kvroof/io/probe.hpp"

namespace kvroof::io {

namespace {
std::string nodes_line(const ProbeResult& r) {
    return r.numa_nodes > 1 ? fmt::format("{} NUMA nodes: the triad runs on all, then on each node's CPUs", r.numa_nodes)
                            : "one NUMA node visible in /sys: no per-socket triad";
}

double best_attention_flops(const ProbeResult& r) {
    double best = 0;
    for (const auto& a : r.attention) best = std::max(best, a.flops_per_s());
    return best;
}
}  // namespace

nlohmann::ordered_json probe_host_preset(const ProbeResult& r) {
    const std::string by = fmt::format("measured by kvroof probe on {}", r.hostname);
    nlohmann::ordered_json e;
    e["description"] = fmt::format("{} ({}), {} threads", by, r.date, r.threads);
    // A host preset is one socket (--cpus-per-gpu counts sockets): on several NUMA nodes, the mean of the
    // per-node triads, and the whole machine's attention rate and memory split evenly over the nodes.
    const double nodes = std::max(1, r.numa_nodes);
    double dram = r.triad.front().bandwidth();
    if (r.triad.size() > 1) {
        dram = 0;
        for (std::size_t i = 1; i < r.triad.size(); ++i) dram += r.triad[i].bandwidth() / static_cast<double>(r.triad.size() - 1);
    }
    e["cpu_flops_TFLOPS"] = preset_figure(best_attention_flops(r) / nodes / 1e12);
    e["cpu_dram_bandwidth_GBps"] = preset_figure(dram / 1e9);
    e["cpu_memory_GB"] = preset_figure(r.memory_bytes / nodes / 1e9);
    e["eta_cpu_compute"] = 1.0;
    e["eta_dram"] = 1.0;
    e["source"] = nlohmann::ordered_json::array({by});
    e["note"] = fmt::format(
        "Measured {}. Per socket (NUMA node), as a host preset is: on several nodes the figures below are per node. "
        "cpu_dram_bandwidth_GBps: the best STREAM-style triad over {} threads (24 bytes per element, no "
        "write-allocate counted; the mean of the per-node triads on several nodes), an achieved figure, so eta_dram is 1. "
        "cpu_flops_TFLOPS: the best achieved FP32 GQA "
        "decode-attention rate (contexts 1k/8k/32k) of kvroof's portable kernel (plain loops, no BLAS, AMX or "
        "hand-written SIMD): a lower bound on what the CPU's attention reaches, not its BF16/AMX peak; achieved, so "
        "eta_cpu_compute is 1 (all threads, over the nodes). cpu_memory_GB: MemTotal (over the nodes). {}. Use it with --host "
        "FILE.",
        r.date, r.threads, nodes_line(r));
    nlohmann::ordered_json out;
    out["probe-" + r.hostname] = std::move(e);
    return out;
}

std::string render_probe_text(const ProbeResult& r, const std::string& out) {
    std::string s =
        fmt::format("PROBE: {} — DRAM triad {:.1f} GB/s with {} threads; FP32 decode attention up to {:.1f} GFLOP/s\n\n",
                    r.hostname, r.triad.front().bandwidth() / 1e9, r.threads, best_attention_flops(r) / 1e9);
    s += fmt::format("host {}, {}, memory {:.1f} GB, last-level cache {}; {}\n\n", r.hostname, r.date, r.memory_bytes / 1e9,
                     r.llc_bytes > 0 ? fmt::format("{:.1f} MB", r.llc_bytes / 1e6) : std::string("unknown (not in /sys)"),
                     nodes_line(r));
    s += fmt::format("{:<8} {:>7} {:>12} {:>6} {:>10} {:>10}\n", "triad", "threads", "array MB", "reps", "best ms", "GB/s");
    for (const auto& t : r.triad)
        s += fmt::format("{:<8} {:>7} {:>12.1f} {:>6} {:>10.3f} {:>10.1f}\n", t.scope, t.threads,
                         static_cast<double>(t.elements) * 8 / 1e6, t.repetitions, t.best_s * 1e3, t.bandwidth() / 1e9);
    if (r.llc_bytes > 0 && 3.0 * 8 * static_cast<double>(r.triad.front().elements) < 4 * r.llc_bytes)
        s += "warning: the arrays are under 4x the last-level cache: the triad may measure the cache, not DRAM (raise --size)\n";
    if (!(r.llc_bytes > 0))
        s += "note: the last-level cache size is unknown, so whether the arrays exceed it is unchecked: a triad that grows when "
             "--size shrinks is measuring a cache\n";
    s += fmt::format("\n{:<10} {:>8} {:>6} {:>10} {:>10} {:>10}\n", "attention", "context", "reps", "best ms", "GFLOP/s", "GB/s");
    for (const auto& a : r.attention)
        s += fmt::format("{:<10} {:>8} {:>6} {:>10.3f} {:>10.2f} {:>10.2f}\n",
                         fmt::format("{}x{}x{}", a.shape.kv_heads, a.shape.group, a.shape.head_dim), a.shape.context,
                         a.repetitions, a.best_s * 1e3, a.flops_per_s() / 1e9, a.bytes_per_s() / 1e9);
    s += "\nattention: KV heads x queries per KV head x head dim, FP32, one sequence, all threads; FLOPs 4·q_heads·context·d,\n"
         "bytes: K and V read once plus q and the output. The GPU: kvroof probe --gpu.\n";
    if (!out.empty()) s += fmt::format("wrote the host preset to {} (data/hosts.json's entry schema)\n", out);
    return s;
}

nlohmann::ordered_json probe_json(const ProbeResult& r) {
    nlohmann::ordered_json triad = nlohmann::ordered_json::array(), att = nlohmann::ordered_json::array();
    for (const auto& t : r.triad)
        triad.push_back({{"scope", t.scope},
                         {"threads", t.threads},
                         {"elements", t.elements},
                         {"bytes", triad_bytes(t.elements)},
                         {"repetitions", t.repetitions},
                         {"best_s", t.best_s},
                         {"bandwidth_Bps", t.bandwidth()}});
    for (const auto& a : r.attention)
        att.push_back({{"kv_heads", a.shape.kv_heads},
                       {"group", a.shape.group},
                       {"head_dim", a.shape.head_dim},
                       {"context", a.shape.context},
                       {"flops", attention_flops(a.shape)},
                       {"bytes", attention_bytes(a.shape)},
                       {"repetitions", a.repetitions},
                       {"best_s", a.best_s},
                       {"flops_per_s", a.flops_per_s()},
                       {"bytes_per_s", a.bytes_per_s()}});
    return {{"tool", "kvroof"},
            {"version", KVROOF_VERSION},
            {"command", "probe"},
            {"hostname", r.hostname},
            {"date", r.date},
            {"threads", r.threads},
            {"numa_nodes", r.numa_nodes},
            {"memory_bytes", r.memory_bytes},
            {"llc_bytes", r.llc_bytes > 0 ? nlohmann::ordered_json(r.llc_bytes) : nlohmann::ordered_json(nullptr)},
            {"triad", triad},
            {"attention", att},
            {"host_preset", probe_host_preset(r)}};
}

std::string render_probe_markdown(const ProbeResult& r) {
    std::string s = fmt::format("# kvroof probe: {}\n\nGenerated by kvroof {} (`kvroof probe --cpu`) on {}.\n\n```\n", r.hostname,
                                KVROOF_VERSION, r.date);
    s += render_probe_text(r, "") + "```\n\n## Host preset\n\n```json\n" + probe_host_preset(r).dump(2) + "\n```\n";
    return s;
}

}  // namespace kvroof::io
