// SPDX-License-Identifier: MIT
#include "kvroof/physics/monotone_root.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace kvroof;

TEST_CASE("last_feasible finds the right end of a feasible interval in few steps", "[root]") {
    int calls = 0;
    // Smooth and convex: g(x) = x² − 2, root √2.
    auto g = [&](double x) {
        ++calls;
        return x * x - 2.0;
    };
    const double r = detail::last_feasible(g, 0.0, -2.0, 4.0, 14.0, 1e-12);
    CHECK(r == Approx(std::sqrt(2.0)).epsilon(1e-12));
    CHECK(g(r) <= 0);  // the answer is feasible
    CHECK(calls <= 20);
    // Piecewise linear with a kink: exact within a few steps.
    calls = 0;
    auto kink = [&](double x) {
        ++calls;
        return x < 3.0 ? 0.1 * (x - 3.0) - 1.0 : 5.0 * (x - 3.0) - 1.0;
    };
    const double k = detail::last_feasible(kink, 0.0, kink(0.0), 10.0, kink(10.0), 1e-12);
    CHECK(k == Approx(3.2).epsilon(1e-12));
    CHECK(calls <= 20);
    // Flat at zero up to the root: the largest feasible point, not the first zero.
    auto flat = [](double x) { return x <= 1.0 ? 0.0 : x - 1.0; };
    CHECK(detail::last_feasible(flat, 0.0, 0.0, 2.0, 1.0, 1e-12) == Approx(1.0).epsilon(1e-9));
}
