// SPDX-License-Identifier: MIT
// `kvroof parallel`: which deployments are tried, what each point means, and
// the frontier's invariants.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "kvroof/analysis/parallel_study.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"

using namespace kvroof;

namespace {
Scenario on(const char* hardware, const char* model, int gpus, const char* slo = nullptr) {
    io::ScenarioInputs in;
    in.set("hardware", hardware);
    in.set("model", model);
    in.set("gpus", std::to_string(gpus));
    in.set("workload", "s_cached=0,a_append=2000,o_output=500,idle_gap=0");
    if (slo) in.set("slo-tpot", slo);
    return io::build_scenario(in).scenario;
}
}  // namespace

TEST_CASE("tensor-parallel sizes: divisors of the GPUs within the NVLink domain that split the heads evenly", "[parallel]") {
    const ModelSpec llama = io::load_model("--model", "llama-3.1-70b");  // 64 heads
    CHECK(tensor_parallel_sizes(llama, 8, 8) == std::vector<int>{1, 2, 4, 8});
    CHECK(tensor_parallel_sizes(llama, 8, 2) == std::vector<int>{1, 2});  // NVLink pairs
    CHECK(tensor_parallel_sizes(llama, 6, 8) == std::vector<int>{1, 2});  // 3 and 6 do not divide 64 heads
    const ModelSpec dsv3 = io::load_model("--model", "deepseek-v3");  // 128 heads
    CHECK(tensor_parallel_sizes(dsv3, 72, 72) == std::vector<int>{1, 2, 4, 8});
    CHECK(tensor_parallel_sizes(dsv3, 1, 72) == std::vector<int>{1});
}

TEST_CASE("a deployment's points: per GPU = replica throughput / (TP x PP), total = DP x replica, per user = 1 / ITL",
          "[parallel]") {
    const Scenario s = on("h100-sxm", "llama-3.1-70b", 8);
    const ParallelStudy st = parallel_study(s, LoadSpec{});
    REQUIRE(st.deployments.size() == 10);  // TP 1, 2, 4, 8; and as pipelines TP1 x PP 2, 4, 8, TP2 x PP 2, 4, TP4 x PP2
    for (const DeploymentResult& r : st.deployments) {
        INFO("TP" << r.d.tp << " PP" << r.d.pp);
        CHECK(r.d.tp * r.d.pp * r.d.dp == 8);
        if (r.d.tp == 1 && r.d.pp == 1) {  // 141 GB of bf16 weights on one 80 GB H100
            CHECK_FALSE(r.weights_fit);
            CHECK(r.points.empty());
            CHECK(r.best == -1);
            continue;
        }
        REQUIRE_FALSE(r.points.empty());
        // Each point is the operating point of one TP group at that many clients.
        Scenario g = s;
        g.hardware.deployment.gpus = r.d.tp;
        g.hardware.deployment.pp = r.d.pp;
        LoadSpec l;
        l.value = r.points.front().clients;
        const OperatingPoint p = operating_point(PreparedScenario(g), l, 0.0, 0.0);
        CHECK(r.points.front().p.throughput == p.throughput);
        for (const DeploymentPoint& x : r.points) {
            CHECK(x.per_gpu == Approx(x.p.throughput / (r.d.tp * r.d.pp)));
            CHECK(x.total == Approx(x.p.throughput * r.d.dp));
            CHECK(x.per_user == Approx(1.0 / x.p.itl));
        }
    }
    // Ranked: tokens/s per GPU of each best point, descending; no best last.
    double prev = 1e300;
    for (const DeploymentResult& r : st.deployments) {
        const double v = r.best < 0 ? -1.0 : r.points[static_cast<std::size_t>(r.best)].per_gpu;
        CHECK(v <= prev);
        prev = v;
    }
}

TEST_CASE("the best point meets the SLOs, and the SLO edge is found to one client", "[parallel]") {
    const Scenario s = on("h200", "llama-3.1-405b", 8, "50ms");
    const ParallelStudy st = parallel_study(s, LoadSpec{});
    for (const DeploymentResult& r : st.deployments) {
        if (r.best < 0) continue;
        const DeploymentPoint& b = r.points[static_cast<std::size_t>(r.best)];
        CHECK(b.within_slos);
        CHECK(b.p.itl <= 0.050);
        for (const DeploymentPoint& x : r.points)
            if (x.within_slos) CHECK(x.per_gpu <= b.per_gpu);
        // One client more than the edge breaks the SLO (when the edge is not the memory-full point).
        if (!b.memory_full && r.best + 1 < static_cast<int>(r.points.size())) {
            Scenario g = s;
            g.hardware.deployment.gpus = r.d.tp;
            LoadSpec l;
            l.value = b.clients + 1;
            CHECK(operating_point(PreparedScenario(g), l, 0.0, 0.0).itl > 0.050);
        }
    }
}

TEST_CASE("the Pareto frontier: within the SLOs, per user falling while per GPU rises, none dominated", "[parallel]") {
    const ParallelStudy st = parallel_study(on("h100-sxm", "llama-3.1-70b", 8), LoadSpec{});
    REQUIRE(st.pareto.size() >= 2);
    for (std::size_t i = 0; i < st.pareto.size(); ++i) {
        CHECK(st.pareto[i].within_slos);
        if (i > 0) {
            CHECK(st.pareto[i].per_user <= st.pareto[i - 1].per_user);
            CHECK(st.pareto[i].per_gpu > st.pareto[i - 1].per_gpu);
        }
        for (const DeploymentResult& r : st.deployments)
            for (const DeploymentPoint& x : r.points)
                if (x.within_slos) CHECK_FALSE((x.per_user > st.pareto[i].per_user && x.per_gpu > st.pareto[i].per_gpu));
    }
    // Its ends: the most interactive point is the largest group at one client.
    CHECK(st.pareto.front().d.tp == 8);
    CHECK(st.pareto.front().clients == 1);
}

TEST_CASE("one GPU: a single deployment, the operating points of that GPU", "[parallel]") {
    const ParallelStudy st = parallel_study(on("h100-sxm", "llama-3.1-8b", 1), LoadSpec{});
    REQUIRE(st.deployments.size() == 1);
    CHECK(st.deployments[0].d.tp == 1);
    CHECK(st.deployments[0].d.dp == 1);
    CHECK(st.deployments[0].best >= 0);
    CHECK(st.deployments[0].points.front().p.step_allreduce == 0.0);
}

TEST_CASE("the SLO edge below a fractional memory-full point is found (once an endless bisection)", "[parallel]") {
    io::ScenarioInputs in;
    in.set("hardware", "h100-sxm");
    in.set("gpus", "8");
    in.set("model", "llama-3.1-70b");
    in.set("weight-dtype", "fp8");
    in.set("workload", "s_cached=0,a_append=2000,o_output=500,idle_gap=0");
    const ParallelStudy st = parallel_study(io::build_scenario(in).scenario, LoadSpec{});
    REQUIRE_FALSE(st.deployments.empty());
    const DeploymentResult& top = st.deployments.front();
    REQUIRE(top.best >= 0);
    const DeploymentPoint& b = top.points[static_cast<std::size_t>(top.best)];
    CHECK(b.within_slos);
    CHECK(b.clients == std::floor(b.clients));  // a whole number of clients
}

TEST_CASE("deployments tried: EP degrees for MoE models, data-parallel attention for MLA models", "[parallel]") {
    // Dense GQA: tensor parallelism on 1, 2, 4, 8, then pipelines of 1 (PP 2, 4, 8), 2 (PP 2, 4) and 4 (PP 2): 10.
    const ModelSpec llama = io::load_model("--model", "llama-3.1-70b");
    const std::vector<Deployment> l = deployments_of(llama, 8, 8);
    CHECK(l.size() == 10);
    CHECK(std::count(l.begin(), l.end(), Deployment{2, 1, 1, false, 4}) == 1);
    // Qwen3-235B-A22B (GQA, 64 heads, 128 routed experts) on 8: TP 1, 2, 4, 8
    // with every EP dividing the group: 1 + 2 + 3 + 4 = 10 deployments; no
    // data-parallel attention (GQA); pipelines 3 x 1 + 2 x 2 + 1 x 3 = 10.
    const ModelSpec qwen = io::load_model("--model", "qwen3-235b-a22b");
    const std::vector<Deployment> q = deployments_of(qwen, 8, 8);
    CHECK(q.size() == 20);
    CHECK(std::count_if(q.begin(), q.end(), [](const Deployment& d) { return d.attention_dp; }) == 0);
    CHECK(std::count(q.begin(), q.end(), Deployment{8, 1, 8, false}) == 1);
    // DeepSeek-V3 (MLA, 128 heads, 256 routed experts) on a GB200 NVL72:
    // tensor-parallel attention on 1, 2, 4, 8 GPUs (128 heads) with EP dividing
    // them: 1 + 2 + 3 + 4 = 10; data-parallel attention on every divisor of 72
    // above 1 (11 of them), with EP 1 and EP = the group (each at most the
    // 256 experts; 3, 6, 9, 12, 18, 24, 36, 72 do not divide them, so their
    // busiest GPU holds ⌈256/e⌉): 22. Pipelines of the tensor-parallel groups, p dividing 72 / t up to
    // the 61 layers: t = 1 (10 p, 72 excluded), 2 (8 p x 2 EP), 4 (5 p x 3 EP),
    // 8 (p = 3, 9 x 4 EP): 10 + 16 + 15 + 8 = 49. Pipelines of the data-parallel-attention
    // groups likewise, each with EP 1 and t: t = 2 (8 p), 3 (7), 4 (5), 6 (5), 8 (2), 9 (3),
    // 12 (3), 18 (2), 24 (1), 36 (1), 72 (none): 37 x 2 = 74.
    const ModelSpec dsv3 = io::load_model("--model", "deepseek-v3");
    const std::vector<Deployment> d = deployments_of(dsv3, 72, 72);
    CHECK(d.size() == 32 + 49 + 74);
    CHECK(std::count(d.begin(), d.end(), Deployment{6, 6, 6, true, 2}) == 1);
    CHECK(std::count(d.begin(), d.end(), Deployment{36, 1, 1, true, 2}) == 1);
    CHECK(std::count_if(d.begin(), d.end(), [](const Deployment& x) { return x.attention_dp && x.tp == 72 && x.pp > 1; }) == 0);
    CHECK(std::count(d.begin(), d.end(), Deployment{8, 1, 8, false, 9}) == 1);
    CHECK(std::count(d.begin(), d.end(), Deployment{1, 1, 1, false, 72}) == 0);  // more stages than layers
    CHECK(std::count(d.begin(), d.end(), Deployment{8, 9, 8, true}) == 1);
    CHECK(std::count(d.begin(), d.end(), Deployment{72, 1, 1, true}) == 1);
    CHECK(std::count(d.begin(), d.end(), Deployment{72, 1, 72, true}) == 1);  // 72 does not divide 256: 40 GPUs hold 4
    CHECK(std::count(d.begin(), d.end(), Deployment{6, 12, 6, true}) == 1);
    CHECK(std::count(d.begin(), d.end(), Deployment{8, 9, 4, true}) == 0);  // ADP dispatches from every GPU: EP 1 or 8
    // Beyond an NVLink domain of 8 (two HGX boards): data-parallel attention over all 16 with EP 16 (wide EP,
    // its all-to-alls crossing the network), never with EP 1; tensor-parallel groups stay within the domain.
    const std::vector<Deployment> w = deployments_of(dsv3, 16, 8);
    CHECK(std::count(w.begin(), w.end(), Deployment{16, 1, 16, true}) == 1);
    CHECK(std::count(w.begin(), w.end(), Deployment{16, 1, 1, true}) == 0);
    CHECK(std::count_if(w.begin(), w.end(), [](const Deployment& x) { return !x.attention_dp && x.tp > 8; }) == 0);
    CHECK(attention_dp_group_sizes(dsv3, 16, 8) == std::vector<int>{2, 4, 8, 16});
    CHECK(expert_parallel_degrees(dsv3, 8, false) == std::vector<int>{1, 2, 4, 8});
    CHECK(expert_parallel_degrees(dsv3, 8, true) == std::vector<int>{1, 8});
    CHECK(expert_parallel_degrees(llama, 8, false) == std::vector<int>{1});
    CHECK(expert_parallel_degrees(dsv3, 72, false) == std::vector<int>{1, 2, 3, 4, 6, 8, 9, 12, 18, 24, 36, 72});
    ModelSpec few = dsv3;  // an EP degree above the routed experts would leave GPUs without one: not tried
    few.experts = 16;
    CHECK(expert_parallel_degrees(few, 72, false) == std::vector<int>{1, 2, 3, 4, 6, 8, 9, 12});
    CHECK(expert_parallel_degrees(few, 72, true) == std::vector<int>{1});
}

TEST_CASE("a data-parallel-attention deployment holds the replicated attention weights and one copy of the latent",
          "[parallel]") {
    io::ScenarioInputs in;
    in.set("hardware", "h200");
    in.set("model", "deepseek-v3");
    in.set("gpus", "8");
    in.set("weight-dtype", "fp8");
    in.set("workload", "s_cached=0,a_append=2000,o_output=500,idle_gap=0");
    const Scenario s = io::build_scenario(in).scenario;
    const DeploymentResult tp = detail::run_deployment(s, LoadSpec{}, Deployment{8, 1, 1, false});
    const DeploymentResult adp = detail::run_deployment(s, LoadSpec{}, Deployment{8, 1, 1, true});
    // 7 more copies of the 11,413,422,080 B of FP8 attention weights, spread over
    // the 8 GPUs.
    CHECK(adp.weights_per_gpu - tp.weights_per_gpu == Approx(7 * 11'413'422'080.0 / 8).epsilon(1e-12));
    REQUIRE(tp.best_point());
    REQUIRE(adp.best_point());
    // The latent held once instead of 8 times: the memory-full point runs more
    // requests.
    CHECK(adp.points.back().clients > tp.points.back().clients);
}
