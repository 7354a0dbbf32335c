// SPDX-License-Identifier: MIT
#include "report_deployments.hpp"

#include <fmt/format.h>

#include "kvroof/io/parallel_render.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/sweep.hpp"

namespace kvroof::io {

DeploymentPages deployment_pages(const nlohmann::json& cfg) {
    const nlohmann::json& d = cfg.at("deployments");
    DeploymentPages p;
    p.csv = parallel_csv_header();
    p.markdown = fmt::format(
        "# Recommended deployments\n\n{}.\n\nEach table ranks the deployments of one scenario by output tokens/s per GPU at "
        "its best load within the SLOs (`kvroof parallel`, docs/model.md \"Deployments\"); the frontier lists the points no "
        "other beats on both tokens/s per user and tokens/s per GPU. Every point is in `parallelism_sweep.csv`.\n",
        d.at("description").get<std::string>());
    for (const auto& s : d.at("scenarios")) {
        const std::string name = s.at("name").get<std::string>();
        ScenarioInputs in;
        std::string flags;
        for (const auto& [k, v] : s.at("flags").items()) {
            set_scenario_flag(in, k, v.get<std::string>(), "configs/report.json deployments." + name);
            flags += fmt::format(
                " --{} {}", k,
                v.get<std::string>().find(',') == std::string::npos ? v.get<std::string>() : "\"" + v.get<std::string>() + "\"");
        }
        const BuiltScenario built = build_scenario(in);
        const ParallelReport r = parallel_report(built.scenario, LoadSpec{});
        const std::string v = parallel_verdict_line(r.study);
        p.markdown += fmt::format("\n## {}\n\n{}. `kvroof parallel{}`\n\n**{}**\n\n### Ranked by tokens/s per GPU\n\n", name,
                                  s.at("description").get<std::string>(), flags, v.substr(0, v.size() - 1));
        p.markdown += parallel_ranking_markdown(r.study) + "\n### Pareto frontier\n\n" + parallel_frontier_markdown(r.study) +
                      fmt::format("\n![frontier](pareto_{}.svg)\n", name);
        p.csv += parallel_csv_rows(r.study, name);
        p.plots.emplace_back("pareto_" + name + ".svg", parallel_plot(r.study, s.at("description").get<std::string>()));
    }
    return p;
}

}  // namespace kvroof::io
