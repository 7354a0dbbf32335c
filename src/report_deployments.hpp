// SPDX-License-Identifier: MIT
#pragma once
// The deployment pages of `kvroof report` (configs/report.json "deployments"):
// recommended_configs.md, parallelism_sweep.csv and one Pareto plot per
// scenario. Private to src/report*.cpp.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kvroof/io/plot.hpp"

namespace kvroof::io {

struct DeploymentPages {
    std::string markdown;  // recommended_configs.md
    std::string csv;  // parallelism_sweep.csv
    std::vector<std::pair<std::string, PlotSpec>> plots;  // pareto_<name>.svg
};

[[nodiscard]] DeploymentPages deployment_pages(const nlohmann::json& cfg);

}  // namespace kvroof::io
