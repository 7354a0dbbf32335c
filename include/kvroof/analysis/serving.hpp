// SPDX-License-Identifier: MIT
#pragma once
// Serving throughput of a concurrent mix of call classes: the fluid steady
// state of seed 000 (model/concurrent.py, "serving_mix"), prefill included.
//
// 1. Batch: B = min(b_cap_hbm, b_cap_dram, b_slo). Capacity counts every
//    session that holds KV: decoding ones and, by Little's law, those in
//    prefill or idle (hold policy) — m1·B + m2·B/step(B) <= capacity.
// 2. Per call and per resource, utilisation-seconds (util_sec); the GPU's own
//    timeline is TTFT + O·step(B)/B, where the step already serialises the
//    offloaded work by (1 − ov).
// 3. Λ_max = 1 / max(GPU timeline, CPU compute, CPU DRAM, link), all weighted
//    by the class probabilities p; output tokens/s = Λ_max · Σ p·O.

#include <algorithm>
#include <array>
#include <cmath>

#include "kvroof/analysis/mix_demand.hpp"
#include "kvroof/analysis/resource.hpp"
#include "kvroof/physics/monotone_root.hpp"

namespace kvroof {

struct ServingPoint {
    double f = 0, ov = 0;
    bool fits = true;       // weights fit in HBM
    bool feasible = true;   // a positive throughput exists under the SLOs
    bool session_fits = true;  // one session of the longest class fits in HBM and DRAM at this f
    double batch = 0;       // B, sequences (fluid)
    double b_cap_hbm = 0, b_cap_dram = 0, b_slo = 0;
    double tpot = 0;           // s, decode step time at B
    double tpot_observed = 0;  // s, B / throughput: the step stretched by interleaved prefill and any other bound
    double ttft = 0;           // s, call-weighted mean
    std::array<double, kMaxClasses> ttft_class{};
    double lambda_max = 0;  // calls/s
    double throughput = 0;  // output tokens/s
    double gpu_timeline = 0;  // s of GPU time per call (prefill + share of decode steps)
    PerResource<double> util_sec;        // raw resource-seconds per call (rate resources)
    PerResource<double> timeline_share;  // GPU timeline attributed to its causes (rate resources)
    Resource binding = Resource::gpu_hbm;      // the rate resource that sets Λ_max
    Resource batch_limit = Resource::hbm_capacity;  // what sets B
    Resource headline = Resource::gpu_hbm;     // the one to act on (see docs/model.md)
    Bytes weights;
    Bytes hbm_free;
};

namespace detail {
// The batch ceiling when the weight read per step depends on the batch (MoE):
// the largest B with `excess(B) <= 0`, where excess evaluates the constraint
// (footprint − capacity, or step − SLO) with w(B) = weights_read(B) / hbm_bw
// at that same B.
//
// Why this is well posed. w(B) = w0 + wr·(1 − q^B) is increasing and concave
// with w(0) = w0 > 0, so w(B)/B is non-increasing. The step is positively
// homogeneous in its coefficients, step(B)/B = combine(max(gc, w(B)/B + gm),
// k0/B + k, ov), and combine is non-decreasing in each operand for ov in
// [0, 1]; hence step(B)/B is non-increasing and the decode rate B/step(B) is
// non-decreasing. So both constraints are monotone in B: the footprint
// m1·B + m2·B/step(B) (capacity) and step(B) itself (SLO) never decrease, and
// the feasible set is an interval [0, B*].
//
// Bracket. For a fixed w, `solve(w)` is the exact ceiling (decode_step.hpp).
// Since w0 <= w(B) <= w_max = w(∞), the true constraint lies between the two
// fixed-w ones: step_w0(B) <= step(B) <= step_wmax(B) for every B. For the
// SLO this gives solve(w_max) <= B* <= solve(w0); for capacity the footprint
// falls as the step grows, so solve(w0) <= B* <= solve(w_max). Either way B*
// lies between solve(w0) and solve(w_max). In that bracket excess is
// continuous and non-decreasing (smooth between the step's breakpoints), so
// the Illinois root finder (monotone_root.hpp) converges to B*, to a relative
// width of 1e-12, in a handful of evaluations, and returns a feasible B.
//
// (An earlier version iterated B = solve(w(B)) assuming B − solve(w(B)) is
// increasing. With held idle sessions the capacity solve(w) *rises* with w —
// a slower step holds fewer idle sessions per decoding one, by Little's law —
// so that difference is not monotone and the bracket [0, solve(w0)] missed the
// root: better HBM bandwidth could shrink b_cap_hbm from 21 to 1.8.)
template <class Solve, class Excess>
double batch_with_weights(const ModelConstants& mc, double hbm_bw, Solve solve, Excess excess) {
    if (!mc.moe) return solve(mc.weights_read(1.0).raw() / hbm_bw);
    const double a = solve(mc.weights_read(0.0).raw() / hbm_bw);
    const double b = solve(mc.weights_read(kUnbounded).raw() / hbm_bw);
    double lo = std::min(a, b), hi = std::max(a, b);
    if (!std::isfinite(lo)) return lo;  // unbounded for every w
    if (!(lo >= 0)) lo = 0.0;
    if (!std::isfinite(hi)) {  // grow a finite upper end, or the ceiling is unbounded
        hi = std::max(1.0, 2.0 * lo);
        while (excess(hi) <= 0) {
            if (hi > 1e30) return kUnbounded;
            lo = hi;
            hi *= 2.0;
        }
    }
    if (hi - lo <= 1e-12 * hi) return lo;
    const double g_lo = excess(lo), g_hi = excess(hi);
    if (g_lo > 0) return lo;   // rounding at the proven lower end
    if (g_hi <= 0) return hi;  // the upper end is itself feasible
    return last_feasible(excess, lo, g_lo, hi, g_hi, 1e-12);
}
}  // namespace detail

[[nodiscard]] inline ServingPoint evaluate(const PreparedScenario& ps, const MixDemand& md, double ov) {
    const Scenario& sc = *ps.scenario;
    const SystemRates& sys = ps.sys;
    const ModelConstants& mc = ps.mc;
    const PolicySpec& pol = sc.policy;
    const double f = md.f;

    ServingPoint r;
    r.f = f;
    r.ov = ov;
    r.weights = mc.weights;
    r.hbm_free = sys.hbm_capacity - mc.weights;
    if (r.hbm_free.raw() <= 0) {
        r.fits = r.feasible = false;
        r.binding = r.batch_limit = r.headline = Resource::hbm_capacity;
        return r;
    }

    const double kv = mc.kv_per_token.raw();
    const bool park = ps.idle == IdlePolicy::park;
    const double sum_p_o = md.sum_p_o;
    const double sum_p_ttft = md.ttft_gpu + md.ttft_off - ov * md.ttft_min;  // Σ p·combine(gpu, off, ov)
    const double held_decode = md.held_decode, held_idle = md.held_idle;
    const double held_other = md.held_gpu + md.held_off - ov * md.held_min;  // Σ p·TTFT·S
    const DecodeDemand& batch_mix = md.batch_mix;
    const auto& pre = md.pre;
    const double link_h2d = md.link_h2d, link_d2h = md.link_d2h;
    for (size_t i = 0; i < sc.mix.entries.size(); ++i)
        r.ttft_class[i] = combine(Seconds(pre[i].gpu_part), Seconds(pre[i].offload_part), ov).raw();
    r.ttft = sum_p_ttft;
    const double inv = 1.0 / sum_p_o;
    const DecodeDemand avg{batch_mix.gpu_compute * inv, batch_mix.gpu_hbm * inv, batch_mix.cpu_compute * inv,
                           batch_mix.cpu_dram * inv,    batch_mix.link_d2h * inv, batch_mix.link_h2d * inv};

    StepShape shape;
    shape.gc = avg.gpu_compute;
    shape.gm = avg.gpu_hbm;
    const double cpu_tok = std::max(avg.cpu_compute, avg.cpu_dram);
    const double link_tok = std::max(avg.link_d2h, avg.link_h2d);
    shape.k = cpu_tok + link_tok;
    shape.k0 = f > 0 ? ps.offload_step_latency : 0.0;
    shape.ov = ov;
    const double hbm_bw = sys.hbm_bandwidth.raw();
    auto with_w = [&](double w) {
        StepShape s = shape;
        s.w = w;
        return s;
    };

    // Bytes held per decoding sequence (m1) and per unit of decode rate (m2).
    const double gpu_share = 1.0 - f;
    const double m1_hbm = gpu_share * kv * held_decode * inv;
    const double m2_hbm = gpu_share * kv * (held_other + (park ? 0.0 : held_idle)) * inv;
    const double m1_dram = f * kv * held_decode * inv;
    const double m2_dram = kv * (f * (held_other + held_idle) + (park ? gpu_share * held_idle : 0.0)) * inv;

    // The step at B with the weight read of B itself (MoE: experts touched).
    auto step_at = [&](double b) { return with_w(mc.weights_read(b).raw() / hbm_bw).step(b); };
    auto capacity_ceiling = [&](double capacity, double m1, double m2) {
        return detail::batch_with_weights(
            mc, hbm_bw, [&](double w) { return batch_for_capacity(with_w(w), capacity, m1, m2); },
            [&](double b) { return m1 * b + m2 * b / step_at(b) - capacity; });
    };
    r.b_cap_hbm = capacity_ceiling(r.hbm_free.raw(), m1_hbm, m2_hbm);
    r.b_cap_dram = capacity_ceiling(sys.cpu_memory.raw(), m1_dram, m2_dram);
    r.b_slo = pol.slo_tpot ? detail::batch_with_weights(
                                 mc, hbm_bw, [&](double w) { return batch_for_step_time(with_w(w), pol.slo_tpot->raw()); },
                                 [&](double b) { return step_at(b) - pol.slo_tpot->raw(); })
                           : kUnbounded;
    r.batch = r.b_cap_hbm;
    r.batch_limit = Resource::hbm_capacity;
    if (r.b_cap_dram < r.batch) {
        r.batch = r.b_cap_dram;
        r.batch_limit = Resource::dram_capacity;
    }
    if (r.b_slo < r.batch) {
        r.batch = r.b_slo;
        r.batch_limit = Resource::slo_tpot;
    }
    if (pol.slo_ttft) {
        for (size_t i = 0; i < sc.mix.entries.size(); ++i) {
            if (r.ttft_class[i] > pol.slo_ttft->raw()) {
                r.feasible = false;
                r.binding = r.headline = Resource::slo_ttft;
                return r;
            }
        }
    }
    if (!ps.session_fits_hbm(f) || !ps.session_fits_dram(f)) {
        r.feasible = false;
        r.session_fits = false;
        r.batch = 0;
        r.batch_limit = r.binding = r.headline = ps.session_fits_hbm(f) ? Resource::dram_capacity : Resource::hbm_capacity;
        return r;
    }
    if (!(r.batch > 0) || !std::isfinite(r.batch)) {
        r.feasible = false;
        r.binding = r.headline = r.batch_limit;
        return r;
    }

    const double B = r.batch;
    const double w = mc.weights_read(B).raw() / hbm_bw;
    const StepShape sh = with_w(w);
    r.tpot = sh.step(B);

    // Raw utilisation-seconds per call.
    r.util_sec = md.per_call_prefill;
    r.util_sec[Resource::gpu_compute] += sum_p_o * avg.gpu_compute;
    r.util_sec[Resource::gpu_hbm] += sum_p_o * (avg.gpu_hbm + w / B);
    r.util_sec[Resource::cpu_compute] += sum_p_o * avg.cpu_compute;
    r.util_sec[Resource::cpu_dram] += sum_p_o * avg.cpu_dram;
    r.util_sec[Resource::link] = std::max(link_h2d + sum_p_o * avg.link_h2d, link_d2h + sum_p_o * avg.link_d2h);

    // The GPU's timeline per call and what it is spent on.
    auto attribute = [&](double total, double gpu_part, bool gpu_compute_bound, double cpu_part, bool cpu_compute_bound,
                         double link_part, double weight) {
        const double parts = gpu_part + cpu_part + link_part;
        if (parts <= 0) return;
        const double scale = weight * total / parts;
        r.timeline_share[gpu_compute_bound ? Resource::gpu_compute : Resource::gpu_hbm] += scale * gpu_part;
        r.timeline_share[cpu_compute_bound ? Resource::cpu_compute : Resource::cpu_dram] += scale * cpu_part;
        r.timeline_share[Resource::link] += scale * link_part;
    };
    for (size_t i = 0; i < sc.mix.entries.size(); ++i) {
        const auto& q = pre[i];
        attribute(r.ttft_class[i], q.gpu_part, q.gpu_compute >= q.gpu_hbm, std::max(q.cpu_compute, q.cpu_dram),
                  q.cpu_compute >= q.cpu_dram, std::max(q.link_h2d, q.link_d2h), sc.mix.entries[i].weight);
    }
    attribute(r.tpot * sum_p_o / B, sh.gpu_path(B), sh.gc * B >= sh.w + sh.gm * B, cpu_tok * B,
              avg.cpu_compute >= avg.cpu_dram, sh.k0 + link_tok * B, 1.0);  // k0: link latency
    r.gpu_timeline = sum_p_ttft + sum_p_o * r.tpot / B;

    const double cpu_link_max = r.util_sec.max(kOffloadResources);
    const double bottleneck = std::max(r.gpu_timeline, cpu_link_max);
    r.lambda_max = 1.0 / bottleneck;
    r.throughput = r.lambda_max * sum_p_o;
    r.tpot_observed = B / r.throughput;
    r.binding = r.gpu_timeline >= cpu_link_max ? r.timeline_share.argmax() : r.util_sec.argmax(kOffloadResources);
    const bool capacity_limited = r.batch_limit == Resource::hbm_capacity || r.batch_limit == Resource::dram_capacity;
    r.headline = (r.binding == Resource::gpu_hbm && capacity_limited) ? r.batch_limit : r.binding;
    return r;
}

// The serving point at offload fraction f and overlap ov.
[[nodiscard]] inline ServingPoint evaluate(const PreparedScenario& ps, double f, double ov) {
    return evaluate(ps, mix_demand(ps, f), ov);
}

}  // namespace kvroof
