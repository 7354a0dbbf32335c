// SPDX-License-Identifier: MIT
#pragma once
// `kvroof ladder`: the bottleneck ladder of one scenario. From the scenario as
// given, each round tries every lever still available on top of the levers
// taken so far, and takes the one that raises output tokens/s per GPU most at
// the bankable end of the band (ov = 0); it stops when none gains at least
// kGainThreshold. The levers, each repeatable where it says so:
//   tensor parallelism   double the GPUs of the group (up to max_gpus; heads split evenly unless attention is
//                        data-parallel; EP over the whole group grows with it, up to the routed experts)
//   sparse attention     read `sparse` of the KV per decode token (once)
//   KV quantisation      bf16/fp16 -> fp8 -> int4 (one step per round)
//   park idle sessions   idle sessions' KV in CPU DRAM between calls (once; workloads with idle gaps)
//   hold idle sessions   the reverse, where the scenario parks them (once): parked whole, a session
//                        can outgrow CPU DRAM where held it fits. Each idle lever is offered only
//                        against the scenario's own policy, so the ladder never turns it back.
//   CPU offload          KV and attention at the best f of each band end (once)
// A state without offload is evaluated at f = 0 (both band ends equal); with
// it, at the best f of each end (optimise_f_band). Offload that pays only with
// overlap (ov = 1) is never taken by the bankable criterion; when it would
// gain there, the study says so after the last step.

#include <algorithm>
#include <optional>
#include <vector>

#include "kvroof/analysis/verdict.hpp"

namespace kvroof {

enum class LeverKind { tensor_parallel, sparse, kv_quant, park_idle, hold_idle, offload };

struct LadderOptions {
    int max_gpus = 8;  // the tensor-parallel lever stops here
    double sparse = 0.1;  // the sparse-attention lever's read fraction
};

struct LadderRung {
    std::optional<LeverKind> lever;  // none on the first rung (the scenario as given)
    Scenario scenario;  // with every lever so far
    bool offload = false;
    Band band;  // at f = 0, or at the best f of each end when offloading
    double per_gpu_conservative = 0, per_gpu_optimistic = 0;  // output tokens/s per GPU
    double gain = 1;  // per-GPU tokens/s at ov = 0 over the previous rung's
    double f_fits_from = 0;  // the least f at which one session fits (0: at f = 0, or at no f)
};

struct LadderStudy {
    LadderOptions options;
    std::vector<LadderRung> rungs;  // the scenario as given first
    bool compute_bound = false;  // the last rung is GPU-compute-bound at ov = 0
    std::optional<LadderRung> overlap_only;  // offload on top of the last rung, when it gains only at ov = 1
};

namespace detail {
[[nodiscard]] inline LadderRung evaluate_rung(Scenario sc, bool offload) {
    const PreparedScenario ps(sc);
    LadderRung r;
    r.offload = offload;
    r.f_fits_from = ps.smallest_f_that_fits().value_or(0.0);
    if (offload) {
        const auto best = optimise_f_band(ps);
        r.band = Band{best[0], best[1]};
    } else {
        r.band = band(ps, 0.0);
    }
    r.per_gpu_conservative = r.band.conservative.throughput / replica_gpus(sc.hardware);
    r.per_gpu_optimistic = r.band.optimistic.throughput / replica_gpus(sc.hardware);
    r.scenario = std::move(sc);
    return r;
}

// Whether some class has idle gaps between its calls (the idle levers have sessions to park or hold).
[[nodiscard]] inline bool has_idle_gap(const Scenario& sc) noexcept {
    return std::any_of(sc.mix.entries.begin(), sc.mix.entries.end(), [](const MixEntry& e) { return e.cls.idle_gap.raw() > 0; });
}

// The next step of lever `k` from rung `from`, or nothing when it is used up.
[[nodiscard]] inline std::optional<LadderRung> take_lever(LeverKind k, const LadderRung& from, const LadderOptions& o) {
    Scenario sc = from.scenario;
    bool offload = from.offload;
    switch (k) {
        case LeverKind::tensor_parallel: {
            DeploymentSpec& d = sc.hardware.deployment;
            const int g = 2 * d.gpus;
            // Heads split over a tensor-parallel group; data-parallel attention splits sequences instead.
            if (g > o.max_gpus || (d.attention_dp == 0 && sc.model.heads % g != 0)) return std::nullopt;
            // Expert parallelism over the whole group grows with it, up to the routed experts (EP 8 of Mixtral's 8
            // stays 8 on 16 GPUs; it still divides them).
            if (d.ep > 1 && d.ep == d.gpus && g <= sc.model.experts) d.ep = g;
            d.gpus = g;
            // A deployment the inputs would refuse is no lever (EP 4 under data-parallel attention on 8 GPUs was
            // offered, and its flag then exited 2).
            try {
                sc.hardware.check_validity();
            } catch (const InputError&) {
                return std::nullopt;
            }
            break;
        }
        case LeverKind::sparse:
            if (sc.policy.sparse <= o.sparse) return std::nullopt;
            sc.policy.sparse = o.sparse;
            break;
        case LeverKind::kv_quant:
            if (kv_bytes_per_element(sc.policy.kv_dtype) < 1.0) return std::nullopt;  // a 4-bit format already
            sc.policy.kv_dtype = kv_bytes_per_element(sc.policy.kv_dtype) == 1.0 ? DType::int4 : DType::fp8;
            break;
        case LeverKind::park_idle:
            if (!has_idle_gap(sc) || sc.policy.idle == IdlePolicy::park) return std::nullopt;
            sc.policy.idle = IdlePolicy::park;
            break;
        case LeverKind::hold_idle:
            if (!has_idle_gap(sc) || sc.policy.idle != IdlePolicy::park) return std::nullopt;
            sc.policy.idle = IdlePolicy::hold;
            break;
        case LeverKind::offload:
            if (offload) return std::nullopt;
            offload = true;
            break;
    }
    LadderRung r = evaluate_rung(std::move(sc), offload);
    r.lever = k;
    r.gain = from.per_gpu_conservative > 0 ? r.per_gpu_conservative / from.per_gpu_conservative : kUnbounded;
    return r;
}

// Whether rung a gains more than b: by gain, then, where both make a scenario
// that served nothing serve (gain kUnbounded each), by what each serves per GPU.
[[nodiscard]] inline bool gains_more(const LadderRung& a, const LadderRung& b) noexcept {
    return a.gain > b.gain || (a.gain == b.gain && a.per_gpu_conservative > b.per_gpu_conservative);
}
}  // namespace detail

// The ladder's first round for the VERDICT: each lever alone on the scenario
// as given (sparse attention left out: it changes what the model computes),
// best first by per-GPU gain at ov = 0; offload is the verdict's own bankable
// end, not solved again. A scenario that fits nothing has no per-GPU gain to
// compare, so a lever that makes it fit gains kUnbounded.
[[nodiscard]] inline std::vector<LadderRung> single_levers(const Scenario& scenario, const Verdict& v,
                                                           const LadderOptions& o = {}) {
    LadderRung given;
    given.scenario = scenario;
    given.band = v.baseline;
    given.per_gpu_conservative = v.baseline.conservative.throughput / replica_gpus(scenario.hardware);
    given.per_gpu_optimistic = v.baseline.optimistic.throughput / replica_gpus(scenario.hardware);
    std::vector<LadderRung> out;
    for (LeverKind k : {LeverKind::park_idle, LeverKind::hold_idle, LeverKind::kv_quant, LeverKind::tensor_parallel}) {
        auto r = detail::take_lever(k, given, o);
        if (r && r->band.conservative.throughput > 0) out.push_back(std::move(*r));
    }
    if (v.best_conservative.f > 0 && v.best_conservative.throughput > 0) {
        LadderRung off;
        off.lever = LeverKind::offload;
        off.scenario = scenario;
        off.offload = true;
        off.f_fits_from = v.smallest_f_that_fits.value_or(0.0);
        off.band = Band{v.best_conservative, v.best_optimistic};
        off.per_gpu_conservative = v.best_conservative.throughput / replica_gpus(scenario.hardware);
        off.per_gpu_optimistic = v.best_optimistic.throughput / replica_gpus(scenario.hardware);
        off.gain = gain(v.best_conservative, v.baseline.conservative);  // its best f's, as its tok/s (not a --f the user fixed)
        out.push_back(std::move(off));
    }
    std::stable_sort(out.begin(), out.end(), detail::gains_more);
    return out;
}

[[nodiscard]] inline LadderStudy ladder_study(const Scenario& scenario, const LadderOptions& o = {}) {
    scenario.check_validity();
    LadderStudy s;
    s.options = o;
    s.rungs.push_back(detail::evaluate_rung(scenario, false));
    constexpr LeverKind kLevers[] = {LeverKind::tensor_parallel, LeverKind::sparse,    LeverKind::kv_quant,
                                     LeverKind::park_idle,       LeverKind::hold_idle, LeverKind::offload};
    // The idle lever that would turn the scenario's own policy back once the other was taken.
    const LeverKind reverse = scenario.policy.idle == IdlePolicy::park ? LeverKind::park_idle : LeverKind::hold_idle;
    for (int round = 0; round < 16; ++round) {  // at most 14 levers exist; 16 is a bound, not a limit reached
        std::optional<LadderRung> best;
        for (LeverKind k : kLevers) {
            if (k == reverse) continue;
            auto r = detail::take_lever(k, s.rungs.back(), o);
            if (r && r->band.conservative.throughput > 0 && (!best || detail::gains_more(*r, *best))) best = std::move(r);
        }
        const bool grow = !best && !(s.rungs.back().per_gpu_conservative > 0);
        if (grow) {
            // Nothing serves yet and no lever alone makes it serve: twice the GPUs hold more, and a
            // later round may fit (Llama-3.1-70B in BF16 on one H100 needs four). Taken at gain 1.
            best = detail::take_lever(LeverKind::tensor_parallel, s.rungs.back(), o);
            if (best) best->gain = 1.0;
        }
        if (!best || !(grow || best->gain >= kGainThreshold)) break;
        s.rungs.push_back(std::move(*best));
    }
    while (s.rungs.size() > 1 && !(s.rungs.back().per_gpu_conservative > 0)) s.rungs.pop_back();  // growth that never fit
    const LadderRung& last = s.rungs.back();
    s.compute_bound = last.band.conservative.headline == Resource::gpu_compute;
    if (!last.offload) {
        auto off = detail::take_lever(LeverKind::offload, last, o);
        if (off && last.per_gpu_optimistic > 0 && off->per_gpu_optimistic / last.per_gpu_optimistic >= kGainThreshold)
            s.overlap_only = std::move(off);
    }
    return s;
}

}  // namespace kvroof
