// SPDX-License-Identifier: MIT
#include "kvroof/analysis/resource.hpp"

#include <catch2/catch.hpp>

using namespace kvroof;

TEST_CASE("PerResource is indexed by the resource and reduces over the rate resources", "[resource]") {
    PerResource<double> v;
    CHECK(v.sum() == 0);
    v[Resource::gpu_hbm] = 2.0;
    v[Resource::link] = 3.0;
    v[Resource::cpu_dram] = 3.0;
    v[Resource::hbm_capacity] = 100.0;  // not a rate resource: outside every default reduction
    CHECK(v.sum() == 8.0);
    CHECK(v.max() == 3.0);
    CHECK(v.argmax() == Resource::cpu_dram);  // the first of equals, in kRateResources order
    CHECK(v.argmax(kOffloadResources) == Resource::cpu_dram);
    CHECK(v.sum(kOffloadResources) == 6.0);
    const std::array<Resource, 2> gpu = {Resource::gpu_compute, Resource::gpu_hbm};
    CHECK(v.argmax(gpu) == Resource::gpu_hbm);
    PerResource<double> w;
    w[Resource::gpu_compute] = 5.0;
    v += w;
    CHECK(v.argmax() == Resource::gpu_compute);
    CHECK(v[Resource::hbm_capacity] == 100.0);
}
