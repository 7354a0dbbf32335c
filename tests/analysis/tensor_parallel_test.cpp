// SPDX-License-Identifier: MIT
#include "kvroof/analysis/tensor_parallel.hpp"

#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/layer_offload.hpp"
#include "kvroof/analysis/prefill_study.hpp"

using namespace kvroof;

namespace {
// The tiny model on 1 TB/s of HBM.
PrefillSetup tiny_prefill(int gpus) { return test::tiny_prefill(gpus, terabytes_per_s(1)); }
}  // namespace

TEST_CASE("tensor parallel at one GPU is the identity", "[tp]") {
    const TensorParallel one{1};
    CHECK(one.pooled(gigabytes_per_s(7)) == gigabytes_per_s(7));
    CHECK(one.pooled(teraflops(3)) == teraflops(3));
    CHECK(one.shard(gibibytes(5)) == gibibytes(5));
}

TEST_CASE("tensor parallel pools rates and shards amounts by N", "[tp]") {
    const TensorParallel four{4};
    CHECK(four.pooled(gigabytes_per_s(7)).raw() == Approx(28e9));
    CHECK(four.shard(gigabytes(8)).raw() == Approx(2e9));
    CHECK_THROWS_WITH(TensorParallel{0}.check_validity("tp"), "tp: must be >= 1, got 0");
}

TEST_CASE("prefill at one GPU is analyse_prefill of the per-GPU inputs", "[tp][prefill]") {
    const PrefillStudy st = prefill_study(tiny_prefill(1), PrefillQuestions{});
    const ModelSpec m = test::tiny_model();
    const KappaResult direct = analyse_prefill(
        KappaInputs{prefill_flop_per_token(m), kv_bytes_per_token(m, DType::bf16), gigabytes_per_s(1), teraflops(1), 4000, 2, 0});
    CHECK(st.result.kappa_crit == direct.kappa_crit);
    CHECK(st.result.t_link == direct.t_link);
    CHECK(st.result.t_gpu == direct.t_gpu);
    CHECK(st.vram.raw() == Approx(9e9 - weight_bytes(m, DType::bf16).raw()));
}

TEST_CASE("prefill over N GPUs: kappa unchanged, times divided by N, VRAM pooled", "[tp][prefill]") {
    // KV heads that split evenly over the group: one copy of each token's KV, a 1/N share on each GPU.
    PrefillSetup s1 = tiny_prefill(1), s8 = tiny_prefill(8);
    s1.model.heads = s1.model.kv_heads = s8.model.heads = s8.model.kv_heads = 8;
    const PrefillStudy one = prefill_study(s1, PrefillQuestions{});
    const PrefillStudy eight = prefill_study(s8, PrefillQuestions{});
    CHECK(eight.kv_copies == 1.0);
    CHECK(eight.result.kappa_crit == Approx(one.result.kappa_crit));
    CHECK(eight.result.kappa_ratio == one.result.kappa_ratio);
    CHECK(eight.result.regime == one.result.regime);
    CHECK(eight.result.t_link == Approx(one.result.t_link / 8));
    CHECK(eight.result.t_gpu == Approx(one.result.t_gpu / 8));
    CHECK(eight.result.link_share == Approx(one.result.link_share));
    const double weights = weight_bytes(s8.model, DType::bf16).raw();
    CHECK(eight.vram.raw() == Approx(8 * 9e9 - weights));
}

TEST_CASE("prefill over N GPUs with one KV head: every GPU holds and reloads the whole KV", "[tp][prefill]") {
    // The tiny model's one KV head cannot be split: 8 copies, each over its own GPU's link, so the
    // reload takes as long as on one GPU while the compute divides by 8 (κ_crit 8 times smaller).
    const PrefillStudy one = prefill_study(tiny_prefill(1), PrefillQuestions{});
    const PrefillStudy eight = prefill_study(tiny_prefill(8), PrefillQuestions{});
    CHECK(eight.kv_copies == 8.0);
    CHECK(eight.b_kv.raw() == 8 * one.b_kv.raw());
    CHECK(eight.result.kappa_crit == Approx(one.result.kappa_crit / 8));
    CHECK(eight.result.t_link == Approx(one.result.t_link));
    CHECK(eight.result.t_gpu == Approx(one.result.t_gpu / 8));
    // The scheduler counts the copies too: N_max is the pooled VRAM over 8 copies of each request's KV.
    REQUIRE(eight.scheduler);
    REQUIRE(one.scheduler);
    CHECK(eight.scheduler->n_max == Approx(one.scheduler->n_max * eight.vram.raw() / one.vram.raw() / 8));
}

TEST_CASE("layer offload over N ranks: each rank holds and moves 1/N of a layer", "[tp][layers]") {
    Checkpoint c;
    c.name = "hand";
    c.layers = 10;
    c.layer_bytes = gibibytes(1);
    c.non_layer_bytes = gibibytes(0.5);
    c.total_bytes = gibibytes(10);
    const LayerHost h{gibibytes(4.5), BytesPerSecond(kGibi), milliseconds(100), std::nullopt, std::nullopt};
    const LayerOffloadRow one = layer_offload(c, h, 1);
    const LayerOffloadRow two = layer_offload(c, h, 2);
    CHECK(one.layer_rank == c.layer_bytes);
    CHECK(two.layer_rank.raw() == Approx(kGibi / 2));
    CHECK(one.resident == 4);  // floor((4.5 − 0.5) / 1)
    CHECK(two.resident == 8);  // floor((4.5 − 0.5) / 0.5)
    CHECK(decode_target(c, h, 2, 1.0).max_offloaded == 2 * decode_target(c, h, 1, 1.0).max_offloaded);
}

TEST_CASE("the layer-offload core names the knob, not the flag", "[tp][layers]") {
    Checkpoint c;
    c.name = "hand";
    c.layers = 10;
    c.layer_bytes = gibibytes(1);
    const LayerHost h{gibibytes(4.5), BytesPerSecond(kGibi), milliseconds(100), std::nullopt, std::nullopt};
    CHECK_THROWS_WITH(layer_offload(c, h, 0), "tp: must be >= 1, got 0");
    CHECK_THROWS_WITH(layer_offload(c, h, 1, 11), "offload-layers: must be <= the checkpoint's 10 layers, got 11");
    CHECK_THROWS_WITH(decode_target(c, h, 0, 1.0), "tp: must be >= 1, got 0");
}
