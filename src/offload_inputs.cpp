// SPDX-License-Identifier: MIT
// Flags and presets of `kvroof prefill` and `kvroof layers` resolved into the
// setups their studies compute from. Every error names the flag.
#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"

namespace kvroof::io {

using nlohmann::json;

PrefillSetup resolve_prefill(const PrefillInputs& in) {
    const json& single = embedded_config("prefill_kappa").at("single");
    PrefillSetup s;
    s.hardware = load_hardware("--hardware", in.hardware.value_or(single.at("hardware").get<std::string>()));
    s.model = load_model("--model", in.model.value_or(single.at("model").get<std::string>()));
    const std::string w = in.workload.value_or(single.at("workload").get<std::string>());
    s.workload = looks_like_workload_string(w) ? parse_workload_string("--workload", w) : load_workload("--workload", w);
    s.link_name = in.link.value_or(in.link_bw ? "custom" : single.at("link").get<std::string>());
    s.link = in.link_bw ? BytesPerSecond(parse_quantity("--link-bw", *in.link_bw, UnitKind::bandwidth, "GB/s"))
                        : load_link("--link", s.link_name);
    check::positive("--link-bw", s.link.raw());
    check::in_range("--link-bw", s.link.raw(), limits::kMinBandwidth, limits::kMaxBandwidth);
    if (in.eta_compute) {
        s.hardware.eta_compute = parse_number("--eta-compute", *in.eta_compute);
        check::open_unit_interval_right("--eta-compute", s.hardware.eta_compute);
        check::in_range("--eta-compute", s.hardware.eta_compute, limits::kMinEta, limits::kMaxEta);
    }
    const DType math = in.compute_dtype ? parse_dtype("--compute-dtype", *in.compute_dtype) : DType::fp8;
    if (in.prefill_flops) {
        s.c_eff = FlopPerSecond(parse_quantity("--prefill-flops", *in.prefill_flops, UnitKind::flop_rate, "TFLOPS"));
        s.c_eff_from = "--prefill-flops";
    } else {
        const FlopPerSecond peak = gemm_peak(s.hardware, math);
        s.c_eff = peak * s.hardware.eta_compute;
        s.c_eff_from = fmt::format("{:g} × {} peak", s.hardware.eta_compute,
                                   peak.raw() == s.hardware.gpu_flops.raw() ? "BF16" : to_string(math));
    }
    check::positive("--prefill-flops", s.c_eff.raw());
    check::in_range("--prefill-flops", s.c_eff.raw(), limits::kMinFlops, limits::kMaxFlops);
    if (in.kv_dtype) s.kv = parse_dtype("--kv-dtype", *in.kv_dtype);
    s.tp.gpus = single.value("gpus", 1);
    if (in.gpus) s.tp.gpus = check::whole_in_range("--gpus", parse_number("--gpus", *in.gpus), 1, limits::kMaxGpus);
    if (in.ov) {
        s.ov = parse_number("--ov", *in.ov);
        check::unit_interval("--ov", s.ov);
    }
    if (in.token_budget) {
        s.token_budget = parse_number("--token-budget", *in.token_budget);
        check::positive("--token-budget", s.token_budget);
        check::in_range("--token-budget", s.token_budget, 1.0, limits::kMaxTokens);
    }
    if (in.vram) {
        s.vram = Bytes(parse_quantity("--vram", *in.vram, UnitKind::bytes, "GB"));
        check::in_range("--vram", s.vram->raw(), 0.0, limits::kMaxCapacity * limits::kMaxGpus);
    }
    return s;
}

PrefillQuestions prefill_questions(bool table) {
    const json& cfg = embedded_config("prefill_kappa");
    PrefillQuestions q;
    for (const auto& n : cfg.at("what_if_links")) {
        const std::string name = n.get<std::string>();
        q.links.push_back({name, load_link("--link", name)});
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
                                load_hardware("--hardware", hw).prefill_flops});
    }
    return q;
}

namespace {

std::vector<int> parse_tp_list(const std::string& text) {
    std::vector<int> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const double v = parse_number("--tp", part);
        if (v < 1 || v != std::floor(v) || v > 1024)
            throw InputError("--tp: each entry must be a whole number in [1, 1024], got '" + part + "'");
        out.push_back(static_cast<int>(v));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// Checkpoints: built from a model, given, or the seed's set.
std::vector<Checkpoint> resolve_checkpoints(const LayersInputs& in, const json& cfg) {
    std::vector<Checkpoint> cps;
    if (in.model) {
        if (!in.weight_bits)
            throw InputError("--model: needs --weight-bits (e.g. 4.25 for FP4 with one 8-bit scale per 32 weights)");
        const double bits = parse_number("--weight-bits", *in.weight_bits);
        check::positive("--weight-bits", bits);
        check::in_range("--weight-bits", bits, limits::kMinWeightBits, limits::kMaxWeightBits);
        const ModelSpec m = load_model("--model", *in.model);
        cps.push_back(checkpoint_from_model(m, bits, fmt::format("{}@{:g}bit", m.name, bits)));
    } else if (in.weight_bits) {
        throw InputError("--weight-bits: only with --model");
    }
    for (const auto& c : in.checkpoints) cps.push_back(load_checkpoint("--checkpoint", c));
    if (cps.empty())
        for (const auto& n : cfg.at("checkpoints")) cps.push_back(load_checkpoint("--checkpoint", n.get<std::string>()));
    return cps;
}

// Budget and link; the compute and copy times are set by the caller.
LayerHost resolve_host(const LayersInputs& in, const HardwareSpec& hw, const std::string& link_name) {
    LayerHost host;
    host.card_budget = in.budget ? Bytes(parse_quantity("--budget", *in.budget, UnitKind::bytes, "GiB")) : hw.hbm_capacity;
    check::positive("--budget", host.card_budget.raw());
    check::in_range("--budget", host.card_budget.raw(), limits::kMinCapacity, limits::kMaxCapacity);
    host.link = in.link_bw ? BytesPerSecond(parse_quantity("--link-bw", *in.link_bw, UnitKind::bandwidth, "GB/s"))
                           : load_link("--link", link_name);
    check::positive("--link-bw", host.link.raw());
    check::in_range("--link-bw", host.link.raw(), limits::kMinBandwidth, limits::kMaxBandwidth);
    return host;
}

}  // namespace

LayersSetup resolve_layers(const LayersInputs& in) {
    const json& cfg = embedded_config("layers_budget");
    LayersSetup s;
    s.checkpoints = resolve_checkpoints(in, cfg);
    s.tp = in.tp ? parse_tp_list(*in.tp) : cfg.at("tp").get<std::vector<int>>();
    const HardwareSpec hw = load_hardware("--hardware", in.hardware.value_or(cfg.at("hardware").get<std::string>()));
    s.hardware = hw.name;
    s.link_name = in.link_bw ? "custom" : in.link.value_or(cfg.at("link").get<std::string>());
    s.host = resolve_host(in, hw, s.link_name);
    s.compute_ms = in.compute_ms ? parse_number("--compute-ms", *in.compute_ms) : cfg.at("compute_ms_per_layer").get<double>();
    check::non_negative("--compute-ms", s.compute_ms);
    check::in_range("--compute-ms", s.compute_ms, 0.0, limits::kMaxLayerMs);
    s.host.compute_per_layer = milliseconds(s.compute_ms);
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
