// SPDX-License-Identifier: MIT
// Attention's matrix products run in the KV cache's math (attention_dtype), the GEMMs in the weights' (gemm_dtype):
// a prefill's GPU time is (linear + attn_flop_scale·attention) / C_gpu.
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/mix_demand.hpp"

namespace kvroof {
namespace {
// Llama-3.1-8B on one H100, a 4,000-token prompt, with `compute` GEMMs over a `kv` cache.
Scenario h100_prompt(const char* compute, const char* kv) {
    io::ScenarioInputs in;
    in.set("hardware", "h100-sxm");
    in.set("model", "llama-3.1-8b");
    in.set("workload", "s_cached=0,a_append=4000,o_output=2");
    in.set("compute-dtype", compute);
    in.set("kv-dtype", kv);
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("attention runs in the KV cache's math, not the weights': FP8 GEMMs over a BF16 cache attend in BF16",
          "[physics][attention]") {
    const Scenario bf = h100_prompt("bf16", "bf16"), f8 = h100_prompt("fp8", "bf16"), f8kv = h100_prompt("fp8", "fp8");
    const PreparedScenario pb(bf), p8(f8), pk(f8kv);
    const double r = 989.4 / 1978.9;  // H100 SXM: the BF16 over the FP8 dense peak
    const double t_bf = mix_demand(pb, 0.0).pre[0].gpu_compute;
    const double gemm_bf = 4000 * pb.mc.linear_per_token.raw() / pb.sys.gpu_flops.raw(), attn = t_bf - gemm_bf;
    CHECK(attn > 0.02 * t_bf);  // the prompt's causal attention is visible
    CHECK(pb.sys.attn_flop_scale == 1.0);
    // FP8 GEMMs take half the time; attention over the BF16 cache stays at the BF16 peak.
    CHECK(p8.sys.attn_flop_scale == Approx(1.0 / r).epsilon(1e-12));
    CHECK(mix_demand(p8, 0.0).pre[0].gpu_compute == Approx(gemm_bf * r + attn).epsilon(1e-12));
    // Over an FP8 cache attention runs at the FP8 peak too: the whole prefill takes half the time.
    CHECK(pk.sys.attn_flop_scale == 1.0);
    CHECK(mix_demand(pk, 0.0).pre[0].gpu_compute == Approx(t_bf * r).epsilon(1e-12));
    // A decode token at a 4,000-token context: the same rule.
    const DecodeDemand d_bf = decode_demand(pb.mc, pb.sys, bf.policy, 4000), d_8 = decode_demand(p8.mc, p8.sys, f8.policy, 4000);
    const double lin = pb.mc.linear_per_token.raw() / pb.sys.gpu_flops.raw();
    CHECK(d_bf.gpu_compute > lin);
    CHECK(d_8.gpu_compute == Approx(lin * r + (d_bf.gpu_compute - lin)).epsilon(1e-12));
}

TEST_CASE("FP4 or FP8 weights never make attention 4-bit: BF16 over a BF16 or integer cache, FP8 over an FP8 one",
          "[physics][attention]") {
    PolicySpec q;
    q.weight_dtype = DType::fp4;
    CHECK(attention_dtype(q) == DType::bf16);
    q.kv_dtype = DType::fp8;
    CHECK(attention_dtype(q) == DType::fp8);
    q.kv_dtype = DType::int8;
    CHECK(attention_dtype(q) == DType::bf16);
    q.kv_dtype = DType::fp4;
    CHECK(attention_dtype(q) == DType::bf16);
    // --attention-dtype states an engine that does otherwise (SGLang dequantises an FP8 cache into BF16 math).
    q.kv_dtype = DType::fp8;
    q.attention_math = DType::bf16;
    CHECK(attention_dtype(q) == DType::bf16);
    q.attention_math = DType::int8;
    CHECK_THROWS_AS(q.check_validity(), InputError);
    // On a B200 an NVFP4 checkpoint over an FP8 cache: its attention FLOP count twice at the FP4 GEMM rate.
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "b200");
        in.set("model", "llama-3.1-70b");
        in.set("weight-dtype", "fp4");
        in.set("kv-dtype", "fp8");
    });
    const PreparedScenario ps(s);
    CHECK(ps.sys.attn_flop_scale == Approx(s.hardware.gpu.flops_fp4.raw() / s.hardware.gpu.flops_fp8.raw()).epsilon(1e-12));
    CHECK(ps.sys.attn_flop_scale == Approx(2.0).epsilon(1e-12));
}

}  // namespace kvroof
