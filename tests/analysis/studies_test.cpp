// SPDX-License-Identifier: MIT
// The prefill and layer-offload studies, built from specs (no flags, no presets).
#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/layers_study.hpp"
#include "kvroof/analysis/prefill_study.hpp"
#include "kvroof/analysis/scenario_facts.hpp"

using namespace kvroof;

namespace {
// The tiny model at TP 2 on 2 TB/s of HBM.
PrefillSetup hand_prefill() { return test::tiny_prefill(2, terabytes_per_s(2)); }

// 10 layers of 1 GiB and 0.5 GiB outside them, on a 4.5 GiB card with a
// 1 GiB/s link and 0.1 s of compute per layer: 4 resident, 6 offloaded at TP 1.
LayersSetup hand_layers() {
    Checkpoint c;
    c.name = "hand";
    c.layers = 10;
    c.layer_bytes = gibibytes(1);
    c.non_layer_bytes = gibibytes(0.5);
    c.total_bytes = gibibytes(10.5);
    Checkpoint small = c;
    small.name = "small";
    small.layer_bytes = gibibytes(0.1);
    LayersSetup s;
    s.checkpoints = {c, small};
    s.tp = {1, 2};
    s.host = LayerHost{gibibytes(4.5), BytesPerSecond(kGibi), milliseconds(100), std::nullopt, std::nullopt};
    s.compute_ms = 100;
    return s;
}
}  // namespace

TEST_CASE("prefill study: every link what-if, then this GPU's HBM, on the same K/T", "[prefill_study]") {
    PrefillQuestions q;
    q.links = {{"slow", gigabytes_per_s(1), "slow"}, {"fast", gigabytes_per_s(100), "fast"}};
    const PrefillStudy st = prefill_study(hand_prefill(), q);
    REQUIRE(st.links.size() == 3);
    CHECK(st.links.back().link.name == "unified HBM (this GPU)");
    CHECK(st.links.back().link.bandwidth == terabytes_per_s(2));
    // The same link as the scenario's gives the scenario's answer; 100x the link, 100x κ_crit.
    CHECK(st.links[0].result.kappa_crit == Approx(st.result.kappa_crit));
    CHECK(st.links[1].result.kappa_crit == Approx(100 * st.result.kappa_crit));
    for (const LinkWhatIf& l : st.links) CHECK(l.result.kappa_ratio == st.result.kappa_ratio);
}

TEST_CASE("prefill study: the board's own link is each GPU's share, another link is whole", "[prefill_study]") {
    // GB200's NVLink-C2C serves two GPUs: the what-if row of that link is the 225 GB/s the scenario's --link gives
    // each GPU (it showed 450 GB/s and twice the κ_crit of the same link in the header).
    PrefillSetup s = hand_prefill();
    s.hardware.board_link = "board";
    s.hardware.board_link_shared_by = 2;
    PrefillQuestions q;
    // A second preset of the board's link (nvlink-c2c-measured describes nvlink-c2c) is shared the same way.
    q.links = {{"board", gigabytes_per_s(2), "board"},
               {"other", gigabytes_per_s(2), "other"},
               {"board-measured", gigabytes_per_s(1.5), "board"}};
    const PrefillStudy st = prefill_study(s, q);
    REQUIRE(st.links.size() == 4);
    CHECK(st.links[0].link.bandwidth == gigabytes_per_s(1));  // the scenario's own 1 GB/s: the same answer
    CHECK(st.links[0].result.kappa_crit == Approx(st.result.kappa_crit).epsilon(1e-12));
    CHECK(st.links[1].link.bandwidth == gigabytes_per_s(2));
    CHECK(st.links[1].result.kappa_crit == Approx(2 * st.result.kappa_crit).epsilon(1e-12));
    CHECK(st.links[2].link.bandwidth == gigabytes_per_s(0.75));
}

TEST_CASE("prefill study: V_eff subtracts the weights in their own precision", "[prefill_study]") {
    // HBM − reserve over the group, less the weights: at FP8 the weights are half of BF16's (the tiny model has no
    // layers kept in BF16), so V_eff grows by half the BF16 weights. It was BF16 whatever --weight-dtype said.
    PrefillSetup s = hand_prefill();
    const Bytes bf16 = group_vram_for_kv(s);
    s.weights = DType::fp8;
    const Bytes fp8 = group_vram_for_kv(s);
    CHECK(bf16.raw() == Approx(2 * (gigabytes(10) - gigabytes(1)).raw() - weight_bytes(s.model, DType::bf16).raw()));
    CHECK(fp8.raw() == Approx(2 * (gigabytes(10) - gigabytes(1)).raw() - weight_bytes(s.model, DType::fp8).raw()));
    CHECK(weight_bytes(s.model, DType::fp8).raw() < weight_bytes(s.model, DType::bf16).raw());
}

TEST_CASE("prefill_setup takes the scenario's weight precision: V_eff and N_max at FP8 weights", "[prefill_study]") {
    // Llama-3.1-70B on one GB200 (184 GB usable) with FP8 weights: the verdict's HBM holds 184 − 70.55 = 113.4 GB of KV;
    // the prefill's V_eff said 42.9 GB (the BF16 weights) whatever --weight-dtype said.
    const Scenario sc = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "gb200");
        in.set("model", "llama-3.1-70b");
        in.set("gpus", "1");
        in.set("weight-dtype", "fp8");
    });
    const PrefillSetup s = prefill_setup(sc, 0.0);
    CHECK(s.weights == DType::fp8);
    const double usable = (sc.hardware.gpu.hbm_capacity - sc.hardware.gpu.hbm_reserve).raw();
    CHECK(group_vram_for_kv(s).raw() == Approx(usable - weight_bytes(sc.model, DType::fp8).raw()).epsilon(1e-12));
    CHECK(group_vram_for_kv(s).raw() == Approx(113.4e9).epsilon(1e-3));
}

TEST_CASE("N_max counts the KV a request holds: a window or a recurrent state once, as verdict's resident sessions",
          "[prefill_study]") {
    // Linear-attention layers with a fixed state (Qwen3-Next), Mamba layers (Nemotron-H), sliding windows (gpt-oss):
    // N_max = V_eff / (KV held at K + T), the verdict's resident sessions in the same free HBM. It multiplied (K + T)
    // by the reload bytes per cached token, which spread the state over K: Qwen3-Next at K = 100, T = 1,000 on
    // 0.45 GB showed 0.98 requests where 6.79 fit, and at K = 0 it left the state out (18.4 where 7.05 fit).
    for (const std::string model : {"qwen3-next-80b", "nemotron-h-56b", "gpt-oss-20b", "llama-3.1-70b"}) {
        for (const std::string workload : {"s_cached=100,a_append=1000,o_output=100", "s_cached=0,a_append=1000,o_output=100",
                                           "s_cached=64000,a_append=4000,o_output=400"}) {
            io::ScenarioInputs in;
            in.set("model", model);
            in.set("workload", workload);
            const Scenario s = io::build_scenario(in).scenario;
            INFO(model << " " << workload);
            const PrefillPoint p = prefill_point(prefill_setup(s, 0.0));
            const PreparedScenario ps(s);
            const ScenarioFacts facts = scenario_facts(ps);
            REQUIRE(p.vram.raw() == Approx(facts.hbm_free.raw()).epsilon(1e-12));  // the same memory left for KV
            REQUIRE(p.scheduler);
            CHECK(p.scheduler->n_max == Approx(facts.classes.front().hbm_sessions).epsilon(1e-12));
        }
    }
}

TEST_CASE("prefill study: workloads against κ_crit, P_OH = κ_ratio / κ_crit", "[prefill_study]") {
    PrefillQuestions q;
    const PrefillStudy base = prefill_study(hand_prefill(), q);
    const double k = base.result.kappa_crit;
    q.workloads = {{"below", k / 2, "hand"}, {"above", 2 * k, "hand"}};
    const PrefillStudy st = prefill_study(hand_prefill(), q);
    REQUIRE(st.workloads.size() == 2);
    CHECK_FALSE(st.workloads[0].transfer_bound);
    CHECK(st.workloads[0].p_oh == Approx(0.5));
    CHECK(st.workloads[0].link_share == Approx(1.0 / 3));
    CHECK(st.workloads[1].transfer_bound);
    CHECK(st.workloads[1].p_oh == Approx(2.0));
}

TEST_CASE("prefill study: the model what-if of the scenario's own model is the scenario", "[prefill_study]") {
    PrefillQuestions q;
    q.models = {{"tiny", test::tiny_model()}};
    q.table = true;
    q.table_models = {test::tiny_model()};
    q.table_rows = {{"row", "hand", "hand", gigabytes_per_s(1), teraflops(1)}};
    const PrefillStudy st = prefill_study(hand_prefill(), q);
    REQUIRE(st.models.size() == 1);
    CHECK(st.models[0].result.kappa_crit == Approx(st.result.kappa_crit));
    CHECK(st.models[0].f_pf == st.f_pf);
    REQUIRE(st.table_rows.size() == 1);
    REQUIRE(st.table_rows[0].kappa_crit.size() == 1);
    // The table is per GPU at bf16 (one copy of the KV); the scenario pools 2 GPUs over the tiny model's one
    // KV head, so each GPU holds and reloads a whole copy: twice the bytes per token, half the κ_crit.
    CHECK(st.kv_copies == 2.0);
    CHECK(st.table_rows[0].kappa_crit[0] == Approx(2 * st.result.kappa_crit));
}

TEST_CASE("prefill study: no scheduler without new tokens or without VRAM", "[prefill_study]") {
    PrefillSetup s = hand_prefill();
    CHECK(prefill_study(s, {}).scheduler);
    s.vram = Bytes(0);
    CHECK_FALSE(prefill_study(s, {}).scheduler);
    s = hand_prefill();
    s.workload.a_append = 0;
    CHECK_FALSE(prefill_study(s, {}).scheduler);
}

TEST_CASE("layers study: the hand checkpoint's rows check by hand", "[layers_study]") {
    const LayersStudy st = layers_study(hand_layers());
    REQUIRE(st.cells.size() == 4);  // checkpoint-major: hand TP1, hand TP2, small TP1, small TP2
    const LayerOffloadRow& r = st.cells[0].row;
    CHECK(st.cells[0].checkpoint == 0);
    CHECK(st.cells[1].row.tp == 2);
    CHECK(st.cells[2].checkpoint == 1);
    CHECK(r.resident == 4);
    CHECK(r.offloaded == 6);
    CHECK(r.copy_s == Approx(6.0));  // 6 GiB over 1 GiB/s
    CHECK(r.compute_s == Approx(0.6));  // 6 layers x 0.1 s
    CHECK(r.serial_tps == Approx(1 / 6.6));
    CHECK(r.overlap_tps == Approx(1 / 6.0));
    CHECK(st.cells[1].row.offloaded == 2);  // 8 half-layers fit
    CHECK(st.cells[2].row.offloaded == 0);  // 10 x 0.1 GiB fit
    // The best ceiling is the highest perfect-overlap tok/s among offloading cells: hand at TP 2.
    REQUIRE(st.best);
    CHECK(*st.best == 1);
    for (const LayersCell& c : st.cells) CHECK_FALSE(c.prefill);
    CHECK(st.targets.empty());
}

TEST_CASE("layers study: prefill chunks only where layers move, a target for every cell", "[layers_study]") {
    LayersSetup s = hand_layers();
    s.prefill_compute_ms = 50;
    s.rows = 100;
    s.target_tps = 1;
    const LayersStudy st = layers_study(s);
    REQUIRE(st.cells[0].prefill);
    CHECK(st.cells[0].prefill->serial_tps == Approx(100 / (6.0 + 0.3)));
    CHECK_FALSE(st.cells[2].prefill);
    REQUIRE(st.targets.size() == 4);
    CHECK(st.targets[0].target.max_offloaded == 1);  // 1 GiB per token at 1 tok/s: one whole layer
    CHECK(st.targets[1].target.max_offloaded == 2);
}

TEST_CASE("layers study: a forced split replaces the budget's, its errors name the knob", "[layers_study]") {
    LayersSetup s = hand_layers();
    s.checkpoints.resize(1);
    s.tp = {1};
    s.offload_layers = 7;  // the budget's choice is 6 (4 of 10 layers resident)
    CHECK(layers_study(s).cells.front().row.offloaded == 7);
    s.offload_layers = 3;  // 7 resident: more than the card holds
    CHECK_THROWS_WITH(layers_study(s), Catch::Contains("offload-layers: at TP1 the card holds 4 of the 10 layers"));
    s.offload_layers = 11;
    CHECK_THROWS_WITH(layers_study(s), "offload-layers: must be <= the checkpoint's 10 layers, got 11");
}

TEST_CASE("prefill: the attention F_pf leaves out, by hand", "[prefill_study]") {
    // Tiny GQA model: 4 FLOP x 2 heads x head_dim 2 per layer per key = 16, over 2 layers 32 FLOP per
    // query-key pair. T = 2 new tokens after K = 4000 cached: 2 x 4000 + 2^2/2 = 8002 pairs, 256,064 FLOP,
    // over the group's 2 x 1 TFLOP/s = 128.032 ns.
    const PrefillStudy st = prefill_study(hand_prefill(), {});
    CHECK(st.attention.raw() == Approx(32.0 * 8002 / 2e12).epsilon(1e-12));
}
