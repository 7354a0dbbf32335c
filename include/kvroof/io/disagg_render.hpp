// SPDX-License-Identifier: MIT
#pragma once
// Renderers of `kvroof disagg` (analysis/disagg.hpp): text ending with a
// DISAGG line, JSON, markdown. They format a DisaggStudy and compute nothing.

#include <nlohmann/json.hpp>
#include <string>

#include "kvroof/analysis/disagg.hpp"
#include "kvroof/analysis/gpu_disagg.hpp"
#include "kvroof/analysis/scenario_facts.hpp"
#include "kvroof/io/plot.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct DisaggReport {
    DisaggStudy study;
    ScenarioFacts facts;
};

[[nodiscard]] DisaggReport disagg_report(const Scenario& sc);
[[nodiscard]] std::string disagg_line(const DisaggReport& r);
[[nodiscard]] std::string disagg_body_markdown(const DisaggReport& r);
[[nodiscard]] std::string render_disagg_text(const DisaggReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json disagg_json(const DisaggReport& r, const BuiltScenario& built);
[[nodiscard]] std::string render_disagg_markdown(const DisaggReport& r, const BuiltScenario& built);
// Output tok/s against CPU sockets per GPU, with the baseline, the machine's own ratio and the balance point.
[[nodiscard]] PlotSpec disagg_plot(const DisaggStudy& s, const std::string& title, double machine_cpus_per_gpu);

// --arch gpu-pools: prefill and decode instances on separate GPUs, against aggregated serving.
struct GpuDisaggReport {
    GpuDisaggStudy study;
    ScenarioFacts facts;  // of one GPU: the echo of the inputs
};
[[nodiscard]] GpuDisaggReport gpu_disagg_report(const Scenario& sc, const LoadSpec& load);
[[nodiscard]] std::string gpu_disagg_line(const GpuDisaggStudy& s);
[[nodiscard]] std::string render_gpu_disagg_text(const GpuDisaggReport& r, const BuiltScenario& built);
[[nodiscard]] nlohmann::json gpu_disagg_json(const GpuDisaggReport& r, const BuiltScenario& built);
[[nodiscard]] std::string render_gpu_disagg_markdown(const GpuDisaggReport& r, const BuiltScenario& built);
// Tok/s per GPU against the prefill instances of each split, with the aggregated deployment's.
[[nodiscard]] PlotSpec gpu_disagg_plot(const GpuDisaggStudy& s, const std::string& title);

}  // namespace kvroof::io
