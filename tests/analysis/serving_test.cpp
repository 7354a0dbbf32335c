// SPDX-License-Identifier: MIT
#include "kvroof/analysis/serving.hpp"

#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/verdict.hpp"

using namespace kvroof;

namespace {
const double kFs[] = {0.0, 0.1, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0};

Scenario sparse_example() {
    return test::scenario_with([](io::ScenarioInputs& in) {
        in.set("cpus-per-gpu", "4");
        in.set("workload", "s_cached=16000,a_append=2000,o_output=400");
        in.set("sparse", "0.1");
    });
}

// No prefill work, no idle residency, no reload: capacity is exactly KV bytes.
Scenario decode_only(double cpu_scale) {
    Scenario s = test::default_scenario();
    s.mix.entries.at(0).cls = CallClass{"decode", 64000, 0, 500, Seconds(0)};
    s.policy.r = 0;
    s.policy.slo_tpot.reset();
    s.hardware.gpu.flops = s.hardware.gpu.flops * 1e6;  // keep the GPU HBM-bound
    s.hardware.host.flops = s.hardware.host.flops * cpu_scale;
    s.hardware.host.dram_bandwidth = s.hardware.host.dram_bandwidth * cpu_scale;
    s.hardware.link.bandwidth = s.hardware.link.bandwidth * cpu_scale;
    s.hardware.link.latency = s.hardware.link.latency / cpu_scale;  // an infinitely fast link has no round trip either
    s.hardware.host.memory = s.hardware.host.memory * 1e6;
    return s;
}
}  // namespace

TEST_CASE("f = 0 is the no-offload baseline: the CPU side and ov do not matter", "[serving]") {
    const Scenario a = test::default_scenario();
    Scenario b = a;
    b.hardware.host.flops = b.hardware.host.flops * 0.001;
    b.hardware.host.dram_bandwidth = b.hardware.host.dram_bandwidth * 0.001;
    b.hardware.link.bandwidth = b.hardware.link.bandwidth * 0.001;
    const PreparedScenario pa(a), pb(b);
    const ServingPoint x = evaluate(pa, 0.0, 0.0);
    CHECK(x.throughput > 0);
    CHECK(evaluate(pa, 0.0, 1.0).throughput == x.throughput);
    CHECK(evaluate(pb, 0.0, 0.0).throughput == x.throughput);
    CHECK(x.util_sec[Resource::cpu_compute] == 0);
    CHECK(x.util_sec[Resource::link] == 0);
}

TEST_CASE("the default scenario's baseline checks by hand", "[serving]") {
    const Scenario s = test::default_scenario();
    const ServingPoint p = evaluate(PreparedScenario(s), 0.0, 0.0);
    // Weights 141.1 GB minus the 2.1 GB input embedding (gathered, not streamed)
    // read at 0.85 * 8 TB/s = 20.44 ms per step, plus the 1.5 ms step overhead.
    const double w = (141.1e9 - 2.0 * 128256 * 8192) / 6.8e12;
    CHECK(p.tpot == Approx(w + 1.5e-3 + p.batch * 68329 * 327680 / 6.8e12).epsilon(0.002));
    // Prefill 3,991 tokens: 2*70.55B linear + attention over 64,338 cached, 1.25 PFLOP,
    // at 0.7 * 2.5 PFLOP/s (BF16) ≈ 0.714 s.
    CHECK(p.ttft == Approx(1.25 / 1.75).epsilon(0.01));
    // Throughput = O / (TTFT + O*TPOT/B) for one class bound by the GPU timeline.
    CHECK(p.throughput == Approx(520.0 / (p.ttft + 520.0 * p.tpot / p.batch)).epsilon(1e-12));
    CHECK(p.batch_limit == Resource::hbm_capacity);
    CHECK(p.headline == Resource::hbm_capacity);
}

TEST_CASE("the optimistic end is never below the conservative end", "[serving][band]") {
    for (const Scenario& s : {test::default_scenario(), sparse_example()}) {
        const PreparedScenario ps(s);
        for (double f : kFs) {
            INFO("f=" << f);
            CHECK(evaluate(ps, f, 1.0).throughput >= evaluate(ps, f, 0.0).throughput * (1 - 1e-12));
            CHECK(evaluate(ps, f, 0.5).throughput >= evaluate(ps, f, 0.0).throughput * (1 - 1e-12));
            CHECK(evaluate(ps, f, 1.0).throughput >= evaluate(ps, f, 0.5).throughput * (1 - 1e-12));
        }
    }
}

TEST_CASE("TPOT is never below the physical floor (weights + resident KV) / HBM bandwidth", "[serving]") {
    for (const Scenario& s : {test::default_scenario(), sparse_example()}) {
        const PreparedScenario ps(s);
        for (double f : kFs) {
            for (double ov : {0.0, 1.0}) {
                const ServingPoint p = evaluate(ps, f, ov);
                if (!p.feasible) continue;
                const double kv_read =
                    p.batch * (1 - f) * s.policy.sparse * s.mix.entries[0].cls.context() * ps.mc.kv_per_token.raw();
                // the weights a step streams: all but the gathered input embedding rows
                CHECK(p.tpot >= (ps.mc.weights_read(p.batch).raw() + kv_read) / ps.sys.hbm_bandwidth.raw() * (1 - 1e-12));
                CHECK(ps.mc.weights_read(p.batch).raw() >= 0.98 * ps.mc.weights.raw());
            }
        }
    }
}

TEST_CASE("B_HBM(f) * (1 - f) is constant", "[serving][capacity]") {
    const Scenario s = decode_only(1.0);
    const PreparedScenario ps(s);
    const double base = evaluate(ps, 0.0, 0.0).b_cap_hbm;
    CHECK(base == Approx(ps.hbm_free_bytes() / (64000.0 * 327680)));
    for (double f : {0.1, 0.5, 0.9}) CHECK(evaluate(ps, f, 0.0).b_cap_hbm * (1 - f) == Approx(base).epsilon(1e-12));
}

TEST_CASE("with an infinitely fast CPU and link the gain equals the capacity gain", "[serving][limit]") {
    const Scenario s = decode_only(1e12);
    const PreparedScenario ps(s);
    const ServingPoint base = evaluate(ps, 0.0, 0.0);
    for (double f : {0.2, 0.5, 0.8}) {
        const ServingPoint p = evaluate(ps, f, 0.0);
        const double capacity_gain = p.b_cap_hbm / base.b_cap_hbm;
        CHECK(capacity_gain == Approx(1 / (1 - f)).epsilon(1e-9));
        CHECK(p.throughput / base.throughput == Approx(capacity_gain).epsilon(1e-6));
    }
}

TEST_CASE("the link latency adds L round trips to the offloaded path of every step with f > 0", "[serving][link-latency]") {
    Scenario s = decode_only(1.0);
    s.hardware.link.latency = Seconds(0.0);
    Scenario t = s;
    t.hardware.link.latency = milliseconds(0.01);  // 10 µs per layer
    const PreparedScenario a(s), b(t);
    CHECK(b.offload_step_latency == Approx(s.model.layers * 1e-5));  // 80 layers: 0.8 ms per step
    // f = 0 exchanges nothing: the round trip is not charged.
    CHECK(evaluate(b, 0.0, 0.0).throughput == evaluate(a, 0.0, 0.0).throughput);
    // Decode-only calls hold no KV outside the batch, so the batch is the HBM
    // capacity and does not move; at ov = 0 the step is the sum of the GPU and
    // offloaded paths, so it grows by exactly L·latency.
    const ServingPoint pa = evaluate(a, 0.5, 0.0);
    const ServingPoint pb = evaluate(b, 0.5, 0.0);
    REQUIRE(pb.batch == Approx(pa.batch).epsilon(1e-12));
    CHECK(pb.tpot - pa.tpot == Approx(0.8e-3).epsilon(1e-9));
    // A slower exchange lowers throughput, by no more than it stretches the step.
    CHECK(pb.throughput < pa.throughput);
    CHECK(pb.throughput >= pa.throughput * (pa.tpot / pb.tpot) * (1 - 1e-12));
}

TEST_CASE("more HBM, link bandwidth, CPU bandwidth or CPU FLOP/s never lowers throughput", "[serving][monotone]") {
    using Edit = void (*)(HardwareSpec&);
    const Edit edits[] = {
        [](HardwareSpec& h) { h.gpu.hbm_capacity = h.gpu.hbm_capacity * 1.5; },
        [](HardwareSpec& h) { h.gpu.hbm_bandwidth = h.gpu.hbm_bandwidth * 1.5; },
        [](HardwareSpec& h) { h.link.bandwidth = h.link.bandwidth * 2.0; },
        [](HardwareSpec& h) { h.host.dram_bandwidth = h.host.dram_bandwidth * 2.0; },
        [](HardwareSpec& h) { h.host.flops = h.host.flops * 2.0; },
        [](HardwareSpec& h) { h.gpu.flops = h.gpu.flops * 2.0; },
        [](HardwareSpec& h) { h.host.memory = h.host.memory * 2.0; },
    };
    for (const Scenario& s : {test::default_scenario(), sparse_example()}) {
        const PreparedScenario before(s);
        int i = 0;
        for (Edit e : edits) {
            Scenario t = s;
            e(t.hardware);
            const PreparedScenario after(t);
            for (double f : kFs) {
                for (double ov : {0.0, 1.0}) {
                    INFO("edit " << i << " f=" << f << " ov=" << ov);
                    CHECK(evaluate(after, f, ov).throughput >= evaluate(before, f, ov).throughput * (1 - 1e-9));
                }
            }
            ++i;
        }
    }
}

TEST_CASE("weights that do not fit are an answer, not a crash", "[serving]") {
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "h100-sxm");
        in.set("model", "llama-3.1-405b");
    });
    const ServingPoint p = evaluate(PreparedScenario(s), 0.5, 0.0);
    CHECK_FALSE(p.fits);
    CHECK_FALSE(p.feasible);
    CHECK(p.throughput == 0);
    CHECK(p.binding == Resource::hbm_capacity);
}

TEST_CASE("a mix of one class at weight 1 equals that class alone and mixing interpolates", "[serving][mix]") {
    const Scenario longs = test::scenario_with([](io::ScenarioInputs& in) { in.set("workload", "long"); });
    const Scenario mixed = test::scenario_with([](io::ScenarioInputs& in) { in.set("mix", "long:1"); });
    CHECK(evaluate(PreparedScenario(longs), 0.3, 0.0).throughput == evaluate(PreparedScenario(mixed), 0.3, 0.0).throughput);
    const Scenario shorts = test::scenario_with([](io::ScenarioInputs& in) { in.set("workload", "short"); });
    const Scenario half = test::scenario_with([](io::ScenarioInputs& in) { in.set("mix", "long:0.5,short:0.5"); });
    const double a = evaluate(PreparedScenario(longs), 0.0, 0.0).throughput;
    const double b = evaluate(PreparedScenario(shorts), 0.0, 0.0).throughput;
    const double m = evaluate(PreparedScenario(half), 0.0, 0.0).throughput;
    CHECK(m > std::min(a, b));
    CHECK(m < std::max(a, b));
}

TEST_CASE("parking idle sessions frees HBM at the cost of link traffic", "[serving][idle]") {
    Scenario hold = test::default_scenario();
    Scenario park = hold;
    park.policy.idle = IdlePolicy::park;
    const ServingPoint h = evaluate(PreparedScenario(hold), 0.0, 0.0);
    const ServingPoint p = evaluate(PreparedScenario(park), 0.0, 0.0);
    CHECK(p.b_cap_hbm > h.b_cap_hbm);
    CHECK(p.util_sec[Resource::link] > 0);
    CHECK(h.util_sec[Resource::link] == 0);
    // Reloading 64,338 cached tokens' KV over 225 GB/s adds to TTFT.
    CHECK(p.ttft == Approx(h.ttft + 64338.0 * 327680 / 225e9).epsilon(1e-9));
}

TEST_CASE("the TPOT SLO bounds the inter-token latency users see, seed 000's bounds the bare step", "[serving][slo]") {
    for (const char* slo : {"10ms", "15ms", "20ms"}) {
        io::ScenarioInputs in;
        in.set("hardware", "h200");
        in.set("model", "llama-3.1-8b");
        in.set("workload", "s_cached=0,a_append=2000,o_output=200");
        in.set("slo-tpot", slo);
        const Scenario itl = io::build_scenario(in).scenario;
        in.set("slo-tpot-bounds", "step");
        const Scenario step = io::build_scenario(in).scenario;
        const ServingPoint a = evaluate(PreparedScenario(itl), 0.0, 0.0);
        const ServingPoint b = evaluate(PreparedScenario(step), 0.0, 0.0);
        const double s = itl.policy.slo_tpot->raw();
        INFO(slo);
        REQUIRE(a.batch_limit == Resource::slo_tpot);
        // At the ceiling the observed ITL, B / throughput, meets the SLO exactly.
        CHECK(a.tpot_observed == Approx(s).epsilon(1e-9));
        CHECK(a.tpot < s);  // the bare step alone is shorter: prefill is interleaved
        if (b.batch_limit == Resource::slo_tpot) CHECK(b.tpot == Approx(s).epsilon(1e-9));
        CHECK(b.tpot_observed > a.tpot_observed);  // bounding only the step admits a longer ITL
        CHECK(a.batch < b.batch);
    }
}

TEST_CASE("requests of one output token have no inter-token latency: none is shown, not B / throughput", "[serving][slo]") {
    // GB200, Llama-3.1-70B, 1/1 tokens: 130,905 one-token sessions fit, and B / throughput read as an ITL of 2,686 s.
    io::ScenarioInputs in;
    in.set("workload", "s_cached=0,a_append=1,o_output=1");
    const Scenario one = io::build_scenario(in).scenario;
    const ServingPoint p = evaluate(PreparedScenario(one), 0.0, 0.0);
    REQUIRE(p.feasible);
    CHECK(p.throughput > 0);
    CHECK(std::isnan(p.tpot_observed));
    in.set("workload", "s_cached=0,a_append=1,o_output=2");  // a second token: an ITL again
    const Scenario two = io::build_scenario(in).scenario;
    CHECK(evaluate(PreparedScenario(two), 0.0, 0.0).tpot_observed > 0);
}

TEST_CASE("capacity counts sessions at the rate calls complete: the throughput's, not a decode-only GPU's", "[serving]") {
    // Llama-3.1-8B on one H100, 4,000-token prompts, 50 output tokens, 20 s idle gaps: prefill takes half the GPU.
    // Little's law at the rate B/step(B) held 61 GB where the printed 188 tok/s held 41 GB, capped the batch at
    // 2.07, and called a 1.10x offload bankable. At the throughput's own rate the HBM is exactly full.
    const Scenario s = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "h100-sxm");
        in.set("model", "llama-3.1-8b");
        in.set("workload", "s_cached=0,a_append=4000,o_output=50,idle_gap=20s");
    });
    const PreparedScenario ps(s);
    const ServingPoint p = evaluate(ps, 0.0, 0.0);
    REQUIRE(p.batch_limit == Resource::hbm_capacity);
    REQUIRE(p.binding == Resource::gpu_compute);  // the GPU's timeline sets the rate calls complete at
    const auto& c = s.mix.entries.at(0).cls;
    const double calls_per_s = p.throughput / c.o_output, S = c.context();
    const double held = ps.mc.kv_per_token.raw() * S * (p.batch + calls_per_s * (p.ttft + c.idle_gap.raw()));
    CHECK(held == Approx(p.hbm_free.raw()).epsilon(1e-9));
    CHECK(p.throughput == Approx(282.7).margin(0.05));
    CHECK(make_verdict(s).kind == VerdictKind::offload_with_overlap);
}
