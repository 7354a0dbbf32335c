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

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "kvroof/analysis/resource.hpp"
#include "kvroof/physics/call_demand.hpp"
#include "kvroof/physics/decode_step.hpp"

namespace kvroof {

inline constexpr int kMaxClasses = 16;

// Index into a per-rate-resource vector (order of kRateResources).
enum RateIndex { kGpuCompute = 0, kGpuHbm = 1, kCpuCompute = 2, kCpuDram = 3, kLink = 4 };
using RateVector = Eigen::Array<double, 5, 1>;

struct Scenario {
    HardwareSpec hardware;
    ModelSpec model;
    Mix mix;
    PolicySpec policy;

    void check_validity() const {
        hardware.check_validity();
        model.check_validity();
        mix.check_validity();
        policy.check_validity();
        if (mix.entries.size() > static_cast<size_t>(kMaxClasses))
            throw InputError("mix: at most " + std::to_string(kMaxClasses) + " classes, got " + std::to_string(mix.entries.size()));
    }
};

// Everything that does not depend on (f, ov), computed once per scenario.
struct PreparedScenario {
    const Scenario* scenario = nullptr;
    SystemRates sys;
    ModelConstants mc;

    double session_kv_max = 0;  // bytes, one session of the longest class: kv·max S

    explicit PreparedScenario(const Scenario& s)
        : scenario(&s), sys(system_rates(s.hardware)), mc(model_constants(s.model, s.policy)) {
        for (const auto& e : s.mix.entries)
            session_kv_max = std::max(session_kv_max, mc.kv_per_token.raw() * e.cls.context());
    }

    // HBM left for KV after the weights (negative when they do not fit).
    [[nodiscard]] double hbm_free_bytes() const noexcept { return sys.hbm_capacity.raw() - mc.weights.raw(); }

    // One session of the longest class fits where its KV lives at offload
    // fraction f: the GPU share (1−f) in free HBM, and in CPU DRAM the f share,
    // or under --idle park the whole KV while the session is idle. A fluid batch
    // below one is a time average (a session decoding part of the time); a
    // session that fits nowhere cannot be served at all.
    [[nodiscard]] bool session_fits_hbm(double f) const noexcept { return (1.0 - f) * session_kv_max <= hbm_free_bytes(); }
    [[nodiscard]] bool session_fits_dram(double f) const noexcept {
        const double share = scenario->policy.idle == IdlePolicy::park ? 1.0 : f;
        return share * session_kv_max <= sys.cpu_memory.raw();
    }
    // Whether some f in [0, 1] fits one session, and the smallest such f.
    [[nodiscard]] std::optional<double> smallest_f_that_fits() const noexcept {
        const double free = hbm_free_bytes();
        if (free <= 0) return std::nullopt;
        const double f = session_kv_max > free ? 1.0 - free / session_kv_max : 0.0;
        if (!session_fits_dram(f)) return std::nullopt;
        return f;
    }
};

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
    RateVector util_sec = RateVector::Zero();       // raw resource-seconds per call
    RateVector timeline_share = RateVector::Zero();  // GPU timeline attributed to its causes
    Resource binding = Resource::gpu_hbm;      // the rate resource that sets Λ_max
    Resource batch_limit = Resource::hbm_capacity;  // what sets B
    Resource headline = Resource::gpu_hbm;     // the one to act on (see docs/model.md)
    Bytes weights;
    Bytes hbm_free;
};

namespace detail {
// The batch ceiling when the weight read per step depends on the batch (MoE):
// the largest B with `feasible(B)`, where feasible evaluates the step with
// w(B) = weights_read(B) / hbm_bw at that same B.
//
// Why this is well posed. w(B) = w0 + wr·(1 − q^B) is increasing and concave
// with w(0) = w0 > 0, so w(B)/B is non-increasing. The step is positively
// homogeneous in its coefficients, step(B)/B = combine(max(gc, w(B)/B + gm), k,
// ov), and combine is non-decreasing in each operand for ov in [0, 1]; hence
// step(B)/B is non-increasing and the decode rate B/step(B) is non-decreasing.
// So both constraints are monotone in B: the footprint m1·B + m2·B/step(B)
// (capacity) and step(B) itself (SLO) never decrease, and the feasible set is
// an interval [0, B*].
//
// Bracket. For a fixed w, `solve(w)` is the exact ceiling (decode_step.hpp).
// Since w0 <= w(B) <= w_max = w(∞), the true constraint lies between the two
// fixed-w ones: step_w0(B) <= step(B) <= step_wmax(B) for every B. For the
// SLO this gives solve(w_max) <= B* <= solve(w0); for capacity the footprint
// falls as the step grows, so solve(w0) <= B* <= solve(w_max). Either way B*
// lies between solve(w0) and solve(w_max), and bisection on the monotone
// predicate converges to it.
//
// (An earlier version iterated B = solve(w(B)) assuming B − solve(w(B)) is
// increasing. With held idle sessions the capacity solve(w) *rises* with w —
// a slower step holds fewer idle sessions per decoding one, by Little's law —
// so that difference is not monotone and the bracket [0, solve(w0)] missed the
// root: better HBM bandwidth could shrink b_cap_hbm from 21 to 1.8.)
template <class Solve, class Feasible>
double batch_with_weights(const ModelConstants& mc, double hbm_bw, Solve solve, Feasible feasible) {
    if (!mc.moe) return solve(mc.weights_read(1.0).raw() / hbm_bw);
    const double a = solve(mc.weights_read(0.0).raw() / hbm_bw);
    const double b = solve(mc.weights_read(kUnbounded).raw() / hbm_bw);
    double lo = std::min(a, b), hi = std::max(a, b);
    if (!std::isfinite(lo)) return lo;  // unbounded for every w
    if (!(lo >= 0)) lo = 0.0;
    if (!std::isfinite(hi)) {  // grow a finite upper end, or the ceiling is unbounded
        hi = std::max(1.0, 2.0 * (std::isfinite(lo) ? lo : 0.0));
        while (feasible(hi)) {
            if (hi > 1e30) return kUnbounded;
            lo = hi;
            hi *= 2.0;
        }
    }
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (feasible(mid) ? lo : hi) = mid;
    }
    return lo;
}

inline int argmax(const RateVector& v) {
    int best = 0;
    for (int i = 1; i < 5; ++i)
        if (v[i] > v[best]) best = i;
    return best;
}
}  // namespace detail

// What the calls ask at offload fraction f, before the overlap is chosen:
// everything that does not depend on ov, so both ends of a band share it.
struct MixDemand {
    double f = 0;
    std::array<PrefillDemand, kMaxClasses> pre;  // per class; only the first mix.size() are set
    double sum_p_o = 0;                          // Σ p·O
    double held_decode = 0, held_idle = 0;       // Σ p·O·S, Σ p·idle·S
    double ttft_gpu = 0, ttft_off = 0, ttft_min = 0;  // Σ p·part of the TTFT combine operands
    double held_gpu = 0, held_off = 0, held_min = 0;  // Σ p·S·part, for the bytes held while prefilling
    DecodeDemand batch_mix{};  // per-token demand summed with weights p·O
    RateVector per_call_prefill = RateVector::Zero();
    double link_h2d = 0, link_d2h = 0;
};

[[nodiscard]] inline MixDemand mix_demand(const PreparedScenario& ps, double f) {
    const Scenario& sc = *ps.scenario;
    PolicySpec pol = sc.policy;
    pol.f = f;
    pol.ov = 0;  // the TTFT combine is redone per ov from its operands
    MixDemand m;
    m.f = f;
    for (size_t i = 0; i < sc.mix.entries.size(); ++i) {
        const auto& e = sc.mix.entries[i];
        const double p = e.weight, O = e.cls.o_output, S = e.cls.context();
        const DecodeDemand d = decode_demand(ps.mc, ps.sys, pol, S);
        m.pre[i] = prefill_demand(ps.mc, ps.sys, pol, e.cls);
        const auto& q = m.pre[i];
        const double po = p * O;
        const double lo = std::min(q.gpu_part, q.offload_part);
        m.sum_p_o += po;
        m.ttft_gpu += p * q.gpu_part;
        m.ttft_off += p * q.offload_part;
        m.ttft_min += p * lo;
        m.held_gpu += p * S * q.gpu_part;
        m.held_off += p * S * q.offload_part;
        m.held_min += p * S * lo;
        m.batch_mix.gpu_compute += po * d.gpu_compute;
        m.batch_mix.gpu_hbm += po * d.gpu_hbm;
        m.batch_mix.cpu_compute += po * d.cpu_compute;
        m.batch_mix.cpu_dram += po * d.cpu_dram;
        m.batch_mix.link_d2h += po * d.link_d2h;
        m.batch_mix.link_h2d += po * d.link_h2d;
        m.per_call_prefill += p * RateVector(q.gpu_compute, q.gpu_hbm, q.cpu_compute, q.cpu_dram, 0.0);
        m.link_h2d += p * q.link_h2d;
        m.link_d2h += p * (q.link_d2h + q.link_park_save);
        m.held_decode += po * S;
        m.held_idle += p * e.cls.idle_gap.raw() * S;
    }
    return m;
}

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
    const bool park = pol.idle == IdlePolicy::park;
    const double sum_p_o = md.sum_p_o;
    const double sum_p_ttft = md.ttft_gpu + md.ttft_off - ov * md.ttft_min;  // Σ p·combine(gpu, off, ov)
    const double held_decode = md.held_decode, held_idle = md.held_idle;
    const double held_other = md.held_gpu + md.held_off - ov * md.held_min;  // Σ p·TTFT·S
    const DecodeDemand& batch_mix = md.batch_mix;
    const auto& pre = md.pre;
    const RateVector& per_call_prefill = md.per_call_prefill;
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
            [&](double b) { return m1 * b + m2 * b / step_at(b) <= capacity; });
    };
    r.b_cap_hbm = capacity_ceiling(r.hbm_free.raw(), m1_hbm, m2_hbm);
    r.b_cap_dram = capacity_ceiling(sys.cpu_memory.raw(), m1_dram, m2_dram);
    r.b_slo = pol.slo_tpot ? detail::batch_with_weights(
                                 mc, hbm_bw, [&](double w) { return batch_for_step_time(with_w(w), pol.slo_tpot->raw()); },
                                 [&](double b) { return step_at(b) <= pol.slo_tpot->raw(); })
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
    r.util_sec = per_call_prefill;
    r.util_sec[kGpuCompute] += sum_p_o * avg.gpu_compute;
    r.util_sec[kGpuHbm] += sum_p_o * (avg.gpu_hbm + w / B);
    r.util_sec[kCpuCompute] += sum_p_o * avg.cpu_compute;
    r.util_sec[kCpuDram] += sum_p_o * avg.cpu_dram;
    r.util_sec[kLink] = std::max(link_h2d + sum_p_o * avg.link_h2d, link_d2h + sum_p_o * avg.link_d2h);

    // The GPU's timeline per call and what it is spent on.
    auto attribute = [&](double total, double gpu_part, bool gpu_compute_bound, double cpu_part, bool cpu_compute_bound,
                         double link_part, double weight) {
        const double parts = gpu_part + cpu_part + link_part;
        if (parts <= 0) return;
        const double scale = weight * total / parts;
        r.timeline_share[gpu_compute_bound ? kGpuCompute : kGpuHbm] += scale * gpu_part;
        r.timeline_share[cpu_compute_bound ? kCpuCompute : kCpuDram] += scale * cpu_part;
        r.timeline_share[kLink] += scale * link_part;
    };
    for (size_t i = 0; i < sc.mix.entries.size(); ++i) {
        const auto& q = pre[i];
        attribute(r.ttft_class[i], q.gpu_part, q.gpu_compute >= q.gpu_hbm, std::max(q.cpu_compute, q.cpu_dram),
                  q.cpu_compute >= q.cpu_dram, std::max(q.link_h2d, q.link_d2h), sc.mix.entries[i].weight);
    }
    attribute(r.tpot * sum_p_o / B, sh.gpu_path(B), sh.gc * B >= sh.w + sh.gm * B, cpu_tok * B,
              avg.cpu_compute >= avg.cpu_dram, link_tok * B, 1.0);
    r.gpu_timeline = sum_p_ttft + sum_p_o * r.tpot / B;

    const double cpu_link_max = std::max({r.util_sec[kCpuCompute], r.util_sec[kCpuDram], r.util_sec[kLink]});
    const double bottleneck = std::max(r.gpu_timeline, cpu_link_max);
    r.lambda_max = 1.0 / bottleneck;
    r.throughput = r.lambda_max * sum_p_o;
    r.tpot_observed = B / r.throughput;
    if (r.gpu_timeline >= cpu_link_max) {
        r.binding = kRateResources[detail::argmax(r.timeline_share)];
    } else {
        RateVector off = r.util_sec;
        off[kGpuCompute] = off[kGpuHbm] = -1.0;
        r.binding = kRateResources[detail::argmax(off)];
    }
    const bool capacity_limited = r.batch_limit == Resource::hbm_capacity || r.batch_limit == Resource::dram_capacity;
    r.headline = (r.binding == Resource::gpu_hbm && capacity_limited) ? r.batch_limit : r.binding;
    return r;
}

// The serving point at offload fraction f and overlap ov.
[[nodiscard]] inline ServingPoint evaluate(const PreparedScenario& ps, double f, double ov) {
    return evaluate(ps, mix_demand(ps, f), ov);
}

}  // namespace kvroof
