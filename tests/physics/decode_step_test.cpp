// SPDX-License-Identifier: MIT
#include "kvroof/physics/decode_step.hpp"

#include <catch2/catch.hpp>

using namespace kvroof;

TEST_CASE("combine is the sum at ov=0 and the max at ov=1", "[combine]") {
    CHECK(combine(Seconds(3), Seconds(2), 0.0).raw() == 5);
    CHECK(combine(Seconds(3), Seconds(2), 1.0).raw() == 3);
    CHECK(combine(Seconds(3), Seconds(2), 0.5).raw() == 4);
}

TEST_CASE("the SLO batch makes the step time equal the SLO on every piece", "[decode_step]") {
    for (double ov : {0.0, 0.3, 1.0}) {
        for (double k : {0.0, 1e-4, 5e-3}) {
            StepShape sh{0.035, 2e-4, 1e-3, k, ov};
            for (double slo : {0.04, 0.05, 0.2, 1.0}) {
                const double b = batch_for_step_time(sh, slo);
                INFO("ov=" << ov << " k=" << k << " slo=" << slo);
                CHECK(sh.step(b) == Approx(slo).epsilon(1e-12));
            }
        }
    }
}

TEST_CASE("an SLO below the weight read admits no batch", "[decode_step]") {
    StepShape sh{0.035, 2e-4, 1e-3, 0.0, 0.0};
    CHECK(batch_for_step_time(sh, 0.03) == 0.0);
}

TEST_CASE("the capacity batch fills the memory exactly", "[capacity]") {
    for (double ov : {0.0, 1.0}) {
        StepShape sh{0.035, 2e-4, 1e-3, 4e-3, ov};
        const double cap = 4.3e10, m1 = 2.2e10, m2 = 2.2e10 * 11.0 / 520.0;
        const double b = batch_for_capacity(sh, cap, m1, m2);
        CHECK(m1 * b + m2 * b / sh.step(b) == Approx(cap).epsilon(1e-12));
    }
}

TEST_CASE("without residency beyond decode, capacity batch is capacity / bytes per sequence", "[capacity]") {
    StepShape sh{0.035, 2e-4, 1e-3, 0.0, 0.0};
    CHECK(batch_for_capacity(sh, 100.0, 4.0, 0.0) == Approx(25.0));
    CHECK(batch_for_capacity(sh, 100.0, 0.0, 0.0) == kUnbounded);
}

namespace {
// Largest B with h(B) <= target for h non-decreasing: plain bisection, the reference.
template <class H>
double bisect_last(H h, double target) {
    double lo = 0, hi = 1;
    while (h(hi) <= target) {
        lo = hi;
        hi *= 2;
    }
    for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (lo + hi);
        (h(mid) <= target ? lo : hi) = mid;
    }
    return lo;
}
}  // namespace

TEST_CASE("a per-step offload latency k0: the step and its breakpoints by hand", "[decode_step]") {
    // Lines gc·B = 3e-3·B, w + gm·B = 0.035 + 1e-3·B, k0 + k·B = 0.02 + 2e-3·B cross
    // at 0.035/2e-3 = 17.5, 0.02/1e-3 = 20 and 0.015/1e-3 = 15.
    const StepShape sh{0.035, 3e-3, 1e-3, 2e-3, 1.0, 0.02};
    const auto bp = sh.breakpoints();
    CHECK(bp[0] == Approx(15.0).epsilon(1e-15));
    CHECK(bp[1] == Approx(17.5).epsilon(1e-15));
    CHECK(bp[2] == Approx(20.0).epsilon(1e-15));
    // ov = 1, step = max of the three: memory up to 15, offload to 20, compute beyond
    // (the crossing at 17.5 lies under the offload line).
    CHECK(sh.step(0.0) == Approx(0.035));
    CHECK(sh.step(10.0) == Approx(0.045));
    CHECK(sh.step(18.0) == Approx(0.056));
    CHECK(sh.step(30.0) == Approx(0.090));
    CHECK(batch_for_step_time(sh, 0.040) == Approx(5.0).epsilon(1e-12));
    CHECK(batch_for_step_time(sh, 0.052) == Approx(16.0).epsilon(1e-12));
    CHECK(batch_for_step_time(sh, 0.075) == Approx(25.0).epsilon(1e-12));
    // ov = 0, step = max(gc·B, w + gm·B) + k0 + k·B: 0.055 + 3e-3·B up to 17.5, then 0.02 + 5e-3·B.
    StepShape serial = sh;
    serial.ov = 0.0;
    CHECK(serial.step(0.0) == Approx(0.055));
    CHECK(batch_for_step_time(serial, 0.100) == Approx(15.0).epsilon(1e-12));
    CHECK(batch_for_step_time(serial, 0.200) == Approx(36.0).epsilon(1e-12));
    CHECK(batch_for_step_time(serial, 0.050) == 0.0);  // the empty step, w + k0, already exceeds it
}

TEST_CASE("with k0 > 0 both solvers agree with a brute-force bisection", "[decode_step][capacity]") {
    for (double ov : {0.0, 0.4, 1.0}) {
        for (double k0 : {0.0, 0.005, 0.02, 0.2}) {
            for (double gc : {2e-4, 3e-3}) {
                const StepShape sh{0.035, gc, 1e-3, 2e-3, ov, k0};
                auto step = [&](double b) { return sh.step(b); };
                INFO("ov=" << ov << " k0=" << k0 << " gc=" << gc);
                for (double slo : {0.06, 0.1, 0.3, 2.0}) {
                    if (sh.step(0.0) >= slo) continue;
                    CHECK(batch_for_step_time(sh, slo) == Approx(bisect_last(step, slo)).epsilon(1e-12));
                }
                const double m1 = 2.2e10, m2 = 2.2e10 * 11.0 / 520.0;
                auto footprint = [&](double b) { return b <= 0 ? 0.0 : m1 * b + m2 * b / sh.step(b); };
                for (double cap : {4.3e10, 4.3e11, 4.3e12}) {
                    const double b = batch_for_capacity(sh, cap, m1, m2);
                    CHECK(b == Approx(bisect_last(footprint, cap)).epsilon(1e-12));
                    CHECK(footprint(b) == Approx(cap).epsilon(1e-12));
                }
            }
        }
    }
}
