// SPDX-License-Identifier: MIT
#pragma once
// The GPU probe's measurements (src/cuda/gpu_probe_cuda.cpp), compiled only
// where CMake finds the CUDA toolkit (KVROOF_HAVE_CUDA_PROBE).

#include "kvroof/io/gpu_probe.hpp"

namespace kvroof::io::detail {
// Fills `r`'s device and measured fields; hostname and date are the caller's. Options already checked.
[[nodiscard]] GpuProbeResult measure_gpu(const GpuProbeOptions& o, GpuProbeResult r);
}  // namespace kvroof::io::detail
