// SPDX-License-Identifier: MIT
// Operating points (--batch, --concurrency): hand-checked steps, the peer
// case, Little's law and the limits of the chunked and separate prefill.
#include <catch2/catch.hpp>
#include <string>

#include "../test_support.hpp"
#include "kvroof/analysis/point_study.hpp"

namespace kvroof {
namespace {

// One class in a benchmark's words: isl input tokens (prefix of them cached), osl output.
Scenario bench(const char* hardware, const char* model, double isl, double osl, double prefix = 0,
               void (*edit)(io::ScenarioInputs&) = nullptr) {
    io::ScenarioInputs in;
    in.set("hardware", hardware);
    in.set("model", model);
    if (edit) edit(in);
    Scenario s = io::build_scenario(in).scenario;
    CallClass c;
    c.name = "bench";
    c.s_cached = prefix;
    c.a_append = isl - prefix;
    c.o_output = osl;
    s.mix = Mix{{MixEntry{c, 1.0}}};
    return s;
}

}  // namespace

TEST_CASE("peer case: Llama-2-70B fp16, batch 8, context 4096, H100 at eta 1: the step is the hand roofline", "[point]") {
    // Hand roofline (LLM-Viewer, llm-analysis, GenZ): (weights + B·S·kv) / HBM bandwidth.
    // Weights: 68.98B params minus the 0.26B input embedding (gathered) in fp16;
    // kv = 2·80·8·128·2 = 327,680 B/token; H100 SXM 3.35 TB/s per GPU.
    const std::string model = std::string(KVROOF_TEST_FIXTURES) + "/hf_llama_2_70b_config.json";
    for (int gpus : {1, 2}) {
        const Scenario s = bench("h100-sxm", model.c_str(), 4096, 2, 0, [](io::ScenarioInputs& in) {
            in.set("eta", "1");
            in.set("step-overhead", "0");
        });
        Scenario g = s;
        g.hardware.deployment.gpus = gpus;
        const PreparedScenario ps(g);
        const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::batch, 8, PrefillMode::separate), 0.0, 0.0);
        const double weights = 2.0 * (68.98e9 - 32000.0 * 8192.0);
        const double hand = (weights + 8 * 4096 * 327680.0) / (gpus * 3.35e12);
        // TP2 adds 2 all-reduces per layer of 8 tokens · 8192 · 2 B, each
        // α + 2(t−1)/t · bytes / (η · 450 GB/s), with the H100 preset's α = 5 µs and
        // η = 0.8: 160 · (5 + 0.364) µs = 0.858 ms (GenZ charges 1.17 ms, llm-analysis 1.28 ms).
        const double allreduce = gpus == 1 ? 0.0 : 160 * (5e-6 + 8 * 8192 * 2.0 / (0.8 * 450e9));
        // The elementwise kernels, 8 tokens of 2 B · (t · 160 blocks · 4h + 80 · 3I): a fused add + norm per block
        // on every GPU, the MLP activations split. 0.1 % of the step at one GPU, 0.19 % at two.
        const double act = 8 * 2.0 * (gpus * 160 * 4 * 8192.0 + 80 * 3 * 28672.0) / (gpus * 3.35e12);
        CHECK(p.batch == Approx(8.0));
        CHECK(p.step_allreduce == Approx(allreduce).margin(1e-15));
        CHECK(p.step_bare == Approx(hand + allreduce).epsilon(0.02));  // the goal: within 2 % of the hand roofline
        CHECK(p.step_bare - p.step_allreduce == Approx(hand + act).epsilon(0.001));
        CHECK(p.weights_fit == (gpus == 2));  // 138 GB of weights exceed one 80 GB H100
    }
}

TEST_CASE("a fixed batch's bare step: weights once, every sequence's KV at its mean context, plus the overhead", "[point]") {
    const Scenario s = bench("h200", "llama-3.1-8b", 1000, 201);
    const PreparedScenario ps(s);
    const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::batch, 16), 0.0, 0.0);
    // Decode token j reads S + j keys: mean S + O/2 = 1100.5, plus the token written.
    const double kv = 131072, bw = 0.85 * 4.8e12;
    const double w = ps.mc.weights_read(16).raw() / bw;
    // The elementwise kernels: per layer two fused add + RMSNorms (8h) and the gated MLP's activation (3I), 16-bit.
    const double act = 2.0 * 32 * (8 * 4096 + 3 * 14336);
    CHECK(p.step_bare == Approx(1.5e-3 + w + 16 * ((1100.5 + 1) * kv + act) / bw).epsilon(1e-9));
    CHECK(p.batch == Approx(16));
    CHECK(p.starts_per_step == Approx(16.0 / 200.0));  // each request decodes O − 1 steps
    // Output tokens: one per decoding sequence per step plus each request's first.
    CHECK(p.throughput == Approx(p.starts_per_step * 201 / p.itl).epsilon(1e-12));
    CHECK(p.itl >= p.step_bare);
}

TEST_CASE("closed loop: Little's law holds and more clients never lower throughput", "[point]") {
    const Scenario s = bench("h100-sxm", "llama-3.1-8b", 2000, 500);
    const PreparedScenario ps(s);
    double last = 0;
    for (double c : {1.0, 4.0, 32.0, 128.0, 512.0}) {
        for (PrefillMode m : {PrefillMode::chunked, PrefillMode::separate}) {
            const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::concurrency, c, m), 0.0, 0.0);
            // C = requests/s × (TTFT + (O − 1)·ITL): every client is in one request.
            CHECK(p.requests_per_s * (p.ttft + 499 * p.itl) == Approx(c).epsilon(1e-6));
            CHECK(p.batch < c);
            CHECK(p.ttft > 0);
            if (m == PrefillMode::chunked) {
                CHECK(p.throughput >= last * (1 - 1e-9));
                last = p.throughput;
            }
        }
    }
}

TEST_CASE("one client sees the bare roofline: batch below one, TTFT of a lone prefill", "[point]") {
    const Scenario s =
        bench("h100-sxm", "llama-3.1-8b", 2000, 500, 0, [](io::ScenarioInputs& in) { in.set("weight-dtype", "fp8"); });
    const PreparedScenario ps(s);
    const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::concurrency, 1), 0.0, 0.0);
    CHECK(p.batch < 1.0);
    CHECK(p.batch > 0.9);
    // Prefill of 2,000 tokens: 2·(8.03B − 0.53B embedding) FLOP each at the FP8 peak 0.7·1978.9 TFLOP/s,
    // hidden under nothing (one client): TTFT ≈ ½ step + the step carrying the prompt.
    const double prefill = 2000 * ps.mc.linear_per_token.raw() / (0.7 * 1978.9e12);
    CHECK(p.ttft > prefill);
    CHECK(p.ttft < prefill + 2 * p.step_bare + 2e-3);
}

TEST_CASE("chunked prefill comes in whole pieces: ITL is the mean of the steps with and without prefill", "[point]") {
    using detail::StepPrefill;
    const Scenario s = bench("h200", "llama-3.1-70b", 20000, 2000, 0, [](io::ScenarioInputs& in) {
        in.set("weight-dtype", "fp8");
        in.set("kv-dtype", "fp8");
    });
    const PreparedScenario ps(s);
    const LoadSpec l = test::point_load(LoadMode::batch, 16);
    const OperatingPoint p = operating_point(ps, l, 0.0, 0.0);
    const detail::PointInputs in = detail::point_inputs(ps, 0.0, l);
    // 16 sequences each decoding 1,999 steps start x = 16/1999 requests per step, P = 20,000·x prefill tokens per
    // step, and the prompt comes in 2,048-token chunks: φ = 16·20000 / (1999·2048) of the steps carry one.
    const double x = 16.0 / 1999.0, phi = 16.0 * 20000.0 / (1999.0 * 2048.0);
    CHECK(detail::prefill_step_share(in, x, 2048, 2048) == Approx(phi).epsilon(1e-12));
    const detail::StepContent chunk = detail::step_content(ps, in, x, StepPrefill::mean, 0, x / phi);
    CHECK(chunk.prefill_tokens == Approx(2048).epsilon(1e-12));
    const double with = detail::step_time(ps, chunk, 0.0, 0.0), without = p.step_bare;
    CHECK(p.itl == Approx(phi * with + (1 - phi) * without).epsilon(1e-12));
    // The chunk step is compute-bound (2,048·2·70 GFLOP at 0.7 of 1,979 TFLOP/s ≈ 0.2 s), the decode step HBM-bound:
    // the mean step is well above the step of the mean prefill, which hid the chunks under the weight read.
    CHECK(with > 0.2);
    CHECK(p.itl > 1.3 * detail::step_time(ps, in, 0.0, 0.0, x, StepPrefill::mean));
    // A short prompt at one sequence: one step in 199 carries the whole 100-token prompt.
    const Scenario one_s = bench("h200", "llama-3.1-8b", 100, 200);
    const PreparedScenario one(one_s);
    const LoadSpec l1 = test::point_load(LoadMode::batch, 1);
    CHECK(detail::prefill_step_share(detail::point_inputs(one, 0.0, l1), 1.0 / 199.0, 2048, 2048) == Approx(1.0 / 199.0));
    // When every step carries prefill (the budget binds), the step is the mean step: nothing changes.
    const Scenario full_s = bench("h100-sxm", "llama-3.1-8b", 8000, 2);
    const PreparedScenario full(full_s);
    const LoadSpec lf = test::point_load(LoadMode::batch, 64, PrefillMode::chunked, 512);
    const OperatingPoint b = operating_point(full, lf, 0.0, 0.0);
    const detail::PointInputs inf = detail::point_inputs(full, 0.0, lf);
    CHECK(detail::prefill_step_share(inf, b.starts_per_step, 512, 512) == Approx(1.0));
    CHECK(b.itl == Approx(detail::step_time(full, inf, 0.0, 0.0, b.starts_per_step, StepPrefill::mean)).epsilon(1e-12));
}

TEST_CASE("the chunk budget caps the starts: prefill-bound points queue, fixed batches shrink", "[point]") {
    const Scenario s = bench("h100-sxm", "llama-3.1-8b", 8000, 2);
    const PreparedScenario ps(s);
    // 8,000 prompt tokens per request and 512 per step: at most 1/15.6 starts per step.
    const OperatingPoint c =
        operating_point(ps, test::point_load(LoadMode::concurrency, 64, PrefillMode::chunked, 512), 0.0, 0.0);
    CHECK(c.prefill_bound);
    CHECK(c.starts_per_step == Approx(512.0 / 8000.0));
    CHECK(c.queue_wait > 0);
    CHECK(c.requests_per_s * (c.ttft + c.itl) == Approx(64).epsilon(1e-6));
    const OperatingPoint b = operating_point(ps, test::point_load(LoadMode::batch, 64, PrefillMode::chunked, 512), 0.0, 0.0);
    CHECK(b.prefill_bound);
    CHECK(b.batch == Approx(512.0 / 8000.0));
}

TEST_CASE("memory is the fluid occupancy, a point that does not fit says so and the study finds the f that fits", "[point]") {
    const Scenario s = bench("h100-sxm", "llama-3.1-8b", 100000, 1000);
    const PreparedScenario ps(s);
    // 1,024 sequences of ~100k tokens hold ~13 TB of KV: far beyond 78 GB of HBM.
    const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::batch, 1024), 0.0, 0.0);
    CHECK_FALSE(p.fits);
    CHECK(p.hbm_used > p.hbm_capacity);
    const PointStudy st = point_study(s, test::point_load(LoadMode::batch, 4));
    // Decoding sequences hold S + O/2 tokens on average, prefilling ones S_c + A/2 (fluid occupancy).
    CHECK(st.baseline.conservative.kv_tokens ==
          Approx(4 * (100000 + 500.0) + st.baseline.conservative.requests_per_s * st.baseline.conservative.ttft * 50000)
              .epsilon(1e-9));
    const PointStudy big = point_study(s, test::point_load(LoadMode::batch, 12));
    REQUIRE_FALSE(big.baseline.conservative.fits);
    if (big.smallest_f_that_fits) {
        CHECK(*big.smallest_f_that_fits > 0);
        CHECK(big.kind != VerdictKind::keep_on_gpu);
    } else {
        CHECK(big.kind == VerdictKind::does_not_fit);
    }
}

TEST_CASE("clients beyond memory queue, as engines admit them: the point fits and Little's law still holds", "[point]") {
    const Scenario s = bench("h100-sxm", "llama-3.1-8b", 2000, 500);
    const PreparedScenario ps(s);
    const OperatingPoint p = operating_point(ps, test::point_load(LoadMode::concurrency, 256), 0.0, 0.0);
    CHECK(p.memory_queued);
    CHECK(p.fits);
    CHECK(p.hbm_used <= p.hbm_capacity);
    CHECK(p.running < 256);
    CHECK(p.queue_wait > 0);
    CHECK(p.concurrency == 256);
    CHECK(p.requests_per_s * (p.ttft + 499 * p.itl) == Approx(256).epsilon(1e-6));
    // The engine runs as full as memory allows: the same as --concurrency max.
    const OperatingPoint m = operating_point(ps, test::point_load(LoadMode::saturate, 0), 0.0, 0.0);
    CHECK(p.throughput == Approx(m.throughput).epsilon(1e-12));
    CHECK(p.running == Approx(m.running).epsilon(1e-12));
}

TEST_CASE("the solved mode under engine physics: the most clients that fit and meet the SLOs, and no more", "[point]") {
    const Scenario s =
        bench("h100-sxm", "llama-3.1-8b", 2000, 500, 0, [](io::ScenarioInputs& in) { in.set("slo-tpot", "30ms"); });
    const PreparedScenario ps(s);
    LoadSpec best = test::point_load(LoadMode::best, 0);
    const OperatingPoint b = operating_point(ps, best, 0.0, 0.0);
    CHECK(b.fits);
    CHECK(b.within_slo_tpot);
    CHECK(b.itl <= 0.030);
    // One client more breaks a constraint: here the 30 ms ITL.
    const OperatingPoint more = operating_point(ps, test::point_load(LoadMode::concurrency, b.running * 1.01), 0.0, 0.0);
    CHECK_FALSE(more.within_slo_tpot);
    // Without an SLO the best load is as full as memory allows: --concurrency max.
    const Scenario free =
        bench("h100-sxm", "llama-3.1-8b", 2000, 500, 0, [](io::ScenarioInputs& in) { in.set("slo-tpot", "none"); });
    const PreparedScenario pf(free);
    CHECK(operating_point(pf, best, 0.0, 0.0).throughput ==
          Approx(operating_point(pf, test::point_load(LoadMode::saturate, 0), 0.0, 0.0).throughput).epsilon(1e-12));
}

TEST_CASE("max_seqs caps the requests the engine runs, the rest queue, and a rate beyond it saturates", "[point]") {
    const Scenario s = bench("h100-sxm", "llama-3.1-8b", 2000, 500);
    const PreparedScenario ps(s);
    LoadSpec c = test::point_load(LoadMode::concurrency, 256);
    c.max_seqs = 64;
    const OperatingPoint p = operating_point(ps, c, 0.0, 0.0);
    CHECK(p.memory_queued);
    CHECK(p.running == Approx(64).epsilon(1e-4));
    CHECK(p.requests_per_s * (p.ttft + 499 * p.itl) == Approx(256).epsilon(1e-6));
    LoadSpec m = test::point_load(LoadMode::saturate, 0);
    m.max_seqs = 64;
    const OperatingPoint full = operating_point(ps, m, 0.0, 0.0);
    CHECK(full.running == Approx(64).epsilon(1e-4));
    CHECK(full.throughput == Approx(p.throughput).epsilon(1e-9));
    // Below the cap nothing changes; a rate above what 64 running serve saturates.
    LoadSpec few = test::point_load(LoadMode::concurrency, 16);
    const double free_tput = operating_point(ps, few, 0.0, 0.0).throughput;
    few.max_seqs = 64;
    CHECK(operating_point(ps, few, 0.0, 0.0).throughput == free_tput);
    LoadSpec r = test::point_load(LoadMode::request_rate, 2 * full.requests_per_s);
    r.max_seqs = 64;
    const OperatingPoint over = operating_point(ps, r, 0.0, 0.0);
    CHECK(over.saturated);
    CHECK(over.running <= 64 * (1 + 1e-6));
}

TEST_CASE("GEMMs run at the peak of their precision, INT4 weights compute in BF16", "[point][dtype]") {
    HardwareSpec h;
    h.gpu.flops = FlopPerSecond(1e15);
    h.gpu.flops_fp8 = FlopPerSecond(2e15);
    h.gpu.flops_fp4 = FlopPerSecond(4e15);
    CHECK(gemm_peak(h, DType::bf16).raw() == 1e15);
    CHECK(gemm_peak(h, DType::fp8).raw() == 2e15);
    CHECK(gemm_peak(h, DType::fp4).raw() == 4e15);
    h.gpu.flops_fp4 = FlopPerSecond(0.0);  // a GPU without FP4 math (Hopper) dequantises into BF16 GEMMs
    CHECK(gemm_peak(h, DType::fp4).raw() == 1e15);
    PolicySpec p;
    p.weight_dtype = DType::fp8;
    CHECK(gemm_dtype(p) == DType::fp8);
    p.weight_dtype = DType::int4;
    CHECK(gemm_dtype(p) == DType::bf16);  // W4A16
    p.weight_dtype = DType::int8;
    CHECK(gemm_dtype(p) == DType::bf16);  // W8A16
    p.weight_dtype = DType::mxfp4;
    CHECK(gemm_dtype(p) == DType::fp4);
    CHECK(gemm_peak(h, DType::int8).raw() == 2e15);  // W8A8 at the 8-bit peak
    p.compute_dtype = DType::fp8;
    CHECK(gemm_dtype(p) == DType::fp8);
    // What that peak and attention's own one charge a prefill: tests/physics/attention_math_test.cpp.
}

TEST_CASE("a finite open-loop run: its throughput counts the drain of the last requests", "[point][run]") {
    const Scenario s = bench("h100-sxm", "llama-3.1-8b", 467, 256);
    const PreparedScenario ps(s);
    const LoadSpec steady_load = test::point_load(LoadMode::request_rate, 32);
    const OperatingPoint steady = operating_point(ps, steady_load, 0.0, 0.0);
    REQUIRE_FALSE(steady.saturated);
    CHECK(steady.throughput == Approx(32 * 256).epsilon(1e-9));  // below saturation the rate asked comes out
    CHECK(steady.steady_throughput == steady.throughput);
    auto run = [&](double n, double rate = 32) {
        LoadSpec l = test::point_load(LoadMode::request_rate, rate);
        l.requests = n;
        return operating_point(ps, l, 0.0, 0.0);
    };
    // N − 1 gaps of 1/R, then the last request's drain: its TTFT and its 255 decode steps, which carry no
    // prefill any more (each at most the bare step): N·O over that time. (The steady e2e, TTFT + 255·ITL, charged
    // the drain the prefill interleaved while requests still arrive, and cut the throughput by 30 % where better
    // hardware took a run out of its wave.)
    const OperatingPoint r500 = run(500);
    const double duration = 499 / 32.0 + steady.ttft + 255 * steady.step_bare;
    CHECK(steady.step_bare < steady.itl);
    CHECK(r500.throughput == Approx(500 * 256 / duration).epsilon(1e-9));
    CHECK(r500.throughput_per_gpu == Approx(r500.throughput).epsilon(1e-12));  // one GPU
    CHECK(r500.steady_throughput == Approx(steady.throughput).epsilon(1e-12));
    CHECK(r500.itl == steady.itl);
    CHECK(steady.running == Approx(32 * steady.e2e).epsilon(1e-9));  // Little's law: the requests that drain
    CHECK(r500.ttft == steady.ttft);
    // A run of one request is that request alone: its O tokens over its own e2e, at one running.
    const OperatingPoint r1 = run(1);
    CHECK(r1.running == Approx(1).epsilon(1e-4));
    CHECK(r1.throughput == Approx(256 / r1.e2e).epsilon(1e-6));
    CHECK(run(1e9).throughput == Approx(steady.throughput).epsilon(1e-6));  // an endless run: the steady state
    // Overloaded: all 500 run at once (they fit), arriving within 5 ms: the run is the wave of all 500 sent at once.
    // Its TTFT and ITL are the wave's too (they were the steady state's at 1e5 req/s, 62 ms beside the wave's
    // throughput, where TensorRT-LLM's QPS=INF run of 500 measured a 3.34 s TTFT): nothing queues.
    const OperatingPoint over = run(500, 1e5);
    CHECK(over.one_wave);
    CHECK_FALSE(over.saturated);
    CHECK(over.running == Approx(500).epsilon(1e-4));
    // Requests/s is over the same run as tok/s (it was the steady rate beside the run's throughput: 32 against 26.25).
    CHECK(over.requests_per_s * 256 == Approx(over.throughput).epsilon(1e-12));
    CHECK(r500.requests_per_s * 256 == Approx(r500.throughput).epsilon(1e-12));
    LoadSpec at_once = test::point_load(LoadMode::saturate, 0);
    at_once.requests = 500;
    const OperatingPoint all = operating_point(ps, at_once, 0.0, 0.0);
    CHECK(over.throughput == Approx(all.throughput).epsilon(1e-12));
    // The arrivals spread over 499/1e5 s: each first token leaves at the wave's time, so TTFT is half that less.
    CHECK(over.ttft == Approx(all.ttft - 0.5 * 499 / 1e5).epsilon(1e-12));
    CHECK(over.itl == all.itl);
    // Closed loop: a run of N requests has no more than N clients; N clients with a request each send them at once.
    LoadSpec few = test::point_load(LoadMode::concurrency, 16), cut = test::point_load(LoadMode::concurrency, 256);
    few.requests = 64;
    cut.requests = at_once.requests = 64;
    const OperatingPoint a = operating_point(ps, few, 0.0, 0.0), b = operating_point(ps, cut, 0.0, 0.0);
    CHECK_FALSE(a.one_wave);  // fewer clients than requests: the steady closed loop
    CHECK(a.throughput == operating_point(ps, test::point_load(LoadMode::concurrency, 16), 0.0, 0.0).throughput);
    CHECK(b.one_wave);
    CHECK(b.throughput == operating_point(ps, at_once, 0.0, 0.0).throughput);
}

TEST_CASE("every request of a run sent at once runs in one wave: prefill first, then decode together", "[point][run]") {
    const Scenario s = bench("h100-sxm", "llama-3.1-8b", 467, 256);
    const PreparedScenario ps(s);
    LoadSpec all = test::point_load(LoadMode::saturate, 0);
    const OperatingPoint steady = operating_point(ps, all, 0.0, 0.0);
    CHECK_FALSE(steady.one_wave);
    all.requests = 500;  // 500 fit at once here: 500 × 467 prefill tokens, 2048 a step
    const OperatingPoint w = operating_point(ps, all, 0.0, 0.0);
    REQUIRE(w.one_wave);
    LoadSpec capped = test::point_load(LoadMode::saturate, 0);
    capped.max_seqs = 500;  // the steady state of as many running (more would fit: the run caps them)
    CHECK(w.steady_throughput == Approx(operating_point(ps, capped, 0.0, 0.0).throughput).epsilon(1e-9));
    CHECK(w.steady_throughput < steady.throughput);
    const double steps = 500 * 467 / 2048.0, D = 255;  // 114.0 prefill steps, fewer than D: all still decode at the end
    const double t_p = w.ttft / (1 + 0.5 * (steps - 1)), t_d = w.step_bare, L = (steps - 1) * t_p;
    CHECK(w.batch == Approx(500));
    // Every request decodes u/t_p tokens in prefill steps, u uniform on [0, L], the rest in decode steps.
    CHECK(w.itl * D == Approx(0.5 * L * (1 - t_d / t_p) + D * t_d).epsilon(1e-9));
    CHECK(w.throughput == Approx(500 * 256 / (steps * t_p + D * t_d)).epsilon(1e-9));
    CHECK(w.itl > t_d);
    CHECK(t_p > t_d);  // a step of 2048 prefill tokens is compute-bound
    // One request alone: its prefill step, then its decode steps alone.
    all.requests = 1;
    const OperatingPoint one = operating_point(ps, all, 0.0, 0.0);
    REQUIRE(one.one_wave);
    CHECK(one.itl == one.step_bare);
    CHECK(one.throughput == Approx(256 / (one.ttft + D * one.step_bare)).epsilon(1e-9));
    // As many clients as requests, or an open loop at a rate without limit, send them all at once too.
    LoadSpec clients = test::point_load(LoadMode::concurrency, 800), flood = test::point_load(LoadMode::request_rate, 1e9);
    clients.requests = flood.requests = 500;
    const OperatingPoint c500 = operating_point(ps, clients, 0.0, 0.0);
    CHECK(c500.one_wave);
    CHECK(c500.throughput == Approx(w.throughput).epsilon(1e-12));
    CHECK(c500.itl == Approx(w.itl).epsilon(1e-12));
    CHECK(operating_point(ps, flood, 0.0, 0.0).throughput == Approx(w.throughput).epsilon(1e-6));
    // A prompt longer than the chunk: the first token leaves after its Ā/K steps, as one client's does.
    const Scenario longs = bench("h100-sxm", "llama-3.1-8b", 20000, 256);
    const PreparedScenario pl(longs);
    all.requests = 1;
    const OperatingPoint lone = operating_point(pl, all, 0.0, 0.0);
    REQUIRE(lone.one_wave);
    CHECK(lone.ttft == Approx(lone.e2e - D * lone.step_bare).epsilon(1e-9));
    CHECK(lone.throughput == Approx(256 / lone.e2e).epsilon(1e-9));
    CHECK(lone.ttft == Approx(operating_point(pl, test::point_load(LoadMode::concurrency, 1), 0.0, 0.0).ttft).epsilon(0.05));
    // More than fit at once (every request's KV at its end, S + O): waves blend into the steady state.
    all.requests = 1e6;
    CHECK_FALSE(operating_point(ps, all, 0.0, 0.0).one_wave);
}

}  // namespace kvroof
