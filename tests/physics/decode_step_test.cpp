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
