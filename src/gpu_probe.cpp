// SPDX-License-Identifier: MIT
// `kvroof probe --gpu`: options checked here; the measurement itself exists only in a build with the CUDA toolkit.
#include <fmt/format.h>
#include <unistd.h>

#include <utility>

#include "gpu_probe_measure.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/gpu_probe.hpp"
#include "kvroof/io/probe.hpp"

namespace kvroof::io {

bool gpu_probe_built() noexcept {
#ifdef KVROOF_HAVE_CUDA_PROBE
    return true;
#else
    return false;
#endif
}

GpuProbeResult probe_gpu(const GpuProbeOptions& o) {
    if (!(o.device >= 0 && o.device <= 1023)) throw InputError(fmt::format("--device: must be in [0, 1023], got {}", o.device));
    if (!(o.size_mb >= 1 && o.size_mb <= 1e6))
        throw InputError(fmt::format("--size: must be in [1, 1000000] MB, got {}", o.size_mb));
    if (!(o.seconds >= 0.01 && o.seconds <= 600))
        throw InputError(fmt::format("--seconds: must be in [0.01, 600], got {}", o.seconds));
    if (!gpu_probe_built())
        throw InputError(
            "probe --gpu: this kvroof was built without the CUDA toolkit (CMake found no nvcc); rebuild where nvcc is on PATH "
            "or in /usr/local/cuda, or use --cpu");
    GpuProbeResult r;
    char host[256] = {};
    r.hostname = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
    r.date = today_utc();
    r.device = o.device;
#ifdef KVROOF_HAVE_CUDA_PROBE
    r = detail::measure_gpu(o, std::move(r));
#endif
    return r;
}

}  // namespace kvroof::io
