// SPDX-License-Identifier: MIT
// `kvroof probe --gpu` as text, JSON and markdown, and the hardware preset built from it.
#include <fmt/format.h>

#include <algorithm>

#include "kvroof/io/gpu_probe.hpp"
#include "kvroof/io/probe.hpp"

namespace kvroof::io {

namespace {
std::string size_text(double bytes) {
    if (bytes >= 1048576) return fmt::format("{:g} MiB", bytes / 1048576);
    return fmt::format("{:g} KiB", bytes / 1024);
}

// The GEMM rate of `dtype` in TFLOPS, or 0 where it did not run.
double gemm_tflops(const GpuProbeResult& r, std::string_view dtype) {
    const GemmRun* g = r.gemm_of(dtype);
    return g && g->ran ? g->flops_per_s() / 1e12 : 0.0;
}

const LinkTransfer* largest(const GpuProbeResult& r) { return r.link.empty() ? nullptr : &r.link.back(); }
}  // namespace

double GpuProbeResult::eta_bidir() const noexcept {
    for (const LinkTransfer& t : link)
        if (t.bytes == bidir_bytes) return bidir_rate() / std::min(t.h2d_rate(), t.d2h_rate());
    return 0.0;
}

const GemmRun* GpuProbeResult::gemm_of(std::string_view dtype) const noexcept {
    const auto it = std::find_if(gemm.begin(), gemm.end(), [&](const GemmRun& g) { return g.dtype == dtype; });
    return it == gemm.end() ? nullptr : &*it;
}

nlohmann::ordered_json probe_gpu_preset(const GpuProbeResult& r, const nlohmann::json& base, const std::string& base_name) {
    const std::string by = fmt::format("measured by kvroof probe --gpu on {} ({}, device {})", r.hostname, r.gpu_name, r.device);
    nlohmann::ordered_json e;
    e["description"] = fmt::format("{}, {}; link, host and interconnect from the '{}' preset", by, r.date, base_name);
    // The keys the probe measures first, then every other key of the base but those that would mix a datasheet
    // figure into measured ones (FP4 and the fitted prefill rate are not measured here).
    e["gpu_flops_TFLOPS"] = preset_figure(gemm_tflops(r, "bf16"));
    e["gpu_flops_fp8_TFLOPS"] = preset_figure(gemm_tflops(r, "fp8"));
    e["hbm_capacity_GB"] = preset_figure(r.memory_bytes / 1e9);
    e["hbm_bandwidth_TBps"] = preset_figure(r.hbm_bandwidth() / 1e12);
    e["eta_compute"] = 1.0;
    e["eta_mem"] = 1.0;
    static constexpr const char* kDropped[] = {"description",          "source",      "note",   "gpu_flops_fp4_TFLOPS",
                                               "prefill_flops_TFLOPS", "eta_compute", "eta_mem"};
    for (auto it = base.begin(); it != base.end(); ++it)
        if (!e.contains(it.key()) &&
            std::none_of(std::begin(kDropped), std::end(kDropped), [&](const char* k) { return it.key() == k; }))
            e[it.key()] = it.value();
    nlohmann::ordered_json source = nlohmann::ordered_json::array({by + ", " + r.date});
    if (base.contains("source"))
        for (const auto& s : base["source"])
            source.push_back(fmt::format("{} (the '{}' preset)", s.get<std::string>(), base_name));
    e["source"] = std::move(source);
    const LinkTransfer* big = largest(r);
    e["note"] = fmt::format(
        "Measured {} with CUDA runtime {} (the driver supports CUDA {}). gpu_flops_TFLOPS and gpu_flops_fp8_TFLOPS: the best "
        "cuBLASLt GEMM "
        "rate at {}x{}x{} (BF16, and FP8 E4M3 without fast accumulation where the GPU has it; 0: no FP8 kernel; random inputs), "
        "achieved, so eta_compute is 1. "
        "hbm_bandwidth_TBps: the best device-to-device copy of {}, read plus write, achieved, so eta_mem is 1. "
        "hbm_capacity_GB: totalGlobalMem. Not measured: FP4 (give --gpu-flops-fp4) and the link, which stays the preset's "
        "'{}'; this GPU's pinned copies of {} ran at {:.1f} GB/s host to device and {:.1f} GB/s device to host, and "
        "{:.1f} GB/s per direction both ways at once (give --c2c-bw and --eta-link-bidir {:.2f} to use them).",
        r.date, r.runtime_version, r.driver_version, r.gemm.empty() ? 0 : r.gemm.front().m, r.gemm.empty() ? 0 : r.gemm.front().n,
        r.gemm.empty() ? 0 : r.gemm.front().k, size_text(r.copy_bytes), base.value("link", std::string("?")),
        big ? size_text(big->bytes) : "-", big ? big->h2d_rate() / 1e9 : 0.0, big ? big->d2h_rate() / 1e9 : 0.0,
        r.bidir_s > 0 ? r.bidir_rate() / 1e9 : 0.0, r.eta_bidir());
    nlohmann::ordered_json out;
    out["probe-gpu-" + r.hostname] = std::move(e);
    return out;
}

std::string render_gpu_probe_text(const GpuProbeResult& r, const std::string& out) {
    std::string s = fmt::format("PROBE: {} device {} ({}) — HBM copy {:.0f} GB/s; BF16 GEMM {:.0f} TFLOPS", r.hostname, r.device,
                                r.gpu_name, r.hbm_bandwidth() / 1e9, gemm_tflops(r, "bf16"));
    if (const LinkTransfer* big = largest(r)) s += fmt::format("; host to device {:.1f} GB/s", big->h2d_rate() / 1e9);
    s += "\n\n";
    s += fmt::format(
        "GPU {}, compute capability {}.{}, {} SMs, memory {:.1f} GB; CUDA runtime {}, the driver supports CUDA {}; {}\n\n",
        r.gpu_name, r.cc_major, r.cc_minor, r.sm_count, r.memory_bytes / 1e9, r.runtime_version, r.driver_version, r.date);
    s += fmt::format("HBM: device-to-device copy of {}: best {:.3f} ms -> {:.1f} GB/s (read + write)\n\n",
                     size_text(r.copy_bytes), r.copy_best_s * 1e3, r.hbm_bandwidth() / 1e9);
    s += fmt::format("{:<10} {:>12} {:>12} {:>12} {:>12}\n", "transfer", "H2D us", "H2D GB/s", "D2H us", "D2H GB/s");
    for (const LinkTransfer& t : r.link)
        s += fmt::format("{:<10} {:>12.2f} {:>12.2f} {:>12.2f} {:>12.2f}\n", size_text(t.bytes), t.h2d_s * 1e6,
                         t.h2d_rate() / 1e9, t.d2h_s * 1e6, t.d2h_rate() / 1e9);
    if (r.bidir_s > 0)
        s += fmt::format("both ways at once, {} each: {:.1f} GB/s per direction = {:.2f} of the slower one-way rate\n",
                         size_text(r.bidir_bytes), r.bidir_rate() / 1e9, r.eta_bidir());
    s += fmt::format("\n{:<6} {:>18} {:>6} {:>10} {:>10}\n", "GEMM", "m x n x k", "reps", "best ms", "TFLOPS");
    for (const GemmRun& g : r.gemm) {
        const std::string shape = fmt::format("{}x{}x{}", g.m, g.n, g.k);
        if (g.ran)
            s += fmt::format("{:<6} {:>18} {:>6} {:>10.3f} {:>10.1f}\n", g.dtype, shape, g.repetitions, g.best_s * 1e3,
                             g.flops_per_s() / 1e12);
        else
            s += fmt::format("{:<6} {:>18}  not run: {}\n", g.dtype, shape, g.why);
    }
    s += "\ntransfers: pinned host memory, one cudaMemcpyAsync after another on one stream, the best repetition (the small\n"
         "sizes include each call's overhead). GEMM: cuBLASLt, random inputs, FP32 accumulation (FP8: not the fast mode),\n"
         "output in the inputs' type (FP8: BF16), 2·m·n·k FLOPs. Achieved rates: use them with --eta-compute 1 --eta-mem 1.\n";
    if (!out.empty()) s += fmt::format("wrote the hardware preset to {} (data/hardware.json's entry schema)\n", out);
    return s;
}

nlohmann::ordered_json gpu_probe_json(const GpuProbeResult& r) {
    nlohmann::ordered_json link = nlohmann::ordered_json::array(), gemm = nlohmann::ordered_json::array();
    for (const LinkTransfer& t : r.link)
        link.push_back(
            {{"bytes", t.bytes}, {"h2d_s", t.h2d_s}, {"d2h_s", t.d2h_s}, {"h2d_Bps", t.h2d_rate()}, {"d2h_Bps", t.d2h_rate()}});
    for (const GemmRun& g : r.gemm) {
        nlohmann::ordered_json j = {{"dtype", g.dtype}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"ran", g.ran}};
        if (g.ran) {
            j["flops"] = gemm_flops(g.m, g.n, g.k);
            j["repetitions"] = g.repetitions;
            j["best_s"] = g.best_s;
            j["flops_per_s"] = g.flops_per_s();
        } else {
            j["why"] = g.why;
        }
        gemm.push_back(std::move(j));
    }
    return {{"tool", "kvroof"},
            {"version", KVROOF_VERSION},
            {"command", "probe --gpu"},
            {"hostname", r.hostname},
            {"date", r.date},
            {"device", r.device},
            {"gpu", r.gpu_name},
            {"compute_capability", fmt::format("{}.{}", r.cc_major, r.cc_minor)},
            {"sm_count", r.sm_count},
            {"memory_bytes", r.memory_bytes},
            {"cuda_runtime", r.runtime_version},
            {"driver_cuda_version", r.driver_version},
            {"hbm_copy", {{"bytes", r.copy_bytes}, {"best_s", r.copy_best_s}, {"bandwidth_Bps", r.hbm_bandwidth()}}},
            {"link", link},
            {"bidirectional",
             {{"bytes", r.bidir_bytes},
              {"best_s", r.bidir_s},
              {"per_direction_Bps", r.bidir_s > 0 ? nlohmann::ordered_json(r.bidir_rate()) : nlohmann::ordered_json(nullptr)},
              {"eta_bidir", r.eta_bidir()}}},
            {"gemm", gemm}};
}

std::string render_gpu_probe_markdown(const GpuProbeResult& r) {
    return fmt::format(
        "# kvroof probe --gpu: {} device {}\n\nGenerated by kvroof {} (`kvroof probe --gpu`) on {}.\n\n```\n{}```\n", r.hostname,
        r.device, KVROOF_VERSION, r.date, render_gpu_probe_text(r, ""));
}

}  // namespace kvroof::io
