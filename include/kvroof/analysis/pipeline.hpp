// SPDX-License-Identifier: MIT
#pragma once
// Pipeline parallelism (docs/model.md, "Pipeline parallelism"): pp stages of
// t GPUs each (t = the tensor-parallel group, DeploymentSpec::gpus), stage i
// holding L_i ∈ {⌊L/pp⌋, ⌈L/pp⌉} of the L layers with their weights and KV.
// The batch of B sequences runs as m micro-batches of b = B/m (m = pp by
// default: vLLM runs one virtual engine, with its own scheduler and batch, per
// stage; vllm-project/vllm RFC #4461 and #11945).
// A micro-batch's token passes every stage, so with T(b) the decode step of
// the whole model on one t-GPU group at batch b:
//   cycle(B) = σ · T(B/m) + Σ over the pp − 1 boundaries (α_x + (B/m) · β_x) + c0
//   ι = pp · ⌈L/pp⌉ / L            stage imbalance (the busiest stage's layers over the mean)
//   σ = max(1, m · ι / pp)         the busiest stage serving m micro-batches, or one trip through all
// and each sequence gains one token per cycle: ITL = cycle(B), throughput =
// B / cycle(B) per replica of t·pp GPUs. At m = 1 the stages take turns
// (bubble 1 − 1/pp: the throughput of one t-GPU group on pp times the GPUs);
// at m = pp the steady state has no bubble but the weights stream once per
// micro-batch. The per-sequence coefficients of T therefore scale by σ/m, the
// per-step ones (weights at batch B/m, α of the all-reduces, the offload's
// per-layer latency) by σ; c0 (launch, scheduling) stays once per cycle.
// Activation transfer (vLLM's send_tensor_dict with its all-gather group):
// each boundary carries the micro-batch's hidden states and residual, 2·h·2
// bytes per sequence (BF16); each of the t ranks sends a 1/t slice to its peer
// in the next stage, which all-gathers them ((t−1)/t of the bytes per GPU, α
// the all-reduce α; a stage wider than the domain gathers as half of its
// hierarchical all-reduce). Within an NVLink domain of D GPUs (⌊D/t⌋ stages per
// domain) a boundary runs at η_nvlink · NVLink with α the all-reduce α, beyond
// it at the network's bandwidth with α_net:
//   β_x = 4h/t / BW_boundary + [t > 1] (t−1)/t · 4h / (η_nvlink · NVLink),  α_x = α_boundary + [t > 1] α
// Capacity: the busiest stage holds ⌈L/pp⌉/L of the weights and KV on t GPUs,
// so the pipeline holds pp/ι times one group's HBM (and CPU DRAM). The
// offloaded work of a call spreads over the stages' own CPUs and links: the
// busiest stage's share is ι/pp of it. A prefill's TTFT is its trip through
// every stage (the whole model at one group's rates, plus its A tokens'
// activation transfer over every boundary: prefill_transfer); its share of
// the pipeline's time is σ/m of that.
// At pp = 1 every factor is exactly 1 and every term 0 (bit-identical numbers).

#include <algorithm>
#include <cmath>

#include "kvroof/physics/decode_step.hpp"
#include "kvroof/spec/hardware.hpp"
#include "kvroof/spec/model.hpp"

namespace kvroof {

struct Pipeline {
    int pp = 1;
    double microbatches = 1;  // m
    double imbalance = 1;  // ι
    double sigma = 1;  // σ
    double per_sequence = 1;  // σ/m: per-sequence step coefficients and prefill occupancy per cycle
    double offload_share = 1;  // ι/pp: the busiest stage's share of a call's CPU and link work
    double capacity_scale = 1;  // pp/ι: HBM and DRAM of the pipeline over one group's
    int boundaries_nvlink = 0, boundaries_network = 0;  // stage boundaries on each fabric
    double transfer_latency = 0;  // s per cycle: the boundaries' α
    double transfer_per_sequence = 0;  // s per sequence per cycle: h·2 bytes over every boundary, / m
    double transfer_per_token = 0;  // s per token of one pass over every boundary (a prefill's A tokens: A times it)
};

// Stage boundaries that leave the NVLink domain: ⌊D/t⌋ stages fit in one
// (at least 1), so ⌈pp/⌊D/t⌋⌉ − 1 of the pp − 1 boundaries cross the network.
[[nodiscard]] inline int network_boundaries(int pp, int tp, int domain) noexcept {
    const int per_domain = std::max(1, domain / tp);
    return (pp + per_domain - 1) / per_domain - 1;
}

[[nodiscard]] inline Pipeline pipeline_of(const HardwareSpec& hw, const ModelSpec& m) noexcept {
    Pipeline p;
    if (hw.deployment.pp <= 1) return p;
    const double pp = hw.deployment.pp, L = m.layers;
    p.pp = hw.deployment.pp;
    p.microbatches = hw.deployment.pp_microbatches > 0 ? hw.deployment.pp_microbatches : pp;
    p.imbalance = pp * std::ceil(L / pp) / L;
    p.sigma = std::max(1.0, p.microbatches * p.imbalance / pp);
    p.per_sequence = p.sigma / p.microbatches;
    p.offload_share = p.imbalance / pp;
    p.capacity_scale = pp / p.imbalance;
    p.boundaries_network = network_boundaries(hw.deployment.pp, hw.deployment.gpus, hw.gpu.nvlink_domain);
    p.boundaries_nvlink = hw.deployment.pp - 1 - p.boundaries_network;
    // Per sequence, 2 tensors of h BF16 (hidden states and residual); each of the t ranks sends its
    // 1/t slice over the boundary, then the stage all-gathers them ((t−1)/t of the bytes per GPU).
    const double t = hw.deployment.gpus, bytes = 2.0 * static_cast<double>(m.hidden) * bytes_per_element(DType::bf16);
    const double fabric = gpu_fabric_bandwidth(hw);
    const double nvlink_s = 1.0 / (hw.gpu.eta_nvlink * fabric), network_s = 1.0 / hw.net.bandwidth.raw();
    // The all-gather is half an all-reduce's bytes, (t−1)/t over NVLink within the domain and
    // hierarchical beyond it, with its α (spec/hardware.hpp); nothing on one GPU.
    const double gather = 0.5 * allreduce_s_per_byte(hw) * bytes, gather_alpha = allreduce_alpha(hw);
    const double nv = p.boundaries_nvlink, net = p.boundaries_network;
    p.transfer_latency = nv * (hw.gpu.allreduce_latency.raw() + gather_alpha) + net * (hw.net.latency.raw() + gather_alpha);
    const double per_seq = nv * (bytes / t * nvlink_s + gather) + net * (bytes / t * network_s + gather);
    p.transfer_per_sequence = per_seq / p.microbatches;
    p.transfer_per_token = per_seq;
    return p;
}

namespace detail {
// The prefill tokens one step may carry: the engine's token budget per
// scheduled batch, `chunk`; in a pipeline, once per micro-batch, since each of
// the m micro-batches in flight is scheduled with its own budget (vLLM runs a
// virtual engine, with its own scheduler, per stage: above). One
// request's piece rides in one micro-batch, so it still gets at most `chunk`
// a cycle (ClassLoad::chunks).
[[nodiscard]] inline double cycle_budget(const Pipeline& p, double chunk) noexcept {
    return p.pp > 1 ? p.microbatches * chunk : chunk;
}
}  // namespace detail

// A prefill pass of A tokens crosses every boundary once with all its tokens:
// Σ over the pp − 1 boundaries (α_x + A·β_x), charged in its TTFT (0 at pp = 1).
[[nodiscard]] inline double prefill_transfer(const Pipeline& p, double A) noexcept {
    return p.pp > 1 && A > 0 ? p.transfer_latency + A * p.transfer_per_token : 0.0;
}

// A pipeline running passes back to back (disagg's GPU prefill feed, a
// prefill pool): the passes follow each other through the stages, so each
// costs the pipeline the busiest stage's time, ι/pp of one group's pass, plus
// its send over one boundary (the mean of prefill_transfer's pp − 1) — the
// stage sends after it computes. A pass's latency is still its whole trip.
[[nodiscard]] inline double pipelined_pass(const Pipeline& p, double group_pass, double A) noexcept {
    if (p.pp <= 1) return group_pass;
    return p.offload_share * group_pass + prefill_transfer(p, A) / (p.pp - 1);
}

// The cycle's coefficients from one group's step (w is set per batch by the
// caller, already σ · weights at B/m: PreparedScenario::weight_time).
inline void stretch(StepShape& s, const Pipeline& p) noexcept {
    if (p.pp <= 1) return;
    s.gc *= p.per_sequence;
    s.gm *= p.per_sequence;
    s.k *= p.per_sequence;
    s.gx = s.gx * p.per_sequence + p.transfer_per_sequence;
    s.g0 = s.g0 * p.sigma + p.transfer_latency;
    s.k0 *= p.sigma;
}

// A group's rates with the pipeline's capacity (the busiest stage binds).
[[nodiscard]] inline SystemRates pipeline_rates(SystemRates sys, const Pipeline& p) noexcept {
    if (p.pp <= 1) return sys;
    sys.hbm_capacity = sys.hbm_capacity * p.capacity_scale;
    sys.cpu_memory = sys.cpu_memory * p.capacity_scale;
    return sys;
}

// GPUs of one replica (tp · pp) and of the deployment (tp · pp · dp): the
// serving analyses answer for one replica; dp replicas multiply its throughput.
[[nodiscard]] inline int replica_gpus(const HardwareSpec& hw) noexcept { return hw.deployment.gpus * hw.deployment.pp; }
[[nodiscard]] inline int deployment_gpus(const HardwareSpec& hw) noexcept {
    return hw.deployment.gpus * hw.deployment.pp * hw.deployment.dp;
}

}  // namespace kvroof
