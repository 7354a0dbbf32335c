// SPDX-License-Identifier: MIT
#pragma once
// The two primitives every time in the model is built from.

#include <algorithm>

#include "kvroof/units.hpp"

namespace kvroof {

// Two activities that may overlap: ov = 0 runs them back to back (a + b),
// ov = 1 hides the shorter one completely (max(a, b)); in between linearly.
// Seed 000, "How a result reads".
[[nodiscard]] constexpr Seconds combine(Seconds a, Seconds b, double ov) noexcept {
    return a + b - ov * min(a, b);
}

// Roofline: an operation takes as long as its binding resource.
[[nodiscard]] constexpr Seconds roofline(Flop work, FlopPerSecond peak, Bytes traffic, BytesPerSecond bandwidth) noexcept {
    return max(time_for(work, peak), time_for(traffic, bandwidth));
}

}  // namespace kvroof
