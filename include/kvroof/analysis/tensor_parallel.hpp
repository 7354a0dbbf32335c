// SPDX-License-Identifier: MIT
#pragma once
// How N GPUs of one tensor-parallel group combine, for the stand-alone offload
// analyses (prefill κ_crit, layer offload). The serving analyses pool GPUs in
// system_rates (spec/hardware.hpp) with the same rule.
//
// Each of the N GPUs holds 1/N of every layer's weights and of every token's
// KV, reloads its share over its own host link and computes 1/N of the FLOP:
//   per-GPU share of an amount  = whole / N          (layer bytes per rank)
//   rate of the group           = per-GPU rate · N   (link bandwidth, FLOP/s, VRAM)
// so ratios of amounts to rates (κ_crit, κ_ratio, the copy/compute split) are
// unchanged by N and every time divides by N. At N = 1 both are the identity.

#include <string>
#include <string_view>

#include "kvroof/spec/check.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

struct TensorParallel {
    int gpus = 1;

    // `knob` names the setting in an error ("tp", "gpus").
    void check_validity(std::string_view knob) const {
        if (gpus < 1) throw InputError(std::string(knob) + ": must be >= 1, got " + std::to_string(gpus));
    }
    // The group's rate: N GPUs each with `per_gpu`.
    template <int B, int S, int F>
    [[nodiscard]] constexpr Quantity<B, S, F> pooled(Quantity<B, S, F> per_gpu) const noexcept {
        return per_gpu * static_cast<double>(gpus);
    }
    // One GPU's share of an amount split over the group.
    template <int B, int S, int F>
    [[nodiscard]] constexpr Quantity<B, S, F> shard(Quantity<B, S, F> whole) const noexcept {
        return whole / static_cast<double>(gpus);
    }
};

}  // namespace kvroof
