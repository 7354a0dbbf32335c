// SPDX-License-Identifier: MIT
#pragma once
// Reports of the two stand-alone offload questions: the prefill κ_crit
// analysis (seed 001) and the layer-offload ceiling (seed 002). Each builds
// its numbers from presets and flags, then renders text (ending with the
// answer line), JSON and markdown.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvroof/analysis/layer_offload.hpp"
#include "kvroof/analysis/prefill_kappa.hpp"

namespace kvroof::io {

// NOLINTNEXTLINE(bugprone-exception-escape): the implicit members throw only std::bad_alloc
struct Rendered {
    std::string text, markdown;
    nlohmann::json json;
};

// --- prefill κ_crit ---
struct PrefillInputs {
    bool table = false;  // also print the seed's κ_crit table
    std::optional<std::string> hardware, model, workload, link, link_bw, prefill_flops, kv_dtype, gpus, ov, vram, token_budget;
    std::vector<std::pair<std::string, std::string>> given;  // flag -> value, for the record
};
[[nodiscard]] Rendered prefill_report(const PrefillInputs& in);

// F_pf: 2 FLOP per active parameter per new token (seed 001's 2·N convention).
[[nodiscard]] Flop prefill_flop_per_token(const ModelSpec& m);

// --- layer offload ---
struct LayersInputs {
    std::vector<std::string> checkpoints;  // empty: the configs/layers_budget.json set
    std::optional<std::string> model, weight_bits, tp, hardware, budget, link, link_bw, compute_ms, copy_ms, rows, prefill_compute_ms,
        target_tps, offload_layers;
    std::vector<std::pair<std::string, std::string>> given;
};
[[nodiscard]] Rendered layers_report(const LayersInputs& in);

}  // namespace kvroof::io
