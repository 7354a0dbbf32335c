// SPDX-License-Identifier: MIT
// Pipeline and data parallelism (analysis/pipeline.hpp): the decode cycle of
// pp stages with m micro-batches, the activation transfer between stages, the
// stage imbalance when the layers do not divide, and replicas.
#include <catch2/catch.hpp>
#include <string>

#include "kvroof/analysis/operating_point.hpp"
#include "kvroof/analysis/serving.hpp"
#include "kvroof/io/scenario_builder.hpp"

using namespace kvroof;

namespace {
Scenario on(const char* hardware, const char* model, int tp, int pp, int microbatches = 0, int dp = 1,
            const char* workload = nullptr) {
    io::ScenarioInputs in;
    if (workload) in.set("workload", workload);
    in.set("hardware", hardware);
    in.set("model", model);
    in.set("tp", std::to_string(tp));
    in.set("pp", std::to_string(pp));
    in.set("pp-microbatches", std::to_string(microbatches));
    in.set("dp", std::to_string(dp));
    return io::build_scenario(in).scenario;
}
// The decode step (a pipeline's cycle) at batch b with KV on the GPU.
double step_at(const PreparedScenario& ps, double b) {
    const detail::BatchShape bs = detail::batch_shape(ps, mix_demand(ps, 0.0), 0.0);
    return detail::shape_at(ps, bs.shape, b).step(b);
}
// H100 NVLink: s per byte at 0.8 x 450 GB/s. A boundary carries hidden states and residual, 2 x 8192 x 2 B per sequence.
constexpr double kNv = 1.0 / (0.8 * 450e9), kBytes = 2 * 8192 * 2.0;
// TP2: each rank sends half over NVLink, then the stage all-gathers the other half: 2 x (5 us α) + kBytes per sequence.
constexpr double kTp2PerSeq = kBytes / 2 * kNv + kBytes / 2 * kNv;
}  // namespace

TEST_CASE("pp 1 is the single group bit for bit, whatever dp says, and refuses more micro-batches", "[pp]") {
    const Scenario a = on("h100-sxm", "llama-3.1-70b", 2, 1), b = on("h100-sxm", "llama-3.1-70b", 2, 1, 1, 3);
    // One stage has nothing to overlap, so a micro-batch count would change no number: refused, not ignored.
    CHECK_THROWS_WITH(on("h100-sxm", "llama-3.1-70b", 2, 1, 7),
                      "--pp-microbatches: with pp 1 (one stage) only 0 or 1 is allowed, got 7");
    const PreparedScenario pa(a), pb(b);
    CHECK(pb.pipe.sigma == 1.0);
    CHECK(pb.pipe.per_sequence == 1.0);
    CHECK(pb.pipe.offload_share == 1.0);
    CHECK(pb.pipe.capacity_scale == 1.0);
    CHECK(pb.pipe.transfer_latency == 0.0);
    CHECK(pb.pipe.transfer_per_sequence == 0.0);
    for (double f : {0.0, 0.5}) {
        const ServingPoint x = evaluate(pa, f, 0.0), y = evaluate(pb, f, 0.0);
        CHECK(x.throughput == y.throughput);
        CHECK(x.batch == y.batch);
        CHECK(x.tpot == y.tpot);
        CHECK(x.ttft == y.ttft);
    }
}

TEST_CASE("one micro-batch: the stages take turns, the cycle is the group's step plus one transfer", "[pp]") {
    // Llama-3.1-70B (80 layers, hidden 8192) on TP2 H100s: 2 stages of 40 layers, no imbalance.
    const Scenario s1 = on("h100-sxm", "llama-3.1-70b", 2, 1), s2 = on("h100-sxm", "llama-3.1-70b", 2, 2, 1);
    const PreparedScenario one(s1), two(s2);  // they point at s1 and s2
    CHECK(two.pipe.imbalance == 1.0);
    CHECK(two.pipe.sigma == 1.0);  // max(1, 1 x 1 / 2)
    CHECK(two.pipe.per_sequence == 1.0);
    for (double b : {1.0, 16.0, 64.0}) CHECK(step_at(two, b) == Approx(step_at(one, b) + 10e-6 + b * kTp2PerSeq).epsilon(1e-12));
    // The bubble: at the same batch a replica of 4 GPUs serves what 2 GPUs did, half the tokens/s per GPU (less the transfer).
    const double per_gpu_one = 16.0 / step_at(one, 16.0) / 2.0, per_gpu_two = 16.0 / step_at(two, 16.0) / 4.0;
    CHECK(per_gpu_two < 0.5 * per_gpu_one);
    CHECK(per_gpu_two > 0.49 * per_gpu_one);
}

TEST_CASE("pp micro-batches: the cycle at B is the group's step at B/pp plus the transfers, no bubble", "[pp]") {
    const Scenario s1 = on("h100-sxm", "llama-3.1-70b", 2, 1), s2 = on("h100-sxm", "llama-3.1-70b", 2, 2);
    const PreparedScenario one(s1), two(s2);
    CHECK(two.pipe.microbatches == 2.0);
    CHECK(two.pipe.per_sequence == 0.5);
    for (double b : {2.0, 32.0, 128.0})
        CHECK(step_at(two, b) == Approx(step_at(one, b / 2) + 10e-6 + b / 2 * kTp2PerSeq).epsilon(1e-12));
    // Twice the HBM, the weights held once: more room for KV than twice one group's.
    CHECK(two.sys.hbm_capacity.raw() == 2.0 * one.sys.hbm_capacity.raw());
    CHECK(two.hbm_free_bytes() > 2.0 * one.hbm_free_bytes());
    CHECK(evaluate(two, 0.0, 0.0).batch > evaluate(one, 0.0, 0.0).batch);
}

TEST_CASE("the activation transfer by hand: NVLink inside the domain, the network across it", "[pp]") {
    CHECK(network_boundaries(8, 1, 8) == 0);
    CHECK(network_boundaries(2, 8, 8) == 1);  // one 8-GPU stage per HGX box
    CHECK(network_boundaries(9, 8, 72) == 0);  // nine TP8 stages in an NVL72 rack
    CHECK(network_boundaries(4, 4, 8) == 1);  // two stages per box: 1 of 3 boundaries leaves it
    // TP4 x PP4 on H100s: 2 boundaries on NVLink (5 us each), 1 on the 50 GB/s network (14 us), 4 micro-batches;
    // each rank sends a quarter of kBytes and the stage all-gathers the other 3/4 (5 us) on NVLink.
    const Scenario s = on("h100-sxm", "llama-3.1-70b", 4, 4);
    const PreparedScenario ps(s);
    CHECK(ps.pipe.boundaries_nvlink == 2);
    CHECK(ps.pipe.boundaries_network == 1);
    CHECK(ps.pipe.transfer_latency == Approx(2 * (5e-6 + 5e-6) + (14e-6 + 5e-6)).epsilon(1e-12));
    const double gather = 0.75 * kBytes * kNv;
    const double nvlink = kBytes / 4 * kNv + gather, network = kBytes / 4 / 50e9 + gather;
    CHECK(ps.pipe.transfer_per_sequence == Approx((2 * nvlink + network) / 4).epsilon(1e-12));
}

TEST_CASE("a prefill's TTFT carries its A tokens' activations over every stage boundary", "[pp]") {
    // TP4 x PP4 on H100s (boundaries above): per token, 2 NVLink boundaries of kBytes/4 + 3/4 kBytes gathered,
    // 32,768 B / 360 GB/s = 91.02 ns each, and 1 network boundary, 8,192 B / 50 GB/s + 24,576 B / 360 GB/s =
    // 232.11 ns: 414.15 ns per token. A 2,000-token prefill: 39 us + 2,000 x 414.15 ns = 0.8673 ms.
    const char* w = "s_cached=0,a_append=2000,o_output=100,idle_gap=0";
    const Scenario s = on("h100-sxm", "llama-3.1-70b", 4, 4, 0, 1, w);
    const PreparedScenario ps(s);
    CHECK(prefill_transfer(ps.pipe, 2000) == Approx(8.673022e-4).epsilon(1e-6));
    CHECK(ps.lines.transfer[0] == prefill_transfer(ps.pipe, 2000));
    const MixDemand md = mix_demand(ps, 0.0);
    const PrefillDemand& q = md.pre[0];
    CHECK(q.gpu_part - (std::max(q.gpu_compute, q.gpu_hbm) + q.gpu_comm + q.ep_comm) == Approx(8.673022e-4).epsilon(1e-6));
    CHECK(evaluate(ps, 0.0, 0.0).ttft == Approx(q.gpu_part).epsilon(1e-12));  // one class, KV on the GPU
    // No pipeline, no transfer; no prefill tokens, none either.
    const Scenario flat = on("h100-sxm", "llama-3.1-70b", 4, 1, 0, 1, w);
    CHECK(PreparedScenario(flat).lines.transfer[0] == 0.0);
    CHECK(prefill_transfer(ps.pipe, 0) == 0.0);
}

TEST_CASE("stage imbalance when the layers do not divide: the busiest stage sets the pace and the capacity", "[pp]") {
    // DeepSeek-V3's 61 layers over 4 stages: 16, 15, 15, 15. ι = 4 x 16 / 61.
    const Scenario s1 = on("gb200", "deepseek-v3", 8, 1), s4 = on("gb200", "deepseek-v3", 8, 4);
    const PreparedScenario one(s1), four(s4);
    CHECK(four.pipe.imbalance == Approx(64.0 / 61).epsilon(1e-15));
    CHECK(four.pipe.sigma == Approx(64.0 / 61).epsilon(1e-15));  // 4 micro-batches: max(1, 4 x ι / 4)
    CHECK(four.pipe.per_sequence == Approx(16.0 / 61).epsilon(1e-15));
    CHECK(four.pipe.offload_share == Approx(16.0 / 61).epsilon(1e-15));
    CHECK(four.sys.hbm_capacity.raw() == Approx(one.sys.hbm_capacity.raw() * 61 / 16).epsilon(1e-15));
    // Llama's 80 layers over 3 stages: 27, 27, 26; one micro-batch stays a trip through all (σ = 1).
    const Scenario s3 = on("h100-sxm", "llama-3.1-70b", 2, 3, 1);
    const PreparedScenario three(s3);
    CHECK(three.pipe.imbalance == Approx(81.0 / 80).epsilon(1e-15));
    CHECK(three.pipe.sigma == 1.0);
}

TEST_CASE("dp replicas and the tp name of the group", "[pp][dp]") {
    const Scenario s = on("h100-sxm", "llama-3.1-70b", 2, 2, 0, 4);
    CHECK(s.hardware.deployment.gpus == 2);
    CHECK(replica_gpus(s.hardware) == 4);
    CHECK(deployment_gpus(s.hardware) == 16);
    // A replica's numbers do not depend on how many there are.
    const Scenario one_replica = on("h100-sxm", "llama-3.1-70b", 2, 2);
    const PreparedScenario ps(s), ps1(one_replica);
    const ServingPoint x = evaluate(ps, 0.0, 0.0), y = evaluate(ps1, 0.0, 0.0);
    CHECK(x.throughput == y.throughput);
    io::ScenarioInputs in;
    in.set("tp", "4");
    in.set("gpus", "2");
    CHECK_THROWS_WITH(io::build_scenario(in), Catch::Contains("--tp: names the --gpus group"));
    in.set("gpus", "4");
    CHECK(io::build_scenario(in).scenario.hardware.deployment.gpus == 4);
}

TEST_CASE("the operating point's step is the pipeline's cycle too", "[pp][point]") {
    const char* short_calls = "s_cached=0,a_append=1000,o_output=200,idle_gap=0";  // 16 of them fit in TP2's HBM
    const Scenario s1 = on("h100-sxm", "llama-3.1-70b", 2, 1, 0, 1, short_calls),
                   s2 = on("h100-sxm", "llama-3.1-70b", 2, 2, 1, 1, short_calls),
                   s2m = on("h100-sxm", "llama-3.1-70b", 2, 2, 0, 1, short_calls);
    const PreparedScenario one(s1), two(s2), piped(s2m);
    LoadSpec load;
    load.mode = LoadMode::batch;
    load.value = 16;
    load.prefill = PrefillMode::separate;
    const OperatingPoint a = operating_point(one, load, 0.0, 0.0), b = operating_point(two, load, 0.0, 0.0);
    CHECK(b.batch == Approx(a.batch).epsilon(1e-12));
    CHECK(b.step_bare == Approx(a.step_bare + 10e-6 + a.batch * kTp2PerSeq).epsilon(1e-12));
    REQUIRE(a.fits);
    CHECK(b.throughput_per_gpu < 0.5 * a.throughput_per_gpu);  // 4 GPUs serve what 2 did, less the transfer
    CHECK(b.throughput_per_gpu > 0.49 * a.throughput_per_gpu);
    // Its TTFT is the fluid model's prefill trip, boundary transfers included, and the trip's elementwise
    // kernels, plus the residual of what the pipeline runs when it arrives: a cycle T_b, or one of the x = 16/199
    // prefill trips a cycle, each holding it for q = σ/m of the trip.
    const double act = two.scenario->mix.entries[0].cls.a_append * two.mc.act_bytes_per_token / two.sys.hbm_bandwidth.raw();
    const double tau = mix_demand(two, 0.0).pre[0].gpu_part + act, x = 16.0 / 199.0, q = two.pipe.per_sequence * tau;
    const double tb = b.step_bare;
    CHECK(b.ttft == Approx(tau + (tb * tb + x * q * q) / (2 * (tb + x * q))).epsilon(1e-12));
    // Two micro-batches of 8: the cycle is one group's step at 8 plus the transfers of 16 tokens.
    load.value = 8;
    const OperatingPoint half = operating_point(one, load, 0.0, 0.0);
    load.value = 16;
    const OperatingPoint c = operating_point(piped, load, 0.0, 0.0);
    CHECK(c.step_bare == Approx(half.step_bare + 10e-6 + 16 * kTp2PerSeq / 2).epsilon(1e-12));
    // Its all-reduces are the ones the cycle charges: one group's at 8, not the whole batch's at once.
    CHECK(c.step_allreduce == Approx(half.step_allreduce).epsilon(1e-12));
    CHECK(b.step_allreduce == Approx(a.step_allreduce).epsilon(1e-12));  // one micro-batch: the stages take turns
    // One client: one micro-batch holds it, the cycle is one trip (one group's step plus the transfers), not less.
    load.value = 1;
    CHECK(operating_point(piped, load, 0.0, 0.0).step_bare ==
          Approx(operating_point(one, load, 0.0, 0.0).step_bare + 10e-6 + kTp2PerSeq).epsilon(1e-12));
}

TEST_CASE("a bad pipeline: more stages than layers", "[pp]") {
    io::ScenarioInputs in;
    in.set("model", "llama-3.1-8b");  // 32 layers
    in.set("pp", "33");
    CHECK_THROWS_WITH(io::build_scenario(in), Catch::Contains("--pp: at most the model's layers (32), got 33"));
}

TEST_CASE("a stage wider than the NVLink domain gathers over the network too: half its hierarchical all-reduce", "[pp]") {
    // TP16 stages on H100 (domains of 8): the one boundary crosses the network (50 GB/s, 14 us); each of the
    // 16 ranks sends 1/16 of the 32,768 B, then the stage all-gathers them hierarchically.
    const Scenario s = on("h100-sxm", "llama-3.1-70b", 16, 2);
    const Pipeline p = pipeline_of(s.hardware, s.model);
    REQUIRE(p.boundaries_network == 1);
    const double gather = 0.5 * (2.0 * 7 / 8 / (0.8 * 450e9) + 2.0 * 0.5 / (8 * 50e9)) * kBytes;
    CHECK(p.transfer_per_token == Approx(kBytes / 16 / 50e9 + gather).epsilon(1e-12));
    CHECK(p.transfer_latency == Approx(14e-6 + (5e-6 + 2 * 14e-6)).epsilon(1e-12));
}

TEST_CASE("pipelined passes: the busiest stage's share of one group's pass plus one boundary's send", "[pp]") {
    // 80 layers in 3 stages: ι = 3·27/80; two NVLink boundaries.
    const Scenario three = on("h100-sxm", "llama-3.1-70b", 2, 3), flat = on("h100-sxm", "llama-3.1-70b", 2, 1);
    const PreparedScenario ps(three);
    const Pipeline& p = ps.pipe;
    REQUIRE(p.pp == 3);
    const double iota = 3.0 * 27 / 80;
    CHECK(p.imbalance == Approx(iota).epsilon(1e-12));
    // One boundary: α (the all-reduce's 5 us and the all-gather's 5 us) plus 1000 tokens at kTp2PerSeq each.
    CHECK(pipelined_pass(p, 0.3, 1000) == Approx(iota / 3 * 0.3 + 10e-6 + 1000 * kTp2PerSeq).epsilon(1e-9));
    // One stage: the pass itself.
    CHECK(pipelined_pass(PreparedScenario(flat).pipe, 0.3, 1000) == 0.3);
}
