// SPDX-License-Identifier: MIT
#pragma once
// Serving throughput of a concurrent mix of call classes: the fluid steady
// state of seed 000 (model/concurrent.py, "serving_mix"), prefill included.
//
// 1. Batch: B = min(b_cap_hbm, b_cap_dram, b_slo). Capacity counts every
//    session that holds KV: decoding ones and, by Little's law, those in
//    prefill or idle (hold policy) — m1·B + m2·B/(step(B) + κ·B) <= capacity,
//    B/(step + κ·B) the decode rate with the GPU's prefill interleaved.
// 2. Per call and per resource, utilisation-seconds (util_sec); the GPU's own
//    timeline is TTFT + O·step(B)/B, where the step already serialises the
//    offloaded work by (1 − ov).
// 3. Λ_max = 1 / max(GPU timeline, CPU compute, CPU DRAM, link), all weighted
//    by the class probabilities p; output tokens/s = Λ_max · Σ p·O.

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "kvroof/analysis/batch_weights.hpp"
#include "kvroof/analysis/mix_demand.hpp"
#include "kvroof/analysis/resource.hpp"

namespace kvroof {

struct ServingPoint {
    double f = 0, ov = 0;
    bool fits = true;  // weights fit in HBM
    bool feasible = true;  // a positive throughput exists under the SLOs
    bool session_fits = true;  // one session of the longest class fits in HBM and DRAM at this f
    double batch = 0;  // B, sequences (fluid)
    double b_cap_hbm = 0, b_cap_dram = 0, b_slo = 0;
    double tpot = 0;  // s, decode step time at B
    double tpot_observed = 0;  // s, B / throughput: the step stretched by interleaved prefill and any other bound
    double ttft = 0;  // s, call-weighted mean
    // The first mix.size() are set by evaluate (the rest are left unset: zero-filling
    // them was a tenth of a band's time).
    std::array<double, kMaxClasses> ttft_class;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    double lambda_max = 0;  // calls/s
    double throughput = 0;  // output tokens/s
    double gpu_timeline = 0;  // s of GPU time per call (prefill + share of decode steps)
    PerResource<double> util_sec;  // raw resource-seconds per call (rate resources)
    PerResource<double> timeline_share;  // GPU timeline attributed to its causes (rate resources)
    Resource binding = Resource::gpu_hbm;  // the rate resource that sets Λ_max
    Resource batch_limit = Resource::hbm_capacity;  // what sets B
    Resource headline = Resource::gpu_hbm;  // the one to act on (see docs/model.md)
    Bytes weights;
    Bytes hbm_free;
};

namespace detail {
// The decode step's coefficients for the batch: per-sequence demands are the
// p·O-weighted averages of the classes' (a class stays O steps in the batch).
struct BatchShape {
    DecodeDemand avg;
    double cpu_tok = 0, link_tok = 0;  // s per sequence: max(CPU compute, DRAM), the link (link_time)
    double bidir = 1;  // the link's bidirectional share (SystemRates::link_bidir)
    double prefill_share = 1, offload_share = 1;  // Pipeline::per_sequence and offload_share (pipeline.hpp)
    StepShape shape;  // w left 0: set per batch (MoE); a pipeline's cycle (stretch)
};

[[nodiscard]] inline BatchShape batch_shape(const PreparedScenario& ps, const MixDemand& md, double ov) noexcept {
    const double inv = md.inv_sum_p_o;
    const DecodeDemand& m = md.batch_mix;
    BatchShape b;
    b.avg = {m.gpu_compute * inv, m.gpu_hbm * inv,  m.cpu_compute * inv, m.cpu_dram * inv,
             m.link_d2h * inv,    m.link_h2d * inv, m.gpu_comm * inv,    m.ep_comm * inv};
    b.cpu_tok = std::max(b.avg.cpu_compute, b.avg.cpu_dram);
    b.link_tok = link_time(b.avg.link_h2d, b.avg.link_d2h, ps.sys.link_bidir);
    b.bidir = ps.sys.link_bidir;
    b.shape.gc = b.avg.gpu_compute;
    b.shape.gm = b.avg.gpu_hbm;
    b.shape.k = b.cpu_tok + b.link_tok;
    b.shape.k0 = md.f > 0 ? ps.offload_step_latency : 0.0;
    b.shape.ov = ov;
    b.shape.c0 = ps.step_overhead;
    b.shape.g0 = ps.tp_step_latency + ps.ep_step_latency + ps.moe_step_latency;
    b.shape.gx = b.avg.gpu_comm + b.avg.ep_comm;
    stretch(b.shape, ps.pipe);
    b.prefill_share = ps.pipe.per_sequence;
    b.offload_share = ps.pipe.offload_share;
    return b;
}

// The step shape with the weight read w.
[[nodiscard]] inline StepShape with_weight_read(StepShape s, double w) noexcept {
    s.w = w;
    return s;
}
// The step at batch b with the weight read of b itself (MoE: experts touched).
[[nodiscard]] inline StepShape shape_at(const PreparedScenario& ps, const StepShape& s, double b) noexcept {
    return with_weight_read(s, ps.weight_time(b));
}

// How much of a serving point to compute: its throughput alone (the batch, not
// every ceiling; no attribution); a table row (every field but the ceilings
// that do not set B, left unbounded); or everything a renderer shows.
enum class Detail { throughput, row, full };

// The call-weighted mean TTFT, Σ p·combine(gpu, off, ov).
[[nodiscard]] inline double mean_ttft(const MixDemand& md, double ov) noexcept {
    return md.ttft_gpu + md.ttft_off - ov * md.ttft_min;
}

// b_cap_hbm, b_cap_dram, b_slo and B = their minimum, with what sets it.
struct Ceilings {
    double b_cap_hbm = kUnbounded, b_cap_dram = kUnbounded, b_slo = kUnbounded, batch = 0;
    Resource batch_limit = Resource::hbm_capacity;
};

[[nodiscard]] inline Ceilings batch_ceilings(const PreparedScenario& ps, const MixDemand& md, const StepShape& shape, double ov,
                                             Detail level) {
    const double f = md.f, kv = ps.mc.kv_per_token.raw(), inv = md.inv_sum_p_o, hbm_bw = ps.weight_bandwidth();
    const double kv_gpu = ps.mc.kv_gpu_per_token.raw();  // the copies HBM holds (tensor parallelism)
    const bool park = ps.idle == IdlePolicy::park;
    const double held_other = md.held_gpu + md.held_off - ov * md.held_min;  // Σ p·TTFT·S
    // Bytes held per decoding sequence (m1) and per unit of decode rate (m2).
    const double gpu_share = 1.0 - f;
    const double m1_hbm = gpu_share * kv_gpu * md.held_decode * inv;
    const double m2_hbm = gpu_share * kv_gpu * (held_other + (park ? 0.0 : md.held_idle)) * inv;
    const double m1_dram = f * kv * md.held_decode * inv;
    const double m2_dram = kv * (f * (held_other + md.held_idle) + (park ? gpu_share * md.held_idle : 0.0)) * inv;
    // Dense: one weight read, its pieces built once and solved on directly
    // (batch_with_weights would only call solve at that w). MoE: the pieces at
    // the weight reads the bracket asks for, built only there.
    const bool moe = ps.mc.moe;
    const StepPieces dense_pieces =
        moe ? StepPieces() : StepPieces(with_weight_read(shape, ps.mc.weights_read(1.0).raw() / hbm_bw));
    std::optional<PiecesAt> moe_pieces;
    if (moe) moe_pieces.emplace(shape);
    const StepPieces* dense = moe ? nullptr : &dense_pieces;
    auto step_at = [&](double b) { return shape_at(ps, shape, b).step(b); };
    // Little's law at the rate calls run: B decode, each for O steps of step(B) + κ_gpu·B (the GPU's prefill
    // interleaved per decode token, its timeline: TTFT + O·step/B), so the rest hold m2·B/(step + κ_gpu·B).
    const double kappa_gpu = mean_ttft(md, ov) * inv * ps.pipe.per_sequence;
    auto capacity_ceiling = [&](double capacity, double m1, double m2) {
        if (dense) return batch_for_capacity(*dense, capacity, m1, m2, kappa_gpu);
        return batch_with_weights(
            ps.mc, hbm_bw, [&](double w) { return batch_for_capacity((*moe_pieces)(w), capacity, m1, m2, kappa_gpu); },
            [&](double b) { return m1 * b + m2 * b / (step_at(b) + kappa_gpu * b) - capacity; });
    };
    // The TPOT SLO bounds the inter-token latency a user sees, B / throughput:
    //   ITL(B) = max(step(B) + κ·B, B·U / Σp·O),  κ = mean TTFT / Σp·O
    // (the GPU timeline, prefill interleaved; or the per-call offload resources
    // U when they bind). Both terms increase with B.
    // Requests of one output token have no inter-token latency: the SLO bounds nothing (as at an operating point).
    const std::optional<Seconds> slo = ps.second_token ? ps.scenario->policy.slo_tpot : std::nullopt;
    const bool on_itl = ps.scenario->policy.slo_tpot_bounds == SloTarget::itl;
    const double kappa = on_itl ? kappa_gpu : 0.0;
    const DecodeDemand& bm = md.batch_mix;
    const double U = !on_itl ? 0.0
                             : ps.pipe.offload_share *
                                   std::max({md.per_call_prefill[Resource::cpu_compute] + bm.cpu_compute,
                                             md.per_call_prefill[Resource::cpu_dram] + bm.cpu_dram,
                                             link_time(md.link_h2d + bm.link_h2d, md.link_d2h + bm.link_d2h, ps.sys.link_bidir)});
    // The step alone when !on_itl.
    auto itl_at = [&](double b, double step) { return std::max(step + kappa * b, b * U * inv); };
    // With only the batch wanted, a ceiling is solved only when the batch so
    // far violates its constraint: each feasible set is [0, ceiling], so a
    // batch that meets it is already below it (its ceiling is then left unbounded).
    const bool all = level == Detail::full;
    Ceilings c;
    c.b_cap_hbm = capacity_ceiling(ps.hbm_free_bytes(), m1_hbm, m2_hbm);
    const double cpu_mem = ps.sys.cpu_memory.raw(), b0 = c.b_cap_hbm;
    const bool check_b0 = !all && std::isfinite(b0);
    const double step_b0 = check_b0 && b0 > 0 ? step_at(b0) : 0.0;  // shared by both checks while b0 stands
    const bool dram_ok = check_b0 && (b0 <= 0 || m1_dram * b0 + m2_dram * b0 / (step_b0 + kappa_gpu * b0) <= cpu_mem);
    if (!dram_ok) c.b_cap_dram = capacity_ceiling(cpu_mem, m1_dram, m2_dram);
    const double b1 = std::min(b0, c.b_cap_dram);
    const bool slo_ok =
        !slo || (!all && std::isfinite(b1) && itl_at(b1, b1 == b0 && b0 > 0 ? step_b0 : step_at(b1)) <= slo->raw());
    if (!slo_ok) {
        c.b_slo = dense ? batch_for_itl(*dense, slo->raw(), kappa)
                        : batch_with_weights(
                              ps.mc, hbm_bw, [&](double w) { return batch_for_itl((*moe_pieces)(w), slo->raw(), kappa); },
                              [&](double b) { return step_at(b) + kappa * b - slo->raw(); });
        if (U > 0) c.b_slo = std::min(c.b_slo, slo->raw() / (U * inv));
    }
    c.batch = c.b_cap_hbm;
    if (c.b_cap_dram < c.batch) {
        c.batch = c.b_cap_dram;
        c.batch_limit = Resource::dram_capacity;
    }
    if (c.b_slo < c.batch) {
        c.batch = c.b_slo;
        c.batch_limit = Resource::slo_tpot;
    }
    return c;
}

// At the batch B (step shape `at_b`, its w that of B): TPOT, the offloaded
// resources' utilisation-seconds per call, the GPU timeline, Λ_max and throughput.
struct Rates {
    double tpot, cpu_compute, cpu_dram, link, gpu_timeline, lambda_max, throughput;
};

[[nodiscard]] inline Rates rates(const MixDemand& md, const BatchShape& bs, const StepShape& at_b, double B,
                                 double ttft) noexcept {
    const DecodeDemand& avg = bs.avg;
    const double sum_p_o = md.sum_p_o;
    Rates x{};
    x.tpot = at_b.step(B);
    const double o = bs.offload_share;  // the busiest pipeline stage's share (1 without one)
    x.cpu_compute = o * (md.per_call_prefill[Resource::cpu_compute] + sum_p_o * avg.cpu_compute);
    x.cpu_dram = o * (md.per_call_prefill[Resource::cpu_dram] + sum_p_o * avg.cpu_dram);
    x.link = o * link_time(md.link_h2d + sum_p_o * avg.link_h2d, md.link_d2h + sum_p_o * avg.link_d2h, bs.bidir);
    x.gpu_timeline = ttft * bs.prefill_share + sum_p_o * x.tpot / B;
    x.lambda_max = 1.0 / std::max(x.gpu_timeline, std::max(std::max(x.cpu_compute, x.cpu_dram), x.link));
    x.throughput = x.lambda_max * sum_p_o;
    return x;
}

// The rates at the batch r.batch, with the GPU's utilisation-seconds.
inline void account(const PreparedScenario& ps, const MixDemand& md, const BatchShape& bs, const StepShape& at_b,
                    ServingPoint& r) {
    const double B = r.batch, sum_p_o = md.sum_p_o;
    const Rates x = rates(md, bs, at_b, B, r.ttft);
    r.tpot = x.tpot;
    r.util_sec = md.per_call_prefill;
    r.util_sec[Resource::gpu_compute] += sum_p_o * bs.avg.gpu_compute;
    r.util_sec[Resource::gpu_hbm] += sum_p_o * (bs.avg.gpu_hbm + at_b.w / B);
    r.util_sec[Resource::tp_allreduce] += sum_p_o * (bs.avg.gpu_comm + ps.tp_step_latency / B);
    r.util_sec[Resource::ep_alltoall] += sum_p_o * (bs.avg.ep_comm + ps.ep_step_latency / B);
    r.util_sec[Resource::cpu_compute] = x.cpu_compute;
    r.util_sec[Resource::cpu_dram] = x.cpu_dram;
    r.util_sec[Resource::link] = x.link;
    r.gpu_timeline = x.gpu_timeline;
    r.lambda_max = x.lambda_max;
    r.throughput = x.throughput;
    r.tpot_observed = B / r.throughput;
}

// What the GPU timeline is spent on, and the binding resource.
inline void attribute(const PreparedScenario& ps, const MixDemand& md, const BatchShape& bs, const StepShape& sh,
                      ServingPoint& r) {
    const auto& entries = ps.scenario->mix.entries;
    const double B = r.batch;
    // A time split over its parts in proportion: the GPU roofline (compute or
    // HBM), the all-reduces and all-to-alls, the CPU (compute or DRAM) and the link.
    struct Comm {
        double tp, ep;
    };
    auto share = [&](double total, double gpu_part, bool gpu_compute_bound, Comm comm, double cpu_part, bool cpu_compute_bound,
                     double link_part, double weight) {
        const double parts = gpu_part + (comm.tp + comm.ep) + cpu_part + link_part;
        if (parts <= 0) return;
        const double scale = weight * total / parts;
        r.timeline_share[gpu_compute_bound ? Resource::gpu_compute : Resource::gpu_hbm] += scale * gpu_part;
        r.timeline_share[Resource::tp_allreduce] += scale * comm.tp;
        r.timeline_share[Resource::ep_alltoall] += scale * comm.ep;
        r.timeline_share[cpu_compute_bound ? Resource::cpu_compute : Resource::cpu_dram] += scale * cpu_part;
        r.timeline_share[Resource::link] += scale * link_part;
    };
    for (size_t i = 0; i < entries.size(); ++i) {
        const auto& q = md.pre[i];
        share(r.ttft_class[i] * bs.prefill_share, q.gpu_part - q.gpu_comm - q.ep_comm, q.gpu_compute >= q.gpu_hbm,
              {q.gpu_comm, q.ep_comm}, std::max(q.cpu_compute, q.cpu_dram), q.cpu_compute >= q.cpu_dram,
              link_time(q.link_h2d, q.link_d2h, ps.sys.link_bidir), entries[i].weight);
    }
    const Comm step_comm{ps.tp_step_latency + bs.avg.gpu_comm * B, ps.ep_step_latency + bs.avg.ep_comm * B};
    share(r.tpot * md.sum_p_o / B, sh.gpu_roofline(B) + ps.moe_step_latency, sh.gc * B >= sh.w + sh.gm * B, step_comm,
          bs.cpu_tok * B, bs.avg.cpu_compute >= bs.avg.cpu_dram, sh.k0 + bs.link_tok * B, 1.0);  // k0: link latency
    const double cpu_link_max = r.util_sec.max(kOffloadResources);
    r.binding = r.gpu_timeline >= cpu_link_max ? r.timeline_share.argmax() : r.util_sec.argmax(kOffloadResources);
    const bool capacity_limited = r.batch_limit == Resource::hbm_capacity || r.batch_limit == Resource::dram_capacity;
    r.headline = (r.binding == Resource::gpu_hbm && capacity_limited) ? r.batch_limit : r.binding;
}

}  // namespace detail

namespace detail {

// Whether some class's TTFT exceeds the TTFT SLO.
[[nodiscard]] inline bool ttft_violated(const PreparedScenario& ps, const MixDemand& md, double ov) noexcept {
    const auto& slo = ps.scenario->policy.slo_ttft;
    if (!slo) return false;
    for (std::size_t i = 0; i < ps.lines.classes; ++i)
        if (combine(Seconds(md.pre[i].gpu_part), Seconds(md.pre[i].offload_part), ov).raw() > slo->raw()) return true;
    return false;
}

// The serving point at Detail::row or Detail::full, on the batch shape of md at its ov (bs.shape.ov).
[[nodiscard]] inline ServingPoint evaluate_full(const PreparedScenario& ps, const MixDemand& md, const BatchShape& bs,
                                                Detail level) {
    const double f = md.f, ov = bs.shape.ov;
    ServingPoint r;
    r.f = f;
    r.ov = ov;
    r.weights = ps.mc.weights;
    r.hbm_free = ps.sys.hbm_capacity - ps.mc.weights;
    if (r.hbm_free.raw() <= 0) {
        std::fill_n(r.ttft_class.begin(), ps.lines.classes, 0.0);
        r.fits = r.feasible = false;
        r.binding = r.batch_limit = r.headline = Resource::hbm_capacity;
        return r;
    }
    for (size_t i = 0; i < ps.lines.classes; ++i)
        r.ttft_class[i] = combine(Seconds(md.pre[i].gpu_part), Seconds(md.pre[i].offload_part), ov).raw();
    r.ttft = mean_ttft(md, ov);

    const Ceilings c = batch_ceilings(ps, md, bs.shape, ov, level);
    r.b_cap_hbm = c.b_cap_hbm;
    r.b_cap_dram = c.b_cap_dram;
    r.b_slo = c.b_slo;
    r.batch = c.batch;
    r.batch_limit = c.batch_limit;
    if (ttft_violated(ps, md, ov)) {
        r.feasible = false;
        r.binding = r.headline = Resource::slo_ttft;
        return r;
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
    const StepShape at_b = shape_at(ps, bs.shape, r.batch);
    account(ps, md, bs, at_b, r);
    // Requests of one output token have no inter-token latency (B / throughput would read as one: seconds to hours).
    if (!ps.second_token) r.tpot_observed = std::numeric_limits<double>::quiet_NaN();
    attribute(ps, md, bs, at_b, r);
    return r;
}
[[nodiscard]] inline ServingPoint evaluate_full(const PreparedScenario& ps, const MixDemand& md, double ov, Detail level) {
    return evaluate_full(ps, md, batch_shape(ps, md, ov), level);
}
}  // namespace detail

// The serving point for the demand md (at its f) and overlap ov.
[[nodiscard]] inline ServingPoint evaluate(const PreparedScenario& ps, const MixDemand& md, double ov) {
    return detail::evaluate_full(ps, md, ov, detail::Detail::full);
}

// Its throughput alone (output tokens/s), as evaluate(...).throughput, cheaper:
// the same numbers on the same path, with no ServingPoint, the infeasible cases
// first, only the ceilings that bind, and no attribution.
[[nodiscard]] inline double throughput(const PreparedScenario& ps, const MixDemand& md, double ov) {
    const double f = md.f;
    if (ps.hbm_free_bytes() <= 0 || !ps.session_fits_hbm(f) || !ps.session_fits_dram(f) || detail::ttft_violated(ps, md, ov))
        return 0.0;
    const detail::BatchShape bs = detail::batch_shape(ps, md, ov);
    const double B = detail::batch_ceilings(ps, md, bs.shape, ov, detail::Detail::throughput).batch;
    if (!(B > 0) || !std::isfinite(B)) return 0.0;
    return detail::rates(md, bs, detail::shape_at(ps, bs.shape, B), B, detail::mean_ttft(md, ov)).throughput;
}

// The serving point at offload fraction f and overlap ov.
[[nodiscard]] inline ServingPoint evaluate(const PreparedScenario& ps, double f, double ov) {
    return evaluate(ps, mix_demand(ps, f), ov);
}

}  // namespace kvroof
