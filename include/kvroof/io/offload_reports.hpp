// SPDX-License-Identifier: MIT
#pragma once
// The two stand-alone offload questions: the prefill κ_crit analysis (the
// κ_crit paper) and the layer-offload ceiling ("CPU offload and prefetch: the
// measured ceiling"). With no flag naming a preset both answer for verdict's
// default scenario; `seed` switches to the papers' own tables and scenarios
// (configs/prefill_kappa.json, configs/layers_budget.json). Flags and presets resolve
// into a setup (src/offload_inputs.cpp), the analysis computes a study
// (analysis/prefill_study.hpp, analysis/layers_study.hpp), and the renderers
// format it as text (ending with the answer line), markdown or JSON.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvroof/analysis/layers_study.hpp"
#include "kvroof/analysis/prefill_study.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

// flag -> value as given, for the record.
using GivenFlags = std::vector<std::pair<std::string, std::string>>;

// The value of the table switch: true for "seed"; anything else throws InputError naming `flag`.
[[nodiscard]] bool parse_table_switch(const std::string& flag, const std::string& text);

// --- prefill κ_crit ---
// The scenario knobs both subcommands read (hardware, model, link, c2c-bw, ...)
// are the knob table's, by the same names, units and bounds as verdict's; they
// build a Scenario (the seed's presets first, as a config file's values, the
// flags over them), and the question is read off it by the sweep's one rule
// (prefill_setup, layers_question). The other fields are the analyses' own.
struct PrefillInputs {
    bool seed = false;  // the κ_crit paper's scenario (8 x H100, TP8) and its κ_crit table
    ScenarioInputs scenario;  // hardware, model, workload, link, c2c-bw, gpus, eta-compute, kv-dtype, ...
    std::optional<std::string> prefill_flops, ov, vram, token_budget, compute_dtype;
    GivenFlags given;
};
// The knob-table flags `kvroof prefill` takes, in --help order.
[[nodiscard]] const std::vector<std::string_view>& prefill_knobs();
// Throws InputError naming the flag on any bad value. C_eff is --prefill-flops
// when given, else the same definition as `verdict`'s GEMM rate: --eta-compute
// × the GPU's dense peak in --compute-dtype (default: verdict's, following the
// weights; fp8 with `seed`, the paper's convention; BF16 on a GPU without FP8 math).
[[nodiscard]] PrefillSetup resolve_prefill(const PrefillInputs& in);
// The what-ifs and, with `table`, the seed's κ_crit table, from configs/prefill_kappa.json.
[[nodiscard]] PrefillQuestions prefill_questions(bool table);

[[nodiscard]] std::string prefill_answer(const PrefillStudy& st);
[[nodiscard]] std::string prefill_text(const PrefillStudy& st);
[[nodiscard]] std::string prefill_markdown(const PrefillStudy& st, const GivenFlags& given);
[[nodiscard]] nlohmann::json prefill_json(const PrefillStudy& st, const GivenFlags& given);

// --- layer offload ---
struct LayersInputs {
    bool seed = false;  // the measured ceiling's budget table (configs/layers_budget.json)
    std::vector<std::string> checkpoints;  // empty: verdict's default model, or with `seed` the configs/layers_budget.json set
    ScenarioInputs scenario;  // hardware, model, weight-dtype, link, c2c-bw, hbm-cap, hbm-bw, eta-mem
    std::optional<std::string> weight_bits, tp, compute_ms, copy_ms, rows, prefill_compute_ms, target_tps, offload_layers;
    GivenFlags given;
};
// The knob-table flags `kvroof layers` takes, in --help order.
[[nodiscard]] const std::vector<std::string_view>& layers_knobs();
// Throws InputError naming the flag on any bad value.
[[nodiscard]] LayersSetup resolve_layers(const LayersInputs& in);
// layers_study() with its errors (which name the knob) spelled as flags.
[[nodiscard]] LayersStudy run_layers_study(const LayersSetup& setup);

[[nodiscard]] std::string layers_answer(const LayersStudy& st);
[[nodiscard]] std::string layers_text(const LayersStudy& st);
[[nodiscard]] std::string layers_markdown(const LayersStudy& st, const GivenFlags& given);
[[nodiscard]] nlohmann::json layers_json(const LayersStudy& st, const GivenFlags& given);

}  // namespace kvroof::io
