// SPDX-License-Identifier: MIT
#include "kvroof/analysis/verdict_report.hpp"

#include <catch2/catch.hpp>

#include "../test_support.hpp"
#include "kvroof/analysis/mix_table.hpp"
#include "kvroof/analysis/report_study.hpp"
#include "kvroof/io/verdict_render.hpp"

using namespace kvroof;

namespace {
Scenario sparse_example() {
    return test::scenario_with([](io::ScenarioInputs& in) {
        in.set("gpus", "1");
        in.set("cpus-per-gpu", "4");
        in.set("workload", "s_cached=16000,a_append=2000,o_output=400");
        in.set("sparse", "0.1");
    });
}

// Λ_max = 1 / max(GPU timeline, CPU compute, CPU DRAM, link), and the binding
// resource is the one that attains it (docs/model.md).
void check_per_resource(const ServingPoint& p) {
    const std::vector<ResourceSeconds> table = per_resource_seconds(p);
    REQUIRE(table.size() == kRateResources.size());
    double shares = 0, cpu_link = 0, max_share = 0;
    for (size_t i = 0; i < table.size(); ++i) {
        CHECK(table[i].resource == kRateResources[i]);
        CHECK(table[i].util_sec.raw() >= 0);
        shares += table[i].timeline_share.raw();
        max_share = std::max(max_share, table[i].timeline_share.raw());
        if (table[i].resource != Resource::gpu_compute && table[i].resource != Resource::gpu_hbm)
            cpu_link = std::max(cpu_link, table[i].util_sec.raw());
    }
    CHECK(shares == Approx(p.gpu_timeline).epsilon(1e-9));
    CHECK(1.0 / p.lambda_max == Approx(std::max(p.gpu_timeline, cpu_link)).epsilon(1e-12));
    for (const ResourceSeconds& r : table) {
        if (r.resource != p.binding) continue;
        if (p.gpu_timeline >= cpu_link)
            CHECK(r.timeline_share.raw() == max_share);
        else
            CHECK(r.util_sec.raw() == Approx(1.0 / p.lambda_max).epsilon(1e-12));
    }
}
}  // namespace

TEST_CASE("scenario facts: the HBM left for KV and the sessions it holds check by hand", "[verdict_report]") {
    const Scenario sc = test::default_scenario();
    const VerdictReport r = verdict_report(sc);
    const ScenarioFacts& f = r.facts;
    CHECK(f.scenario.model.name == sc.model.name);
    CHECK(f.weights == weight_bytes(sc.model, sc.policy.weight_dtype));
    CHECK(f.kv_per_token == kv_bytes_per_token(sc.model, sc.policy.kv_dtype));
    CHECK(f.hbm_usable.raw() ==
          Approx(sc.hardware.deployment.gpus * (sc.hardware.gpu.hbm_capacity - sc.hardware.gpu.hbm_reserve).raw()));
    CHECK(f.hbm_free.raw() == Approx(f.hbm_usable.raw() - f.weights.raw()));
    REQUIRE(f.classes.size() == sc.mix.entries.size());
    const ClassFit& c = f.classes.front();
    CHECK(c.session_kv.raw() == Approx(f.kv_per_token.raw() * c.context));
    CHECK(c.hbm_sessions == Approx(f.hbm_free.raw() / c.session_kv.raw()));
    CHECK(c.dram_sessions == Approx(f.cpu_memory.raw() / c.session_kv.raw()));
    CHECK(f.session_kv_max == c.session_kv);
    CHECK_FALSE(r.at_ov);
}

TEST_CASE("per-resource seconds: Λ_max and the binding resource follow from the table", "[verdict_report]") {
    const VerdictReport r = verdict_report(sparse_example());
    const Verdict& v = r.verdict;
    for (const ServingPoint* p : {&v.baseline.conservative, &v.baseline.optimistic, &v.best_conservative, &v.best_optimistic,
                                  &v.at_f.conservative, &v.at_f.optimistic}) {
        INFO("f = " << p->f << ", ov = " << p->ov);
        REQUIRE(p->feasible);
        check_per_resource(*p);
    }
}

TEST_CASE("the point at a given ov lies inside the band at the verdict's f", "[verdict_report]") {
    const VerdictReport r = verdict_report(sparse_example(), {}, 0.5);
    REQUIRE(r.at_ov);
    CHECK(r.at_ov->f == r.verdict.f);
    CHECK(r.at_ov->ov == 0.5);
    CHECK(r.at_ov->throughput >= r.verdict.at_f.conservative.throughput * (1 - 1e-12));
    CHECK(r.at_ov->throughput <= r.verdict.at_f.optimistic.throughput * (1 + 1e-12));
    const VerdictReport at0 = verdict_report(sparse_example(), {}, 0.0);
    CHECK(at0.at_ov->throughput == at0.verdict.at_f.conservative.throughput);
}

TEST_CASE("a gain at a given ov is over the baseline at that ov: parked reloads overlap at f = 0 too", "[verdict_report]") {
    // Idle sessions parked in CPU DRAM reload over the link at f = 0 as well, so the baseline rises with ov. The
    // gain at ov = 1 was divided by the ov = 0 baseline: 1.35x where the optimistic end's own gain is 1.15x, and
    // mix's best f at ov = 0.5, f = 0, showed 1.08x.
    const Scenario sc = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "h100-sxm");
        in.set("model", "llama-3.1-8b");
        in.set("cpus-per-gpu", "1");
        in.set("sparse", "0.1");
        in.set("idle", "park");
    });
    const VerdictReport r = verdict_report(sc, {}, 1.0);
    REQUIRE(r.base_at_ov);
    CHECK(r.base_at_ov->throughput == r.verdict.baseline.optimistic.throughput);
    CHECK(r.base_at_ov->throughput > r.verdict.baseline.conservative.throughput);  // the reloads hide at ov = 1
    CHECK(gain(*r.at_ov, *r.base_at_ov) == Approx(gain(r.verdict.at_f.optimistic, r.verdict.baseline.optimistic)));
    const MixTable t = make_mix_table(sc, 0.25, 0.5);
    REQUIRE(t.at_ov);
    REQUIRE(t.base_at_ov);
    REQUIRE(t.at_ov->f == 0);  // offload does not pay here at ov = 0.5: the best f is none
    // The mix's line divides by the baseline at that ov: 1.00x, where the ov = 0 baseline gave 1.08x.
    REQUIRE(t.base_at_ov->throughput > t.baseline.conservative.throughput * 1.05);
    const std::string text = io::render_mix_text(t, io::build_scenario(io::ScenarioInputs{}));
    CHECK(text.find("best f at ov=0.5: 0.000 (1.00×)") != std::string::npos);
    // A measured throughput calibrates ov; the gain it implies is over f = 0 at that ov too (it divided by the
    // ov = 0 baseline: 1.14x at f = 0).
    VerdictOptions opt;
    opt.fixed_f = 0.19;
    opt.measured_tps = 560.0;  // inside the band [343, 576] at f = 0.19
    const Verdict cal = make_verdict(sc, opt);
    REQUIRE(cal.calibration);
    REQUIRE(cal.calibration->ov);
    const PreparedScenario ps(sc);
    const double base = evaluate(ps, 0.0, *cal.calibration->ov).throughput;
    REQUIRE(base > cal.baseline.conservative.throughput * 1.05);  // the two baselines differ here
    CHECK(cal.calibration->calibrated_gain == Approx(560.0 / base).epsilon(1e-12));
}

TEST_CASE("requests of one output token: the TPOT SLO bounds no batch in the solved mode either", "[verdict_report]") {
    // Qwen3-30B-A3B, FP8 KV, on a B200, 1,000-token prompts with one output token and no idle gap: the batch was
    // 'limited by the TPOT SLO' (87.7 tok/s) though no request waits between two tokens of its own; --slo-tpot none
    // gave 98.0. An operating point already skipped the check (check_slos).
    const Scenario with = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "b200");
        in.set("model", "qwen3-30b-a3b");
        in.set("kv-dtype", "fp8");
        in.set("workload", "s_cached=0,a_append=1000,o_output=1,idle_gap=0s");
    });
    Scenario without = with;  // the same with --slo-tpot none
    without.policy.slo_tpot.reset();
    REQUIRE(with.policy.slo_tpot);
    const Verdict a = make_verdict(with), b = make_verdict(without);
    CHECK(a.baseline.conservative.batch_limit != Resource::slo_tpot);
    CHECK(a.baseline.conservative.throughput == b.baseline.conservative.throughput);
}

TEST_CASE("mix table: the grid, the baseline row, and best f no worse than any grid point", "[mix_table]") {
    CHECK(f_grid(0.25) == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
    CHECK(f_grid(0.3) == std::vector<double>{0, 0.3, 0.6, 0.8999999999999999, 1});  // ends at 1 though 0.3 does not divide it
    CHECK(f_grid(0.05).size() == 21);
    CHECK(f_grid(1.0) == std::vector<double>{0, 1});
    CHECK(f_divisions(10).size() == 11);
    CHECK(f_divisions(10)[3] == 0.3);
    const MixTable t = make_mix_table(sparse_example(), 0.25, 0.5);
    REQUIRE(t.rows.size() == 5);
    CHECK(t.rows.front().conservative.throughput == t.baseline.conservative.throughput);
    CHECK(t.rows.front().optimistic.throughput == t.baseline.optimistic.throughput);
    for (const Band& b : t.rows) {
        CHECK(t.best_conservative.throughput >= b.conservative.throughput * (1 - 1e-12));
        CHECK(t.best_optimistic.throughput >= b.optimistic.throughput * (1 - 1e-12));
        CHECK(b.optimistic.throughput >= b.conservative.throughput * (1 - 1e-12));
    }
    REQUIRE(t.at_ov);
    CHECK(t.at_ov->ov == 0.5);
}

TEST_CASE("report studies: a band table has no rows where nothing fits, a walkthrough matches its verdict", "[report]") {
    Scenario big = test::default_scenario();
    big.hardware.gpu.hbm_capacity = gigabytes(10);
    const BandTable none = band_table(big, f_divisions(10));
    CHECK(none.report.verdict.kind == VerdictKind::does_not_fit);
    CHECK(none.rows.empty());
    const BandTable t = band_table(sparse_example(), f_divisions(10));
    REQUIRE(t.rows.size() == 11);
    CHECK(t.rows[0].conservative.throughput == t.report.verdict.baseline.conservative.throughput);

    const Walkthrough w = walkthrough(test::default_scenario());
    const ServingPoint& p = w.verdict.baseline.conservative;
    CHECK(p.throughput == baseline_point(test::default_scenario()).throughput);
    CHECK(w.weight_read.raw() > 0);
    CHECK(w.weight_read.raw() < p.tpot);  // the step is the weight read plus the KV
    CHECK(w.per_resource.size() == kRateResources.size());
}

TEST_CASE("each lever alone, best first: the offload lever is the bankable end, the others one ladder step each",
          "[verdict_report]") {
    const VerdictReport r = verdict_report(sparse_example());
    REQUIRE(r.levers.size() >= 3);
    for (std::size_t i = 1; i < r.levers.size(); ++i) CHECK(r.levers[i - 1].gain >= r.levers[i].gain);
    bool offload = false;
    for (const LadderRung& l : r.levers) {
        REQUIRE(l.lever);
        CHECK(*l.lever != LeverKind::sparse);  // it changes what the model computes: not a serving lever
        if (*l.lever == LeverKind::offload) {
            offload = true;
            CHECK(l.gain == r.verdict.gain_bankable);
            CHECK(l.band.conservative.f == r.verdict.best_conservative.f);
        }
        if (*l.lever == LeverKind::park_idle) CHECK(l.gain == Approx(r.verdict.parking_gain_conservative));
    }
    CHECK(offload);
    // The seed example: offload (4.6x bankable) beats parking, KV quantisation and a second GPU per GPU.
    CHECK(*r.levers.front().lever == LeverKind::offload);
}

TEST_CASE("a chosen f at which one session does not fit is DOES NOT FIT there, with the f it needs", "[verdict_report]") {
    // Llama-3.1-8B on an RTX 4090 at a 129k context: one session's 16.91 GB fits the 5.94 GB left for KV only from
    // f = 0.649. At --f 0.3 its GPU share, 0.7 x 16.91 = 11.84 GB, does not fit: that is no serving point ("VERDICT:
    // INFEASIBLE — no batch fits" before), while the best f and the baseline stand.
    const Scenario sc = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "rtx-4090");
        in.set("model", "llama-3.1-8b");
        in.set("workload", "s_cached=128000,a_append=1000,o_output=500");
    });
    VerdictOptions at;
    at.fixed_f = 0.3;
    const VerdictReport r = verdict_report(sc, at);
    CHECK(r.verdict.kind == VerdictKind::does_not_fit);
    CHECK(chosen_f_does_not_fit(r.verdict));
    REQUIRE(r.verdict.smallest_f_that_fits);
    CHECK(*r.verdict.smallest_f_that_fits == Approx(0.649).margin(0.001));
    const std::string line = io::verdict_line(r);
    CHECK(line.find("DOES NOT FIT at the chosen f=0.30") != std::string::npos);
    CHECK(line.find("11.84 GB in HBM (5.94 GB free for KV)") != std::string::npos);
    CHECK(line.find("it fits from f >= 0.65") != std::string::npos);
    // Too much offloaded instead: with 12 GB of CPU DRAM, f = 0.9 puts 15.22 GB there; it fits up to f = 12/16.91.
    const Scenario small_dram = test::scenario_with([](io::ScenarioInputs& in) {
        in.set("hardware", "rtx-4090");
        in.set("model", "llama-3.1-8b");
        in.set("workload", "s_cached=128000,a_append=1000,o_output=500");
        in.set("cpu-mem", "12GB");
    });
    at.fixed_f = 0.9;
    const std::string over = io::verdict_line(verdict_report(small_dram, at));
    CHECK(over.find("15.22 GB in CPU DRAM (12 GB); it fits up to f <= 0.70") != std::string::npos);
    // At an f that fits it is a serving point again; and without --f the best f is found as before.
    at.fixed_f = 0.7;
    CHECK(verdict_report(sc, at).verdict.kind != VerdictKind::does_not_fit);
    CHECK(verdict_report(sc).verdict.kind != VerdictKind::does_not_fit);
}
