// SPDX-License-Identifier: MIT
// The GEMM peak a precision runs at: its own where the GPU's is above BF16's, else BF16's.
#include <catch2/catch.hpp>

#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/spec/hardware.hpp"

namespace kvroof {

TEST_CASE("an 8- or 4-bit peak below BF16's is never the one taken: raising it never slows a model", "[spec]") {
    io::ScenarioInputs in;
    in.set("hardware", "h100-sxm");
    HardwareSpec hw = io::build_scenario(in).scenario.hardware;
    const double bf16 = hw.gpu.flops.raw();  // 989.4 TFLOPS dense on an H100 SXM
    CHECK(gemm_peak(hw, DType::fp8).raw() == Approx(2 * bf16).epsilon(1e-3));  // the preset's FP8 peak
    // Set below BF16's (0 is "none"), the 8-bit peak gives way to BF16's: the weights are dequantised.
    for (const double fp8 : {0.0, 0.5 * bf16, bf16}) {
        hw.gpu.flops_fp8 = FlopPerSecond(fp8);
        CAPTURE(fp8);
        CHECK(gemm_math_on(hw, DType::fp8) == DType::bf16);
        CHECK(gemm_peak(hw, DType::fp8).raw() == bf16);
        CHECK(gemm_peak(hw, DType::int8).raw() == bf16);
    }
    hw.gpu.flops_fp8 = FlopPerSecond(1.01 * bf16);
    CHECK(gemm_math_on(hw, DType::fp8) == DType::fp8);
    CHECK(gemm_peak(hw, DType::fp8).raw() == 1.01 * bf16);
    // The same for FP4 (and MXFP4, which runs at the FP4 peak).
    hw.gpu.flops_fp4 = FlopPerSecond(0.9 * bf16);
    CHECK(gemm_peak(hw, DType::fp4).raw() == bf16);
    CHECK(gemm_peak(hw, DType::mxfp4).raw() == bf16);
    hw.gpu.flops_fp4 = FlopPerSecond(4 * bf16);
    CHECK(gemm_peak(hw, DType::mxfp4).raw() == 4 * bf16);
}

}  // namespace kvroof
