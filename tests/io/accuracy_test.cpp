// SPDX-License-Identifier: MIT
// The accuracy table: its data holds what the issue asks of it, and its errors
// are pinned, so a change that makes kvroof worse against measurements fails.
#include "kvroof/io/accuracy.hpp"

#include "kvroof/analysis/point_study.hpp"
#include "kvroof/analysis/verdict.hpp"
#include "kvroof/io/presets.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

namespace kvroof::io {

TEST_CASE("the measured set: 30+ points, 4+ publishers, 3+ GPUs, 3+ models with an MoE, no Llama-3.1/3.3-70B", "[accuracy]") {
    const auto points = measured_points();
    std::set<std::string> sources, gpus, models;
    for (const auto& p : points) {
        sources.insert(p.source_key);
        gpus.insert(p.gpu);
        models.insert(p.model);
        CHECK(p.model != "llama-3.1-70b");
        CHECK(p.model != "llama-3.3-70b");
        CHECK(p.isl > 0);
        CHECK(p.osl > 0);
        CHECK((p.itl || p.ttft || p.throughput));
    }
    CHECK(points.size() >= 30);
    CHECK(sources.size() >= 4);
    CHECK(gpus.size() >= 3);
    CHECK(models.size() >= 3);
    CHECK((models.count("mixtral-8x7b") + models.count("qwen3-30b-a3b") + models.count("deepseek-v3")) > 0);
}

TEST_CASE("the engine limits a point states bound the requests kvroof runs at it", "[accuracy]") {
    const AccuracyTable t = accuracy_table(measured_points());
    std::size_t capped = 0, peak = 0;
    for (const auto& r : t.rows) {
        const MeasuredPoint& m = r.measured;
        if (m.load == "max_throughput" && m.num_requests) {
            ++capped;
            CHECK(r.kvroof.running <= *m.num_requests * (1 + 1e-9));  // a run never holds more than it sent
        }
        if (m.max_seqs && m.load != "batch") CHECK(r.kvroof.running <= *m.max_seqs * (1 + 1e-9));
        if (m.peak_admission) {
            ++peak;
            // Peak admission: every running request's KV at ISL+OSL fits beside the weights, so the
            // fluid occupancy (context grows from ISL to ISL+OSL) is at most the HBM and is below it.
            CHECK(r.kvroof.hbm_used <= r.kvroof.hbm_capacity * (1 + 1e-9));
        }
    }
    CHECK(capped == 11);  // GPUStack's 9 max-throughput runs (100, 500 or 1000 requests) and v0.14's two QPS=INF runs (500) ...
    CHECK(peak == 35);  // ... and every TensorRT-LLM perf-overview point (GUARANTEED_NO_EVICT)
}

TEST_CASE("a static batch whose sessions do not all fit at once runs those that fit and queues the rest", "[accuracy]") {
    const AccuracyTable t = accuracy_table(measured_points());
    std::size_t batches = 0, queued = 0;
    for (const auto& r : t.rows) {
        const MeasuredPoint& m = r.measured;
        if (m.load != "batch") continue;
        ++batches;
        CHECK(r.kvroof.fits);  // predicted where it fits: in lockstep, or as a closed loop with a queue
        // Every static batch here is Llama-2-7B FP16 on one A100-80G: 524,288 B of KV a token, and 80 GB less the
        // 2 GB reserve and 13.48 GB of weights free. At batch 64 and 2,048 + 2,048 tokens the sessions hold 137 GB
        // at their end, more than the 64.5 GB free.
        const bool all_at_once = m.load_value * (m.isl + m.osl) * 524288.0 <= 80e9 - 2e9 - 13.48e9;
        if (all_at_once) {
            CHECK(r.kvroof.batch == Approx(m.load_value));
            CHECK_FALSE(r.kvroof.memory_queued);
        } else {
            ++queued;
            CHECK(r.kvroof.memory_queued);
            CHECK(r.kvroof.running < m.load_value);
            CHECK(r.kvroof.concurrency == Approx(m.load_value));
        }
        CHECK(r.kvroof_itl == r.kvroof.step_bare);  // the source's median per-token latency: the decode step alone
        CHECK_FALSE(r.ttft_compared);
    }
    CHECK(batches == 6);
    CHECK(queued == 1);
}

namespace {
// serving_points.json with its engine_kernels replaced by `kernels`.
nlohmann::json with_kernels_value(nlohmann::json kernels) {
    nlohmann::json doc = parse_json_text("serving_points", embedded_file("serving_points"));
    doc["engine_kernels"] = std::move(kernels);
    return doc;
}
// A vector, not a json: a braced list of one json is an array under g++ but a copy of the element under clang.
nlohmann::json with_kernels(const std::vector<nlohmann::json>& rules) { return with_kernels_value(rules); }
nlohmann::json rule(const char* id, const char* engine, const char* dtype, std::vector<std::string> gpus, double eta) {
    return {{"id", id},      {"engine", engine}, {"weight_dtype", dtype}, {"gpus", std::move(gpus)},
            {"kernel", "k"}, {"source", "s"},    {"eta_moe_gemm", eta},   {"range", {eta / 2, eta * 2}}};
}
const MeasuredPoint& by_id(const std::vector<MeasuredPoint>& pts, std::string_view id) {
    return *std::find_if(pts.begin(), pts.end(), [&](const MeasuredPoint& m) { return m.id == id; });
}
}  // namespace

TEST_CASE("an engine kernel rule sets the expert GEMMs' efficiency of the points it covers and of no other", "[accuracy]") {
    const auto pts = measured_points_from("f", with_kernels({rule("r", "vLLM", "fp8", {"h200"}, 0.2)}));
    std::size_t covered = 0;
    for (const auto& m : pts) {
        const bool match = m.engine == "vLLM" && m.weight_dtype == "fp8" && m.gpu == "h200";
        CHECK(m.eta_moe_gemm.has_value() == match);
        if (!match) continue;
        ++covered;
        CHECK(m.moe_kernel == "r");
        CHECK(point_scenario(m).hardware.gpu.eta_moe_gemm == 0.2);
    }
    CHECK(covered == 4);  // GPUStack's four DeepSeek-R1 FP8 runs on 8 H200s under vLLM
    // The dtype is matched as parsed, so "FP8" in a rule covers the points' "fp8".
    const auto upper = measured_points_from("f", with_kernels({rule("u", "vLLM", "FP8", {"h200"}, 0.2)}));
    CHECK(std::count_if(upper.begin(), upper.end(), [](const MeasuredPoint& m) { return m.moe_kernel == "u"; }) == 4);
    // Slower expert GEMMs lengthen a MoE point's step: its ITL grows, its throughput falls.
    const MeasuredPoint& m = by_id(pts, "gpustack-dsr1-h200x8-vllm-fp8-tp8-4000-200");
    MeasuredPoint plain = m;
    plain.eta_moe_gemm.reset();
    const AccuracyRow a = predict_row(m, point_scenario(m)), b = predict_row(plain, point_scenario(plain));
    CHECK(a.kvroof_itl > b.kvroof_itl);
    CHECK(a.kvroof.throughput < b.kvroof.throughput);
    // A rule names an engine, not a model: a dense point of that engine is not given the figure.
    const auto dense = measured_points_from("f", with_kernels({rule("d", "TensorRT-LLM", "fp8", {"h200"}, 0.2)}));
    CHECK_FALSE(by_id(dense, "trt10-llama31-8b-h200-fp8-128-128").eta_moe_gemm);
    CHECK(by_id(dense, "trt10-qwen3-235b-h200-fp8-tp8-1000-1000").moe_kernel == "d");
}

TEST_CASE("a point's tp, pp and ep are its deployment: gpus is tp x pp", "[accuracy]") {
    // They were read by no one: a pipelined or expert-parallel run was modelled as one TP group of all its GPUs.
    nlohmann::json doc = nlohmann::json::parse(R"({"points":[{"id":"a","source":{"key":"k","url":"u"},"engine":"e",
        "engine_version":null,"gpu":"h200","gpus":8,"tp":4,"pp":2,"ep":2,"model":"qwen3-235b-a22b","weight_dtype":"fp8",
        "kv_dtype":null,"isl":1000,"osl":1000,"prefix":0,"load":{"mode":"concurrency","concurrency":8},
        "measured":{"throughput_tok_s":100}}]})");
    const MeasuredPoint m = measured_points_from("f", doc).front();
    const DeploymentSpec d = point_scenario(m).hardware.deployment;
    CHECK(d.gpus == 4);
    CHECK(d.pp == 2);
    CHECK(d.ep == 2);
    doc["points"][0]["tp"] = 8;  // 8 x 2 is not the 8 GPUs
    CHECK_THROWS_WITH(measured_points_from("f", doc), "f: point a: tp/pp: tp x pp must be gpus (one replica's GPUs)");
    doc["points"][0].erase("tp");  // tp defaults to gpus / pp
    CHECK(point_scenario(measured_points_from("f", doc).front()).hardware.deployment.gpus == 4);
}

TEST_CASE("a point whose model does not fit its GPUs is refused, not predicted as if it did", "[accuracy]") {
    // Llama-3.1-405B in FP8 is 405.8 GB of weights: one H100 (80 GB less its 2 GB reserve) cannot hold it. Such a
    // point was predicted as if its weights were resident (6.97 tok/s) and its residual skewed validate's fit.
    nlohmann::json doc = nlohmann::json::parse(R"({"points":[{"id":"big","source":{"key":"k","url":"u"},"engine":"e",
        "engine_version":null,"gpu":"h100-sxm","gpus":1,"model":"llama-3.1-405b","weight_dtype":"fp8",
        "kv_dtype":"fp8","isl":128,"osl":128,"prefix":0,"load":{"mode":"concurrency","concurrency":8},
        "measured":{"throughput_tok_s":100}}]})");
    CHECK_THROWS_WITH(measured_points_from("f", doc),
                      Catch::Contains("f: point big: llama-3.1-405b at fp8 and fp8 KV on 1 x h100-sxm does not fit: 405.8 GB "
                                      "of weights against 78.0 GB of HBM"));
    doc["points"][0]["gpus"] = 8;  // eight hold it, and a request of 256 tokens beside it
    CHECK(measured_points_from("f", doc).size() == 1);
}

TEST_CASE("a bad engine kernel rule is an input error naming the rule", "[accuracy]") {
    auto fails_in = [](const nlohmann::json& doc, const std::string& what) {
        try {
            (void)measured_points_from("f.json", doc);
        } catch (const InputError& e) {
            CHECK_THAT(std::string(e.what()), Catch::Contains(what));
            return;
        }
        FAIL("no error for " << what);
    };
    auto fails_with = [&](const std::vector<nlohmann::json>& rules, const std::string& what) {
        fails_in(with_kernels(rules), what);
    };
    fails_with({rule("r", "vLLM", "fp8", {"h200"}, 0)}, "f.json: engine kernel r: eta_moe_gemm: must be in [0.001, 1]");
    nlohmann::json narrow = rule("n", "vLLM", "fp8", {"h200"}, 0.2);
    narrow["range"] = {0.3, 0.4};
    fails_with({narrow}, "engine kernel n: range: must hold eta_moe_gemm");
    fails_with({rule("e", "vLLM", "fp8", {}, 0.2)}, "engine kernel e: gpus: must name at least one GPU preset");
    fails_with({rule("a", "vLLM", "fp8", {"h200"}, 0.2), rule("b", "vLLM", "fp8", {"h200"}, 0.3)},
               "engine kernels a and b both match");
    fails_in(with_kernels_value(nlohmann::json::object()), "f.json: engine_kernels: must be an array");
    fails_with({rule("g", "vLLM", "fp8", {"h2000"}, 0.2)}, "engine kernel g: gpus: unknown hardware preset 'h2000'");
    fails_with({rule("t", "vLLM", "fp9", {"h200"}, 0.2)}, "engine kernel t: ");
    fails_with({rule("r", "vLLM", "fp8", {"h200"}, 0.2), rule("r", "SGLang", "fp8", {"h200"}, 0.2)},
               "engine kernel r: id: used by an earlier rule");
    nlohmann::json wide = rule("w", "vLLM", "fp8", {"h200"}, 0.2);
    wide["range"] = {-5, 40};
    fails_with({wide}, "engine kernel w: range: both ends must be in [0.001, 1]");
    nlohmann::json numbered = rule("n", "vLLM", "fp8", {"h200"}, 0.2);
    numbered["id"] = 5;
    fails_with({numbered}, "engine kernel 5: ");  // a non-text id is named, not a crash
    nlohmann::json no_source = rule("x", "vLLM", "fp8", {"h200"}, 0.2);
    no_source.erase("source");
    fails_with({no_source}, "engine kernel x: source: missing");
    // Mistyped fields name the key and what it must be, not nlohmann's words ("cannot use at() with number").
    nlohmann::json typed = rule("y", "vLLM", "fp8", {"h200"}, 0.2);
    typed["range"] = {0.1, "x"};
    fails_with({typed}, "engine kernel y: range: must be [low, high], two numbers, got [0.1,\"x\"]");
    typed = rule("z", "vLLM", "fp8", {"h200"}, 0.2);
    typed["gpus"] = {5};
    fails_with({typed}, "engine kernel z: gpus: must be an array of strings, got [5]");
    fails_with({nlohmann::json(5)}, "engine kernel ?: must be an object, got 5");
}

TEST_CASE("accuracy at the defaults is pinned: kvroof beats the plain roofline, and its MAPE may not grow", "[accuracy]") {
    const AccuracyTable t = accuracy_table(measured_points());
    // Pinned at the values outputs/accuracy.md shows, rounded up (to the next percent until the elementwise
    // traffic, to the next 0.1 % since).
    // The issue's goal is 15 % for ITL and throughput; see docs/model.md "Accuracy" for what is still missing.
    CHECK(t.itl_one_gpu.n == 18);
    CHECK(t.throughput_one_gpu.n == 49);
    // With the engine limits each point states (the test above): ITL 0.312 -> 0.197 (single GPU), 0.413 -> 0.289 (all);
    // throughput 0.352 -> 0.344 (single GPU), 0.605 -> 0.620 (all: vLLM's token budget, docs/model.md "Accuracy").
    // The v1.0 points' FP8 KV cache and each engine's KV memory share (data/measurements/README.md) then moved
    // throughput 0.344 -> 0.529 (single GPU) and 0.620 -> 0.725 (all), ITL 0.289 -> 0.333 (all): conditions set
    // right, not a model change; what they expose is docs/model.md "Accuracy".
    // Chunked prefill in whole pieces (docs/model.md "Operating points") then: ITL 0.197 -> 0.164 (single GPU),
    // 0.333 -> 0.309 (all); throughput 0.529 -> 0.504 (single GPU), 0.725 -> 0.703 (all).
    // The engine MoE kernels (data/measurements/README.md, "Engine MoE kernels") then: throughput 0.471 -> 0.311
    // (single GPU), 0.647 -> 0.500 (all); ITL 0.299 -> 0.283 (all).
    // 0.164 before the elementwise traffic, 0.161 before a run sent at once ran in one wave (docs/model.md, "One wave"),
    // 0.152 before a static batch that does not fit ran as a closed loop (the test above), 0.127 before ITL was
    // the step a request sees (docs/model.md, "What one request sees"); 0.126 before attention ran in its own math
    // (docs/model.md, "Attention math": the vLLM FP8-KV point, attended in FP8, moves from -3 % to -5 %)
    CHECK(t.itl_one_gpu.mape_kvroof <= 0.127);
    // 0.504 before the MoE layer latency, 0.471 before the kernels, 0.311 before the elementwise traffic, 0.250
    // before the open-loop points' finite runs (docs/model.md, "A finite run"), 0.239 before one wave, 0.235 before
    // the static batch's queue, 0.234 before a finite run's drain was charged its bare decode steps (docs/model.md,
    // "A finite run": physics, not a fit; the open-loop points at 32 req/s, whose measured ITL kvroof under-predicts,
    // move up), 0.236 before the TensorRT-LLM points took the KV memory share their pages state (0.95, not 0.90:
    // data/measurements/README.md, "Engine limits"; a condition set right, not a model change)
    CHECK(t.throughput_one_gpu.mape_kvroof <= 0.241);
    // 0.465 before the tensor-parallel all-reduces, 0.309 before the MoE layer latency, 0.283 before the elementwise traffic,
    // 0.255 before one wave, 0.249 before the static batch's queue, 0.233 before attention ran in its own math, 0.230
    // before the SGLang DeepSeek-R1 point ran with the data-parallel attention its source states (-6 % -> -27 %)
    CHECK(t.itl.mape_kvroof <= 0.237);
    // 1.011 before the all-reduces, 0.702 before the MoE layer latency, 0.500 before the elementwise traffic,
    // 0.393 before the finite runs, 0.385 before one wave, 0.381 before the static batch's queue, 0.380 before ITL
    // was the step a request sees, 0.382 before the drain's bare steps, 0.383 before attention ran in its own math,
    // 0.376 before the stated KV memory share and data-parallel attention (conditions set right)
    CHECK(t.throughput.mape_kvroof <= 0.382);
    CHECK(t.itl.mape_kvroof < t.itl.mape_roofline);
    CHECK(t.itl_one_gpu.mape_kvroof < t.itl_one_gpu.mape_roofline);
    CHECK(t.throughput_one_gpu.mape_kvroof < t.throughput_one_gpu.mape_roofline);
    CHECK(t.throughput.mape_kvroof < t.throughput.mape_roofline);
    for (const auto& r : t.rows) {
        CHECK(r.kvroof.throughput > 0);
        CHECK(r.roofline.throughput > 0);
    }
}

TEST_CASE("the hold-out set: Llama-3.1/3.3-70B only, predicted at the same defaults, errors pinned", "[accuracy]") {
    const auto points = holdout_points();
    CHECK(points.size() == 25);
    for (const auto& p : points) CHECK(p.model == "llama-3.1-70b");
    const AccuracyTable t = accuracy_table(points);
    CHECK(t.throughput_one_gpu.n == 10);
    // 0.202 before the engine limits, 0.157 with them, 0.488 with the v1.0 points' FP8 KV and the KV memory share,
    // 0.349 with chunked prefill in whole pieces (found by tracing a hold-out point: not an independent check),
    // 0.289 with the elementwise traffic, 0.291 with ITL the step a request sees, 0.300 with the KV memory share
    // the TensorRT-LLM pages state (0.95)
    CHECK(t.throughput_one_gpu.mape_kvroof <= 0.300);
    // 0.508 before the tensor-parallel all-reduces, 0.269 before the engine limits, 0.249 with them, 0.413 with
    // the FP8 KV and the KV memory share, 0.343 with whole prefill pieces, 0.275 with the elementwise traffic, 0.262
    // with the open-loop points' finite runs, 0.253 with one wave, 0.257 with the drain's bare steps, 0.264 with the
    // stated KV memory share
    CHECK(t.throughput.mape_kvroof <= 0.264);
    CHECK(t.itl.n == 5);
    // 1.430 before the engine limits, 0.393 with them, 0.360 with whole pieces, 0.375 with the elementwise traffic
    // (of the five TP4 ITL points, the two at max load were already predicted slow, +14 % and +35 %, and the traffic
    // slows them more; the three under open-loop load, predicted fast, improve or hold)
    // One wave (docs/model.md, "One wave") then took it to 0.296: the two at max load are runs of 500 sent at once.
    CHECK(t.itl.mape_kvroof <= 0.297);
    CHECK(t.throughput_one_gpu.mape_kvroof < t.throughput_one_gpu.mape_roofline);
    CHECK(t.throughput.mape_kvroof < t.throughput.mape_roofline);
}

TEST_CASE("an operating point's stated error is the accuracy table's MAPE of its model family", "[accuracy]") {
    const AccuracyTable t = accuracy_table(measured_points());
    CHECK(t.itl_dense.n == 18);
    CHECK(t.throughput_dense.n == 38);
    CHECK(t.ttft_dense.n == 10);
    CHECK(t.itl_moe.n == 10);
    CHECK(t.throughput_moe.n == 25);
    CHECK(t.ttft_moe.n == 1);  // one point: not stated
    CHECK(std::isnan(kStatedErrorMoe.ttft));
    // The constants (analysis/point_study.hpp) are these figures at their printed digit: fail when they part.
    CHECK(t.itl_dense.mape_kvroof == Approx(kStatedErrorDense.itl).margin(0.0005));
    CHECK(t.throughput_dense.mape_kvroof == Approx(kStatedErrorDense.throughput).margin(0.0005));
    CHECK(t.ttft_dense.mape_kvroof == Approx(kStatedErrorDense.ttft).margin(0.0005));
    CHECK(t.itl_moe.mape_kvroof == Approx(kStatedErrorMoe.itl).margin(0.0005));
    CHECK(t.throughput_moe.mape_kvroof == Approx(kStatedErrorMoe.throughput).margin(0.0005));
    // A MoE run that does not state its expert GEMMs' efficiency is predicted at --eta-compute: its figures are
    // the table's with every point so (no engine kernel applied).
    auto unstated = measured_points();
    for (auto& m : unstated) m.eta_moe_gemm.reset();
    const AccuracyTable u = accuracy_table(unstated);
    CHECK(u.itl_moe.mape_kvroof == Approx(kStatedErrorMoeUnstated.itl).margin(0.0005));
    CHECK(u.throughput_moe.mape_kvroof == Approx(kStatedErrorMoeUnstated.throughput).margin(0.0005));
    CHECK(u.throughput_dense.mape_kvroof == t.throughput_dense.mape_kvroof);  // dense points never take a kernel figure
    // The families partition the points.
    CHECK(t.throughput_dense.n + t.throughput_moe.n == t.throughput.n);
    CHECK(t.itl_dense.n + t.itl_moe.n == t.itl.n);
    CHECK(t.ttft_dense.n + t.ttft_moe.n == t.ttft.n);
    // An operating point carries its family's figures.
    LoadSpec load;
    load.mode = LoadMode::batch;
    load.value = 8;
    Scenario dense = point_scenario(measured_points().front());
    CHECK(point_study(dense, load).stated_error.itl == kStatedErrorDense.itl);
    dense.model = load_model("--model", "qwen3-30b-a3b");
    CHECK(point_study(dense, load).stated_error.throughput == kStatedErrorMoeUnstated.throughput);
    dense.hardware.gpu.eta_moe_gemm = 0.2;
    CHECK(point_study(dense, load).stated_error.throughput == kStatedErrorMoe.throughput);
}

TEST_CASE("the VERDICT's MARGINAL line is the table's median error on a throughput ratio, not a chosen number", "[accuracy]") {
    const AccuracyTable t = accuracy_table(measured_points());
    CHECK(t.gain.pairs == 90);
    CHECK(t.gain.series == 14);
    // kGainUncertainty (analysis/verdict.hpp) is this figure at its printed digit: recompute it and fail when they part.
    CHECK(t.gain.median_kvroof == Approx(kGainUncertainty).margin(0.0005));
    CHECK(t.gain.median_kvroof < t.gain.median_roofline);
    // The hold-out: 0.146 before the engine limits, 0.220 with them, 0.109 with the v1.0 points' FP8 KV and the
    // KV memory share, 0.074 with whole prefill pieces, 0.049 with the elementwise traffic, 0.043 with the open-loop
    // points' finite runs, 0.041 with one wave, 0.040 with ITL the step a request sees, 0.048 with a finite run's
    // drain charged its bare decode steps (the QPS 16 point moves from +3 % to +12 %). Pinned so that it may not
    // grow unseen. 0.034 with the KV memory share the TensorRT-LLM pages state (0.95; data/measurements/README.md).
    const AccuracyTable h = accuracy_table(holdout_points());
    CHECK(h.gain.pairs == 21);
    CHECK(h.gain.median_kvroof <= 0.035);
    CHECK(h.gain.median_kvroof < h.gain.median_roofline);
}

}  // namespace kvroof::io
