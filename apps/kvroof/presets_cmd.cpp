// SPDX-License-Identifier: MIT
// `kvroof presets`: every embedded preset with its key figures and source.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/physics/model_quantities.hpp"

namespace kvroof::cli {
namespace {
std::string first_source(const nlohmann::json& j) {
    if (!j.contains("source")) return "";
    const auto& s = j.at("source");
    if (s.is_array() && !s.empty()) return s.at(0).get<std::string>() + (s.size() > 1 ? fmt::format(" (+{})", s.size() - 1) : "");
    return s.is_string() ? s.get<std::string>() : "";
}

// GPUs grouped by how they meet their host: superchips over NVLink-C2C, GPUs on an x86 host over PCIe.
std::string hardware_text() {
    std::string out;
    for (const bool superchip : {true, false}) {
        out += superchip ? "Hardware, GPU + Grace superchips over NVLink-C2C (per GPU)\n"
                         : "\nHardware, GPUs on a host over PCIe (per GPU)\n";
        for (const auto& name : io::preset_names("hardware")) {
            const HardwareSpec hw = io::load_hardware("--hardware", name);
            if ((hw.link.name.rfind("nvlink-c2c", 0) == 0) != superchip) continue;
            std::string math;
            if (hw.gpu.flops_fp8.raw() > 0) math += " fp8 " + io::format_flops(hw.gpu.flops_fp8.raw());
            if (hw.gpu.flops_fp4.raw() > 0) math += " fp4 " + io::format_flops(hw.gpu.flops_fp4.raw());
            // A card without NVLink runs tensor parallelism over PCIe within its server.
            const std::string fabric = hw.gpu.nvlink_bandwidth.raw() > 0 ? fmt::format("NVLink x{}", hw.gpu.nvlink_domain)
                                                                         : fmt::format("PCIe x{}", hw.gpu.nvlink_domain);
            out +=
                fmt::format("  {:<15} bf16 {:>13}{} | {:>9} @ {:>10} | {}{} | link {} {} | host {} x{:g}/GPU\n      source: {}\n",
                            name, io::format_flops(hw.gpu.flops.raw()), math, io::format_bytes(hw.gpu.hbm_capacity.raw()),
                            io::format_bandwidth(hw.gpu.hbm_bandwidth.raw()), fabric,
                            hw.net.name.empty() ? std::string() : " | net " + hw.net.name, hw.link.name,
                            io::format_bandwidth(hw.link.bandwidth.raw()), hw.host.name, hw.host.cpus_per_gpu,
                            first_source(io::presets("hardware").at(name)));
        }
    }
    return out;
}

// Models grouped by their attention and MLP kinds (what sets their KV bytes and weight reads).
std::string models_text() {
    std::string out;
    const std::pair<const char*, int> groups[] = {{"dense, GQA attention", 0},
                                                  {"mixture of experts, GQA attention", 1},
                                                  {"mixture of experts, MLA attention (one latent per token)", 2}};
    for (const auto& [title, kind] : groups) {
        out += fmt::format("\nModels: {}\n", title);
        for (const auto& name : io::preset_names("models")) {
            const ModelSpec m = io::load_model("--model", name);
            if ((m.attention == Attention::mla ? 2 : m.is_moe() ? 1 : 0) != kind) continue;
            const auto pc = param_counts(m);
            std::string experts = m.is_moe() ? fmt::format(", {} of {} experts", m.experts_active, m.experts) : std::string();
            if (m.shared_experts > 0) experts += fmt::format(" + {} shared", m.shared_experts);
            if (m.is_moe() && m.first_dense_layers > 0) experts += fmt::format(" on {} of {} layers", pc.moe_layers, m.layers);
            if (m.window_layers > 0) experts += fmt::format("; {} of {} layers window {}", m.window_layers, m.layers, m.window);
            if (m.full_layers_differ())
                experts += fmt::format(", full layers {}x{}{}", m.full_kv(), m.full_dim(), m.full_k_eq_v ? " K=V" : "");
            if (m.linear_layers > 0)
                experts += fmt::format("; {} of {} layers {}", m.linear_layers, m.layers,
                                       m.linear_kind == LinearKind::mamba2      ? "Mamba-2"
                                       : m.linear_kind == LinearKind::lightning ? "lightning attention"
                                                                                : "linear attention");
            if (m.mlp_only_layers > 0) experts += fmt::format(", {} MLP only", m.mlp_only_layers);
            if (!m.mlp_gated) experts += ", MLP not gated";
            const DType w = m.checkpoint_weights.value_or(DType::bf16);
            out += fmt::format(
                "  {:<16} {:>3} layers  {:>6.1f}B params ({:.1f}B active{})  weights {} {}  KV {:>7.0f} B/token (bf16)\n      "
                "source: {}\n",
                name, m.layers, pc.total / 1e9, pc.active / 1e9, experts, to_string(w),
                io::format_bytes(weight_bytes(m, w).raw()), kv_bytes_per_token(m, DType::bf16).raw(),
                first_source(io::presets("models").at(name)));
        }
    }
    return out;
}

void run_presets(bool as_json) {
    if (as_json) {
        nlohmann::json j;
        for (const char* k : {"hardware", "hosts", "links", "networks", "deployments", "models", "workloads", "checkpoints"})
            j[k] = io::presets(k);
        j["tool"] = "kvroof";
        j["version"] = KVROOF_VERSION;
        const std::string s = j.dump(2) + "\n";
        std::fwrite(s.data(), 1, s.size(), stdout);
        return;
    }
    std::string s = fmt::format("kvroof {} — embedded presets (a JSON file of the same schema works wherever a name does)\n\n",
                                KVROOF_VERSION);
    s += hardware_text();
    s += "\nHosts (per CPU socket)\n";
    for (const auto& [name, c] : io::presets("hosts").items())
        s += fmt::format("  {:<24} {:>7g} TFLOPS  DRAM {:>6g} GB/s  {:>6g} GB\n      source: {}\n", name,
                         c.at("cpu_flops_TFLOPS").get<double>(), c.at("cpu_dram_bandwidth_GBps").get<double>(),
                         c.at("cpu_memory_GB").get<double>(), first_source(c));
    s += "\nLinks (per direction)\n";
    for (const auto& [name, l] : io::presets("links").items())
        s += fmt::format("  {:<20} {:>7g} GB/s   {}\n      source: {}\n", name, l.at("bandwidth_GBps").get<double>(),
                         l.value("note", ""), first_source(l));
    s += "\nNetworks (scale-out, per GPU per direction; --net)\n";
    for (const auto& [name, n] : io::presets("networks").items())
        s +=
            fmt::format("  {:<20} {:>7g} GB/s  {:>4g} us  {}\n      source: {}\n", name, n.at("net_bandwidth_GBps").get<double>(),
                        n.at("net_latency_us").get<double>(), n.value("note", ""), first_source(n));
    s += "\nDeployments (--deployment: hardware preset, GPUs, NVLink domain, network)\n";
    for (const auto& [name, d] : io::presets("deployments").items())
        s += fmt::format("  {:<12} {} x{}, NVLink domain {}, net {}  {}\n      source: {}\n", name,
                         d.at("hardware").get<std::string>(), d.at("gpus").get<int>(), d.at("nvlink_domain").get<int>(),
                         d.at("net").get<std::string>(), d.value("note", ""), first_source(d));
    s += models_text();
    s += "\nWorkloads (call classes)\n";
    for (const auto& name : io::preset_names("workloads")) {
        const CallClass c = io::load_workload("--workload", name);
        s += fmt::format("  {:<8} S_c={:>6.0f} A={:>6.0f} O={:>4.0f} idle gap {:.2f} s — {}\n", name, c.s_cached, c.a_append,
                         c.o_output, c.idle_gap.raw(), io::presets("workloads").at(name).value("description", ""));
    }
    s += "\nCheckpoints (kvroof layers)\n";
    for (const auto& name : io::preset_names("checkpoints")) {
        const Checkpoint c = io::load_checkpoint("--checkpoint", name);
        s += fmt::format("  {:<20} {:>3} layers x {:.4g} GiB{}  — {}\n", name, c.layers, c.layer_bytes.raw() / kGibi,
                         c.is_moe() ? fmt::format(", {} experts top-{}", c.experts, c.experts_active) : std::string(", dense"),
                         io::presets("checkpoints").at(name).value("description", ""));
    }
    std::fwrite(s.data(), 1, s.size(), stdout);
}
}  // namespace

Action setup_presets(CLI::App& app) {
    auto as_json = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand(
        "presets", "list every hardware, host, link, network, deployment, model and workload preset with its source");
    sub->add_flag("--json", *as_json, "print the presets as JSON");
    return [as_json] { run_presets(*as_json); };
}

}  // namespace kvroof::cli
