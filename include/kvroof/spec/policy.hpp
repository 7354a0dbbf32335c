// SPDX-License-Identifier: MIT
#pragma once
// How the serving system is run: offload fraction f, sparsity, reload fraction
// r, overlap ov, dtypes, SLOs and the idle-session policy.

#include <optional>

#include "kvroof/spec/check.hpp"
#include "kvroof/spec/model.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

// Documented ranges of the policy (docs/model.md, "Input ranges").
namespace limits {
inline constexpr double kMinSparse = 1e-6;  // fraction of the context KV read per token
inline constexpr double kMinSloS = 1e-6, kMaxSloS = 1e6;  // seconds
}  // namespace limits

enum class IdlePolicy {
    hold,  // an idle session's KV keeps its place in HBM until its next call
    park,  // an idle session's GPU-resident KV moves to CPU DRAM and is reloaded at its next call
};
[[nodiscard]] inline const char* to_string(IdlePolicy p) noexcept { return p == IdlePolicy::hold ? "hold" : "park"; }

// What the TPOT SLO bounds.
enum class SloTarget {
    itl,  // the inter-token latency a user sees: the step plus the prefill interleaved with it
    step,  // the bare decode step (seed 000's reference tool)
};
[[nodiscard]] inline const char* to_string(SloTarget t) noexcept { return t == SloTarget::itl ? "itl" : "step"; }

struct PolicySpec {
    double f = 0.0;  // fraction of decode-attention KV handled by the CPU
    double sparse = 1.0;  // fraction of the context KV that attention reads per token (GPU and CPU alike)
    double r = 1.0;  // fraction of CPU-resident KV reloaded to the GPU for append-prefill
    double ov = 0.0;  // overlap: 0 = offloaded work serialised, 1 = perfectly hidden
    DType kv_dtype = DType::bf16;
    DType weight_dtype = DType::bf16;
    std::optional<DType> compute_dtype;  // GEMM math precision; none: follows the weights (gemm_dtype)
    std::optional<DType> attention_math;  // attention's math precision; none: follows the KV cache (attention_dtype)
    std::optional<Seconds> slo_tpot;  // none = unconstrained
    std::optional<Seconds> slo_ttft;
    SloTarget slo_tpot_bounds = SloTarget::itl;
    IdlePolicy idle = IdlePolicy::hold;

    void check_validity() const {
        check::unit_interval("f", f);
        check::open_unit_interval_right("sparse", sparse);
        check::in_range("sparse", sparse, limits::kMinSparse, 1.0);
        check::unit_interval("r", r);
        check::unit_interval("ov", ov);
        if (slo_tpot) {
            check::positive("slo-tpot", slo_tpot->raw());
            check::in_range("slo-tpot", slo_tpot->raw(), limits::kMinSloS, limits::kMaxSloS);
        }
        if (slo_ttft) {
            check::positive("slo-ttft", slo_ttft->raw());
            check::in_range("slo-ttft", slo_ttft->raw(), limits::kMinSloS, limits::kMaxSloS);
        }
        if (attention_math && *attention_math != DType::bf16 && *attention_math != DType::fp8)
            throw InputError(std::string("attention-dtype: must be bf16 or fp8 (attention kernels run in no other math), got ") +
                             to_string(*attention_math));
    }
};

// The precision attention's matrix products (Q·Kᵀ and P·V) run in: FP8 where
// the KV cache is FP8, else BF16. vLLM's FlashAttention-3 backend computes
// attention over an FP8 cache in FP8 (queries quantised too), and TensorRT-LLM
// runs FP8 context FMHA over one; a BF16 (or integer) cache is attended in BF16.
// The weights' precision plays no part: an FP8 or FP4 checkpoint with a BF16
// cache attends in BF16, and no engine attends in 4 bits. An engine that
// dequantises an FP8 cache into BF16 math (SGLang's default) attends slower
// than this says (docs/model.md, "Attention math").
// --attention-dtype states it for an engine that does otherwise.
[[nodiscard]] inline DType attention_dtype(const PolicySpec& p) noexcept {
    if (p.attention_math) return *p.attention_math;
    return p.kv_dtype == DType::fp8 ? DType::fp8 : DType::bf16;
}

// The weights' precision a model is served in unless --weight-dtype says otherwise: its quantised checkpoint's own,
// else the default.
[[nodiscard]] inline DType served_weights(const ModelSpec& m) noexcept {
    return m.checkpoint_weights.value_or(PolicySpec{}.weight_dtype);
}

// The precision the GEMMs run in: --compute-dtype when given, else the
// weights' own (FP8 weights → FP8 GEMMs, NVFP4 and MXFP4 → FP4); integer
// weights are dequantised into BF16 GEMMs (W4A16, W8A16), as AWQ/GPTQ
// kernels run them (W8A8 INT8: --compute-dtype int8, at the 8-bit peak).
[[nodiscard]] inline DType gemm_dtype(const PolicySpec& p) noexcept {
    if (p.compute_dtype) return *p.compute_dtype;
    switch (p.weight_dtype) {
        case DType::int4:
        case DType::int8: return DType::bf16;
        case DType::mxfp4: return DType::fp4;
        case DType::bf16:
        case DType::fp8:
        case DType::fp4: return p.weight_dtype;
    }
    return DType::bf16;
}

}  // namespace kvroof
