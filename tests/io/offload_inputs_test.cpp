// SPDX-License-Identifier: MIT
// `kvroof prefill` and `kvroof layers` inputs: with no flag, verdict's default
// scenario; with the seed switch, the papers' tables (configs/*.json).
#include <catch2/catch.hpp>

#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"

using namespace kvroof;

TEST_CASE("plain prefill inputs are verdict's default scenario", "[offload_inputs]") {
    const Scenario def = io::build_scenario(io::ScenarioInputs{}).scenario;
    const PrefillSetup s = io::resolve_prefill(io::PrefillInputs{});
    CHECK(s.hardware.name == def.hardware.name);
    CHECK(s.hardware.name == io::kDefaultHardware);
    CHECK(s.model.name == def.model.name);
    CHECK(s.workload.name == io::kDefaultWorkload);
    CHECK(s.tp.gpus == def.hardware.deployment.gpus);
    // The link is the preset's own share per GPU, as verdict's: GB200's 450 GB/s C2C over its 2 GPUs.
    CHECK(s.link_name == def.hardware.link.name);
    CHECK(s.link.raw() == def.hardware.link.bandwidth.raw());
    // C_eff as verdict's GEMMs: 0.7 x the dense peak in the weights' precision (bf16).
    CHECK(s.c_eff.raw() == Approx(def.hardware.gpu.eta_compute * def.hardware.gpu.flops.raw()));
}

TEST_CASE("prefill's seed switch is the κ_crit paper's scenario", "[offload_inputs]") {
    io::PrefillInputs in;
    in.seed = true;
    const PrefillSetup s = io::resolve_prefill(in);
    CHECK(s.hardware.name == "h100-sxm");
    CHECK(s.tp.gpus == 8);
    CHECK(s.link_name == "pcie-gen5-kvoffload");
    // 0.7 x the FP8 dense peak, the paper's convention.
    CHECK(s.c_eff.raw() == Approx(0.7 * gemm_peak(s.hardware, DType::fp8).raw()));
    // The flag overrides the seed's value.
    in.scenario.set("gpus", "2");
    CHECK(io::resolve_prefill(in).tp.gpus == 2);
    CHECK(io::parse_table_switch("--table", "seed"));
    CHECK_THROWS_WITH(io::parse_table_switch("--table", "paper"), Catch::Contains("--table: must be seed"));
}

TEST_CASE("prefill's model what-ifs are each model's own prefill answer", "[offload_inputs]") {
    // Each row equals `kvroof prefill --model X` with the other inputs the same: C_eff at X's own GEMM
    // precision (DeepSeek-V3's FP8 checkpoint at the FP8 peak; Mixtral's BF16 at the BF16), not the first model's.
    const PrefillQuestions q = io::prefill_questions(false);
    for (const char* main_model : {"llama-3.1-70b", "deepseek-v3"}) {
        io::PrefillInputs in;
        in.scenario.set("model", main_model);
        const PrefillStudy st = prefill_study(io::resolve_prefill(in), q);
        CHECK(st.setup.c_eff_follows_weights);
        for (const ModelWhatIf& m : st.models) {
            io::PrefillInputs own;
            own.scenario.set("model", m.name);
            const PrefillPoint alone = prefill_point(io::resolve_prefill(own));
            INFO(main_model << " what-if " << m.name);
            CHECK(m.result.kappa_crit == Approx(alone.result.kappa_crit).epsilon(1e-12));
            CHECK(m.c_eff.raw() == Approx(alone.inputs.c_eff.raw() / st.setup.tp.gpus));
        }
    }
    // A C_eff the user fixes holds for every row.
    io::PrefillInputs fixed;
    fixed.prefill_flops = "1000";
    const PrefillStudy st = prefill_study(io::resolve_prefill(fixed), q);
    CHECK_FALSE(st.setup.c_eff_follows_weights);
    for (const ModelWhatIf& m : st.models) CHECK(m.c_eff.raw() == 1e15);
}

TEST_CASE("prefill's attention runs in the KV cache's precision, not the weights'", "[offload_inputs]") {
    // FP8 weights over a BF16 cache attend in BF16, as verdict charges them: the attention time is the BF16
    // run's; an FP8 cache attends at the FP8 peak (twice the BF16 on GB200), half the time. It used to follow
    // C_eff, the GEMMs' rate: FP8 weights showed 198.3 ms for 396.6.
    const auto attention = [](const char* weights, const char* kv) {
        io::PrefillInputs in;
        in.scenario.set("weight-dtype", weights);
        in.scenario.set("kv-dtype", kv);
        return prefill_point(io::resolve_prefill(in)).attention.raw();
    };
    const double bf16 = attention("bf16", "bf16");
    CHECK(attention("fp8", "bf16") == Approx(bf16).epsilon(1e-12));
    CHECK(attention("fp8", "fp8") == Approx(bf16 / 2).epsilon(1e-12));
    // At the rate verdict's TTFT charges attention: 0.7 x the 2.5 PFLOP/s BF16 peak of GB200.
    io::PrefillInputs def;
    CHECK(io::resolve_prefill(def).attention_flops.raw() == Approx(0.7 * 2.5e15));
}

TEST_CASE("plain layers inputs: the default model's bf16 checkpoint on the default hardware", "[offload_inputs]") {
    const Scenario def = io::build_scenario(io::ScenarioInputs{}).scenario;
    const LayersSetup s = io::resolve_layers(io::LayersInputs{});
    REQUIRE(s.checkpoints.size() == 1);
    const Checkpoint& c = s.checkpoints.front();
    CHECK(c.name == def.model.name + "@bf16");
    CHECK(c.layers == def.model.layers);
    CHECK(s.hardware == def.hardware.name);
    CHECK(s.tp == std::vector<int>{def.hardware.deployment.gpus});
    CHECK(s.host.card_budget.raw() == def.hardware.gpu.hbm_capacity.raw());
    CHECK(s.host.link.raw() == def.hardware.link.bandwidth.raw());
    // The decode roofline: what a token reads of the rank's shard, from HBM at eta_mem (no compute time given).
    CHECK_FALSE(s.compute_ms);
    REQUIRE(s.host.roofline_read);
    CHECK(s.host.roofline_read->raw() == def.hardware.gpu.eta_mem * def.hardware.gpu.hbm_bandwidth.raw());
    // The same checkpoint as --model with the default weight precision, bit for bit.
    io::LayersInputs by_model;
    by_model.scenario.set("model", def.model.name);
    by_model.weight_bits = "16";
    CHECK(io::resolve_layers(by_model).checkpoints.front().layer_bytes.raw() == c.layer_bytes.raw());
}

TEST_CASE("layers' seed switch is the measured ceiling's table", "[offload_inputs]") {
    io::LayersInputs in;
    in.seed = true;
    const LayersSetup s = io::resolve_layers(in);
    CHECK(s.checkpoints.size() == 4);
    CHECK(s.tp == std::vector<int>{1, 2, 4});
    CHECK(s.hardware == "rtx-2080ti-22g");
    CHECK(s.link_name == "pcie-gen3-seed002");
    CHECK(s.compute_ms == 1.18);
}
