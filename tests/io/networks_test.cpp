// SPDX-License-Identifier: MIT
// Network presets (data/networks.json, --net) and deployment presets
// (data/deployments.json, --deployment): what each sets, what overrides it,
// and that the hardware presets naming a network kept their numbers.
#include <catch2/catch.hpp>
#include <string>

#include "kvroof/analysis/optimise_f.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"

using namespace kvroof;

namespace {
Scenario built(std::initializer_list<std::pair<const char*, const char*>> flags) {
    io::ScenarioInputs in;
    for (const auto& [k, v] : flags) in.set(k, v);
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("every network preset says which figure is nominal or measured and where its latency comes from", "[presets][net]") {
    const auto names = io::preset_names("networks");
    CHECK(names.size() == 4);
    for (const auto& n : names) {
        INFO(n);
        std::string sources;
        for (const auto& s : io::presets("networks").at(n).at("source")) sources += s.get<std::string>() + "\n";
        CHECK((sources.find("NOMINAL") != std::string::npos || sources.find("MEASURED") != std::string::npos));
        // α_net is NCCL's cost-model latency of one network step (14 µs), cited with its commit, not ASSUMED.
        CHECK(sources.find("latency_us: NCCL COST MODEL") != std::string::npos);
        CHECK(sources.find("src/graph/tuning.cc") != std::string::npos);
        CHECK(sources.find("ASSUMED") == std::string::npos);
        CHECK(io::presets("networks").at(n).at("net_latency_us").get<double>() == 14);
        CHECK_NOTHROW(io::load_net_preset("--net", n));
    }
}

TEST_CASE("the net knob sets the network figures and net-bw / net-latency given too override them", "[presets][net]") {
    // 800 Gb/s XDR = 100 GB/s per direction; 400 Gb/s NDR = 50 GB/s; DeepEP's measured NDR all-to-all 43 GB/s.
    const Scenario xdr = built({{"net", "ib-xdr"}});
    CHECK(xdr.hardware.net.bandwidth.raw() == 100e9);
    CHECK(xdr.hardware.net.latency.raw() == Approx(14e-6).epsilon(1e-12));  // 14 · 1e-6 from the file: may be one ulp off 14e-6
    CHECK(xdr.hardware.net.name == "ib-xdr");
    CHECK(built({{"net", "ib-ndr-measured"}}).hardware.net.bandwidth.raw() == 43e9);
    const Scenario over = built({{"net", "ib-xdr"}, {"net-bw", "60GB/s"}});
    CHECK(over.hardware.net.bandwidth.raw() == 60e9);
    CHECK(over.hardware.net.latency.raw() == xdr.hardware.net.latency.raw());  // the preset's, not overridden
    CHECK(built({{"net-latency", "4us"}, {"net", "roce-400g"}}).hardware.net.latency.raw() ==
          4e-6);  // flag order does not matter
    // A file of the entry schema works wherever a name does.
    const Scenario file = built({{"net", KVROOF_TEST_FIXTURES "/custom_network.json"}});
    CHECK(file.hardware.net.bandwidth.raw() == 25e9);
    CHECK(file.hardware.net.latency.raw() == 3e-6);
    CHECK(file.hardware.net.name == "my-net");
    CHECK_THROWS_WITH(built({{"net", "ib-hdr"}}),
                      Catch::Contains("--net: unknown networks preset 'ib-hdr'") && Catch::Contains("did you mean 'ib-ndr'?"));
}

TEST_CASE("hardware presets without a network keep the default, which ib-ndr equals, and gb300 names ib-xdr", "[presets][net]") {
    // The default is a 400 Gb/s NIC per GPU (50 GB/s, 14 µs): ib-ndr's figures, so the presets of HGX and
    // GB200 boards keep it bit for bit (naming ib-ndr reads 14 µs as 14 · 1e-6, which may be one ulp away).
    const HardwareSpec defaults;
    for (const char* n : {"h100-sxm", "h200", "b200", "gb200"}) {
        INFO(n);
        const HardwareSpec hw = io::load_hardware("--hardware", n);
        CHECK(hw.net.name.empty());
        CHECK(hw.net.bandwidth.raw() == defaults.net.bandwidth.raw());
        CHECK(hw.net.latency.raw() == defaults.net.latency.raw());
    }
    const Scenario ndr = built({{"net", "ib-ndr"}});
    CHECK(ndr.hardware.net.bandwidth.raw() == defaults.net.bandwidth.raw());
    CHECK(ndr.hardware.net.latency.raw() == Approx(defaults.net.latency.raw()).epsilon(1e-12));
    const HardwareSpec gb300 = io::load_hardware("--hardware", "gb300");
    CHECK(gb300.net.name == "ib-xdr");
    CHECK(gb300.net.bandwidth.raw() == 100e9);
}

TEST_CASE("ib-xdr halves the network-bound all-to-all time of ib-ndr", "[presets][net][ep]") {
    // DeepSeek-V3 at EP 72 over NVLink domains of 8: 64/72 of the all-to-all bytes cross the network,
    // which binds (3.70 µs per sequence at 50 GB/s with λ = 1, expert_parallel_test.cpp; × the default
    // λ 1.115 = 4.12 µs); at 100 GB/s half of it.
    auto ep72 = [](const char* net) {
        return built({{"hardware", "gb200"},
                      {"model", "deepseek-v3"},
                      {"gpus", "72"},
                      {"ep", "72"},
                      {"nvlink-domain", "8"},
                      {"net", net}});
    };
    const Scenario a = ep72("ib-ndr"), b = ep72("ib-xdr");
    const PreparedScenario ndr(a), xdr(b);
    CHECK(ep_comm_per_token(ndr.mc, ndr.sys) ==
          Approx(1.115 * 1.125 * 13'303'808.0 * (64.0 / 72.0) / 50e9 / 72.0).epsilon(1e-12));
    CHECK(ep_comm_per_token(xdr.mc, xdr.sys) == Approx(0.5 * ep_comm_per_token(ndr.mc, ndr.sys)).epsilon(1e-12));
    CHECK(evaluate(xdr, 0.0, 0.0).throughput >= evaluate(ndr, 0.0, 0.0).throughput);
}

TEST_CASE("a deployment sets the hardware preset, GPUs, NVLink domain and network, and explicit flags override",
          "[presets][deploy]") {
    CHECK(io::preset_names("deployments") ==
          std::vector<std::string>{"gb200-nvl72", "gh200x2", "hgx-b200x8", "hgx-h100x8", "hgx-h200x8"});
    const Scenario h100 = built({{"deployment", "hgx-h100x8"}});
    CHECK(h100.hardware.name == "h100-sxm");
    CHECK(h100.hardware.deployment.gpus == 8);
    CHECK(h100.hardware.gpu.nvlink_domain == 8);
    CHECK(h100.hardware.net.name == "ib-ndr");
    const Scenario rack = built({{"deployment", "gb200-nvl72"}});
    CHECK(rack.hardware.deployment.gpus == 72);
    CHECK(rack.hardware.gpu.nvlink_domain == 72);
    const Scenario pair = built({{"deployment", "gh200x2"}});
    CHECK(pair.hardware.name == "gh200");
    CHECK(pair.hardware.deployment.gpus == 2);
    CHECK(pair.hardware.gpu.nvlink_domain == 2);
    CHECK(pair.hardware.net.name == "roce-400g");
    // Explicit flags override the deployment's values.
    const Scenario fewer = built({{"deployment", "gb200-nvl72"}, {"gpus", "8"}, {"net", "ib-xdr"}});
    CHECK(fewer.hardware.deployment.gpus == 8);
    CHECK(fewer.hardware.gpu.nvlink_domain == 72);
    CHECK(fewer.hardware.net.bandwidth.raw() == 100e9);
    // It names its own hardware: with --hardware it is refused.
    CHECK_THROWS_WITH(built({{"deployment", "hgx-h100x8"}, {"hardware", "h200"}}),
                      Catch::Contains("--deployment: names its own hardware preset, so it cannot be combined with --hardware"));
    CHECK_THROWS_AS(built({{"deployment", "nvl72"}}), InputError);
}

TEST_CASE("a deployment is exactly its hardware preset with its GPUs, NVLink domain and network given by hand",
          "[presets][deploy]") {
    for (const auto& name : io::preset_names("deployments")) {
        INFO(name);
        const auto& d = io::presets("deployments").at(name);
        const std::string gpus = std::to_string(d.at("gpus").get<int>()), dom = std::to_string(d.at("nvlink_domain").get<int>());
        const std::string hw = d.at("hardware").get<std::string>(), net = d.at("net").get<std::string>();
        const Scenario a = built({{"deployment", name.c_str()}, {"model", "llama-3.1-70b"}});
        const Scenario b = built({{"hardware", hw.c_str()},
                                  {"gpus", gpus.c_str()},
                                  {"nvlink-domain", dom.c_str()},
                                  {"net", net.c_str()},
                                  {"model", "llama-3.1-70b"}});
        const ServingPoint x = evaluate(PreparedScenario(a), 0.0, 0.0), y = evaluate(PreparedScenario(b), 0.0, 0.0);
        CHECK(x.throughput == y.throughput);
        CHECK(x.tpot == y.tpot);
        CHECK(a.hardware.net.bandwidth.raw() == b.hardware.net.bandwidth.raw());
    }
}

TEST_CASE("links and hosts and networks share a cache but not their names: a link name is no host", "[presets][net]") {
    // Each kind loads once per process, keyed by its section: a name cached as a link must not answer for a host.
    const auto link = io::load_link_preset("--link", "pcie-gen5");
    CHECK(link->name == "pcie-gen5");
    CHECK_FALSE(link->figures.empty());
    CHECK_THROWS_AS(io::load_host_preset("--host", "pcie-gen5"), InputError);
    CHECK_THROWS_AS(io::load_net_preset("--net", "pcie-gen5"), InputError);
    CHECK(io::load_host_preset("--host", "grace") == io::load_host_preset("--host", "grace"));  // cached: one object
    CHECK_THROWS_AS(io::load_net_preset("--net", "grace"), InputError);
}
