// SPDX-License-Identifier: MIT
// `kvroof layers`: the ceiling of layer-granularity weight offload ("CPU offload and prefetch: the measured ceiling").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "commands.hpp"
#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {

namespace {

// The footer: verdict's default scenario (the knob table's fallbacks and the hardware
// preset) and the paper's table (configs/layers_budget.json), both read from where they live.
std::string layers_footer(const HardwareSpec& def_hw) {
    const auto& cfg = io::embedded_config("layers_budget");
    return fmt::format(
        "With no flag it answers for verdict's default scenario: {} with {} weights (a checkpoint built from the model preset at "
        "verdict's weight bytes: its transformer layers, and the embeddings and head kept on every card, split over the TP "
        "ranks) on {} x {} over the GPU's own link ({}, {} per GPU), the "
        "budget the card's HBM, the compute per offloaded layer the decode roofline: what a rank's token reads of the layer "
        "(1/TP of a dense one; an MoE layer's shared part and routed experts) from HBM at eta-mem.\n"
        "--table seed answers instead for the Result 5 budget table of \"CPU offload and prefetch: the measured ceiling\" "
        "({} checkpoints x TP {} on a {} over {}, {} ms per layer), what `kvroof report` writes to layers_budget.md; other "
        "flags override it.\n"
        "Examples:\n"
        "  kvroof layers\n"
        "  kvroof layers --hbm-cap 100GB\n"
        "  kvroof layers --table seed\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --compute-ms 3.58 --table seed\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --target-tps 5 --table seed\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --offload-layers 64 --table seed\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --prefill-compute-ms 15.25 --rows 512 --table seed\n"
        "  kvroof layers --checkpoint glm-5.2-q4 --tp 1 --copy-ms 540.48 --compute-ms 1.18 --table seed   # max hideable\n"
        "  kvroof layers --model qwen3-30b-a3b --weight-bits 4.5 --hbm-cap 16GiB --link pcie-gen4-measured\n"
        "The scenario flags (--hardware ... --eta-mem) are the knob table's, as verdict's: the same names, bare units and "
        "bounds; --hbm-cap is the budget for resident layers.",
        knob("model").fallback, to_string(PolicySpec{}.weight_dtype), def_hw.deployment.gpus, def_hw.name, def_hw.link.name,
        io::format_bandwidth(def_hw.link.bandwidth.raw()), cfg.at("checkpoints").size(),
        fmt::join(cfg.at("tp").get<std::vector<int>>(), ","), cfg.at("hardware").get<std::string>(),
        cfg.at("link").get<std::string>(), cfg.at("compute_ms_per_layer").get<double>());
}

}  // namespace

Action setup_layers(CLI::App& app) {
    auto in = std::make_shared<io::LayersInputs>();
    auto out = std::make_shared<OutputOptions>();
    CLI::App* sub =
        app.add_subcommand("layers", "layer-offload ceiling: resident vs offloaded layers, transfer per token, tok/s bounds");
    const HardwareSpec def_hw = io::load_hardware("--hardware", std::string(knob("hardware").fallback));
    const auto& seed = io::embedded_config("layers_budget");  // --table seed's scenario
    sub->footer(layers_footer(def_hw));
    sub->add_option_function<std::vector<std::string>>(
           "--checkpoint",
           [in](const std::vector<std::string>& v) {
               for (const auto& c : v) {
                   in->checkpoints.push_back(c);
                   in->given.emplace_back("--checkpoint", c);
               }
           },
           with_default("checkpoint preset or JSON file (repeatable)",
                        fmt::format("one built from --model; --table seed: the paper's {}", seed.at("checkpoints").size())))
        ->type_name("NAME");
    const std::string s_link = seed.at("link").get<std::string>();
    // The scenario knobs, as verdict's; the seed's value where it sets one.
    const auto seeded = [&](std::string_view name) -> std::string {
        if (name == "hardware") return fmt::format("--table seed: {}", seed.at("hardware").get<std::string>());
        if (name == "link")
            return fmt::format("--table seed: {}, {}", s_link, io::format_bandwidth(io::load_link("--link", s_link).raw()));
        return {};
    };
    for (std::string_view name : io::layers_knobs()) add_knob_option(*sub, in, name, seeded(name));
    add_renamed_flag(*sub, "--link-bw", "c2c-bw", "GB/s per card, as before");
    add_renamed_flag(*sub, "--budget", "hbm-cap", "a bare number is now GB, as everywhere; write 100GiB for binary units");
    auto add = [&](const char* flag, std::optional<std::string> io::LayersInputs::*field, std::string_view help,
                   std::string_view absent) { add_recorded_option(*sub, in, flag, field, help, absent); };
    add("--weight-bits", &io::LayersInputs::weight_bits,
        "bits per weight of the --model checkpoint, e.g. 4.25 (instead of --weight-dtype)", "--weight-dtype's");
    add("--tp", &io::LayersInputs::tp, "tensor-parallel degrees, e.g. 1,2,4 (each as verdict's --tp)",
        fmt::format("the hardware preset's GPUs ({}: {}); --table seed: {}", def_hw.name, def_hw.deployment.gpus,
                    fmt::join(seed.at("tp").get<std::vector<int>>(), ",")));
    add("--compute-ms", &io::LayersInputs::compute_ms, "compute per offloaded layer per decode token [ms]",
        fmt::format("the decode roofline: what a token reads of a rank's shard of the layer (MoE: its routed experts), from "
                    "HBM at eta-mem, per checkpoint and TP; --table seed: {:g}",
                    seed.at("compute_ms_per_layer").get<double>()));
    add("--copy-ms", &io::LayersInputs::copy_ms,
        "measured copy time of one whole layer over a card's link [ms], instead of layer bytes / link (at TP N a rank copies its "
        "1/N share in 1/N of it)",
        "layer bytes / link");
    add("--offload-layers", &io::LayersInputs::offload_layers, "force this many offloaded layers", "the budget's choice");
    add("--target-tps", &io::LayersInputs::target_tps, "check a decode target [tok/s]: how many layers it lets move",
        "none: no check");
    add("--prefill-compute-ms", &io::LayersInputs::prefill_compute_ms,
        "compute per layer per prefill chunk [ms]: adds the prefill case", "none: decode only");
    add("--rows", &io::LayersInputs::rows, "rows (tokens) per prefill chunk", fmt::format("{}", LayersSetup{}.rows));
    const auto table = add_table_switch(
        *sub, in,
        "seed: the measured ceiling's budget table (its checkpoints, TP degrees, card, link and compute time) instead "
        "of verdict's default scenario, e.g. --table seed");
    add_output_flags(*sub, *out);
    return [in, table, out] {
        io::LayersInputs run = *in;
        if (*table) run.seed = io::parse_table_switch("--table", **table);
        const LayersStudy st = io::run_layers_study(io::resolve_layers(run));
        emit_lazy(
            *out, [&] { return io::layers_text(st); }, [&] { return io::layers_json(st, run.given).dump(2) + "\n"; },
            [&] { return io::layers_markdown(st, run.given); });
    };
}

}  // namespace kvroof::cli
