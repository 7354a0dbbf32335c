// SPDX-License-Identifier: MIT
#pragma once
// The trace page of `kvroof report` (configs/report.json "trace_classes"):
// outputs/trace_classes.md, the classes of the shipped sample trace and the
// verdict and simulation on their mix. Private to src/report*.cpp.

#include <nlohmann/json.hpp>
#include <string>

namespace kvroof::io {

[[nodiscard]] std::string trace_classes_page(const nlohmann::json& cfg);

}  // namespace kvroof::io
