// SPDX-License-Identifier: MIT
// `kvroof prefill`: does reloading cached KV over the link beat the GPU? (the κ_crit paper's question)
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {

namespace {

// The footer: verdict's default scenario and the paper's (configs/prefill_kappa.json, "single").
std::string prefill_footer(const HardwareSpec& def_hw, const nlohmann::json& single) {
    const std::string hw(knob("hardware").fallback), model(knob("model").fallback), workload(knob("workload").fallback);
    const std::string s_hw = single.at("hardware").get<std::string>(), s_link = single.at("link").get<std::string>();
    const int s_gpus = single.value("gpus", 1);
    return fmt::format(
        "With no flag it answers for verdict's default scenario: {} with the {} workload on {} x {} over the GPU's own link "
        "({}, {} per GPU), the same scenario as plain `kvroof verdict`.\n"
        "--table seed answers instead for the scenario of \"Understanding Bottlenecks for Efficiently Serving LLM Inference "
        "With KV Offloading\" ({} x {} over {}) and first prints that paper's κ_crit table of models by hardware and link "
        "(what `kvroof report` writes to prefill_kappa.md); other flags override its scenario.\n"
        "Examples:\n"
        "  kvroof prefill\n"
        "  kvroof prefill --table seed\n"
        "  kvroof prefill --model qwen3-235b-a22b --hardware gb200 --link nvlink-c2c   # one direction: a reload is one-way\n"
        "  kvroof prefill --model llama-3.1-405b --hardware h100-sxm --c2c-bw 64GB/s --prefill-flops 2000TFLOPS\n"
        "  kvroof prefill --workload \"s_cached=57000,a_append=12,o_output=1\" --vram 92GB --json\n"
        "The scenario flags (--hardware ... --hbm-reserve) are the knob table's, as verdict's: the same names, bare units "
        "and bounds.",
        model, workload, def_hw.deployment.gpus, hw, def_hw.link.name, io::format_bandwidth(def_hw.link.bandwidth.raw()), s_gpus,
        s_hw, s_link);
}

}  // namespace

Action setup_prefill(CLI::App& app) {
    auto in = std::make_shared<io::PrefillInputs>();
    auto out = std::make_shared<OutputOptions>();
    CLI::App* sub =
        app.add_subcommand("prefill", "κ_crit: when the link, not the GPU, sets the prefill time of cached-KV reloads");
    // Two default scenarios, both read from where they live: verdict's (the knob table's
    // fallbacks and the hardware preset) and the paper's (configs/prefill_kappa.json, "single").
    const HardwareSpec def_hw = io::load_hardware("--hardware", std::string(knob("hardware").fallback));
    const auto& single = io::embedded_config("prefill_kappa").at("single");
    const std::string s_hw = single.at("hardware").get<std::string>(), s_link = single.at("link").get<std::string>();
    const int s_gpus = single.value("gpus", 1);
    sub->footer(prefill_footer(def_hw, single));
    // The scenario knobs, as verdict's; the seed's value where it sets one.
    const auto seeded = [&](std::string_view name) -> std::string {
        if (name == "link")
            return fmt::format("--table seed: {}, {}", s_link, io::format_bandwidth(io::load_link("--link", s_link).raw()));
        if (name == "gpus") return fmt::format("--table seed: {}", s_gpus);
        for (const char* key : {"hardware", "model", "workload"})
            if (name == key) return fmt::format("--table seed: {}", single.at(key).get<std::string>());
        return {};
    };
    for (std::string_view name : io::prefill_knobs()) add_knob_option(*sub, in, name, seeded(name));
    add_renamed_flag(*sub, "--link-bw", "c2c-bw", "GB/s per GPU, as before");
    auto add = [&](const char* flag, std::optional<std::string> io::PrefillInputs::*field, std::string_view help,
                   std::string_view absent) { add_recorded_option(*sub, in, flag, field, help, absent); };
    add("--prefill-flops", &io::PrefillInputs::prefill_flops, "effective prefill FLOP/s per GPU, C_eff [TFLOPS]",
        "--eta-compute x the dense peak in --compute-dtype");
    add("--compute-dtype", &io::PrefillInputs::compute_dtype,
        "GEMM precision of the prefill: bf16, fp8, int8, fp4; mxfp4 runs at the FP4 peak, int4 (no preset GPU has INT4 math) or "
        "a math the GPU lacks at the BF16 peak",
        "verdict's, following the weights; --table seed: fp8; bf16 on a GPU without that math");
    add("--ov", &io::PrefillInputs::ov, "overlap of reload and compute in [0, 1] for the overlapped TTFT", "0");
    add("--vram", &io::PrefillInputs::vram, "VRAM for KV, V_eff [GB]", "HBM minus reserve minus weights");
    // The scheduler's per-step token budget has one name in every subcommand; prefill's default is seed 001's.
    add("--prefill-chunk", &io::PrefillInputs::token_budget,
        "the scheduler's token budget per step (prefill tokens per iteration; seed 001's 4096 here, verdict's 2048)",
        fmt::format("{:g}", PrefillSetup{}.token_budget));
    sub->add_option_function<std::string>(
           "--token-budget",
           [](const std::string&) {
               throw InputError(
                   "--token-budget: now --prefill-chunk, the scheduler's token budget per step under one name in "
                   "every subcommand");
           })
        ->group("");
    const auto table = add_table_switch(*sub, in,
                                        "seed: the κ_crit paper's scenario and its κ_crit table instead of verdict's "
                                        "default scenario, e.g. --table seed");
    add_output_flags(*sub, *out);
    return [in, table, out] {
        io::PrefillInputs run = *in;
        if (*table) run.seed = io::parse_table_switch("--table", **table);
        const PrefillSetup setup = io::resolve_prefill(run);
        const PrefillStudy st = prefill_study(setup, io::prefill_questions(run.seed));
        emit_lazy(
            *out, [&] { return io::prefill_text(st); }, [&] { return io::prefill_json(st, run.given).dump(2) + "\n"; },
            [&] { return io::prefill_markdown(st, run.given); });
    };
}

}  // namespace kvroof::cli
