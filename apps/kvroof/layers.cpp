// SPDX-License-Identifier: MIT
// `kvroof layers`: the ceiling of layer-granularity weight offload (seed 002).
#include <memory>

#include "commands.hpp"
#include "kvroof/io/offload_reports.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {

Action setup_layers(CLI::App& app) {
    auto in = std::make_shared<io::LayersInputs>();
    auto out = std::make_shared<OutputOptions>();
    CLI::App* sub =
        app.add_subcommand("layers", "layer-offload ceiling: resident vs offloaded layers, transfer per token, tok/s bounds");
    sub->footer(
        "With no flags it prints the Result 5 budget table of \"CPU offload and prefetch: the measured ceiling\" (four "
        "checkpoints x TP 1, 2, 4 on a 22 GiB RTX 2080 Ti).\n"
        "Examples:\n"
        "  kvroof layers\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --compute-ms 3.58\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --target-tps 5\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --offload-layers 64\n"
        "  kvroof layers --checkpoint llama-70b-fp4 --tp 1 --prefill-compute-ms 15.25 --rows 512\n"
        "  kvroof layers --checkpoint glm-5.2-q4 --tp 1 --copy-ms 540.48 --compute-ms 1.18   # max hideable\n"
        "  kvroof layers --model qwen3-30b-a3b --weight-bits 4.5 --budget 16GiB --link pcie-gen4-measured");
    sub->add_option_function<std::vector<std::string>>(
           "--checkpoint",
           [in](const std::vector<std::string>& v) {
               for (const auto& c : v) {
                   in->checkpoints.push_back(c);
                   in->given.emplace_back("--checkpoint", c);
               }
           },
           "checkpoint preset or JSON file (repeatable) [default: the seed's four]")
        ->type_name("NAME");
    auto add = [&](const char* flag, std::optional<std::string> io::LayersInputs::*field, const char* help) {
        add_recorded_option(*sub, in, flag, field, help);
    };
    add("--model", &io::LayersInputs::model, "build a checkpoint from a model preset / HF config (needs --weight-bits)");
    add("--weight-bits", &io::LayersInputs::weight_bits, "bits per weight of that checkpoint, e.g. 4.25");
    add("--tp", &io::LayersInputs::tp, "tensor-parallel degrees, e.g. 1,2,4 [default: 1,2,4]");
    add("--hardware", &io::LayersInputs::hardware, "card preset [default: rtx-2080ti-22g]");
    add("--budget", &io::LayersInputs::budget, "weight budget per card [GiB] [default: the card's memory]");
    add("--link", &io::LayersInputs::link, "host->device link preset [default: pcie-gen3-seed002, 10.5272 GiB/s]");
    add("--link-bw", &io::LayersInputs::link_bw,
        "host->device bandwidth per card [GB/s] (as everywhere; write 10.5GiB/s for binary units), instead of --link");
    add("--compute-ms", &io::LayersInputs::compute_ms, "compute per offloaded layer per decode token [ms] [default: 1.18]");
    add("--copy-ms", &io::LayersInputs::copy_ms, "measured copy time per layer [ms], instead of layer bytes / link");
    add("--offload-layers", &io::LayersInputs::offload_layers, "force this many offloaded layers instead of the budget's choice");
    add("--target-tps", &io::LayersInputs::target_tps, "check a decode target: how many layers it lets move");
    add("--prefill-compute-ms", &io::LayersInputs::prefill_compute_ms,
        "compute per layer per prefill chunk [ms]: adds the prefill case");
    add("--rows", &io::LayersInputs::rows, "rows (tokens) per prefill chunk [default: 512]");
    add_output_flags(*sub, *out);
    return [in, out] {
        const LayersStudy st = io::run_layers_study(io::resolve_layers(*in));
        emit_lazy(
            *out, [&] { return io::layers_text(st); }, [&] { return io::layers_json(st, in->given).dump(2) + "\n"; },
            [&] { return io::layers_markdown(st, in->given); });
    };
}

}  // namespace kvroof::cli
