// SPDX-License-Identifier: MIT
#include "kvroof/io/scenario_builder.hpp"

#include <fmt/format.h>

#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"

namespace kvroof::io {

BuiltScenario build_scenario(const ScenarioInputs& in) {
    BuiltScenario out;
    Scenario& sc = out.scenario;
    auto note = [&](const char* flag, const std::optional<std::string>& v) {
        if (v) out.overrides.emplace_back(flag, *v);
        return v.has_value();
    };

    // Hardware: preset, then overrides.
    HardwareSpec& hw = sc.hardware;
    hw = load_hardware("--hardware", in.hardware);
    if (note("--gpus", in.gpus)) {
        hw.gpus = check::whole_in_range("--gpus", parse_number("--gpus", *in.gpus), 1, limits::kMaxGpus);
    }
    if (note("--gpu-flops", in.gpu_flops)) hw.gpu_flops = FlopPerSecond(parse_quantity("--gpu-flops", *in.gpu_flops, UnitKind::flop_rate, "TFLOPS"));
    if (note("--hbm-cap", in.hbm_cap)) hw.hbm_capacity = Bytes(parse_quantity("--hbm-cap", *in.hbm_cap, UnitKind::bytes, "GB"));
    if (note("--hbm-bw", in.hbm_bw)) hw.hbm_bandwidth = BytesPerSecond(parse_quantity("--hbm-bw", *in.hbm_bw, UnitKind::bandwidth, "TB/s"));
    if (note("--nvlink-bw", in.nvlink_bw)) hw.nvlink_bandwidth = BytesPerSecond(parse_quantity("--nvlink-bw", *in.nvlink_bw, UnitKind::bandwidth, "GB/s"));
    if (note("--link", in.link)) {
        hw.link_bandwidth = load_link("--link", *in.link);
        hw.link_name = *in.link;
    }
    if (note("--c2c-bw", in.c2c_bw)) {
        hw.link_bandwidth = BytesPerSecond(parse_quantity("--c2c-bw", *in.c2c_bw, UnitKind::bandwidth, "GB/s"));
        hw.link_name = "custom";
    }
    if (note("--cpu-dram-bw", in.cpu_dram_bw)) hw.cpu_dram_bandwidth = BytesPerSecond(parse_quantity("--cpu-dram-bw", *in.cpu_dram_bw, UnitKind::bandwidth, "GB/s"));
    if (note("--cpu-flops", in.cpu_flops)) hw.cpu_flops = FlopPerSecond(parse_quantity("--cpu-flops", *in.cpu_flops, UnitKind::flop_rate, "TFLOPS"));
    if (note("--cpu-mem", in.cpu_mem)) hw.cpu_memory = Bytes(parse_quantity("--cpu-mem", *in.cpu_mem, UnitKind::bytes, "GB"));
    if (note("--cpus-per-gpu", in.cpus_per_gpu)) hw.cpus_per_gpu = parse_number("--cpus-per-gpu", *in.cpus_per_gpu);
    if (note("--eta", in.eta)) hw.eta_compute = hw.eta_mem = parse_number("--eta", *in.eta);
    if (note("--eta-compute", in.eta_compute)) hw.eta_compute = parse_number("--eta-compute", *in.eta_compute);
    if (note("--eta-mem", in.eta_mem)) hw.eta_mem = parse_number("--eta-mem", *in.eta_mem);
    if (note("--hbm-reserve", in.hbm_reserve)) hw.hbm_reserve = Bytes(parse_quantity("--hbm-reserve", *in.hbm_reserve, UnitKind::bytes, "GB"));
    try {
        hw.check_validity();
    } catch (const InputError& e) {  // the spec names the knob; the CLI spells it as a flag
        throw InputError(std::string("--") + e.what());
    }

    sc.model = load_model("--model", in.model);

    // Workload: one class, or a mix of class presets.
    if (in.mix && in.workload) throw InputError("--mix: cannot be combined with --workload; give one of them");
    if (in.mix) {
        out.workload_label = *in.mix;
        const auto parts = parse_mix_string("--mix", *in.mix);
        double total = 0;
        for (const auto& p : parts) total += p.weight;
        for (const auto& p : parts) {
            CallClass c = load_workload("--mix", p.name);
            sc.mix.entries.push_back({std::move(c), p.weight / total});
        }
    } else {
        const std::string w = in.workload.value_or(kDefaultWorkload);
        out.workload_label = w;
        CallClass c = looks_like_workload_string(w) ? parse_workload_string("--workload", w)
                                                    : load_workload("--workload", w);
        if (looks_like_workload_string(w) && w.find("idle_gap") == std::string::npos) {
            // An ad-hoc class keeps the default class's idle gap unless it says otherwise.
            c.idle_gap = load_workload("--workload", kDefaultWorkload).idle_gap;
        }
        sc.mix.entries.push_back({std::move(c), 1.0});
    }
    if (in.workload) out.overrides.emplace_back("--workload", *in.workload);
    if (in.mix) out.overrides.emplace_back("--mix", *in.mix);

    // Policy.
    PolicySpec& p = sc.policy;
    if (note("--kv-dtype", in.kv_dtype)) p.kv_dtype = parse_dtype("--kv-dtype", *in.kv_dtype);
    if (note("--weight-dtype", in.weight_dtype)) p.weight_dtype = parse_dtype("--weight-dtype", *in.weight_dtype);
    if (note("--sparse", in.sparse)) {
        p.sparse = parse_number("--sparse", *in.sparse);
        check::open_unit_interval_right("--sparse", p.sparse);
        check::in_range("--sparse", p.sparse, limits::kMinSparse, 1.0);
    }
    if (note("--r", in.r)) {
        p.r = parse_number("--r", *in.r);
        check::unit_interval("--r", p.r);
    }
    note("--slo-tpot", in.slo_tpot);
    const std::string tpot = in.slo_tpot.value_or(kDefaultSloTpot);
    if (tpot != "none") {
        p.slo_tpot = Seconds(parse_quantity("--slo-tpot", tpot, UnitKind::time, "ms"));
        check::positive("--slo-tpot", p.slo_tpot->raw());
        check::in_range("--slo-tpot", p.slo_tpot->raw(), limits::kMinSloS, limits::kMaxSloS);
    }
    if (note("--slo-ttft", in.slo_ttft) && *in.slo_ttft != "none") {
        p.slo_ttft = Seconds(parse_quantity("--slo-ttft", *in.slo_ttft, UnitKind::time, "ms"));
        check::positive("--slo-ttft", p.slo_ttft->raw());
        check::in_range("--slo-ttft", p.slo_ttft->raw(), limits::kMinSloS, limits::kMaxSloS);
    }
    if (note("--idle", in.idle)) p.idle = parse_idle_policy("--idle", *in.idle);

    sc.check_validity();
    return out;
}

}  // namespace kvroof::io
