// SPDX-License-Identifier: MIT
#pragma once
// The scenario prepared for evaluation, and what its calls ask of each
// resource at an offload fraction f before the overlap ov and the batch are
// chosen (see serving.hpp for how the batch and throughput follow).

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "kvroof/analysis/resource.hpp"
#include "kvroof/physics/call_demand.hpp"
#include "kvroof/physics/decode_step.hpp"

namespace kvroof {

inline constexpr int kMaxClasses = 16;

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
            throw InputError("mix: at most " + std::to_string(kMaxClasses) + " classes, got " +
                             std::to_string(mix.entries.size()));
    }
};

// Everything that does not depend on (f, ov), computed once per scenario.
struct PreparedScenario {
    const Scenario* scenario = nullptr;
    SystemRates sys;
    ModelConstants mc;

    double session_kv_max = 0;  // bytes, one session of the longest class: kv·max S
    // The idle policy evaluated: the scenario's own, or the other one for the
    // parking comparison (nothing above depends on it, see with_idle).
    IdlePolicy idle = IdlePolicy::hold;
    // k0 of StepShape, s per step on the offloaded path when f > 0: one link
    // round trip per layer (query down, partial attention output up), L per step.
    double offload_step_latency = 0;

    explicit PreparedScenario(const Scenario& s)
        : scenario(&s),
          sys(system_rates(s.hardware)),
          mc(model_constants(s.model, s.policy)),
          idle(s.policy.idle),
          offload_step_latency(s.model.layers * s.hardware.link_latency.raw()) {
        for (const auto& e : s.mix.entries) session_kv_max = std::max(session_kv_max, mc.kv_per_token.raw() * e.cls.context());
    }

    // The same scenario under another idle policy: identical to preparing a
    // copy of the scenario with policy.idle changed, without the copy.
    [[nodiscard]] PreparedScenario with_idle(IdlePolicy p) const noexcept {
        PreparedScenario o = *this;
        o.idle = p;
        return o;
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
        const double share = idle == IdlePolicy::park ? 1.0 : f;
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

// What the calls ask at offload fraction f, before the overlap is chosen:
// everything that does not depend on ov, so both ends of a band share it.
struct MixDemand {
    double f = 0;
    std::array<PrefillDemand, kMaxClasses> pre;  // per class; only the first mix.size() are set
    double sum_p_o = 0;  // Σ p·O
    double held_decode = 0, held_idle = 0;  // Σ p·O·S, Σ p·idle·S
    double ttft_gpu = 0, ttft_off = 0, ttft_min = 0;  // Σ p·part of the TTFT combine operands
    double held_gpu = 0, held_off = 0, held_min = 0;  // Σ p·S·part, for the bytes held while prefilling
    DecodeDemand batch_mix{};  // per-token demand summed with weights p·O
    PerResource<double> per_call_prefill;  // rate resources but the link (counted per direction below)
    double link_h2d = 0, link_d2h = 0;
};

[[nodiscard]] inline MixDemand mix_demand(const PreparedScenario& ps, double f) {
    const Scenario& sc = *ps.scenario;
    PolicySpec pol = sc.policy;
    pol.f = f;
    pol.idle = ps.idle;
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
        m.per_call_prefill[Resource::gpu_compute] += p * q.gpu_compute;
        m.per_call_prefill[Resource::gpu_hbm] += p * q.gpu_hbm;
        m.per_call_prefill[Resource::cpu_compute] += p * q.cpu_compute;
        m.per_call_prefill[Resource::cpu_dram] += p * q.cpu_dram;
        m.link_h2d += p * q.link_h2d;
        m.link_d2h += p * (q.link_d2h + q.link_park_save);
        m.held_decode += po * S;
        m.held_idle += p * e.cls.idle_gap.raw() * S;
    }
    return m;
}

}  // namespace kvroof
