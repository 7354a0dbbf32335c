// SPDX-License-Identifier: MIT
// `kvroof ladder`: the greedy choice, its stopping rule, and when each lever is available.
#include <catch2/catch.hpp>

#include <algorithm>

#include "kvroof/analysis/ladder.hpp"
#include "kvroof/io/scenario_builder.hpp"

using namespace kvroof;

namespace {
Scenario scenario(std::initializer_list<std::pair<const char*, const char*>> flags) {
    io::ScenarioInputs in;
    for (const auto& [k, v] : flags) in.set(k, v);
    return io::build_scenario(in).scenario;
}
constexpr LeverKind kAll[] = {LeverKind::tensor_parallel, LeverKind::sparse,    LeverKind::kv_quant,
                              LeverKind::park_idle,       LeverKind::hold_idle, LeverKind::offload};
}  // namespace

TEST_CASE("each rung is the best lever available on the one before, and the ladder stops when none gains 2 %", "[ladder]") {
    LadderOptions o;
    o.max_gpus = 2;
    const LadderStudy s = ladder_study(scenario({{"gpus", "1"}, {"cpus-per-gpu", "1"}}), o);
    REQUIRE(s.rungs.size() >= 3);
    CHECK_FALSE(s.rungs.front().lever);
    // The first rung is the scenario as given at f = 0.
    const Band b0 = band(PreparedScenario(s.rungs.front().scenario), 0.0);
    CHECK(s.rungs.front().band.conservative.throughput == b0.conservative.throughput);
    for (std::size_t i = 1; i < s.rungs.size(); ++i) {
        const LadderRung& r = s.rungs[i];
        INFO("rung " << i);
        CHECK(r.gain >= kGainThreshold);
        CHECK(r.per_gpu_conservative == Approx(r.band.conservative.throughput / r.scenario.hardware.deployment.gpus));
        CHECK(r.gain == Approx(r.per_gpu_conservative / s.rungs[i - 1].per_gpu_conservative));
        for (LeverKind k : kAll) {
            const auto alt = detail::take_lever(k, s.rungs[i - 1], o);
            if (alt) CHECK(alt->gain <= r.gain);
        }
    }
    for (LeverKind k : kAll) {
        const auto next = detail::take_lever(k, s.rungs.back(), o);
        if (next) CHECK(next->gain < kGainThreshold);
    }
    // On the default codex scenario the first lever is pooling HBM over 2 GPUs (capacity binds),
    // and the top is GPU-compute-bound.
    REQUIRE(s.rungs[1].lever);
    CHECK(*s.rungs[1].lever == LeverKind::tensor_parallel);
    CHECK(s.rungs[1].scenario.hardware.deployment.gpus == 2);
    CHECK(s.rungs.front().band.conservative.headline == Resource::hbm_capacity);
    CHECK(s.compute_bound);
}

TEST_CASE("levers are used up: TP at the GPU limit, sparse at its target, KV at int4, parking without idle gaps", "[ladder]") {
    LadderOptions o;
    o.max_gpus = 1;
    const Scenario sc = scenario({{"gpus", "1"},
                                  {"sparse", "0.1"},
                                  {"kv-dtype", "int4"},
                                  {"workload", "s_cached=1000,a_append=100,o_output=100,idle_gap=0"}});
    const LadderRung base = detail::evaluate_rung(sc, false);
    CHECK_FALSE(detail::take_lever(LeverKind::tensor_parallel, base, o));
    CHECK_FALSE(detail::take_lever(LeverKind::sparse, base, o));
    CHECK_FALSE(detail::take_lever(LeverKind::kv_quant, base, o));
    CHECK_FALSE(detail::take_lever(LeverKind::park_idle, base, o));  // no idle gap in that workload
    const auto off = detail::take_lever(LeverKind::offload, base, o);
    REQUIRE(off);
    CHECK(off->offload);
    CHECK_FALSE(detail::take_lever(LeverKind::offload, *off, o));
    // KV quantisation steps bf16 -> fp8 -> int4.
    const LadderRung bf16 = detail::evaluate_rung(scenario({{"kv-dtype", "bf16"}}), false);
    const auto fp8 = detail::take_lever(LeverKind::kv_quant, bf16, o);
    REQUIRE(fp8);
    CHECK(fp8->scenario.policy.kv_dtype == DType::fp8);
    CHECK(detail::take_lever(LeverKind::kv_quant, *fp8, o)->scenario.policy.kv_dtype == DType::int4);
    // TP doubles only while the heads split evenly and the limit allows.
    LadderOptions eight;
    eight.max_gpus = 8;
    const auto tp = detail::take_lever(LeverKind::tensor_parallel, bf16, eight);
    REQUIRE(tp);
    CHECK(tp->scenario.hardware.deployment.gpus == 2 * bf16.scenario.hardware.deployment.gpus);
}

TEST_CASE("a scenario that serves nothing grows its group until it serves, and a lever that makes it serve most wins",
          "[ladder]") {
    // Llama-3.1-70B in BF16 on H100s: 141 GB of weights. One GPU holds none of them, two hold the weights but no
    // codex session beside them, four serve. The ladder used to stop at 0 tok/s: TP2 alone served nothing, so
    // no lever was kept.
    LadderOptions o;
    o.max_gpus = 8;
    const LadderStudy s = ladder_study(scenario({{"hardware", "h100-sxm"}, {"model", "llama-3.1-70b"}, {"gpus", "1"}}), o);
    REQUIRE(s.rungs.size() >= 3);
    CHECK(s.rungs[0].band.conservative.throughput == 0);
    CHECK(s.rungs[1].lever == LeverKind::tensor_parallel);
    CHECK(s.rungs[1].gain == 1.0);  // taken though it serves nothing yet
    CHECK(s.rungs[2].band.conservative.throughput > 0);
    CHECK(s.rungs.back().band.conservative.throughput > 0);
    // Nowhere to grow: no rung of growth that never fit is left behind.
    o.max_gpus = 1;
    const LadderStudy none = ladder_study(scenario({{"hardware", "h100-sxm"}, {"model", "llama-3.1-70b"}, {"gpus", "1"}}), o);
    CHECK(none.rungs.size() == 1);
    // On two H100s the weights fit but no session does: fp8 KV and TP4 each make it serve (gain kUnbounded
    // both); TP4 serves about three times more per GPU, so it ranks first.
    o.max_gpus = 8;
    const Scenario two = scenario({{"hardware", "h100-sxm"}, {"model", "llama-3.1-70b"}, {"gpus", "2"}});
    const std::vector<LadderRung> levers = single_levers(two, make_verdict(two), o);
    REQUIRE(levers.size() >= 2);
    CHECK(levers[0].lever == LeverKind::tensor_parallel);
    CHECK(levers[0].per_gpu_conservative > 2 * levers[1].per_gpu_conservative);
}

TEST_CASE("the offload lever is its best f's gain, with --f fixed or not", "[ladder]") {
    // With --f 0.3 the row showed the best f's 629 tok/s beside the chosen f's 1.37×, and ranked it under TP's 2.75×;
    // 629 over f = 0's 138 is 4.56×, the first lever.
    const Scenario s = scenario(
        {{"gpus", "1"}, {"cpus-per-gpu", "4"}, {"sparse", "0.1"}, {"workload", "s_cached=16000,a_append=2000,o_output=400"}});
    VerdictOptions fixed;
    fixed.fixed_f = 0.3;
    const Verdict v = make_verdict(s, fixed);
    REQUIRE(v.f_fixed);
    const std::vector<LadderRung> levers = single_levers(s, v);
    const auto off = std::find_if(levers.begin(), levers.end(), [](const LadderRung& l) { return l.offload; });
    REQUIRE(off != levers.end());
    CHECK(off->gain == Approx(v.best_conservative.throughput / v.baseline.conservative.throughput).epsilon(1e-12));
    const std::vector<LadderRung> free = single_levers(s, make_verdict(s));
    const auto free_off = std::find_if(free.begin(), free.end(), [](const LadderRung& l) { return l.offload; });
    REQUIRE(free_off != free.end());
    CHECK(off->gain == free_off->gain);  // the same lever whatever f the verdict shows
    CHECK(off == levers.begin());
}

TEST_CASE("parked whole, a session that outgrows CPU DRAM fits when held: holding is a lever", "[ladder]") {
    // GB200 with 5 GB of CPU DRAM for its two GPUs: 2.5 GB each, under codex's 22.39 GB session,
    // which HBM holds (1.92 sessions fit there).
    const Scenario parked = scenario({{"idle", "park"}, {"cpu-mem", "5"}});
    const Verdict v = make_verdict(parked);
    CHECK(v.kind == VerdictKind::does_not_fit);
    const std::vector<LadderRung> levers = single_levers(parked, v);
    REQUIRE_FALSE(levers.empty());
    const LadderRung& hold = levers.front();
    REQUIRE(hold.lever);
    CHECK(*hold.lever == LeverKind::hold_idle);
    CHECK(hold.scenario.policy.idle == IdlePolicy::hold);
    CHECK(hold.gain == kUnbounded);  // it makes the scenario serve
    CHECK(hold.band.conservative.throughput == band(PreparedScenario(hold.scenario), 0.0).conservative.throughput);
    // The ladder takes it first, and never offers parking back.
    const LadderStudy s = ladder_study(parked);
    REQUIRE(s.rungs.size() >= 2);
    CHECK(*s.rungs[1].lever == LeverKind::hold_idle);
    for (std::size_t i = 1; i < s.rungs.size(); ++i) CHECK(*s.rungs[i].lever != LeverKind::park_idle);
    // No idle gap, no idle session to hold.
    const Scenario no_gap = scenario({{"idle", "park"}, {"workload", "s_cached=1000,a_append=100,o_output=100,idle_gap=0"}});
    CHECK_FALSE(detail::take_lever(LeverKind::hold_idle, detail::evaluate_rung(no_gap, false), LadderOptions{}));
    // A scenario that holds is offered parking, not holding.
    const Scenario held = scenario({});
    CHECK_FALSE(detail::take_lever(LeverKind::hold_idle, detail::evaluate_rung(held, false), LadderOptions{}));
}

namespace {
// Every tensor-parallel rung of `s` runs `gpus` GPUs at expert parallelism `ep`, a deployment the inputs
// accept; and there is at least one such rung.
void check_tp_rungs(const LadderStudy& s, int gpus, int ep) {
    bool grew = false;
    for (const LadderRung& r : s.rungs) {
        if (r.lever != LeverKind::tensor_parallel) continue;
        grew = true;
        CHECK(r.scenario.hardware.deployment.gpus == gpus);
        CHECK(r.scenario.hardware.deployment.ep == ep);
        CHECK_NOTHROW(r.scenario.hardware.check_validity());
    }
    CHECK(grew);
}
}  // namespace

TEST_CASE("the tensor-parallel lever grows expert parallelism with the group: a deployment the inputs accept", "[ladder]") {
    // DeepSeek-V3 in FP4 on 4 B200s with data-parallel attention and EP 4: doubling the GPUs kept EP 4, which with
    // data-parallel attention the inputs refuse (EP must be 1 or the group), and the flag it printed exited 2.
    check_tp_rungs(ladder_study(scenario({{"hardware", "b200"},
                                          {"model", "deepseek-v3"},
                                          {"weight-dtype", "fp4"},
                                          {"gpus", "4"},
                                          {"attention-dp", "1"},
                                          {"ep", "4"}}),
                                LadderOptions{}),
                   8, 8);
    // Up to the routed experts: Mixtral-8x7B at EP 8 on 8 GPUs grows to 16 GPUs with EP 8 (EP 16 is refused: 8 experts).
    check_tp_rungs(
        ladder_study(scenario({{"hardware", "h200"}, {"model", "mixtral-8x7b"}, {"gpus", "8"}, {"ep", "8"}, {"hbm-cap", "13GB"}}),
                     LadderOptions{16}),
        16, 8);
}
