// SPDX-License-Identifier: MIT
#pragma once
// Flags (as text) -> a validated Scenario: load the presets, apply every
// override, record which ones were applied.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvroof/analysis/serving.hpp"

namespace kvroof::io {

inline constexpr const char* kDefaultHardware = "gb200";
inline constexpr const char* kDefaultModel = "llama-3.1-70b";
inline constexpr const char* kDefaultWorkload = "codex";
inline constexpr const char* kDefaultSloTpot = "50ms";

struct ScenarioInputs {
    std::string hardware = kDefaultHardware;
    std::string model = kDefaultModel;
    std::optional<std::string> workload;  // preset, path, or "s_cached=…,a_append=…,o_output=…"
    std::optional<std::string> mix;       // "long:0.7,short:0.3"
    // Hardware overrides, as typed (units allowed).
    std::optional<std::string> gpus, gpu_flops, hbm_cap, hbm_bw, nvlink_bw, c2c_bw, link, cpu_dram_bw, cpu_flops,
        cpu_mem, cpus_per_gpu, eta, eta_compute, eta_mem, hbm_reserve;
    // Policy.
    std::optional<std::string> kv_dtype, weight_dtype, sparse, r, slo_tpot, slo_ttft, idle;
};

struct BuiltScenario {
    Scenario scenario;
    std::vector<std::pair<std::string, std::string>> overrides;  // flag -> value as given
    std::string workload_label;                                  // what the user asked for
};

// Throws InputError naming the flag on any bad value.
[[nodiscard]] BuiltScenario build_scenario(const ScenarioInputs& in);

}  // namespace kvroof::io
