// SPDX-License-Identifier: MIT
#pragma once
// `kvroof disagg`: full disaggregation onto CPUs (seed 000's second
// architecture). The GPUs do only prefill; a pool of CPU sockets does all of
// decode — weights, KV and attention in CPU DRAM, each socket a decode engine
// of its own — and the two run as a pipeline:
//
//   out_tps = Σp·O · min(λ_gpu, c·gpus · λ_cpu)          c sockets per GPU
//
// GPU prefill feed, calls/s of all GPUs: a call's prefill on the GPUs (its
// own pass: call_demand.hpp at f = 0, tensor parallel over `gpus`), while the
// links bring the cached KV up from DRAM (H2D, S_c·kv_gpu: every copy the
// tensor-parallel group holds, as a reload in call_demand.hpp) and take the new
// KV down (D2H, A·kv: one copy); pipelined, the slower of the two sets the rate:
//   λ_gpu = 1 / max(Σp·τ_gpu, link_time(Σp·S_c·kv_gpu, Σp·A·kv))
// CPU decode, calls/s per socket: a socket's decode step at batch b reads its
// weights once and every sequence's KV, and computes every token's FLOP:
//   step(b) = max(W(b)/BW_dram + b·(S + 1)·kv/BW_dram, b·(linear + attn(S))/C_cpu) + c0
// with W(b) the weights a batch of b reads (all for a dense model; for MoE the
// experts it routes to, as on the GPU: batch_weights.hpp solves it exactly),
// and S the p·O-weighted mean context over a call (S_c + A + O/2); with
// window or linear layers the KV held, the keys read and attn(S) are those of
// physics/attention_layers.hpp at that context (a window caps both at W). Its batch
// is the largest b whose DRAM footprint, the weights plus the decoding and
// idle sessions' KV (Little's law: b/(O·step) calls/s each holding S·kv for
// their idle gap), fits the socket's DRAM, and whose step meets the TPOT SLO:
// the serving model's exact solvers (decode_step.hpp) with the CPU's rates.
// When even one sequence's step breaks the SLO, the study says so and keeps
// the capacity batch (seed 000's throughput-only pipeline).
//   λ_cpu = b / (Σp·O · step(b))
// The balance point c* = λ_gpu / λ_cpu sockets per GPU; the gain is out_tps
// over the admission-bound baseline (KV on the GPU, f = 0) on the same GPUs.
// Pipeline stages (pipeline.hpp): the prefill group is tp·pp GPUs with
// cpus_per_gpu sockets each; the calls' prefills follow each other through
// the stages, each costing the busiest stage's time, and each stage's link
// moves its own layers' KV (ι/pp of it):
//   λ_gpu = 1 / max(ι/pp·Σp·τ_gpu + Σp·transfer(A)/(pp − 1), ι/pp·link_time(…))

#include <algorithm>
#include <cmath>
#include <vector>

#include "kvroof/analysis/serving.hpp"

namespace kvroof {

struct DisaggPoint {
    double cpus_per_gpu = 0;
    double throughput = 0;  // output tokens/s, all GPUs
    double gain = 0;  // over the baseline
    bool cpu_bound = false;  // the CPU pool, not the GPU prefill feed, sets the rate
};

struct DisaggStudy {
    int gpus = 1;
    double baseline = 0;  // output tokens/s, KV on the GPU (f = 0, ov = 0)
    Resource baseline_limit = Resource::hbm_capacity;  // what caps the baseline's batch
    // GPU prefill feed
    double prefill_gpu_s = 0, prefill_link_s = 0;  // per call, on the whole GPU group
    double gpu_calls_per_s = 0;  // all GPUs; 0 where the group cannot prefill (weights_fit_gpu)
    bool weights_fit_gpu = true;  // the group's HBM holds the weights and one call of the longest class
    // CPU decode engine, per socket
    bool weights_fit_dram = true;
    double cpu_batch = 0, cpu_step = 0, cpu_calls_per_s = 0;
    double cpu_step_one = 0;  // s, the step of one sequence
    Resource cpu_batch_limit = Resource::dram_capacity;  // dram_capacity or slo_tpot
    bool cpu_compute_bound = false;  // the step is set by the CPU's FLOP/s, not its DRAM bandwidth
    bool cpu_meets_slo = true;  // some batch's step meets the TPOT SLO (else: the capacity batch, SLO broken)
    double prefill_latency_s = 0;  // one call's prefill on the GPU group, its whole trip: the least TTFT
    bool prefill_meets_ttft = true;  // within the TTFT SLO (else: the pipeline is shown without it)
    // The pipeline
    double balance_cpus_per_gpu = kUnbounded;  // c*: sockets per GPU that match the prefill feed
    double max_throughput = 0;  // at c* (the GPU feed): Σp·O · λ_gpu
    DisaggPoint at_machine;  // at the scenario's own cpus_per_gpu
    std::vector<DisaggPoint> curve;  // over cpus_per_gpu = 0.5, 1, 2, ... 512
};

namespace detail {
struct DecodeMix {
    // S: KV tokens held (held(S) of attention_layers.hpp), keys: keys attended, state: the
    // linear state read and written, per decode token; p·O-weighted means over a call.
    double sum_p_o = 0, sum_p_a = 0, S = 0, keys = 0, state = 0, idle_per_o = 0, prefill_gpu = 0, h2d = 0, d2h = 0;
    double dsa_read = 0;  // DSA only: the mean tokens of kv read per decode token (top-k latents, every indexer key)
};

[[nodiscard]] inline DecodeMix decode_mix(const Scenario& sc, const ModelConstants& mc, const SystemRates& gpu) {
    PolicySpec pol = sc.policy;
    pol.f = 0;
    pol.ov = 0;
    pol.idle = IdlePolicy::hold;
    DecodeMix m;
    double held = 0, keys = 0, idle = 0;
    const double kv = mc.kv_per_token.raw(), link = gpu.link_bandwidth.raw();
    const double kv_gpu = mc.kv_gpu_per_token.raw();  // the copies the group's HBM holds (MLA, or GQA past its KV heads)
    for (const auto& e : sc.mix.entries) {
        const double p = e.weight, O = e.cls.o_output;
        m.sum_p_o += p * O;
        m.sum_p_a += p * e.cls.a_append;
        held += p * O * kv_tokens_held(mc, e.cls.context() + 0.5 * O);
        keys += p * O * decode_keys(mc.layout, e.cls.context() + 0.5 * O);
        m.dsa_read += p * O * decode_tokens_read(mc.layout, e.cls.context() + 0.5 * O, sc.policy.sparse);
        idle += p * e.cls.idle_gap.raw();
        m.prefill_gpu += p * prefill_demand(mc, gpu, pol, e.cls).gpu_part;
        m.h2d += p * kv_tokens_held(mc, e.cls.s_cached) * kv_gpu / link;
        m.d2h += p * e.cls.a_append * kv / link;
    }
    m.S = held / m.sum_p_o;
    m.keys = keys / m.sum_p_o;
    m.dsa_read /= m.sum_p_o;
    m.state = 2.0 * mc.layout.state_tokens;
    m.idle_per_o = idle / m.sum_p_o;
    return m;
}
}  // namespace detail

// The pipeline's throughput with c CPU sockets per GPU.
[[nodiscard]] inline DisaggPoint disagg_at(const DisaggStudy& s, double c, double sum_p_o) {
    DisaggPoint x;
    x.cpus_per_gpu = c;
    const double cpu_calls = c * s.gpus * s.cpu_calls_per_s;
    x.cpu_bound = cpu_calls < s.gpu_calls_per_s;
    x.throughput = sum_p_o * std::min(s.gpu_calls_per_s, cpu_calls);
    x.gain = s.baseline > 0 ? x.throughput / s.baseline : kUnbounded;
    return x;
}

[[nodiscard]] inline DisaggStudy disagg_study(const Scenario& sc) {
    sc.check_validity();
    const PreparedScenario ps(sc);
    DisaggStudy s;
    s.gpus = replica_gpus(sc.hardware);
    const ServingPoint base = evaluate(ps, 0.0, 0.0);
    s.baseline = base.throughput;
    s.baseline_limit = base.batch_limit;
    const detail::DecodeMix m = detail::decode_mix(sc, ps.mc, ps.sys);
    s.prefill_gpu_s = pipelined_pass(ps.pipe, m.prefill_gpu, m.sum_p_a);  // transfer(A) is linear in A: Σp·A
    s.prefill_link_s = ps.pipe.offload_share * link_time(m.h2d, m.d2h, ps.sys.link_bidir);
    // The GPUs prefill only what they hold: the weights and one call's KV (the baseline's own check, at f = 0).
    s.weights_fit_gpu = ps.hbm_free_bytes() > 0 && ps.session_fits_hbm(0.0);
    s.gpu_calls_per_s = s.weights_fit_gpu ? 1.0 / std::max(s.prefill_gpu_s, s.prefill_link_s) : 0.0;
    s.prefill_latency_s = m.prefill_gpu + prefill_transfer(ps.pipe, m.sum_p_a);
    // A prefill that cannot run meets no SLO.
    s.prefill_meets_ttft = s.weights_fit_gpu && (!sc.policy.slo_ttft || s.prefill_latency_s <= sc.policy.slo_ttft->raw());
    // One socket as a decode engine.
    const HardwareSpec& hw = sc.hardware;
    const double bw = hw.host.dram_bandwidth.raw() * hw.host.eta_dram, flops = hw.host.flops.raw() * hw.host.eta_compute;
    const double kv = ps.mc.kv_per_token.raw(), weights = ps.mc.weights.raw();
    StepShape sh;
    // The weight read per step follows the batch as on the GPU (physics/call_demand.hpp): dense, all of them;
    // MoE, the experts a batch of b routes to, w(b) = w0 + wr·(1 − (1 − k/E)^b). (It once read every expert at
    // any batch: Qwen3-30B-A3B's one-sequence step showed 156 ms for 31, and the 50 ms SLO no batch met.)
    const auto shape_at = [&](double b) { return detail::with_weight_read(sh, ps.mc.weights_read(b).raw() / bw); };
    const double sp = sc.policy.sparse;
    sh.gm = ((ps.mc.layout.topk > 0 ? m.dsa_read : sp * m.keys + m.state) + 1.0) * kv / bw;
    sh.gc = (ps.mc.linear_work().raw() + ps.mc.attn_decode_per_key * m.keys * sp + ps.mc.layout.index_flop_per_key * m.S * sp +
             ps.mc.layout.state_flop) /
            flops;
    sh.c0 = ps.step_overhead;
    const double free = hw.host.memory.raw() - weights;
    s.weights_fit_dram = free > 0 && free >= kv * m.S;
    if (s.weights_fit_dram) {
        detail::PiecesAt pieces(sh);
        const double m1 = kv * m.S, m2 = kv * m.S * m.idle_per_o;
        s.cpu_batch = detail::batch_with_weights(
            ps.mc, bw, [&](double w) { return batch_for_capacity(pieces(w), free, m1, m2); },
            [&](double b) { return m1 * b + m2 * b / shape_at(b).step(b) - free; });
        if (sc.policy.slo_tpot) {  // an SLO no sequence meets leaves the capacity batch, flagged
            const double slo = sc.policy.slo_tpot->raw();
            const double b_slo = detail::batch_with_weights(
                ps.mc, bw, [&](double w) { return batch_for_step_time(pieces(w), slo); },
                [&](double b) { return shape_at(b).step(b) - slo; });
            if (b_slo < 1) {  // not even one sequence's step meets it: a fluid batch below one serves no one
                s.cpu_meets_slo = false;
            } else if (b_slo < s.cpu_batch) {
                s.cpu_batch = b_slo;
                s.cpu_batch_limit = Resource::slo_tpot;
            }
        }
        const StepShape at_b = shape_at(s.cpu_batch);
        s.cpu_step = at_b.step(s.cpu_batch);
        s.cpu_step_one = shape_at(1.0).step(1.0);
        s.cpu_compute_bound = at_b.gc * s.cpu_batch >= at_b.w + at_b.gm * s.cpu_batch;
        s.cpu_calls_per_s = s.cpu_batch > 0 ? s.cpu_batch / (m.sum_p_o * s.cpu_step) : 0.0;
    }
    const double per_gpu_feed = s.gpu_calls_per_s / s.gpus;
    // No balance where either side does nothing (null in JSON): 0 sockets would read as a real answer.
    s.balance_cpus_per_gpu = s.cpu_calls_per_s > 0 && per_gpu_feed > 0 ? per_gpu_feed / s.cpu_calls_per_s : kUnbounded;
    s.max_throughput = m.sum_p_o * s.gpu_calls_per_s;
    s.at_machine = disagg_at(s, hw.host.cpus_per_gpu, m.sum_p_o);
    for (int k = -1; k <= 9; ++k) s.curve.push_back(disagg_at(s, std::ldexp(1.0, k), m.sum_p_o));  // 0.5 .. 512 per GPU
    return s;
}

}  // namespace kvroof
