// SPDX-License-Identifier: MIT
// Flags and presets of `kvroof prefill` and `kvroof layers` resolved into the
// setups their studies compute from. Every error names the flag. With no flag
// naming one, both answer for verdict's default scenario (the knob table's
// fallbacks); `--table seed` answers for their papers' tables instead.
#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/load_text.hpp"
#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

using nlohmann::json;

bool parse_table_switch(const std::string& flag, const std::string& text) {
    if (text == "seed") return true;
    throw InputError(fmt::format("{}: must be seed (the paper's table and scenario), got '{}'", flag, text));
}

namespace {

// A config value as a knob's text: strings as they are, numbers as JSON writes them.
std::string config_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The scenario a subcommand answers for: verdict's defaults (the knob table's
// fallbacks); with `seed`, the paper's presets (`keys` of `cfg`) set as a
// config file's values; the flags over either. `fixed`: knobs the analysis
// sets itself, not flags of its subcommand.
Scenario offload_scenario(const ScenarioInputs& flags, bool seed, const json& cfg, std::initializer_list<const char*> keys,
                          std::string_view where, std::initializer_list<std::pair<const char*, const char*>> fixed = {}) {
    ScenarioInputs in;
    for (const auto& [key, value] : fixed) in.set(key, value, Origin::config, where);
    if (seed)
        for (const char* key : keys)
            if (cfg.contains(key)) in.set(key, config_text(cfg.at(key)), Origin::config, where);
    in.override_with(flags);
    return build_scenario(in).scenario;
}

}  // namespace

const std::vector<std::string_view>& prefill_knobs() {
    static const std::vector<std::string_view> k = {"hardware",      "model",         "workload",     "link",        "c2c-bw",
                                                    "gpus",          "kv-dtype",      "weight-dtype", "eta-compute", "gpu-flops",
                                                    "gpu-flops-fp8", "gpu-flops-fp4", "hbm-cap",      "hbm-reserve"};
    return k;
}

PrefillSetup resolve_prefill(const PrefillInputs& in) {
    const json& single = embedded_config("prefill_kappa").at("single");
    const Scenario sc = offload_scenario(in.scenario, in.seed, single, {"hardware", "model", "workload", "link", "gpus"},
                                         "configs/prefill_kappa.json");
    PrefillSetup s = prefill_setup(sc, 0.0);
    // GEMM precision: given; the κ_crit paper's FP8 for the seed; else the scenario's (verdict's rule,
    // following the model's own checkpoint format).
    const DType math = in.compute_dtype ? parse_dtype("--compute-dtype", *in.compute_dtype)
                       : in.seed        ? DType::fp8
                                        : gemm_dtype(sc.policy);
    if (in.prefill_flops) {
        s.c_eff = FlopPerSecond(parse_quantity("--prefill-flops", *in.prefill_flops, UnitKind::flop_rate, "TFLOPS"));
        s.c_eff_from = "--prefill-flops";
    } else {
        // Named by the precision the GEMMs run in on this GPU (MXFP4 runs at the FP4 peak), as the echo says.
        const DType runs = gemm_math_on(s.hardware, math);
        s.c_eff = default_prefill_flops(s.hardware, math);
        s.c_eff_from = fmt::format("{:g} × {} peak", s.hardware.gpu.eta_compute, runs == DType::bf16 ? "BF16" : to_string(runs));
        s.c_eff_follows_weights = !in.compute_dtype && !in.seed && !in.scenario.given("weight-dtype");
    }
    check::in_range("--prefill-flops", s.c_eff.raw(), limits::kMinFlops, limits::kMaxFlops, 1e12, "TFLOPS");
    if (in.ov) {
        s.ov = parse_number("--ov", *in.ov);
        check::unit_interval("--ov", s.ov);
    }
    if (in.token_budget) s.token_budget = prefill_chunk(*in.token_budget);
    if (in.vram) {
        s.vram = Bytes(parse_quantity("--vram", *in.vram, UnitKind::bytes, "GB"));
        check::in_range("--vram", s.vram->raw(), 0.0, limits::kMaxCapacity * limits::kMaxGpus, 1e9, "GB");
    }
    return s;
}

PrefillQuestions prefill_questions(bool table) {
    const json& cfg = embedded_config("prefill_kappa");
    PrefillQuestions q;
    for (const auto& n : cfg.at("what_if_links")) {
        const std::string name = n.get<std::string>();
        q.links.push_back({name, load_link("--link", name), load_link_preset("--link", name)->physical_link()});
    }
    for (const auto& n : cfg.at("what_if_models")) {
        const std::string name = n.get<std::string>();
        q.models.push_back({name, load_model("--model", name)});
    }
    for (const auto& wl : cfg.at("workloads"))
        q.workloads.push_back(
            {wl.at("name").get<std::string>(), wl.at("kappa_ratio").get<double>(), wl.at("source").get<std::string>()});
    q.table = table;
    if (!table) return q;
    for (const auto& n : cfg.at("models")) q.table_models.push_back(load_model("--model", n.get<std::string>()));
    for (const auto& row : cfg.at("rows")) {
        const std::string hw = row.at("hardware").get<std::string>(), link = row.at("link").get<std::string>();
        q.table_rows.push_back({row.at("label").get<std::string>(), hw, link, load_link("--link", link),
                                load_hardware("--hardware", hw).gpu.prefill_flops});
    }
    return q;
}

namespace {

std::vector<int> parse_tp_list(const std::string& text) {
    const Knob& tp = knob("tp");
    std::vector<int> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const double v = parse_number("--tp", part);
        if (v < tp.lo || v != std::floor(v) || v > tp.hi)
            throw InputError(
                fmt::format("--tp: each entry must be a whole number in [{:g}, {:g}], got '{}'", tp.lo, tp.hi, part));
        out.push_back(static_cast<int>(v));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// The checkpoint built from the scenario's model: --weight-bits, else the
// scenario's weight precision (--weight-dtype, else the model's own checkpoint
// format, else verdict's bf16).
// The model at --weight-dtype as verdict stores it, or at a flat --weight-bits per weight (scales included, the
// embedding and head too); either way the embedding and head are the non-layer tensors, split over the ranks.
Checkpoint model_checkpoint(const Scenario& sc, const std::optional<std::string>& weight_bits) {
    if (!weight_bits)
        return checkpoint_from_model(sc.model, sc.policy.weight_dtype,
                                     fmt::format("{}@{}", sc.model.name, to_string(sc.policy.weight_dtype)));
    const double bits = parse_number("--weight-bits", *weight_bits);
    check::positive("--weight-bits", bits);
    check::in_range("--weight-bits", bits, limits::kMinWeightBits, limits::kMaxWeightBits);
    return checkpoint_from_model(sc.model, bits, fmt::format("{}@{:g}bit", sc.model.name, bits));
}

// Checkpoints: built from --model, given, the seed's set, or built from verdict's default model.
std::vector<Checkpoint> resolve_checkpoints(const LayersInputs& in, const json& cfg, const Scenario& sc) {
    std::vector<Checkpoint> cps;
    const bool from_model = in.scenario.given("model") || (in.checkpoints.empty() && !in.seed);
    if (from_model) cps.push_back(model_checkpoint(sc, in.weight_bits));
    const bool dtype = in.scenario.given("weight-dtype");
    if ((in.weight_bits || dtype) && !from_model)
        throw InputError(fmt::format("{}: sets the precision of the --model checkpoint; give --model",
                                     in.weight_bits ? "--weight-bits" : "--weight-dtype"));
    if (in.weight_bits && dtype) throw InputError("--weight-bits: give it or --weight-dtype, not both");
    for (const auto& c : in.checkpoints) cps.push_back(load_checkpoint("--checkpoint", c));
    if (cps.empty())
        for (const auto& n : cfg.at("checkpoints")) cps.push_back(load_checkpoint("--checkpoint", n.get<std::string>()));
    return cps;
}

}  // namespace

const std::vector<std::string_view>& layers_knobs() {
    static const std::vector<std::string_view> k = {"hardware", "model",   "weight-dtype", "link",
                                                    "c2c-bw",   "hbm-cap", "hbm-bw",       "eta-mem"};
    return k;
}

LayersSetup resolve_layers(const LayersInputs& in) {
    const json& cfg = embedded_config("layers_budget");
    const Scenario sc = offload_scenario(in.scenario, in.seed, cfg, {"hardware", "link"}, "configs/layers_budget.json",
                                         {{"hbm-reserve", "0"}});  // the budget is the whole card (--hbm-cap)
    // The sweep's rule (layers_question): the card's HBM the budget, the GPU's own link share, --gpus the TP.
    const LayersQuestion q = layers_question(sc);
    LayersSetup s;
    s.checkpoints = resolve_checkpoints(in, cfg, sc);
    s.tp = in.tp ? parse_tp_list(*in.tp) : in.seed ? cfg.at("tp").get<std::vector<int>>() : std::vector<int>{q.tp};
    s.hardware = sc.hardware.name;
    s.link_name = sc.hardware.link.name;
    s.host = q.host;  // the decode roofline per checkpoint and TP, unless a compute time is given
    if (in.compute_ms)
        s.compute_ms = parse_number("--compute-ms", *in.compute_ms);
    else if (in.seed)
        s.compute_ms = cfg.at("compute_ms_per_layer").get<double>();
    if (s.compute_ms) {
        check::non_negative("--compute-ms", *s.compute_ms);
        check::in_range("--compute-ms", *s.compute_ms, 0.0, limits::kMaxLayerMs);
        s.host.compute_per_layer = milliseconds(*s.compute_ms);
        s.host.roofline_read.reset();
    }
    if (in.copy_ms) {
        const double v = parse_number("--copy-ms", *in.copy_ms);
        check::positive("--copy-ms", v);
        check::in_range("--copy-ms", v, limits::kMinCopyMs, limits::kMaxLayerMs);
        s.host.copy_per_layer = milliseconds(v);
    }
    if (in.offload_layers)
        s.offload_layers = check::whole_in_range("--offload-layers", parse_number("--offload-layers", *in.offload_layers), 0,
                                                 model_field_range("layers").hi);
    if (in.rows)
        s.rows = check::whole_in_range("--rows", parse_number("--rows", *in.rows), 1, static_cast<int>(limits::kMaxRows));
    if (in.prefill_compute_ms) {
        s.prefill_compute_ms = parse_number("--prefill-compute-ms", *in.prefill_compute_ms);
        check::non_negative("--prefill-compute-ms", *s.prefill_compute_ms);
        check::in_range("--prefill-compute-ms", *s.prefill_compute_ms, 0.0, limits::kMaxLayerMs);
    }
    if (in.target_tps) {
        s.target_tps = parse_number("--target-tps", *in.target_tps);
        check::positive("--target-tps", *s.target_tps);
        check::in_range("--target-tps", *s.target_tps, limits::kMinTargetTps, limits::kMaxTargetTps);
    }
    return s;
}

LayersStudy run_layers_study(const LayersSetup& setup) {
    try {
        return layers_study(setup);
    } catch (const InputError& e) {  // the analysis names the knob; the CLI spells it as a flag
        throw InputError(std::string("--") + e.what());
    }
}

}  // namespace kvroof::io
