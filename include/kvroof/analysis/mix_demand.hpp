// SPDX-License-Identifier: MIT
#pragma once
// The scenario (spec/scenario.hpp) prepared for evaluation, and what its calls ask of each
// resource at an offload fraction f before the overlap ov and the batch are
// chosen (see serving.hpp for how the batch and throughput follow).

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "kvroof/analysis/pipeline.hpp"
#include "kvroof/analysis/resource.hpp"
#include "kvroof/physics/call_demand.hpp"
#include "kvroof/physics/decode_step.hpp"
#include "kvroof/spec/scenario.hpp"

namespace kvroof {

// What the calls ask at offload fraction f, before the overlap is chosen:
// everything that does not depend on ov, so both ends of a band share it.
struct MixDemand {
    double f = 0;
    std::array<PrefillDemand, kMaxClasses> pre;  // per class; only the first mix.size() are set
    double sum_p_o = 0;  // Σ p·O
    double inv_sum_p_o = 0;  // 1 / Σ p·O
    // Token sums of the KV held, in tokens of kv (held(S) = S with full attention only: physics/attention_layers.hpp).
    double held_decode = 0, held_idle = 0;  // Σ p·O·held(S), Σ p·idle·held(S)
    double ttft_gpu = 0, ttft_off = 0, ttft_min = 0;  // Σ p·part of the TTFT combine operands
    double held_gpu = 0, held_off = 0, held_min = 0;  // Σ p·held(S)·part, for the bytes held while prefilling
    DecodeDemand batch_mix{};  // per-token demand summed with weights p·O
    PerResource<double> per_call_prefill;  // rate resources but the link (counted per direction below)
    double link_h2d = 0, link_d2h = 0;
};

namespace detail {
// The TTFT operands of class i and their p- and p·S-weighted sums (S: the KV tokens it holds;
// transfer: its prefill's activation transfer between pipeline stages, pipeline.hpp).
inline void add_ttft_terms(MixDemand& m, PrefillDemand& q, double p, double S, double bidir, double transfer) noexcept {
    q.gpu_part = std::max(q.gpu_compute, q.gpu_hbm) + q.moe_floor + q.gpu_comm + q.ep_comm + transfer;
    // The H2D reload precedes the GPU's use of it; queries/outputs ride the other direction.
    q.offload_part = std::max(q.cpu_compute, q.cpu_dram) + link_time(q.link_h2d, q.link_d2h, bidir);
    q.ttft = q.gpu_part + q.offload_part;  // at ov = 0: the combine is redone per ov from its operands
    const double lo = std::min(q.gpu_part, q.offload_part);
    m.ttft_gpu += p * q.gpu_part;
    m.ttft_off += p * q.offload_part;
    m.ttft_min += p * lo;
    m.held_gpu += p * S * q.gpu_part;
    m.held_off += p * S * q.offload_part;
    m.held_min += p * S * lo;
}

// The mix's demand at f straight from the per-call demands (call_demand.hpp).
[[nodiscard]] inline MixDemand mix_demand_direct(const Scenario& sc, const ModelConstants& mc, const SystemRates& sys,
                                                 IdlePolicy idle, double f) {
    PolicySpec pol = sc.policy;
    pol.f = f;
    pol.idle = idle;
    pol.ov = 0;  // the TTFT combine is redone per ov from its operands
    MixDemand m;
    m.f = f;
    const Pipeline pipe = pipeline_of(sc.hardware, sc.model);
    for (size_t i = 0; i < sc.mix.entries.size(); ++i) {
        const auto& e = sc.mix.entries[i];
        const double p = e.weight, O = e.cls.o_output, S = e.cls.context(), po = p * O;
        const double held = kv_tokens_held(mc, S);
        const DecodeDemand d = decode_demand(mc, sys, pol, S);
        m.pre[i] = prefill_demand(mc, sys, pol, e.cls);
        const auto& q = m.pre[i];
        add_ttft_terms(m, m.pre[i], p, held, sys.link_bidir, prefill_transfer(pipe, e.cls.a_append));
        m.sum_p_o += po;
        m.batch_mix.gpu_compute += po * d.gpu_compute;
        m.batch_mix.gpu_hbm += po * d.gpu_hbm;
        m.batch_mix.cpu_compute += po * d.cpu_compute;
        m.batch_mix.cpu_dram += po * d.cpu_dram;
        m.batch_mix.link_d2h += po * d.link_d2h;
        m.batch_mix.link_h2d += po * d.link_h2d;
        m.batch_mix.gpu_comm += po * d.gpu_comm;
        m.batch_mix.ep_comm += po * d.ep_comm;
        m.per_call_prefill[Resource::gpu_compute] += p * q.gpu_compute;
        m.per_call_prefill[Resource::gpu_hbm] += p * q.gpu_hbm;
        m.per_call_prefill[Resource::cpu_compute] += p * q.cpu_compute;
        m.per_call_prefill[Resource::cpu_dram] += p * q.cpu_dram;
        m.per_call_prefill[Resource::tp_allreduce] += p * q.gpu_comm;
        m.per_call_prefill[Resource::ep_alltoall] += p * q.ep_comm;
        m.link_h2d += p * q.link_h2d;
        m.link_d2h += p * (q.link_d2h + q.link_park_save);
        m.held_decode += po * held;
        m.held_idle += p * e.cls.idle_gap.raw() * held;
    }
    m.inv_sum_p_o = 1.0 / m.sum_p_o;
    return m;
}

// Every per-call demand is affine in f on (0, 1]: in call_demand.hpp f enters
// only as f or 1 − f times an f-free factor, and a term that comes with
// offload (the link's per-token query and output, prefill's CPU share) is
// switched on by f > 0 alone: a jump at f = 0, no kink inside. Sums of affine
// demands are affine, so every field of MixDemand but the TTFT operands
// (maxima of such lines, per class) and their sums is at0 + slope·f on (0, 1],
// with slope = 2·(value(1) − value(1/2)) and at0 = value(1) − slope (exact in
// real arithmetic, within a few ulps in floating point: monotonicity_test.cpp).
// At f = 0 the values are the direct ones (slope·0 adds nothing).
struct MixLines {
    MixDemand at_zero;  // f = 0, computed directly
    MixDemand at0;  // the lines' values extended to f = 0 from the right
    MixDemand slope;  // d/df on (0, 1]; TTFT operands and their sums unused
    std::array<double, kMaxClasses> p{}, S{};  // class probability and the KV tokens held at S = S_c + A
    std::array<double, kMaxClasses> transfer{};  // s: its prefill's activation transfer between pipeline stages
    std::size_t classes = 0;
};

// The fields of each demand that are linear in f (the TTFT operands are not).
inline constexpr std::array<double DecodeDemand::*, 8> kDecodeLines = {
    &DecodeDemand::gpu_compute, &DecodeDemand::gpu_hbm,  &DecodeDemand::cpu_compute, &DecodeDemand::cpu_dram,
    &DecodeDemand::link_d2h,    &DecodeDemand::link_h2d, &DecodeDemand::gpu_comm,    &DecodeDemand::ep_comm};
inline constexpr std::array<double PrefillDemand::*, 10> kPrefillLines = {
    &PrefillDemand::gpu_compute, &PrefillDemand::gpu_hbm,  &PrefillDemand::cpu_compute,    &PrefillDemand::cpu_dram,
    &PrefillDemand::link_d2h,    &PrefillDemand::link_h2d, &PrefillDemand::link_park_save, &PrefillDemand::gpu_comm,
    &PrefillDemand::ep_comm,     &PrefillDemand::moe_floor};

// out = a + s·u for every field in `fields`.
template <class T, std::size_t N>
inline void line_fields(T& out, const T& a, const T& s, double u, const std::array<double T::*, N>& fields) noexcept {
    for (double T::*f : fields) out.*f = a.*f + s.*f * u;
}
inline void line_fields(MixDemand& out, const MixDemand& a, const MixDemand& s, double u, std::size_t classes) noexcept {
    for (std::size_t i = 0; i < classes; ++i) line_fields(out.pre[i], a.pre[i], s.pre[i], u, kPrefillLines);
    line_fields(out.batch_mix, a.batch_mix, s.batch_mix, u, kDecodeLines);
    for (Resource r : {Resource::gpu_compute, Resource::gpu_hbm, Resource::cpu_compute, Resource::cpu_dram,
                       Resource::tp_allreduce, Resource::ep_alltoall})
        out.per_call_prefill[r] = a.per_call_prefill[r] + s.per_call_prefill[r] * u;
    out.link_h2d = a.link_h2d + s.link_h2d * u;
    out.link_d2h = a.link_d2h + s.link_d2h * u;
}

[[nodiscard]] inline MixLines mix_lines(const Scenario& sc, const ModelConstants& mc, const SystemRates& sys, IdlePolicy idle) {
    MixLines l;
    l.at_zero = mix_demand_direct(sc, mc, sys, idle, 0.0);
    l.classes = sc.mix.entries.size();
    const Pipeline pipe = pipeline_of(sc.hardware, sc.model);
    for (std::size_t i = 0; i < l.classes; ++i) {
        l.p[i] = sc.mix.entries[i].weight;
        l.S[i] = kv_tokens_held(mc, sc.mix.entries[i].cls.context());
        l.transfer[i] = prefill_transfer(pipe, sc.mix.entries[i].cls.a_append);
    }
    const MixDemand one = mix_demand_direct(sc, mc, sys, idle, 1.0), half = mix_demand_direct(sc, mc, sys, idle, 0.5);
    line_fields(l.slope, one, half, -1.0, l.classes);  // value(1) − value(1/2)
    line_fields(l.slope, l.slope, l.slope, 1.0, l.classes);  // ·2, exactly
    line_fields(l.at0, one, l.slope, -1.0, l.classes);  // value(1) − slope
    return l;
}
}  // namespace detail

// Everything that does not depend on (f, ov), computed once per scenario
// (its members are not to be changed afterwards: `lines` follows from them).
struct PreparedScenario {
    const Scenario* scenario = nullptr;
    Pipeline pipe;  // pipeline stages (pipeline.hpp); every factor 1 at pp = 1
    SystemRates sys;  // one tensor-parallel group's rates, with the pipeline's capacity
    ModelConstants mc;

    double session_kv_max = 0;  // bytes, one session of the longest class: max kv_held(S) (one copy)
    double session_kv_peak = 0;  // bytes, the same at the end of its output: max kv_held(S + O)
    double kv_replication = 1;  // copies of each token's KV in HBM (tensor parallelism, ModelConstants)
    double kv_session_span = 1;  // one session fits when its KV times this fits the free HBM (ModelConstants)
    // The idle policy evaluated: the scenario's own, or the other one for the
    // parking comparison (see with_idle).
    IdlePolicy idle = IdlePolicy::hold;
    // k0 of StepShape, s per step on the offloaded path when f > 0: one link
    // round trip per layer (query down, partial attention output up), L per step.
    double offload_step_latency = 0;
    double step_overhead = 0;  // c0 of StepShape: s per decode step (launch, scheduling)
    double tp_step_latency = 0;  // g0 of StepShape: the α of every all-reduce in one pass (0 at one GPU)
    double ep_step_latency = 0;  // added to g0: the α of every all-to-all in one pass (0 at EP 1)
    double moe_step_latency = 0;  // added to g0: the MoE layers' fixed latency in one pass (0 for a dense model)
    detail::MixLines lines;  // the mix's demand as lines in f (mix_demand)
    double dense_weight_time = 0;  // s, weights_read / HBM bandwidth when it does not depend on B (not MoE)
    bool second_token = false;  // some class outputs more than one token: there is an inter-token latency to bound

    explicit PreparedScenario(const Scenario& s) : PreparedScenario(s, s.policy.idle) {}
    // `scenario` points at the Scenario: a temporary would leave it dangling
    // (two tests did so and only ASan caught it), so one does not compile.
    explicit PreparedScenario(Scenario&&) = delete;
    PreparedScenario(Scenario&&, IdlePolicy) = delete;
    // The scenario under idle policy p (nothing but `lines` depends on it).
    PreparedScenario(const Scenario& s, IdlePolicy p)
        : scenario(&s),
          pipe(pipeline_of(s.hardware, s.model)),
          sys(pipeline_rates(system_rates(s.hardware, gemm_dtype(s.policy), attention_dtype(s.policy)), pipe)),
          mc(constants_on(s)),
          kv_replication(mc.kv_replication),
          kv_session_span(mc.kv_session_span),
          idle(p),
          offload_step_latency(s.model.layers * s.hardware.link.latency.raw()),
          step_overhead(s.hardware.gpu.step_overhead.raw()),
          tp_step_latency(mc.allreduces_per_pass * sys.allreduce_latency),
          ep_step_latency(mc.alltoalls_per_pass * sys.alltoall_latency),
          moe_step_latency(moe_floor_per_pass(mc, sys, 1.0)),
          lines(detail::mix_lines(s, mc, sys, p)),
          dense_weight_time(mc.weights_read(1.0).raw() / sys.hbm_bandwidth.raw()),
          second_token(s.mix.second_token()) {
        for (const auto& e : s.mix.entries) {
            session_kv_max = std::max(session_kv_max, kv_held(mc, e.cls.context()).raw());
            session_kv_peak = std::max(session_kv_peak, kv_held(mc, e.cls.context() + e.cls.o_output).raw());
        }
    }

    // The model's constants on this deployment, the checkpoint's BF16 GEMMs
    // charged at the BF16 peak (charge_bf16_gemms), the routed experts' at
    // their own efficiency when one is given (charge_moe_gemms).
    [[nodiscard]] static ModelConstants constants_on(const Scenario& s) noexcept {
        const DeploymentSpec& d = s.hardware.deployment;
        ModelConstants c = model_constants(s.model, s.policy, d.gpus, {d.ep, d.expert_imbalance}, d.attention_dp == 1);
        charge_bf16_gemms(c, gemm_peak(s.hardware, gemm_dtype(s.policy)).raw() / s.hardware.gpu.flops.raw());
        const GpuSpec& g = s.hardware.gpu;
        if (g.eta_moe_gemm > 0) charge_moe_gemms(c, g.eta_compute / g.eta_moe_gemm);
        return c;
    }

    // w of StepShape at batch b: the weight read per step over the HBM bandwidth
    // (pipelined: σ times that of a micro-batch, B/m).
    [[nodiscard]] double weight_time(double b) const noexcept {
        return pipe.pp > 1 ? pipe.sigma * group_weight_time(b / pipe.microbatches) : group_weight_time(b);
    }
    // One group's weight read at batch b (what a pipeline's micro-batch streams).
    [[nodiscard]] double group_weight_time(double b) const noexcept {
        return mc.moe ? mc.weights_read(b).raw() / sys.hbm_bandwidth.raw() : dense_weight_time;
    }
    // The elementwise kernels' HBM traffic (norms, activations, expert sums) of a pass over `tokens` tokens, in s.
    [[nodiscard]] double activation_time(double tokens) const noexcept {
        return tokens * mc.act_bytes_per_token / sys.hbm_bandwidth.raw();
    }
    // The bandwidth that turns weight bytes into w (weight_time): the HBM's over σ.
    [[nodiscard]] double weight_bandwidth() const noexcept { return sys.hbm_bandwidth.raw() / pipe.sigma; }

    // The same scenario under another idle policy: identical to preparing a
    // copy of the scenario with policy.idle changed, without the copy.
    [[nodiscard]] PreparedScenario with_idle(IdlePolicy p) const { return p == idle ? *this : PreparedScenario(*scenario, p); }

    // HBM left for KV after the weights (negative when they do not fit).
    [[nodiscard]] double hbm_free_bytes() const noexcept { return sys.hbm_capacity.raw() - mc.weights.raw(); }

    // One session of the longest class fits where its KV lives at offload
    // fraction f: the GPU share (1−f) in free HBM, and in CPU DRAM the f share,
    // or under --idle park the whole KV while the session is idle. A fluid batch
    // below one is a time average (a session decoding part of the time); a
    // session that fits nowhere cannot be served at all.
    [[nodiscard]] bool session_fits_hbm(double f) const noexcept {
        return (1.0 - f) * session_kv_max * kv_session_span <= hbm_free_bytes();
    }
    [[nodiscard]] bool session_fits_dram(double f) const noexcept {
        const double share = idle == IdlePolicy::park ? 1.0 : f;
        return share * session_kv_max <= sys.cpu_memory.raw();
    }
    // The same with the context grown by the whole output (operating points,
    // which model context growth).
    [[nodiscard]] bool session_fits_hbm_peak(double f) const noexcept {
        return (1.0 - f) * session_kv_peak * kv_session_span <= hbm_free_bytes();
    }
    [[nodiscard]] bool session_fits_dram_peak(double f) const noexcept {
        return (idle == IdlePolicy::park ? 1.0 : f) * session_kv_peak <= sys.cpu_memory.raw();
    }
    // Whether some f in [0, 1] fits one session, and the smallest such f.
    [[nodiscard]] std::optional<double> smallest_f_that_fits() const noexcept {
        const double free = hbm_free_bytes();
        if (free <= 0) return std::nullopt;
        const double gpu_copies = session_kv_max * kv_session_span;
        const double f = gpu_copies > free ? 1.0 - free / gpu_copies : 0.0;
        if (!session_fits_dram(f)) return std::nullopt;
        return f;
    }
};

// The mix's demand at offload fraction f: each linear field from its line
// (detail::MixLines), the TTFT operands per class from those.
[[nodiscard]] inline MixDemand mix_demand(const PreparedScenario& ps, double f) {
    const detail::MixLines& l = ps.lines;
    const MixDemand& base = f > 0 ? l.at0 : l.at_zero;
    MixDemand m;
    m.f = f;
    detail::line_fields(m, base, l.slope, f, l.classes);
    for (std::size_t i = 0; i < l.classes; ++i)
        detail::add_ttft_terms(m, m.pre[i], l.p[i], l.S[i], ps.sys.link_bidir, l.transfer[i]);
    m.sum_p_o = l.at_zero.sum_p_o;  // independent of f
    m.inv_sum_p_o = l.at_zero.inv_sum_p_o;
    m.held_decode = l.at_zero.held_decode;
    m.held_idle = l.at_zero.held_idle;
    return m;
}

}  // namespace kvroof
