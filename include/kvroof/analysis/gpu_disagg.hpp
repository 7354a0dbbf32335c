// SPDX-License-Identifier: MIT
#pragma once
// `kvroof disagg --arch gpu-pools`: prefill and decode on separate GPU pools
// (DistServe, NVIDIA Dynamo), against the same GPUs aggregated. For each
// tensor-parallel size t (as `kvroof parallel` tries them), N GPUs form N/t
// instances, P of them prefilling and D = N/t − P decoding:
//
// Prefill instance: every step carries `chunk` prefill tokens and no decode
// (point_step.hpp's step with the classes' decode removed): T_p. It starts
// x_p = chunk / Σp·A requests per step: λ_p = x_p / T_p requests/s.
// Decode instance: requests arrive with their KV (S_c + A tokens) and only
// decode: the bare step T_d(x) at x starts per step, B = x·Σp·D sequences;
// x is the largest that keeps the decoding KV, B·(S + O/2) tokens at kv_gpu
// bytes, within free HBM and T_d within the TPOT SLO (both grow with x;
// bisection): λ_d = x / T_d.
// KV transfer: each request's S·kv bytes (one copy) cross from a prefill to a
// decode instance over NVLink within the NVLink domain (t GPUs each sending
// their share); N GPUs beyond one domain send it over the scale-out network
// (each GPU's NIC, GPUDirect RDMA, α_net once), as the all-to-alls beyond the
// domain go; GPUs without NVLink in one domain over their host link (PCIe
// peer to peer). It adds to TTFT:
//   TTFT = ⌈A/chunk⌉·T_p + S·kv / (t·η_nvlink·BW_nvlink)   (or t·BW_net + α_net, or t·η_link·BW_link)
// Throughput = Σp·O · min(P·λ_p, D·λ_d), P chosen to maximise it.
// Pipeline stages (pipeline.hpp): each instance is t·pp GPUs, N/(t·pp) of
// them. A decode instance runs pipeline cycles (point_step.hpp's step); a
// prefill instance's chunks follow each other through the stages, so T_p in
// λ_p is the busiest stage's share of a chunk's step (pipelined_pass), while
// TTFT keeps each chunk's whole trip; the KV leaves from every stage's GPUs,
// the busiest stage's ι/pp of it.
// Aggregated: the best deployment of `kvroof parallel` on the same N GPUs.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kvroof/analysis/parallel_study.hpp"

namespace kvroof {

struct PoolSplit {
    int tp = 1, pp = 1;
    int prefill_instances = 0, decode_instances = 0;
    double prefill_rps = 0, decode_rps = 0;  // per instance
    double prefill_step = 0, decode_step = 0;  // s; the decode step at the load the split gives each decode instance
    double decode_batch = 0;  // sequences per decode instance, at that load (decode_rps: at its most)
    Resource decode_limit = Resource::hbm_capacity;  // hbm_capacity or slo_tpot (dram_capacity: idle sessions parked)
    bool idle_bound = false;  // the memory idle sessions hold between calls caps the rate below both pools' most
    double ttft = 0, transfer = 0;  // s
    double throughput = 0, per_gpu = 0;  // output tokens/s
    std::vector<double> per_gpu_by_prefill;  // output tokens/s per GPU with P = 1, 2, … prefill instances
    bool feasible = false;
};

struct GpuDisaggStudy {
    int gpus = 1, pp = 1;  // all GPUs; pipeline stages per instance
    std::vector<PoolSplit> splits;  // one per tensor-parallel size, best first
    DeploymentPoint aggregated;  // the best aggregated point within the SLOs
    bool aggregated_ok = false;
};

namespace detail {
// The classes' inputs with decode (prefill pool) or prefill (decode pool) removed.
[[nodiscard]] inline PointInputs pool_inputs(const PreparedScenario& ps, bool prefill_pool, const LoadSpec& load) {
    PointInputs in = point_inputs(ps, 0.0, load);
    in.sum_pD = in.sum_pA = 0;
    for (std::size_t i = 0; i < in.n; ++i) {
        ClassLoad& c = in.cls[i];
        if (prefill_pool) c.D = 0;
        in.sum_pD += c.p * c.D;
        in.sum_pA += c.p * c.A;
    }
    return in;
}

// The starts per step x of a decode instance serving `share` requests/s, below its most at x_max (x / step(x)
// grows with x).
[[nodiscard]] inline double decode_x_at(const PreparedScenario& ps, const PointInputs& dec, double x_max, double share) {
    double a = 0, b = x_max;
    for (int i = 0; i < 100 && b - a > 1e-12 * x_max; ++i) {
        const double mid = 0.5 * (a + b);
        (mid / step_time(ps, dec, 0.0, 0.0, mid, StepPrefill::none) < share ? a : b) = mid;
    }
    return b;
}

// The memory idle sessions hold between calls, as the aggregated deployment's closed-loop clients hold it:
// each keeps its S + O tokens of KV for its idle gap, i.e. λ·Σp·idle·(S + O) tokens at λ requests/s (Little).
// Under --idle hold they sit in HBM wherever an instance has room (a prefill instance's free HBM, a decode
// instance's beside its decoding sequences); under park in the hosts' DRAM. Where the next call's cached
// prefix sits when its prefill starts is not charged (a KV-aware router sends it to the instance that holds it).
struct IdleMemory {
    double per_rps = 0;  // bytes held per request/s of the deployment
    double capacity = 0;  // bytes: the n instances' free HBM (hold) or their hosts' DRAM (park)
    double decode_per_x = 0;  // HBM bytes a decode instance's decoding sequences hold per start per step
    bool park = false;

    // The most requests/s, at most `most`, whose idle sessions fit beside what the d decode instances hold at
    // their share (x_max: a decode instance's most starts per step). Both grow with the rate: bisection.
    [[nodiscard]] double rate_within(const PreparedScenario& ps, const PointInputs& dec, double x_max, int d, double most) const {
        auto fits = [&](double rps) {
            const double share = rps / d;
            const double x = park || share <= 0 ? 0.0 : decode_x_at(ps, dec, x_max, share);
            return rps * per_rps + d * decode_per_x * x <= capacity;
        };
        if (per_rps <= 0 || !(most > 0) || fits(most)) return most;
        double a = 0, b = most;
        for (int i = 0; i < 60 && b - a > 1e-9 * most; ++i) (fits(0.5 * (a + b)) ? a : b) = 0.5 * (a + b);
        return a;
    }
};

[[nodiscard]] inline IdleMemory idle_memory(const PreparedScenario& ps, const PointInputs& dec, int n, double decode_per_x) {
    IdleMemory m;
    m.park = ps.idle == IdlePolicy::park;
    m.per_rps = idle_token_seconds(ps.mc, dec) * (m.park ? ps.mc.kv_per_token.raw() : ps.mc.kv_gpu_per_token.raw());
    m.capacity = n * (m.park ? ps.sys.cpu_memory.raw() : ps.hbm_free_bytes());
    m.decode_per_x = m.park ? 0.0 : decode_per_x;
    return m;
}

// s to send `tokens` tokens of kv (one copy) from a prefill to a decode instance of t GPUs a stage, each stage's
// GPUs sending their share (the busiest stage's ι/pp of it): NVLink within one domain, the scale-out network
// (+ α_net) across domains, the host link for GPUs without NVLink.
[[nodiscard]] inline double kv_transfer_time(const HardwareSpec& hw, const PreparedScenario& ps, int t, double tokens) noexcept {
    const bool one_domain = hw.deployment.gpus <= hw.gpu.nvlink_domain;
    const bool nvlink = hw.gpu.nvlink_bandwidth.raw() > 0 && one_domain;
    const double bw = t * (nvlink       ? hw.gpu.eta_nvlink * hw.gpu.nvlink_bandwidth.raw()
                           : one_domain ? hw.link.eta * hw.link.bandwidth.raw()
                                        : hw.net.bandwidth.raw());
    return ps.pipe.offload_share * ps.mc.kv_per_token.raw() * tokens / bw + (one_domain ? 0.0 : hw.net.latency.raw());
}

[[nodiscard]] inline PoolSplit pool_split(const Scenario& sc, const LoadSpec& load, int t) {
    Scenario s = sc;
    s.hardware.deployment.gpus = t;
    const PreparedScenario ps(s);
    PoolSplit r;
    r.tp = t;
    r.pp = sc.hardware.deployment.pp;
    if (!(ps.hbm_free_bytes() > 0) || !ps.session_fits_hbm_peak(0.0)) return r;
    const PointInputs pre = pool_inputs(ps, true, load), dec = pool_inputs(ps, false, load);
    const double x_p = load.chunk / pre.sum_pA;
    const StepContent chunk = step_content(ps, pre, x_p, StepPrefill::mean);
    r.prefill_step = step_time(ps, chunk, 0.0, 0.0);  // a chunk's trip
    const double stage =
        ps.pipe.pp > 1 ? pipelined_pass(ps.pipe, group_step_time(ps, chunk, 0.0, 0.0, nullptr), load.chunk) + ps.step_overhead
                       : r.prefill_step;
    r.prefill_rps = x_p / stage;
    // Decode: the largest x within memory and the SLO.
    double held = 0, mean_S = 0, chunks = 0;  // KV tokens per unit x; Σp·held(S); Σp·⌈A/chunk⌉ (tokens of kv)
    for (std::size_t i = 0; i < dec.n; ++i) {
        held += dec.cls[i].p * dec.cls[i].D * kv_tokens_held(ps.mc, dec.cls[i].S + 0.5 * dec.cls[i].O);
        mean_S += dec.cls[i].p * kv_tokens_held(ps.mc, dec.cls[i].S);
        chunks += dec.cls[i].p * dec.cls[i].chunks;
    }
    const double kv_gpu = ps.mc.kv_gpu_per_token.raw();
    const auto& slo = sc.policy.slo_tpot;
    auto ok = [&](double x) {
        return kv_gpu * held * x <= ps.hbm_free_bytes() &&
               (!slo || step_time(ps, dec, 0.0, 0.0, x, StepPrefill::none) <= slo->raw());
    };
    double lo = 0, hi = ps.hbm_free_bytes() / (kv_gpu * held);  // memory alone
    if (ok(hi)) {
        lo = hi;
    } else {
        for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
            const double mid = 0.5 * (lo + hi);
            if (ok(mid))
                lo = mid;
            else
                hi = mid;
        }
        r.decode_limit = kv_gpu * held * hi <= ps.hbm_free_bytes() ? Resource::slo_tpot : Resource::hbm_capacity;
    }
    if (!(lo > 0)) return r;
    r.decode_step = step_time(ps, dec, 0.0, 0.0, lo, StepPrefill::none);
    r.decode_rps = lo / r.decode_step;
    r.decode_batch = lo * dec.sum_pD;
    r.transfer = kv_transfer_time(sc.hardware, ps, t, mean_S);
    r.ttft = chunks * r.prefill_step + r.transfer;
    // The split of the N/t instances that balances the pools, within the memory idle sessions hold.
    const int n = sc.hardware.deployment.gpus / (t * r.pp);
    const IdleMemory idle = idle_memory(ps, dec, n, kv_gpu * held);
    for (int p = 1; p < n; ++p) {
        const double most = std::min(p * r.prefill_rps, (n - p) * r.decode_rps);
        const double rps = idle.rate_within(ps, dec, lo, n - p, most);
        const double tput = rps * dec.sum_pO;
        r.per_gpu_by_prefill.push_back(tput / sc.hardware.deployment.gpus);
        if (tput > r.throughput) {
            r.throughput = tput;
            r.idle_bound = rps < most;
            r.prefill_instances = p;
            r.decode_instances = n - p;
        }
    }
    r.per_gpu = r.throughput / sc.hardware.deployment.gpus;
    // Where the prefill pool feeds the decode instances less than they serve, each runs below its most, and the
    // step and batch it sees are those of its share of the requests.
    const double share = r.decode_instances > 0 ? r.throughput / dec.sum_pO / r.decode_instances : 0.0;
    if (r.idle_bound) r.decode_limit = idle.park ? Resource::dram_capacity : Resource::hbm_capacity;
    if (share > 0 && share < r.decode_rps) {
        const double x = decode_x_at(ps, dec, lo, share);
        r.decode_step = step_time(ps, dec, 0.0, 0.0, x, StepPrefill::none);
        r.decode_batch = x * dec.sum_pD;
    }
    r.feasible = r.throughput > 0 && (!sc.policy.slo_ttft || r.ttft <= sc.policy.slo_ttft->raw());
    return r;
}
}  // namespace detail

[[nodiscard]] inline GpuDisaggStudy gpu_disagg_study(const Scenario& sc, const LoadSpec& load) {
    sc.check_validity();
    load.check_validity();
    GpuDisaggStudy s;
    s.gpus = sc.hardware.deployment.gpus;
    const int pp = s.pp = sc.hardware.deployment.pp;
    if (s.gpus % pp != 0)
        throw InputError("pp: must divide gpus (" + std::to_string(s.gpus) + ", both pools' GPUs), got " + std::to_string(pp));
    // A request of one output token is all prefill (its token comes from the prefill pass): no decode pool has work.
    if (!sc.mix.second_token())
        throw InputError(
            "workload: every class outputs one token, which its prefill pass makes, so a decode pool would have nothing "
            "to do: pools pay only where requests decode");
    // The expert-parallel degree given splits each instance's experts: only instances it divides (EP 8 on a TP4
    // instance is no deployment, as verdict refuses it).
    const int ep = sc.hardware.deployment.ep;
    int sizes = 0;
    for (int t : tensor_parallel_sizes(sc.model, s.gpus / pp, sc.hardware.gpu.nvlink_domain)) {
        if (s.gpus / (t * pp) < 2) continue;  // each pool needs an instance
        ++sizes;
        if (t % ep == 0) s.splits.push_back(detail::pool_split(sc, load, t));
    }
    if (s.splits.empty() && sizes > 0 && ep > 1)
        throw InputError("ep: must divide an instance's tensor-parallel group (each pool has at least one instance; with " +
                         std::to_string(s.gpus) + " GPUs in stages of pp " + std::to_string(pp) + " a group has at most " +
                         std::to_string(s.gpus / 2 / pp) + " GPUs), got " + std::to_string(ep));
    std::stable_sort(s.splits.begin(), s.splits.end(), [](const PoolSplit& a, const PoolSplit& b) {
        return (a.feasible ? a.per_gpu : -1.0) > (b.feasible ? b.per_gpu : -1.0);
    });
    Scenario whole = sc;  // parallel tries every pipeline and expert-parallel degree and both attentions itself
    whole.hardware.deployment.pp = 1;
    whole.hardware.deployment.pp_microbatches = 0;
    whole.hardware.deployment.ep = 1;
    whole.hardware.deployment.attention_dp = 0;
    const ParallelStudy agg = parallel_study(whole, load);
    if (const DeploymentPoint* b = agg.deployments.empty() ? nullptr : agg.deployments.front().best_point()) {
        s.aggregated_ok = true;
        s.aggregated = *b;
    }
    return s;
}

}  // namespace kvroof
