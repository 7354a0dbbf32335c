// SPDX-License-Identifier: MIT
// `kvroof probe --gpu`: its accounting, and the hardware preset built from a
// result, read back by the preset loader. The measurement needs a GPU and is
// not run here; a made-up result with round numbers stands in for it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "kvroof/error.hpp"
#include "kvroof/io/gpu_probe.hpp"
#include "kvroof/io/presets.hpp"

using namespace kvroof;

namespace {
// An H100-like result: a 1 GB copy in 0.625 ms, BF16 at 700 TFLOPS, no FP8 kernel, and a 256 MiB link copy.
io::GpuProbeResult made_up() {
    io::GpuProbeResult r;
    r.hostname = "box";
    r.date = "2026-12-06";
    r.gpu_name = "Test GPU";
    r.runtime_version = "13.0";
    r.driver_version = "13.0";
    r.cc_major = 9;
    r.memory_bytes = 85e9;
    r.copy_bytes = 1e9;
    r.copy_best_s = 0.625e-3;  // 2 GB moved: 3.2 TB/s
    const double big = 268435456;
    r.link = {{4096, 1e-5, 2e-5}, {big, big / 50e9, big / 40e9}};  // 50 GB/s up, 40 down at 256 MiB
    r.bidir_bytes = big;
    r.bidir_s = big / 30e9;  // 30 GB/s each way at once: 0.75 of the slower one-way 40
    io::GemmRun bf16;
    bf16.dtype = "bf16";
    bf16.m = bf16.n = bf16.k = 8192;
    bf16.ran = true;
    bf16.repetitions = 10;
    bf16.best_s = io::gemm_flops(8192, 8192, 8192) / 700e12;
    io::GemmRun fp8 = bf16;
    fp8.dtype = "fp8";
    fp8.ran = false;
    fp8.why = "cuBLASLt has no fp8 kernel for this GPU";
    r.gemm = {bf16, fp8};
    return r;
}
}  // namespace

TEST_CASE("GPU probe accounting: a copy moves its bytes twice, a GEMM 2mnk FLOPs") {
    CHECK(io::device_copy_bytes(1e9) == 2e9);
    CHECK(io::gemm_flops(2, 3, 4) == 48);
    const io::GpuProbeResult r = made_up();
    CHECK(r.hbm_bandwidth() == Approx(3.2e12));
    CHECK(r.gemm_of("bf16")->flops_per_s() == Approx(700e12));
    CHECK(r.gemm_of("fp16") == nullptr);
    CHECK(r.bidir_rate() == Approx(30e9));
    CHECK(r.eta_bidir() == Approx(0.75));  // over the slower direction (40 GB/s), not the faster
}

TEST_CASE("GPU probe preset: the base preset's entry with the measured GPU figures, loadable as --hardware FILE") {
    const io::GpuProbeResult r = made_up();
    const auto& base = io::hardware_preset_json("--hardware", "h100-sxm");
    const auto preset = io::probe_gpu_preset(r, base, "h100-sxm");
    REQUIRE(preset.size() == 1);
    const auto& e = preset.at("probe-gpu-box");
    CHECK(e.at("gpu_flops_TFLOPS") == 700.0);
    CHECK(e.at("gpu_flops_fp8_TFLOPS") == 0.0);  // no FP8 kernel: no FP8 math
    CHECK(e.at("hbm_capacity_GB") == 85.0);
    CHECK(e.at("hbm_bandwidth_TBps") == 3.2);
    CHECK(e.at("eta_compute") == 1.0);
    CHECK(e.at("eta_mem") == 1.0);
    // The base's link, host and interconnect, compared as text (ordered_json == json is ambiguous in C++20).
    CHECK(e.at("link").dump() == base.at("link").dump());
    CHECK(e.at("host").dump() == base.at("host").dump());
    CHECK(e.at("nvlink_bandwidth_GBps").dump() == base.at("nvlink_bandwidth_GBps").dump());
    CHECK_FALSE(e.contains("prefill_flops_TFLOPS"));  // a fitted figure is not carried into measured ones
    CHECK(e.at("note").get<std::string>().find("--eta-link-bidir 0.75") != std::string::npos);

    // Written to a file, the preset loads as a hardware file and gives those figures.
    const std::string path = "gpu_probe_test_" + std::to_string(getpid()) + ".json";
    std::ofstream(path) << preset.dump(2) << "\n";
    const HardwareSpec hw = io::load_hardware("--hardware", path);
    std::remove(path.c_str());
    CHECK(hw.gpu.flops.raw() == Approx(700e12));
    CHECK(hw.gpu.prefill_flops.raw() == Approx(700e12));
    CHECK(hw.gpu.flops_fp8.raw() == 0.0);
    CHECK(hw.gpu.hbm_bandwidth.raw() == Approx(3.2e12));
    CHECK(hw.gpu.hbm_capacity.raw() == Approx(85e9));
    CHECK(hw.gpu.eta_compute == 1.0);
    CHECK(hw.gpu.eta_mem == 1.0);
    CHECK(hw.link.bandwidth.raw() == io::load_hardware("--hardware", "h100-sxm").link.bandwidth.raw());
}

TEST_CASE("GPU probe renders: text and JSON carry the measured figures") {
    const io::GpuProbeResult r = made_up();
    const std::string text = io::render_gpu_probe_text(r, "");
    CHECK(text.find("HBM copy 3200 GB/s; BF16 GEMM 700 TFLOPS; host to device 50.0 GB/s") != std::string::npos);
    CHECK(text.find("fp8") != std::string::npos);
    CHECK(text.find("not run: cuBLASLt has no fp8 kernel") != std::string::npos);
    const auto j = io::gpu_probe_json(r);
    CHECK(j.at("hbm_copy").at("bandwidth_Bps").get<double>() == Approx(3.2e12));
    CHECK(j.at("gemm").at(1).at("ran") == false);
    CHECK(j.at("bidirectional").at("eta_bidir").get<double>() == Approx(0.75));
}

TEST_CASE("GPU probe options are checked before any CUDA call") {
    io::GpuProbeOptions o;
    o.device = -1;
    CHECK_THROWS_AS(io::probe_gpu(o), InputError);
    o = {};
    o.size_mb = 0.5;
    CHECK_THROWS_AS(io::probe_gpu(o), InputError);
    o = {};
    o.seconds = 0;
    CHECK_THROWS_AS(io::probe_gpu(o), InputError);
}
