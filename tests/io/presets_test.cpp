// SPDX-License-Identifier: MIT
#include "kvroof/io/presets.hpp"

#include <catch2/catch.hpp>

#include "kvroof/error.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

TEST_CASE("every preset loads and names its source", "[presets]") {
    for (const char* kind : {"hardware", "hosts", "links", "models", "workloads"}) {
        const auto names = io::preset_names(kind);
        CHECK_FALSE(names.empty());
        for (const auto& n : names) {
            INFO(kind << " " << n);
            const auto& j = io::presets(kind).at(n);
            REQUIRE(j.contains("source"));
            CHECK_FALSE(j.at("source").empty());
        }
    }
    for (const auto& n : io::preset_names("hardware")) CHECK_NOTHROW(io::load_hardware("--hardware", n).check_validity());
    for (const auto& n : io::preset_names("workloads")) CHECK_NOTHROW(io::load_workload("--workload", n));
}

TEST_CASE("the issue's hardware and model presets are all there", "[presets]") {
    for (const char* n : {"gb200", "gh200", "b200", "h200", "h100-sxm", "h100-pcie", "a100-80g", "l40s", "rtx-4090",
                          "rtx-2080ti-22g", "mi300x", "mi325x", "mi355x", "h20", "h100-nvl", "b300", "gb300", "l4", "rtx-5090"})
        CHECK_NOTHROW(io::load_hardware("--hardware", n));
    for (const char* n : {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-235b-a22b", "qwen3-30b-a3b", "mixtral-8x7b",
                          "glm-4.5", "deepseek-v3", "llama-3.3-70b", "qwen3-32b", "kimi-k2", "deepseek-r1"})
        CHECK_NOTHROW(io::load_model("--model", n));
    for (const char* n : {"codex", "long", "mid", "short", "prefill"}) CHECK_NOTHROW(io::load_workload("--workload", n));
}

TEST_CASE("gb200 gives each GPU half a Grace and half the C2C", "[presets]") {
    const HardwareSpec hw = io::load_hardware("--hardware", "gb200");
    CHECK(hw.host.cpus_per_gpu == 0.5);
    CHECK(hw.link.bandwidth.raw() == 225e9);
    CHECK(hw.gpu.hbm_capacity.raw() == 186e9);
}

TEST_CASE("host presets are one CPU socket each, so an 8-GPU x86 server with two sockets has 0.25 per GPU", "[presets]") {
    // --cpus-per-gpu counts sockets (its help says so); the x86 presets once described whole two-socket
    // servers at 0.125 per GPU. One Xeon 8480+ socket with two DIMMs per channel: 8 channels x 4400 MT/s x 8 B =
    // 281.6 GB/s; per GPU of an 8-GPU board with two sockets: 2 x 281.6 / 8 = 70.4 GB/s.
    const HardwareSpec hw = io::load_hardware("--hardware", "h100-sxm");
    CHECK(hw.host.cpus_per_gpu == 0.25);
    CHECK(hw.host.dram_bandwidth.raw() == Approx(281.6e9));
    CHECK(hw.host.cpus_per_gpu * hw.host.dram_bandwidth.raw() == Approx(70.4e9));
    // Every x86 GPU preset: two sockets per 8 GPUs.
    for (const char* n : {"b200", "h200", "h100-sxm", "a100-80g", "mi300x", "b300"})
        CHECK(io::load_hardware("--hardware", n).host.cpus_per_gpu * 8 == 2);
}

TEST_CASE("PCIe cards name their GDDR memory, HBM GPUs keep HBM", "[presets]") {
    CHECK(io::load_hardware("--hardware", "rtx-4090").gpu.memory_type == "GDDR6X");
    CHECK(io::load_hardware("--hardware", "rtx-5090").gpu.memory_type == "GDDR7");
    CHECK(io::load_hardware("--hardware", "l40s").gpu.memory_type == "GDDR6");
    CHECK(io::load_hardware("--hardware", "h100-sxm").gpu.memory_type == "HBM");
}

TEST_CASE("mi300x loads its AMD datasheet figures, Infinity Fabric in the NVLink fields", "[presets]") {
    // AMD: 192 GB HBM3 at 5.3 TB/s, dense BF16 1307.4 / FP8 2614.9 TF, no FP4;
    // 7 Infinity Fabric links x 64 GB/s per direction = 448 GB/s to the 8-GPU board.
    const HardwareSpec hw = io::load_hardware("--hardware", "mi300x");
    CHECK(hw.gpu.hbm_capacity.raw() == 192e9);
    CHECK(hw.gpu.hbm_bandwidth.raw() == Approx(5.3e12));
    CHECK(hw.gpu.flops.raw() == Approx(1307.4e12));
    CHECK(hw.gpu.flops_fp8.raw() == Approx(2614.9e12));
    CHECK(hw.gpu.flops_fp4.raw() == 0);
    CHECK(hw.gpu.nvlink_bandwidth.raw() == Approx(448e9));
    CHECK(hw.gpu.nvlink_domain == 8);
}

TEST_CASE("kimi-k2's parameter count is within 2 % of its published 1.03 T", "[presets]") {
    // Hand count from its config.json (tests/data/hf/README.md): 1,026,407,202,816.
    const ModelSpec m = io::load_model("--model", "kimi-k2");
    const auto p = param_counts(m);
    CHECK(p.total == Approx(1'026'407'202'816.0));
    CHECK(p.total == Approx(1.03e12).epsilon(0.02));
    CHECK(p.total == Approx(m.published_params).epsilon(0.02));
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() == 70272);
}

TEST_CASE("the codex idle gap is the mean of the lognormal through median 5.2 s and P99 81.4 s", "[presets][workload]") {
    // sigma = ln(81.4/5.2)/2.3263 = 1.1824; mean = 5.2 * exp(sigma^2/2) = 10.46 s
    CHECK(io::lognormal_mean_from_median_p99(5.2, 81.4) == Approx(10.46).epsilon(0.001));
    const CallClass c = io::load_workload("--workload", "codex");
    CHECK(c.s_cached == 64338);
    CHECK(c.a_append == 3991);
    CHECK(c.o_output == 520);
    CHECK(c.idle_gap.raw() == Approx(10.46).epsilon(0.001));
    CHECK(c.idle_gap_sigma.value_or(0) == Approx(1.1824).epsilon(0.0005));  // the shape the simulator's lognormal gaps take
    // A class given only a mean gap has no shape of its own.
    io::ScenarioInputs in;
    in.set("workload", "s_cached=100,a_append=10,o_output=5,idle_gap=10s");
    CHECK_FALSE(io::build_scenario(in).scenario.mix.entries[0].cls.idle_gap_sigma.has_value());
}

TEST_CASE("Hugging Face config.json files give the same architecture as the presets", "[presets][hf]") {
    const std::string dir = KVROOF_TEST_FIXTURES;
    const ModelSpec llama = io::load_model("--model", dir + "/hf_llama_3_1_70b_config.json");
    CHECK(kv_bytes_per_token(llama, DType::bf16).raw() == 327680);
    CHECK(param_counts(llama).total == param_counts(io::load_model("--model", "llama-3.1-70b")).total);
    const ModelSpec ds = io::load_model("--model", dir + "/hf_deepseek_v3_config.json");
    CHECK(ds.attention == Attention::mla);
    CHECK(kv_bytes_per_token(ds, DType::bf16).raw() == 70272);
    CHECK(param_counts(ds).total == param_counts(io::load_model("--model", "deepseek-v3")).total);
    const ModelSpec qw = io::load_model("--model", dir + "/hf_qwen3_30b_a3b_config.json");
    CHECK(qw.is_moe());
    CHECK(param_counts(qw).active == param_counts(io::load_model("--model", "qwen3-30b-a3b")).active);
}

TEST_CASE("a user's hardware file works like a preset and unknown keys are errors", "[presets]") {
    const std::string dir = KVROOF_TEST_FIXTURES;
    const HardwareSpec hw = io::load_hardware("--hardware", dir + "/custom_hardware.json");
    CHECK(hw.name == "my-box");
    CHECK(hw.link.bandwidth.raw() == 57e9);
    CHECK_THROWS_WITH(io::load_hardware("--hardware", dir + "/bad_hardware_key.json"),
                      Catch::Contains("unknown key 'hbm_bandwith_TBps'"));
    CHECK_THROWS_WITH(io::load_hardware("--hardware", "gb400"), Catch::Contains("valid: ") && Catch::Contains("gb200"));
    CHECK_THROWS_WITH(io::load_model("--model", dir + "/missing.json"), Catch::Contains("cannot open"));
}

TEST_CASE("scenario overrides apply and are recorded", "[presets][scenario]") {
    io::ScenarioInputs in;
    in.set("hbm-cap", "80GB");
    in.set("c2c-bw", "900GB/s");
    in.set("cpus-per-gpu", "4");
    const auto b = io::build_scenario(in);
    CHECK(b.scenario.hardware.gpu.hbm_capacity.raw() == 80e9);
    CHECK(b.scenario.hardware.link.bandwidth.raw() == 900e9);
    CHECK(b.scenario.hardware.host.cpus_per_gpu == 4);
    CHECK(b.overrides.size() == 3);
    io::ScenarioInputs bad;
    bad.set("hbm-bw", "-1");
    CHECK_THROWS_WITH(io::build_scenario(bad), Catch::Contains("--hbm-bw: must be in [1e-09, 1e+06] TB/s, got -1"));
    io::ScenarioInputs both;
    both.set("mix", "long:1");
    both.set("workload", "codex");
    CHECK_THROWS_AS(io::build_scenario(both), InputError);
}

TEST_CASE("a model's context window is its config's max_position_embeddings, and a longer workload is said",
          "[presets][context]") {
    for (const auto& n : io::preset_names("models")) {
        INFO(n);
        CHECK(io::load_model("--model", n).max_context > 0);
    }
    const std::string dir = KVROOF_TEST_FIXTURES;
    const ModelSpec llama = io::load_model("--model", dir + "/hf_llama_3_1_70b_config.json");
    CHECK(llama.max_context == 131072);
    CHECK(io::load_model("--model", "llama-3.1-70b").max_context == llama.max_context);
    CHECK(io::load_model("--model", dir + "/hf_llama_2_70b_config.json").max_context == 4096);
    // The default codex call holds S + O = 64,338 + 3,991 + 520 = 68,849 tokens at its end: within Llama-3.1's
    // 131,072, beyond Qwen3-32B's 40,960 (served with YaRN).
    io::ScenarioInputs in;
    in.set("model", "llama-3.1-8b");
    CHECK(io::context_warnings(io::build_scenario(in).scenario).empty());
    in.set("model", "qwen3-32b");
    const auto w = io::context_warnings(io::build_scenario(in).scenario);
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("68849 tokens") != std::string::npos);
    CHECK(w[0].find("qwen3-32b's context window of 40960 tokens") != std::string::npos);
    // A short workload on the same model: nothing to say.
    in.set("workload", "s_cached=0,a_append=30000,o_output=10960,idle_gap=0s");
    CHECK(io::context_warnings(io::build_scenario(in).scenario).empty());
}

TEST_CASE("naming the board's own shared link keeps each GPU's share, and another link is each GPU's own", "[presets]") {
    auto link_bw = [](const char* hardware, const char* link) {
        io::ScenarioInputs in;
        in.set("hardware", hardware);
        if (link) in.set("link", link);
        return io::build_scenario(in).scenario.hardware.link.bandwidth.raw();
    };
    // GB200: one 450 GB/s NVLink-C2C per two GPUs. `--link nvlink-c2c` gave 450 GB/s per GPU (κ_crit doubled).
    CHECK(link_bw("gb200", nullptr) == 225e9);
    CHECK(link_bw("gb200", "nvlink-c2c") == 225e9);
    CHECK(link_bw("gh200", "nvlink-c2c") == 450e9);  // one GPU per C2C
    CHECK(link_bw("gb200", "pcie-gen5") == link_bw("h100-sxm", "pcie-gen5"));
    // The other presets of that link (links.json `physical`: nvlink-c2c) are shared the same way: 375 and 900 GB/s
    // per GPU before, the figures of the whole link.
    CHECK(link_bw("gb200", "nvlink-c2c-measured") == 187.5e9);
    CHECK(link_bw("gb200", "nvlink-c2c-total") == 450e9);
    CHECK(link_bw("gh200", "nvlink-c2c-measured") == 375e9);
}

TEST_CASE("a link preset names the physical link its figures describe", "[presets]") {
    const auto l = io::load_link_preset("--link", "nvlink-c2c-measured");
    CHECK(l->physical_link() == "nvlink-c2c");
    CHECK(io::load_link_preset("--link", "nvlink-c2c")->physical_link() == "nvlink-c2c");
}
