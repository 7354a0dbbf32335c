// SPDX-License-Identifier: MIT
#pragma once
// The simulator page of `kvroof report` (configs/report.json
// "sim_vs_closed_form"): outputs/sim_vs_closed_form.md. Private to
// src/report*.cpp.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvroof/io/sim_render.hpp"

namespace kvroof::io {

// Every scenario of the section, built and swept.
[[nodiscard]] std::vector<SimSweepPage> sim_sweep_pages(const nlohmann::json& cfg);

}  // namespace kvroof::io
