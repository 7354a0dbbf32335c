// SPDX-License-Identifier: MIT
#include "kvroof/io/scenario_builder.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "kvroof/io/mix_file.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"

namespace kvroof::io {

const char* describe(Origin o) noexcept {
    switch (o) {
        case Origin::command_line: return "command line";
        case Origin::config: return "--config";
        case Origin::command_line_over_config: return "command line, overrides --config";
    }
    return "?";
}

ScenarioInputs::ScenarioInputs() : values_(knobs().size()) {}

void ScenarioInputs::set(const Knob& k, std::string text, Origin origin) {
    values_[knob_index(k)] = GivenValue{std::move(text), origin};
}

void ScenarioInputs::set(std::string_view name, std::string text, Origin origin, std::string_view where) {
    const Knob* k = find_knob(name);
    if (!k || k->grid_only) throw InputError(fmt::format("{}: unknown flag '{}'", where, name));
    set(*k, std::move(text), origin);
}

void ScenarioInputs::override_with(const ScenarioInputs& over) {
    for (size_t i = 0; i < values_.size(); ++i) {
        if (!over.values_[i]) continue;
        const Origin o = values_[i] ? Origin::command_line_over_config : over.values_[i]->origin;
        values_[i] = GivenValue{over.values_[i]->text, o};
    }
}

void set_scenario_flag(ScenarioInputs& in, std::string_view flag, const std::string& value, std::string_view where,
                       Origin origin) {
    in.set(flag, value, origin, where);
}

double bare_si(const Knob& k) { return k.type == KnobType::quantity ? parse_quantity(k.flag(), "1", k.unit, k.bare) : 1.0; }

KnobValue decode_knob(const Knob& k, std::string_view flag, std::string_view text) {
    if (k.type == KnobType::text) return k.decode(flag, text);
    if (!k.none_text.empty() && trim(text) == k.none_text) return std::numeric_limits<double>::quiet_NaN();
    const double v = k.type == KnobType::quantity ? parse_quantity(flag, text, k.unit, k.bare) : parse_number(flag, text);
    if (k.type == KnobType::whole)
        return static_cast<double>(check::whole_in_range(flag, v, static_cast<int>(k.lo), static_cast<int>(k.hi)));
    if (v < k.lo || v > k.hi) {  // the knob's own range, named by its own flag (not by a knob it sets)
        const double bare = bare_si(k);
        const std::string unit = k.type == KnobType::quantity ? " " + std::string(k.bare) : std::string();
        throw InputError(fmt::format("{}: must be in [{:g}, {:g}]{}, got {}", flag, k.lo / bare, k.hi / bare, unit, trim(text)));
    }
    return v;
}

namespace {
// A knob that replaces another: given together they are an error; given alone, the other's fallback does not apply.
const Knob* replaced_by(const Knob& k, const ScenarioInputs& in) {
    if (k.name == "workload" && in.given("mix")) return &knob("mix");
    if (k.name == "hardware" && in.given("deployment")) return &knob("deployment");
    return nullptr;
}
}  // namespace

DecodedInputs decode_inputs(const ScenarioInputs& in) {
    if (in.given("mix") && in.given("workload")) throw InputError("--mix: cannot be combined with --workload; give one of them");
    if (in.given("deployment") && in.given("hardware"))
        throw InputError(
            "--deployment: names its own hardware preset, so it cannot be combined with --hardware; give one of them");
    DecodedInputs out(knobs().size());
    for (const Knob& k : knobs()) {
        if (k.grid_only) continue;
        const auto& given = in.get(k);
        if (given)
            out[knob_index(k)] = decode_knob(k, k.flag(), given->text);
        else if (!k.fallback.empty() && !replaced_by(k, in))
            out[knob_index(k)] = decode_knob(k, k.flag(), k.fallback);
    }
    const auto& tp = out[knob_index(knob("tp"))];
    const auto& gpus = out[knob_index(knob("gpus"))];
    if (tp && gpus && std::get<double>(*tp) != std::get<double>(*gpus))
        throw InputError(fmt::format("--tp: names the --gpus group, so the two must agree; got --tp {:g} and --gpus {:g}",
                                     std::get<double>(*tp), std::get<double>(*gpus)));
    return out;
}

void assemble(const DecodedInputs& values, Scenario& out) {
    out = Scenario{};
    const auto& table = knobs();
    for (size_t i = 0; i < table.size(); ++i)
        if (values[i]) table[i].access.apply(out, *values[i]);
}

void check_scenario(const Scenario& s) {
    try {  // the specs name the knob; the CLI spells it as a flag
        const HardwareSpec& hw = s.hardware;
        for (auto [name, v, lo] :
             {std::tuple{"pp", hw.deployment.pp, 1}, std::tuple{"pp-microbatches", hw.deployment.pp_microbatches, 0},
              std::tuple{"dp", hw.deployment.dp, 1}})
            if (v < lo || v > limits::kMaxGpus)
                throw InputError(fmt::format("{}: must be in [{}, {}], got {}", name, lo, limits::kMaxGpus, v));
        s.hardware.check_validity();
        s.policy.check_validity();
        if (s.hardware.deployment.ep > 1 && !s.model.is_moe())
            throw InputError("ep: the model has no routed experts (dense), so only 1 is allowed, got " +
                             std::to_string(s.hardware.deployment.ep));
        if (s.hardware.deployment.ep > s.model.experts && s.model.is_moe())
            throw InputError(
                fmt::format("ep: at most the model's routed experts ({}), got {}", s.model.experts, s.hardware.deployment.ep));
        if (s.hardware.deployment.pp > s.model.layers)
            throw InputError(
                fmt::format("pp: at most the model's layers ({}), got {}", s.model.layers, s.hardware.deployment.pp));
        if (s.hardware.deployment.attention_dp == 1 && s.model.attention != Attention::mla)
            throw InputError(
                "attention-dp: the model's attention is GQA (its KV heads shard over the group); data-parallel "
                "attention is modelled for MLA models only, so only 0 is allowed, got 1");
    } catch (const InputError& e) {
        throw InputError(std::string("--") + e.what());
    }
    s.check_validity();
}

namespace {
// A per-GPU figure given above every sourced GPU preset is allowed (a what-if)
// but said: "--hbm-cap 80TB" is more likely a typo for 80GB than a plan.
std::vector<std::string> beyond_sourced_devices(const ScenarioInputs& in, const Scenario& sc) {
    std::vector<std::string> out;
    for (const char* name : {"hbm-cap", "hbm-bw", "gpu-flops"}) {
        if (!in.given(name)) continue;
        const Knob& k = knob(name);
        double most = 0;
        std::string which;
        for (const auto& preset : preset_names("hardware")) {
            Scenario p;
            p.hardware = load_hardware("--hardware", preset);
            if (k.access.get(p) > most) most = k.access.get(p), which = preset;
        }
        if (k.access.get(sc) <= most) continue;
        const double bare = bare_si(k);
        out.push_back(
            fmt::format("{} {} per GPU is above every sourced GPU preset (the most: {:g} {}, {}): a what-if, or a typo?",
                        k.flag(), in.get(k)->text, most / bare, k.bare, which));
    }
    return out;
}
}  // namespace

std::vector<std::string> tensor_parallel_warnings(const Scenario& s, std::string_view flag) {
    std::vector<std::string> out;
    // Engines shard the attention heads over the tensor-parallel group (vLLM refuses a TP that does not
    // divide them); `parallel` and `ladder` try only such groups. A verdict still answers, split evenly.
    const int tp = s.hardware.deployment.gpus;
    if (s.hardware.deployment.attention_dp == 0 && s.model.heads > 0 && s.model.heads % tp != 0)
        out.push_back(
            fmt::format("{} {}: {}'s {} attention heads do not split evenly over a tensor-parallel "
                        "group of {}, which engines refuse; the figures assume an even split",
                        flag, tp, s.model.name, s.model.heads, tp));
    const int domain = s.hardware.gpu.nvlink_domain;
    if (domain > 0 && tp > domain && tp % domain != 0)
        out.push_back(
            fmt::format("{} {}: the group spans {:.3g} NVLink domains of {} (--nvlink-domain), which no layout does; the "
                        "all-reduce's cost takes {:.3g} as its count of domains",
                        flag, tp, static_cast<double>(tp) / domain, domain, static_cast<double>(tp) / domain));
    return out;
}

std::vector<std::string> context_warnings(const Scenario& s) {
    std::vector<std::string> out;
    const double window = s.model.max_context;
    if (!(window > 0)) return out;
    for (const MixEntry& e : s.mix.entries) {
        const double end = e.cls.context() + e.cls.o_output;
        if (end <= window) continue;
        out.push_back(fmt::format(
            "workload class '{}': its context at the end of a call, S + O = {:.0f} tokens, is longer than {}'s context "
            "window of {:.0f} tokens (max_position_embeddings): an engine serves it only with RoPE scaling such as "
            "YaRN, which the figures assume",
            e.cls.name, end, s.model.name, window));
    }
    return out;
}

BuiltScenario build_scenario(const ScenarioInputs& in) {
    BuiltScenario out;
    assemble(decode_inputs(in), out.scenario);
    for (const Knob& k : knobs())
        if (const auto& g = in.get(k)) out.overrides.emplace_back(k.flag(), g->text);
    out.workload_label = in.given("mix")        ? in.get("mix")->text
                         : in.given("workload") ? in.get("workload")->text
                                                : kDefaultWorkload;
    check_scenario(out.scenario);
    out.warnings = beyond_sourced_devices(in, out.scenario);
    return out;
}

nlohmann::json knob_values(const Scenario& s) {
    nlohmann::json out = nlohmann::json::object();
    for (const Knob& k : knobs()) {
        if (!k.access.get) continue;
        const double si = k.access.get(s);
        const double bare = bare_si(k);
        if (!std::isfinite(si))
            out[std::string(k.column)] = nullptr;
        else if (k.type == KnobType::whole)
            out[std::string(k.column)] = static_cast<long long>(si);  // whole: checked in range
        else
            out[std::string(k.column)] = si / bare;
    }
    return out;
}

// --- decoders of the text knobs ---

KnobValue decode_hardware(std::string_view flag, std::string_view text) {
    return std::make_shared<const HardwareSpec>(load_hardware(flag, text));
}

KnobValue decode_model(std::string_view flag, std::string_view text) {
    return std::make_shared<const ModelSpec>(load_model(flag, text));
}

KnobValue decode_workload(std::string_view flag, std::string_view text) {
    const std::string w(text);
    CallClass c = looks_like_workload_string(w) ? parse_workload_string(flag, w) : load_workload(flag, w);
    if (looks_like_workload_string(w) && w.find("idle_gap") == std::string::npos) {
        // An ad-hoc class keeps the default class's idle gap unless it says otherwise.
        c.idle_gap = load_workload(flag, kDefaultWorkload).idle_gap;
    }
    auto mix = std::make_shared<Mix>();
    mix->entries.push_back({std::move(c), 1.0});
    return std::shared_ptr<const Mix>(std::move(mix));
}

KnobValue decode_mix(std::string_view flag, std::string_view text) {
    if (is_mix_file(text)) return std::shared_ptr<const Mix>(std::make_shared<Mix>(load_mix_file(flag, text)));
    const auto parts = parse_mix_string(flag, text);
    double total = 0;
    for (const auto& p : parts) total += p.weight;
    auto mix = std::make_shared<Mix>();
    for (const auto& p : parts) mix->entries.push_back({load_workload(flag, p.name), p.weight / total});
    return std::shared_ptr<const Mix>(std::move(mix));
}

KnobValue decode_link(std::string_view flag, std::string_view text) { return load_link_preset(flag, text); }
KnobValue decode_host(std::string_view flag, std::string_view text) { return load_host_preset(flag, text); }
KnobValue decode_net(std::string_view flag, std::string_view text) { return load_net_preset(flag, text); }
KnobValue decode_deployment(std::string_view flag, std::string_view text) { return load_deployment(flag, text); }

KnobValue decode_dtype(std::string_view flag, std::string_view text) { return parse_dtype(flag, text); }

KnobValue decode_idle(std::string_view flag, std::string_view text) { return parse_idle_policy(flag, text); }
KnobValue decode_slo_target(std::string_view flag, std::string_view text) { return parse_slo_target(flag, text); }

}  // namespace kvroof::io
