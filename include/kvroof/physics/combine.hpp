// SPDX-License-Identifier: MIT
#pragma once
// The primitive every overlapped time in the model is built from (a roofline
// is std::max of a FLOP time and a byte time, written where it is used).

#include <algorithm>

#include "kvroof/units.hpp"

namespace kvroof {

// Two activities that may overlap: ov = 0 runs them back to back (a + b),
// ov = 1 hides the shorter one completely (max(a, b)); in between linearly.
// Seed 000, "How a result reads".
[[nodiscard]] constexpr Seconds combine(Seconds a, Seconds b, double ov) noexcept { return a + b - ov * min(a, b); }

}  // namespace kvroof
