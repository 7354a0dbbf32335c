// SPDX-License-Identifier: MIT
#pragma once
// Private to src/render/: `kvroof sim`'s sentences about its run — why the
// simulation and the closed form differ, and the SLOs either misses.

#include <string>

#include "kvroof/analysis/sim.hpp"

namespace kvroof::io {

// Why the simulation and the closed form differ, in words (the gap's mechanism; "" for none).
[[nodiscard]] std::string mechanism_text(const SimResult& r);

// One line per SLO the scenario sets that the simulation or the closed form misses (none where both meet it).
[[nodiscard]] std::string slo_lines(const SimResult& x, const PolicySpec& pol);

}  // namespace kvroof::io
