// SPDX-License-Identifier: MIT
#include "scenario_flags.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "kvroof/io/atomic_write.hpp"

namespace kvroof::cli {
namespace {
void opt(CLI::App& app, const char* flag, std::optional<std::string>& target, const char* help) {
    app.add_option_function<std::string>(flag, [&target](const std::string& v) { target = v; }, help)->type_name("VALUE");
}
}  // namespace

void add_scenario_flags(CLI::App& app, io::ScenarioInputs& in) {
    app.add_option("--hardware", in.hardware, "hardware preset or JSON file (see `kvroof presets`)")
        ->capture_default_str()->group("Scenario");
    app.add_option("--model", in.model, "model preset, JSON file, or a Hugging Face config.json")
        ->capture_default_str()->group("Scenario");
    opt(app, "--workload", in.workload, "workload preset, JSON file, or \"s_cached=N,a_append=N,o_output=N[,idle_gap=10s]\" [default: codex]");
    opt(app, "--mix", in.mix, "concurrent class mix, e.g. \"long:0.7,short:0.3\" (classes: codex long mid short prefill)");
    for (auto* o : app.get_options())
        if (o->get_name() == "--workload" || o->get_name() == "--mix") o->group("Scenario");

    const char* hw = "Hardware overrides (a bare number takes the unit shown)";
    auto hopt = [&](const char* flag, std::optional<std::string>& t, const char* help) {
        opt(app, flag, t, help);
        app.get_option(flag)->group(hw);
    };
    hopt("--gpus", in.gpus, "GPUs in one tensor-parallel group (HBM, bandwidth and FLOP/s pooled)");
    hopt("--gpu-flops", in.gpu_flops, "dense BF16 peak per GPU [TFLOPS], e.g. 2.5PFLOPS");
    hopt("--hbm-cap", in.hbm_cap, "HBM capacity per GPU [GB], e.g. 141GB or 80GiB");
    hopt("--hbm-bw", in.hbm_bw, "HBM bandwidth per GPU [TB/s], e.g. 4.8TB/s");
    hopt("--hbm-reserve", in.hbm_reserve, "HBM held back per GPU for activations [GB] (default 2)");
    hopt("--nvlink-bw", in.nvlink_bw, "NVLink bandwidth per GPU per direction [GB/s]");
    hopt("--link", in.link, "GPU<->CPU link preset: pcie-gen3|4|5[-measured], nvlink-c2c[-measured]");
    hopt("--c2c-bw", in.c2c_bw, "GPU<->CPU link bandwidth per GPU per direction [GB/s], e.g. 900GB/s");
    hopt("--cpu-dram-bw", in.cpu_dram_bw, "DRAM bandwidth per CPU socket [GB/s]");
    hopt("--cpu-flops", in.cpu_flops, "BF16 peak per CPU socket [TFLOPS]");
    hopt("--cpu-mem", in.cpu_mem, "DRAM capacity per CPU socket [GB]");
    hopt("--cpus-per-gpu", in.cpus_per_gpu, "CPU sockets per GPU (0.5 = one CPU shared by two GPUs)");
    hopt("--eta", in.eta, "achievable fraction of peak FLOP/s and bandwidth, both (default 0.5)");
    hopt("--eta-compute", in.eta_compute, "achievable fraction of peak FLOP/s");
    hopt("--eta-mem", in.eta_mem, "achievable fraction of peak HBM/DRAM bandwidth");

    const char* pol = "Policy";
    auto popt = [&](const char* flag, std::optional<std::string>& t, const char* help) {
        opt(app, flag, t, help);
        app.get_option(flag)->group(pol);
    };
    popt("--sparse", in.sparse, "fraction of context KV attention reads per token, GPU and CPU alike (default 1)");
    popt("--r", in.r, "fraction of CPU-resident KV reloaded to the GPU for append-prefill (default 1)");
    popt("--kv-dtype", in.kv_dtype, "KV cache dtype: bf16, fp8, int4 (default bf16)");
    popt("--weight-dtype", in.weight_dtype, "weight dtype: bf16, fp8, int4 (default bf16)");
    popt("--slo-tpot", in.slo_tpot, "TPOT SLO capping the batch [ms], or none (default 50ms)");
    popt("--slo-ttft", in.slo_ttft, "TTFT SLO [ms], or none (default none)");
    popt("--idle", in.idle, "idle sessions: hold (KV stays in HBM) or park (KV moves to CPU DRAM) (default hold)");
}

void add_output_flags(CLI::App& app, OutputOptions& out) {
    app.add_flag("--json", out.json, "print one JSON object with every number instead of the text report")->group("Output");
    app.add_option("--report", out.report, "also write the report as markdown to FILE (atomically)")
        ->type_name("FILE.md")->group("Output");
}

void emit(const OutputOptions& out, const std::string& text, const std::string& json_text, const std::string& markdown) {
    if (!out.report.empty()) io::write_file_atomic(out.report, markdown);
    const std::string& s = out.json ? json_text : text;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}

}  // namespace kvroof::cli
