// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "kvroof/error.hpp"
#include "kvroof/io/sweep.hpp"

using namespace kvroof;
using namespace kvroof::io;

namespace {
void validate(std::initializer_list<const char*> grid, int threads = 1) {
    SweepSpec s;
    for (const char* g : grid) s.axes.push_back(parse_grid_entry(g));
    s.threads = threads;
    validate_sweep(s);
}
}  // namespace

TEST_CASE("sweep validation catches every bad value and every bad pair before output", "[files][sweep]") {
    CHECK_THROWS_WITH(parse_grid_entry("gpus=1:3:0.5"), Catch::Contains("gpus takes whole numbers"));
    CHECK_THROWS_WITH(parse_grid_entry("gpus=1,1.5"), Catch::Contains("got '1.5'"));
    CHECK_NOTHROW(parse_grid_entry("gpus=1:8:1"));
    for (int threads : {1, 3}) {
        // Neither value alone is bad; the pair (hbm-cap 10 GB, hbm-reserve 50 GB) is.
        CHECK_THROWS_WITH(validate({"hbm-cap=200,10", "hbm-reserve=2,50", "f=0:1:0.0001"}, threads),
                          Catch::Contains("--grid hbm-cap=10, hbm-reserve=50: --hbm-reserve: must be < hbm-cap"));
        // The first failure in order, whatever the thread count.
        CHECK_THROWS_WITH(validate({"hardware=gb200,h100-sxm", "hbm-reserve=0:150:0.01"}, threads),
                          Catch::Contains("--grid hardware=h100-sxm, hbm-reserve=80: --hbm-reserve: must be < hbm-cap"));
    }
    CHECK_NOTHROW(validate({"hbm-cap=200,100", "hbm-reserve=2,50", "f=0:1:0.5"}));
    SweepSpec fixed_bad;
    fixed_bad.fixed.eta_mem = "0";
    fixed_bad.axes.push_back(parse_grid_entry("sparse=0.5,1"));
    CHECK_THROWS_WITH(validate_sweep(fixed_bad), Catch::StartsWith("--eta-mem"));
}
