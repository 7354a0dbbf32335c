// SPDX-License-Identifier: MIT
#pragma once
// `kvroof probe --gpu`: one GPU of this machine measured through the CUDA
// runtime and cuBLASLt (src/cuda/gpu_probe_cuda.cpp, built only where CMake
// finds the CUDA toolkit): HBM bandwidth (a device-to-device copy), the
// host<->device link by transfer size and under load both ways at once, and
// dense GEMM FLOP/s per precision. What is measured is plain data here; the
// accounting and the presets built from it are pure (src/render/gpu_probe_render.cpp).

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kvroof::io {

// A device-to-device copy of n bytes reads n and writes n (bandwidthTest's accounting).
[[nodiscard]] constexpr double device_copy_bytes(double n) noexcept { return 2.0 * n; }
// A dense m×n×k GEMM: one multiply and one add per (i, j, l).
[[nodiscard]] constexpr double gemm_flops(double m, double n, double k) noexcept { return 2.0 * m * n * k; }

// One transfer size: the best time of a single pinned-memory copy each way.
struct LinkTransfer {
    double bytes = 0;
    double h2d_s = 0, d2h_s = 0;
    [[nodiscard]] double h2d_rate() const noexcept { return bytes / h2d_s; }
    [[nodiscard]] double d2h_rate() const noexcept { return bytes / d2h_s; }
};

// One GEMM precision: inputs of `dtype`, output of the same type (BF16 for "fp8", FP32 for "tf32"), FP32 accumulation.
struct GemmRun {
    std::string dtype;  // "bf16", "fp16", "fp8" (E4M3), "tf32"
    int m = 0, n = 0, k = 0;
    bool ran = false;  // false: cuBLASLt offers no kernel for it on this GPU (`why` says so)
    std::string why;
    int repetitions = 0;
    double best_s = 0;
    [[nodiscard]] double flops_per_s() const noexcept { return gemm_flops(m, n, k) / best_s; }
};

struct GpuProbeOptions {
    int device = 0;
    double size_mb = 1024;  // each of the two buffers of the device copy, MB
    double seconds = 1.0;  // time spent on each measurement, about
};

struct GpuProbeResult {
    std::string hostname, date;  // date: YYYY-MM-DD (UTC)
    std::string gpu_name, runtime_version, driver_version;  // driver_version: the CUDA version the driver supports
    int device = 0, cc_major = 0, cc_minor = 0, sm_count = 0;
    double memory_bytes = 0;  // cudaDeviceProp::totalGlobalMem
    double copy_bytes = 0, copy_best_s = 0;  // one device-to-device copy of copy_bytes
    std::vector<LinkTransfer> link;  // ascending sizes
    double bidir_bytes = 0, bidir_s = 0;  // a copy of bidir_bytes each way at once, both done in bidir_s
    std::vector<GemmRun> gemm;
    [[nodiscard]] double hbm_bandwidth() const noexcept { return device_copy_bytes(copy_bytes) / copy_best_s; }
    // Per direction while both run, over the slower one-way rate of the same size (what `eta_bidir` means).
    [[nodiscard]] double bidir_rate() const noexcept { return bidir_bytes / bidir_s; }
    [[nodiscard]] double eta_bidir() const noexcept;
    [[nodiscard]] const GemmRun* gemm_of(std::string_view dtype) const noexcept;
};

// Whether this kvroof was built with the CUDA toolkit (else probe_gpu throws InputError saying so).
[[nodiscard]] bool gpu_probe_built() noexcept;
// Every figure measured. Throws InputError on a bad option or a build without CUDA, and
// std::runtime_error naming the CUDA call when the runtime fails (no driver, no device).
[[nodiscard]] GpuProbeResult probe_gpu(const GpuProbeOptions& o);

// A hardware preset ({"probe-gpu-<hostname>": entry}, data/hardware.json's keys): `base`'s
// entry (a hardware preset's JSON, which gives the link, host and interconnect) with the
// GPU's figures replaced by the measured ones and eta_compute = eta_mem = 1, since they
// are achieved rates. `base_name` is named in its source.
[[nodiscard]] nlohmann::ordered_json probe_gpu_preset(const GpuProbeResult& r, const nlohmann::json& base,
                                                      const std::string& base_name);

[[nodiscard]] std::string render_gpu_probe_text(const GpuProbeResult& r, const std::string& out);
[[nodiscard]] nlohmann::ordered_json gpu_probe_json(const GpuProbeResult& r);
[[nodiscard]] std::string render_gpu_probe_markdown(const GpuProbeResult& r);

}  // namespace kvroof::io
