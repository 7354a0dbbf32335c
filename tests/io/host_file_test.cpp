// SPDX-License-Identifier: MIT
// --host: a host preset or a host file (what `kvroof probe --cpu --out FILE`
// writes) replaces every figure of the hardware preset's host.
#include <catch2/catch.hpp>
#include <string>

#include "../test_support.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/probe.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "probe_support.hpp"

using namespace kvroof;

namespace {
Scenario with_host(const std::string& hardware, const std::string& host) {
    io::ScenarioInputs in;
    in.set("hardware", hardware);
    if (!host.empty()) in.set("host", host);
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("a kvroof probe host file round-trips: gb200's half Grace becomes half the probed host", "[presets][host]") {
    // 24 GB/s of triad; 4·64·1000·128 FLOP of attention in 1 ms = 32.768 GFLOP/s
    const io::ProbeResult r = test::probe_box(1000, 0.001);
    const std::string path = test::temp_json_file("probe_host", io::probe_host_preset(r).dump(2) + "\n");

    const Scenario sc = with_host("gb200", path);
    CHECK(sc.hardware.host.name == "probe-box");
    // Measured figures are achieved rates: the probe writes both efficiencies as 1.
    const SystemRates sys = system_rates(sc.hardware);
    CHECK(sys.cpu_dram_bandwidth.raw() == Approx(0.5 * 24e9).epsilon(1e-12));  // gb200: 0.5 CPU per GPU
    CHECK(sys.cpu_flops.raw() == Approx(0.5 * 32.77e9).epsilon(1e-12));  // written to 4 significant digits
    CHECK(sys.cpu_memory.raw() == Approx(0.5 * 64e9).epsilon(1e-12));
    // Everything else is gb200's.
    const Scenario gb = with_host("gb200", "");
    CHECK(sc.hardware.gpu.hbm_bandwidth.raw() == gb.hardware.gpu.hbm_bandwidth.raw());
    CHECK(sc.hardware.link.bandwidth.raw() == gb.hardware.link.bandwidth.raw());
}

TEST_CASE("a host after the hardware replaces every host figure, absent keys as defaults, not the old host's",
          "[presets][host]") {
    // rtx-4090's host is desktop-ddr5 (no eta_dram: the default 0.5); gb200's is grace (eta_dram 0.85).
    const HardwareSpec want = with_host("rtx-4090", "").hardware;
    const HardwareSpec got = with_host("gb200", "desktop-ddr5").hardware;
    CHECK(got.host.name == "desktop-ddr5");
    CHECK(got.host.flops.raw() == want.host.flops.raw());
    CHECK(got.host.dram_bandwidth.raw() == want.host.dram_bandwidth.raw());
    CHECK(got.host.memory.raw() == want.host.memory.raw());
    CHECK(got.host.eta_dram == 0.5);
    CHECK(got.host.eta_compute == want.host.eta_compute);
    // The hardware preset's own host changes nothing.
    const HardwareSpec same = with_host("gb200", "grace").hardware;
    const HardwareSpec gb = with_host("gb200", "").hardware;
    CHECK(same.host.dram_bandwidth.raw() == gb.host.dram_bandwidth.raw());
    CHECK(same.host.eta_dram == gb.host.eta_dram);
    CHECK(same.host.name == gb.host.name);
}

TEST_CASE("a host file is validated like a preset, each error naming the flag and the file", "[presets][host]") {
    CHECK_THROWS_WITH(with_host("gb200", "gracee"),
                      Catch::Contains("--host: unknown hosts preset 'gracee'; did you mean 'grace'?"));
    const std::string typo =
        test::temp_json_file("host_typo", R"({"cpu_flops_TFLOPS": 1, "cpu_dram_bw_GBps": 100, "cpu_memory_GB": 64})");
    CHECK_THROWS_WITH(with_host("gb200", typo), Catch::Contains("missing required key 'cpu_dram_bandwidth_GBps'"));
    const std::string far = test::temp_json_file(
        "host_range", R"({"h": {"cpu_flops_TFLOPS": 1, "cpu_dram_bandwidth_GBps": 100, "cpu_memory_GB": 64, "eta_dram": 2}})");
    CHECK_THROWS_WITH(with_host("gb200", far), Catch::Contains("'eta_dram' must be in [0.001, 1], got 2"));
    CHECK_THROWS_WITH(with_host("gb200", "missing/host.json"), Catch::Contains("--host: cannot open file 'missing/host.json'"));
}
