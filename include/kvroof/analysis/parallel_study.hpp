// SPDX-License-Identifier: MIT
#pragma once
// `kvroof parallel`: how to deploy a model on N GPUs. Each deployment is a
// group of t GPUs (its all-reduces, all-to-alls and KV replication as in
// every analysis: call_demand.hpp) copied d = N / t times (data parallel: the
// replicas share nothing, requests split evenly). t ranges over the divisors
// of N within the NVLink domain: with tensor-parallel attention those that
// divide the attention heads (an engine splits heads evenly over the group);
// with data-parallel attention (MLA models) any of them above 1. MoE models
// also try every expert-parallel degree e of the group that divides t, up to
// the routed experts (with data-parallel attention e = 1 or t: each GPU
// dispatches its own tokens). Pipelines of tensor-parallel groups come last:
// p > 1 stages of t GPUs for every p dividing N / t (p ≤ the layers), copied
// N / (t·p) times, their costs those of analysis/pipeline.hpp.
//
// Each deployment is run as a benchmark would: C closed-loop clients per
// replica on the ladder 1, 2, 4, … until the replica's memory is full, plus
// the memory-full point, with prefill chunked into the decode steps
// (operating_point.hpp), KV on the GPU (f = 0). Each point gives
//   tokens/s per GPU  = replica throughput / (t · p)  (the cost side)
//   tokens/s per user = 1 / ITL                        (interactivity)
// Where the SLOs stop holding between two of those, the most clients that
// still meet them is added. A deployment's best point is its highest tokens/s per GPU within the SLOs;
// deployments rank by it. The Pareto frontier keeps, over every deployment's
// points within the SLOs, those no other point beats on both axes.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kvroof/analysis/operating_point.hpp"

namespace kvroof {

struct Deployment {
    int tp = 1;  // GPUs in one group (tensor-parallel, or data-parallel attention with a TP/EP FFN)
    int dp = 1;  // replicas
    int ep = 1;  // GPUs of the group the routed experts are sharded over (MoE models)
    bool attention_dp = false;  // attention data-parallel over the group (MLA models)
    int pp = 1;  // pipeline stages of tp GPUs each (analysis/pipeline.hpp); dp = N / (tp · pp)
    friend bool operator==(const Deployment&, const Deployment&) = default;
};

struct DeploymentPoint {
    Deployment d;
    double clients = 0;  // closed-loop clients per replica (the memory-full point: what is running)
    bool memory_full = false;  // the point of `--concurrency max`
    OperatingPoint p;
    double per_gpu = 0;  // output tokens/s per GPU
    double per_user = 0;  // output tokens/s one user sees, 1 / ITL
    double total = 0;  // output tokens/s of every replica together
    bool within_slos = false;
};

struct DeploymentResult {
    Deployment d;
    bool weights_fit = false;  // the weights fit in the group's HBM
    bool session_fits = false;  // and one request at its longest beside them
    double weights_per_gpu = 0, hbm_per_gpu = 0;  // bytes (HBM minus the reserve)
    std::vector<DeploymentPoint> points;  // ascending clients
    int best = -1;  // index into points of the best within the SLOs; -1: none

    [[nodiscard]] const DeploymentPoint* best_point() const noexcept {
        return best < 0 ? nullptr : &points[static_cast<std::size_t>(best)];
    }
};

struct ParallelStudy {
    int gpus = 1;
    int nvlink_domain = 1;
    LoadSpec load;  // its chunk and max_seqs apply to every point
    std::vector<DeploymentResult> deployments;  // ranked: best tokens/s per GPU first, then those with none
    std::vector<DeploymentPoint> pareto;  // descending tokens/s per user
};

// The tensor-parallel sizes kvroof tries for `gpus` GPUs of this model.
[[nodiscard]] inline std::vector<int> tensor_parallel_sizes(const ModelSpec& m, int gpus, int domain) {
    std::vector<int> out;
    for (int t = 1; t <= std::min(gpus, domain); ++t)
        if (gpus % t == 0 && m.heads % t == 0) out.push_back(t);
    return out;
}

// The group sizes with data-parallel attention (MLA models): every divisor of
// the GPUs above 1 within the NVLink domain (each GPU runs whole attention, so
// the heads need not split); for MoE models also the divisors beyond it, up
// to the routed experts, as wide expert parallelism (DeepEP across nodes:
// deployments_of pairs them with EP = t only, the all-to-alls and the dense
// blocks' gathers crossing the network).
[[nodiscard]] inline std::vector<int> attention_dp_group_sizes(const ModelSpec& m, int gpus, int domain) {
    std::vector<int> out;
    if (m.attention != Attention::mla) return out;
    for (int t = 2; t <= gpus; ++t)
        if (gpus % t == 0 && (t <= domain || (m.is_moe() && t <= m.experts))) out.push_back(t);
    return out;
}

// The expert-parallel degrees of a group of t: 1, and for MoE models the
// divisors of t up to the routed experts (where e does not divide them the
// busiest GPU holds ⌈E/e⌉: ModelConstants::expert_load); with data-parallel
// attention only t (SGLang's DeepEP sets ep = tp).
[[nodiscard]] inline std::vector<int> expert_parallel_degrees(const ModelSpec& m, int t, bool attention_dp) {
    std::vector<int> out{1};
    if (!m.is_moe()) return out;
    for (int e = 2; e <= std::min(t, m.experts); ++e)
        if (t % e == 0 && (!attention_dp || e == t)) out.push_back(e);
    return out;
}

// Every deployment tried: tensor-parallel attention first, then data-parallel.
[[nodiscard]] inline std::vector<Deployment> deployments_of(const ModelSpec& m, int gpus, int domain) {
    std::vector<Deployment> out;
    for (int t : tensor_parallel_sizes(m, gpus, domain))
        for (int e : expert_parallel_degrees(m, t, false)) out.push_back({t, gpus / t, e, false});
    const auto wide_ok = [domain](int t, int e) { return t <= domain || e == t; };  // beyond the domain: wide EP only
    for (int t : attention_dp_group_sizes(m, gpus, domain))
        for (int e : expert_parallel_degrees(m, t, true))
            if (wide_ok(t, e)) out.push_back({t, gpus / t, e, true});
    // Pipelines of those groups, tensor-parallel then data-parallel attention: every p > 1 dividing N / t, up to the layers.
    for (const bool adp : {false, true})
        for (int t : adp ? attention_dp_group_sizes(m, gpus, domain) : tensor_parallel_sizes(m, gpus, domain))
            for (int p = 2; p <= std::min(gpus / t, m.layers); ++p)
                if ((gpus / t) % p == 0)
                    for (int e : expert_parallel_degrees(m, t, adp))
                        if (wide_ok(t, e)) out.push_back({t, gpus / (t * p), e, adp, p});
    return out;
}

namespace detail {
inline constexpr int kMaxLadder = 40;  // 1 .. 2^39 clients: far beyond any HBM

[[nodiscard]] inline DeploymentPoint deployment_point(const PreparedScenario& ps, const LoadSpec& load, Deployment d) {
    DeploymentPoint x;
    x.d = d;
    x.memory_full = load.mode == LoadMode::saturate;
    x.p = operating_point(ps, load, 0.0, 0.0);
    // The memory-full point's clients are all it holds, idle ones too (its concurrency), not only those running:
    // with idle gaps the running requests are fewer, and the point read as fewer clients was dropped or mis-bracketed.
    x.clients = x.memory_full ? x.p.concurrency : load.value;
    x.per_gpu = x.p.throughput_per_gpu;  // over the replica's tp · pp GPUs
    x.per_user = x.p.throughput_per_user;
    x.total = x.p.throughput * d.dp;
    x.within_slos = x.p.fits && x.p.within_slo_tpot && x.p.within_slo_ttft && x.p.throughput > 0;
    return x;
}

// Where the SLOs stop holding between two ladder points, the most clients (a
// whole number) that still meet them, found by bisection (ITL and TTFT grow
// with the clients), inserted in order: the deployment's best load lies there.
inline void add_slo_edge(const PreparedScenario& ps, LoadSpec load, Deployment d, std::vector<DeploymentPoint>& points) {
    for (std::size_t i = 0; i + 1 < points.size(); ++i) {
        if (!points[i].within_slos || points[i + 1].within_slos) continue;
        double lo = points[i].clients, hi = points[i + 1].clients;  // lo meets them, hi does not
        std::optional<DeploymentPoint> edge;
        for (;;) {  // whole numbers strictly between lo and hi (hi may be fractional: the memory-full point)
            load.value = std::floor(0.5 * (lo + hi));
            if (load.value <= lo || load.value >= hi) break;
            const DeploymentPoint x = deployment_point(ps, load, d);
            if (x.within_slos) {
                lo = load.value;
                edge = x;
            } else {
                hi = load.value;
            }
        }
        if (edge) points.insert(points.begin() + static_cast<std::ptrdiff_t>(i) + 1, *edge);
        return;
    }
}

[[nodiscard]] inline DeploymentResult run_deployment(const Scenario& sc, const LoadSpec& base, Deployment d) {
    Scenario s = sc;
    s.hardware.deployment.gpus = d.tp;
    s.hardware.deployment.ep = d.ep;
    s.hardware.deployment.attention_dp = d.attention_dp ? 1 : 0;
    s.hardware.deployment.pp = d.pp;
    s.hardware.deployment.pp_microbatches = 0;
    const PreparedScenario ps(s);
    DeploymentResult r;
    r.d = d;
    const double per_gpu = ps.pipe.capacity_scale * d.tp;  // the busiest stage's share of the pipeline's HBM, per GPU
    r.weights_per_gpu = ps.mc.weights.raw() / per_gpu;
    r.hbm_per_gpu = ps.sys.hbm_capacity.raw() / per_gpu;
    r.weights_fit = ps.hbm_free_bytes() > 0;
    r.session_fits = r.weights_fit && ps.session_fits_hbm_peak(0.0);
    if (!r.session_fits) return r;
    LoadSpec load = base;
    load.mode = LoadMode::concurrency;
    for (int i = 0; i < kMaxLadder; ++i) {
        load.value = std::ldexp(1.0, i);
        const DeploymentPoint x = deployment_point(ps, load, d);
        // Beyond memory or the chunk budget more clients only queue: the memory-full point says it.
        if (x.p.memory_queued || !x.p.fits || x.p.prefill_bound) break;
        r.points.push_back(x);
    }
    LoadSpec max_load = load;
    max_load.mode = LoadMode::saturate;
    const DeploymentPoint full = deployment_point(ps, max_load, d);
    if (full.p.fits && (r.points.empty() || full.clients > r.points.back().clients)) r.points.push_back(full);
    add_slo_edge(ps, load, d, r.points);
    for (std::size_t i = 0; i < r.points.size(); ++i)
        if (r.points[i].within_slos && (r.best < 0 || r.points[i].per_gpu > r.points[static_cast<std::size_t>(r.best)].per_gpu))
            r.best = static_cast<int>(i);
    return r;
}

// The points within the SLOs that no other beats on both tokens/s per user and per GPU.
[[nodiscard]] inline std::vector<DeploymentPoint> pareto_frontier(const std::vector<DeploymentResult>& ds) {
    std::vector<DeploymentPoint> all;
    for (const DeploymentResult& r : ds)
        for (const DeploymentPoint& x : r.points)
            if (x.within_slos) all.push_back(x);
    // Ties (more clients past memory-full only queue: the same ITL and tok/s) go to the fewest
    // clients, then to the deployment tried first, so the frontier names the least load that reaches a point.
    std::stable_sort(all.begin(), all.end(), [](const DeploymentPoint& a, const DeploymentPoint& b) {
        if (a.per_user != b.per_user) return a.per_user > b.per_user;
        if (a.per_gpu != b.per_gpu) return a.per_gpu > b.per_gpu;
        return a.clients < b.clients;
    });
    std::vector<DeploymentPoint> front;
    for (const DeploymentPoint& x : all)
        if (front.empty() || x.per_gpu > front.back().per_gpu) front.push_back(x);
    return front;
}
}  // namespace detail

// Every deployment of sc.hardware.deployment.gpus GPUs, ranked, and the frontier.
[[nodiscard]] inline ParallelStudy parallel_study(const Scenario& sc, const LoadSpec& load) {
    sc.check_validity();
    if (sc.hardware.deployment.pp > 1)
        throw InputError("pp: every pipeline degree of the total GPUs (gpus) is tried here, so only 1 is allowed, got " +
                         std::to_string(sc.hardware.deployment.pp));
    if (sc.hardware.deployment.dp > 1)
        throw InputError("dp: every replica count of the total GPUs (gpus) is tried here, so only 1 is allowed, got " +
                         std::to_string(sc.hardware.deployment.dp));
    if (sc.hardware.deployment.ep > 1)
        throw InputError("ep: every expert-parallel degree of each group is tried here, so only 1 is allowed, got " +
                         std::to_string(sc.hardware.deployment.ep));
    if (sc.hardware.deployment.attention_dp != 0)
        throw InputError("attention-dp: tensor- and data-parallel attention are both tried here, so only 0 is allowed, got " +
                         std::to_string(sc.hardware.deployment.attention_dp));
    if (sc.hardware.deployment.pp_microbatches != 0)  // every pipeline here runs pp micro-batches
        throw InputError(
            "pp-microbatches: every pipeline tried here runs as many micro-batches as stages, so only 0 is "
            "allowed, got " +
            std::to_string(sc.hardware.deployment.pp_microbatches));
    load.check_validity();
    ParallelStudy s;
    s.gpus = sc.hardware.deployment.gpus;
    s.nvlink_domain = sc.hardware.gpu.nvlink_domain;
    s.load = load;
    for (const Deployment& d : deployments_of(sc.model, s.gpus, s.nvlink_domain))
        s.deployments.push_back(detail::run_deployment(sc, load, d));
    auto best = [](const DeploymentResult& r) { return r.best_point() ? r.best_point()->per_gpu : -1.0; };
    std::stable_sort(s.deployments.begin(), s.deployments.end(),
                     [&](const DeploymentResult& a, const DeploymentResult& b) { return best(a) > best(b); });
    s.pareto = detail::pareto_frontier(s.deployments);
    return s;
}

}  // namespace kvroof
