// SPDX-License-Identifier: MIT
#pragma once
// What the user describes about the machine: one GPU type, its host CPU and
// DRAM, the GPU<->CPU link, counts and achievable efficiency. All figures are
// per device (per GPU, per CPU socket); the system totals are derived. Each
// field a user may set is a row of the knob table (spec/knobs.hpp, src/knobs.cpp);
// a field's initialiser is its default where a preset does not give it.

#include <string>
#include <utility>

#include "kvroof/spec/check.hpp"
#include "kvroof/spec/model.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

// Documented ranges of the hardware figures (docs/model.md, "Input ranges"):
// generous enough for any machine, tight enough that no product or quotient
// of them overflows, underflows to 0 or divides by a denormal.
namespace limits {
inline constexpr int kMaxGpus = 100'000;
inline constexpr double kMinFlops = 1e6, kMaxFlops = 1e21;  // FLOP/s per device (1 MFLOP/s .. 1 ZFLOP/s)
inline constexpr double kMinBandwidth = 1e3, kMaxBandwidth = 1e18;  // bytes/s (1 KB/s .. 1 EB/s)
inline constexpr double kMinCapacity = 1e6, kMaxCapacity = 1e18;  // bytes (1 MB .. 1 EB)
inline constexpr double kMinEta = 1e-3, kMaxEta = 1.0;  // achievable fraction of a peak
inline constexpr double kMinCpusPerGpu = 1e-3, kMaxCpusPerGpu = 1e3;  // CPU sockets per GPU
inline constexpr double kMaxLinkLatency = 1.0;  // s per round trip (measured: ~1 µs)
inline constexpr double kMaxStepOverhead = 1.0;  // s per decode step (measured: well under 10 ms)
}  // namespace limits

// How the GPUs serve the model: one tensor-parallel group of `gpus`, its
// experts, attention, pipeline stages and replicas. What a deployment preset
// (--deployment) sets beside the machine's figures; system_rates and
// pipeline_of (analysis/pipeline.hpp) are the one rule that combines them.
struct DeploymentSpec {
    int gpus = 1;  // GPUs in one tensor-parallel group (HBM, FLOP/s pooled; two all-reduces per layer)
    // Expert parallelism: the routed experts sharded over `ep` GPUs (1: every
    // GPU of the group holds its TP share of every expert; `ep` divides the
    // group, not necessarily the experts: ModelConstants::expert_load), and the busiest
    // GPU's expert work over the mean: 1.115 MEASURED (TensorRT-LLM, DeepSeek-R1
    // at EP 36 with EPLB, the hottest rank's routed tokens over the mean,
    // averaged over layers and decode steps; docs/model.md). Without EPLB: 2.564.
    int ep = 1;
    double expert_imbalance = 1.115;
    // Data-parallel attention over the group (MLA models; SGLang's
    // --enable-dp-attention, vLLM's data-parallel attention): 1 = each GPU runs
    // attention, and holds the latent KV, for its own sequences only; the
    // FFN/MoE stays tensor- (or expert-) parallel over the group. 0 = off.
    int attention_dp = 0;
    // Pipeline parallelism: `pp` stages of `gpus` GPUs each, every stage holding
    // its ⌈L/pp⌉ or ⌊L/pp⌋ layers' weights and KV; `pp_microbatches` in flight
    // (0: pp, as vLLM and TensorRT-LLM schedule them). Data parallelism: `dp`
    // replicas of the tp·pp GPUs, requests split evenly (analysis/pipeline.hpp).
    int pp = 1;
    int pp_microbatches = 0;
    int dp = 1;
};

// One GPU: its tensor peaks, HBM and NVLink fabric, with the achievable
// fraction of each (what a hardware preset's GPU columns give).
struct GpuSpec {
    FlopPerSecond flops;  // dense BF16/FP16 tensor peak per GPU
    FlopPerSecond flops_fp8{0.0};  // dense FP8 tensor peak per GPU; 0: no FP8 math (GEMMs run at flops)
    FlopPerSecond flops_fp4{0.0};  // dense FP4 tensor peak per GPU; 0: no FP4 math (GEMMs run at flops)
    FlopPerSecond prefill_flops;  // effective prefill FLOP/s per GPU for the κ_crit analysis (C_eff)
    Bytes hbm_capacity;  // per GPU
    BytesPerSecond hbm_bandwidth;  // per GPU
    std::string memory_type = "HBM";  // what the "hbm" knobs describe: HBM, or GDDR6/6X/7 on PCIe cards
    Bytes hbm_reserve = gigabytes(2.0);  // per GPU, held back for activations and workspace
    // GPU<->GPU fabric for the tensor-parallel all-reduces: per GPU, per
    // direction; 0 = no NVLink (the all-reduce runs over the host link).
    BytesPerSecond nvlink_bandwidth;
    int nvlink_domain = 8;  // GPUs one NVLink fabric joins (HGX 8, GB200 NVL72 72): the largest tensor-parallel group
    Seconds allreduce_latency{5e-6};  // α: one small all-reduce on that fabric (HGX H100 measured; presets set theirs)
    // Achievable fraction of each peak (docs/model.md, "Efficiencies"),
    // defaults from public measurements (data/README.md and docs/model.md cite each).
    double eta_compute = 0.7;  // GEMM FLOP/s: large FP8 GEMMs on H100 reach 0.70-0.73 of peak, BF16 0.80
    // The routed experts' grouped GEMMs of a MoE model: 0 = eta_compute. Engines'
    // kernels reach 0.07-0.68 of the peak (docs/model.md, "Efficiencies"): no default.
    double eta_moe_gemm = 0;
    double eta_mem = 0.85;  // HBM bandwidth: STREAM Triad 0.83-0.89 of peak on A100, H100, H200
    double eta_nvlink = 0.8;  // all-reduce bus bandwidth over the fabric's per-direction peak (HGX H100; presets set theirs)
    Seconds step_overhead{1.5e-3};  // per decode step: launch and scheduling with CUDA graphs (DERIVED, docs/model.md)
    // Per MoE layer per forward pass: routing, top-k and the expert kernels'
    // latency floor, beyond their weight read (DERIVED from three public kernel
    // benchmarks, docs/model.md "MoE layer latency").
    Seconds moe_layer_latency{27e-6};
};

// The host CPU socket(s) serving the GPUs: per socket (a host preset).
struct HostSpec {
    std::string name;
    FlopPerSecond flops;  // per CPU socket (BF16 peak)
    BytesPerSecond dram_bandwidth;  // per CPU socket
    Bytes memory;  // per CPU socket
    double cpus_per_gpu = 1.0;  // CPU sockets serving each GPU (0.5 = one CPU shared by two GPUs)
    double eta_compute = 0.5;  // CPU FLOP/s: ASSUMED, no measured figure for attention on Grace or AMX
    double eta_dram = 0.5;  // DRAM bandwidth where the host preset has no measured eta_dram: ASSUMED
};

// The GPU<->CPU link available to one GPU (a link preset).
struct LinkSpec {
    std::string name;  // "nvlink-c2c", "pcie-gen5", ...
    BytesPerSecond bandwidth;  // per direction, sustained (no η)
    Seconds latency;  // round trip of one layer's offload exchange (query down, partial output up)
    double eta = 1.0;  // per direction (link presets are measured sustained figures)
    double eta_bidir = 1.0;  // share of the one-way rate each direction keeps when both run at once
};

// Scale-out network per GPU, per direction, for traffic leaving the NVLink
// domain (a network preset): one 400 Gb/s NIC per GPU (InfiniBand NDR or
// RoCE 400G, ConnectX-7: 50 GB/s). DeepEP measures its all-to-all kernels at
// the NIC's line rate, so no η. Latency per all-to-all or pipeline transfer
// over it: NCCL's cost-model latency of one network step (14 µs, the NET
// Ring/Simple hwLatency in NVIDIA/nccl src/graph/tuning.cc; docs/model.md).
struct NetSpec {
    std::string name;  // the network preset that set them ("ib-ndr", ...); empty: these defaults
    BytesPerSecond bandwidth{50e9};
    Seconds latency{14e-6};
};

// The machine as the presets describe it: a GPU, its host, its link to the
// host and the network, and how many of them serve the model.
struct HardwareSpec {
    std::string name;  // preset name or "custom"
    DeploymentSpec deployment;
    GpuSpec gpu;
    HostSpec host;
    LinkSpec link;
    NetSpec net;
    // The board's own GPU<->CPU link (a physical link: a link preset's `physical`, else its name) and how many
    // GPUs share it (GB200: one NVLink-C2C per two GPUs). Naming any preset of that link again (--link
    // nvlink-c2c-measured) gives each GPU the same share; another link is each GPU's own.
    std::string board_link;
    double board_link_shared_by = 1.0;

    // Every figure within its documented range (limits below, docs/model.md
    // "Input ranges"); errors name the knob.
    void check_validity() const;
};

inline void HardwareSpec::check_validity() const {
    using namespace limits;
    const DeploymentSpec& d = deployment;
    if (d.gpus < 1 || d.gpus > kMaxGpus)
        throw InputError("gpus: must be in [1, " + std::to_string(kMaxGpus) + "], got " + std::to_string(d.gpus));
    auto rate = [](const char* f, double v, double lo, double hi) {
        check::positive(f, v);
        check::in_range(f, v, lo, hi);
    };
    rate("gpu-flops", gpu.flops.raw(), kMinFlops, kMaxFlops);
    rate("prefill-flops", gpu.prefill_flops.raw(), kMinFlops, kMaxFlops);
    for (auto [f, v] : {std::pair{"gpu-flops-fp8", gpu.flops_fp8.raw()}, std::pair{"gpu-flops-fp4", gpu.flops_fp4.raw()}})
        if (v != 0) rate(f, v, kMinFlops, kMaxFlops);  // 0: the GPU has no such math
    rate("hbm-cap", gpu.hbm_capacity.raw(), kMinCapacity, kMaxCapacity);
    rate("hbm-bw", gpu.hbm_bandwidth.raw(), kMinBandwidth, kMaxBandwidth);
    check::non_negative("nvlink-bw", gpu.nvlink_bandwidth.raw());
    check::in_range("nvlink-bw", gpu.nvlink_bandwidth.raw(), 0.0, kMaxBandwidth);
    rate("c2c-bw", link.bandwidth.raw(), kMinBandwidth, kMaxBandwidth);
    if (gpu.nvlink_domain < 1 || gpu.nvlink_domain > kMaxGpus)
        throw InputError("nvlink-domain: must be in [1, " + std::to_string(kMaxGpus) + "], got " +
                         std::to_string(gpu.nvlink_domain));
    if (d.ep < 1 || d.ep > d.gpus || d.gpus % d.ep != 0)
        throw InputError("ep: must divide gpus (" + std::to_string(d.gpus) + "), got " + std::to_string(d.ep));
    check::in_range("expert-imbalance", d.expert_imbalance, 1.0, static_cast<double>(kMaxGpus));
    if (d.attention_dp != 0 && d.attention_dp != 1)
        throw InputError("attention-dp: must be 0 (off) or 1 (on), got " + std::to_string(d.attention_dp));
    if (d.attention_dp == 1 && d.ep > 1 && d.ep != d.gpus)
        throw InputError("ep: with attention-dp 1, must be 1 or gpus (" + std::to_string(d.gpus) +
                         ": every GPU dispatches its own tokens), got " + std::to_string(d.ep));
    if (d.pp < 1 || d.pp_microbatches < 0 || d.dp < 1 || static_cast<double>(d.gpus) * d.pp * d.dp > kMaxGpus)
        throw InputError("dp: gpus x pp x dp must be at most " + std::to_string(kMaxGpus) + " GPUs, got " +
                         std::to_string(d.gpus) + " x " + std::to_string(d.pp) + " x " + std::to_string(d.dp));
    if (d.pp == 1 && d.pp_microbatches > 1)  // one stage has nothing to overlap: the flag would change no number
        throw InputError("pp-microbatches: with pp 1 (one stage) only 0 or 1 is allowed, got " +
                         std::to_string(d.pp_microbatches));
    rate("net-bw", net.bandwidth.raw(), kMinBandwidth, kMaxBandwidth);
    check::non_negative("net-latency", net.latency.raw());
    check::in_range("net-latency", net.latency.raw(), 0.0, kMaxLinkLatency);
    check::non_negative("allreduce-latency", gpu.allreduce_latency.raw());
    check::in_range("allreduce-latency", gpu.allreduce_latency.raw(), 0.0, kMaxLinkLatency);
    check::non_negative("link-latency", link.latency.raw());
    check::in_range("link-latency", link.latency.raw(), 0.0, kMaxLinkLatency);
    rate("cpu-flops", host.flops.raw(), kMinFlops, kMaxFlops);
    rate("cpu-dram-bw", host.dram_bandwidth.raw(), kMinBandwidth, kMaxBandwidth);
    rate("cpu-mem", host.memory.raw(), kMinCapacity, kMaxCapacity);
    rate("cpus-per-gpu", host.cpus_per_gpu, kMinCpusPerGpu, kMaxCpusPerGpu);
    for (auto [f, v] :
         {std::pair{"eta-compute", gpu.eta_compute}, std::pair{"eta-mem", gpu.eta_mem},
          std::pair{"eta-cpu-compute", host.eta_compute}, std::pair{"eta-dram", host.eta_dram}, std::pair{"eta-link", link.eta},
          std::pair{"eta-link-bidir", link.eta_bidir}, std::pair{"eta-nvlink", gpu.eta_nvlink}}) {
        check::open_unit_interval_right(f, v);
        check::in_range(f, v, kMinEta, kMaxEta);
    }
    check::finite("eta-moe-gemm", gpu.eta_moe_gemm);
    if (gpu.eta_moe_gemm != 0 && !(gpu.eta_moe_gemm >= kMinEta && gpu.eta_moe_gemm <= kMaxEta))
        throw InputError("eta-moe-gemm: must be 0 (= eta-compute) or in [" + check::show(kMinEta) + ", " + check::show(kMaxEta) +
                         "], got " + check::show(gpu.eta_moe_gemm));
    check::non_negative("step-overhead", gpu.step_overhead.raw());
    check::in_range("step-overhead", gpu.step_overhead.raw(), 0.0, kMaxStepOverhead);
    check::non_negative("moe-layer-latency", gpu.moe_layer_latency.raw());
    check::in_range("moe-layer-latency", gpu.moe_layer_latency.raw(), 0.0, kMaxLinkLatency);
    check::non_negative("hbm-reserve", gpu.hbm_reserve.raw());
    if (!(gpu.hbm_reserve < gpu.hbm_capacity))
        throw InputError("hbm-reserve: must be < hbm-cap, got " + check::show(in_gb(gpu.hbm_reserve)) + " GB");
}

// The GPU's dense tensor peak for GEMMs in `math` precision: FP8 and FP4 run
// at their own peak where the GPU has one above the BF16 peak, otherwise at
// the BF16 peak (weights are then dequantised into BF16 GEMMs, as engines do
// on GPUs without them; a lower 8- or 4-bit peak, given as a flag, is never
// the one taken, so raising it never slows a model down).
// INT8 math runs at the 8-bit peak: Hopper, Blackwell and MI300 list equal
// dense INT8 and FP8 peaks (an A100 preset has no 8-bit column: BF16 peak).
// gemm_math_on: the math a GEMM of `math` precision runs in on this GPU.
[[nodiscard]] inline DType gemm_math_on(const HardwareSpec& hw, DType math) noexcept {
    const double bf16 = hw.gpu.flops.raw();
    if ((math == DType::fp4 || math == DType::mxfp4) && hw.gpu.flops_fp4.raw() > bf16) return DType::fp4;
    if ((math == DType::fp8 || math == DType::int8) && hw.gpu.flops_fp8.raw() > bf16) return math;
    return DType::bf16;
}
[[nodiscard]] inline FlopPerSecond gemm_peak(const HardwareSpec& hw, DType math) noexcept {
    switch (gemm_math_on(hw, math)) {
        case DType::fp4: return hw.gpu.flops_fp4;
        case DType::fp8:
        case DType::int8: return hw.gpu.flops_fp8;
        case DType::bf16:
        case DType::int4:
        case DType::mxfp4: return hw.gpu.flops;
    }
    return hw.gpu.flops;
}

// Effective (η-scaled) rates and capacities of the whole system: `gpus` GPUs
// pooled as one tensor-parallel group, with gpus·cpus_per_gpu CPU sockets,
// the GPUs' GEMMs in `math` precision.
struct SystemRates {
    FlopPerSecond gpu_flops;
    BytesPerSecond hbm_bandwidth;
    Bytes hbm_capacity;  // minus reserve
    FlopPerSecond cpu_flops;
    BytesPerSecond cpu_dram_bandwidth;
    Bytes cpu_memory;
    BytesPerSecond link_bandwidth;  // per direction, all GPUs together
    double link_bidir = 1.0;  // share of it each direction keeps when both directions carry traffic
    // Tensor parallelism over `gpus` GPUs (0 at one GPU): one all-reduce of n
    // bytes takes allreduce_latency + n · allreduce_s_per_byte (docs/model.md,
    // "Tensor-parallel communication").
    double allreduce_latency = 0;  // s, α
    double allreduce_s_per_byte = 0;  // s per byte: 2(t−1)/t / (η_nvlink · per-direction bandwidth)
    // Expert parallelism over `ep` GPUs (0 at EP 1): one all-to-all of n bytes
    // per sequence of the batch takes alltoall_latency + n · alltoall_s_per_byte
    // (docs/model.md, "Expert-parallel communication").
    double alltoall_latency = 0;  // s, α
    double alltoall_s_per_byte = 0;  // s per byte per sequence (alltoall_s_per_byte below)
    double moe_layer_latency = 0;  // s per MoE layer per forward pass (GpuSpec::moe_layer_latency)
    // GEMM-rate FLOPs per attention FLOP: gpu_flops over the peak attention's matrix products run at
    // (attention_dtype: the KV cache's, not the weights'), so (linear + scale·attention) / gpu_flops is the GPU's
    // compute time; 1 where both run at one peak.
    double attn_flop_scale = 1.0;
};

// Seconds the link needs for h2d and d2h seconds of one-way traffic each: full
// duplex up to the measured limit when both directions run at once, where
// together they move at most 2·bidir of the one-way rate.
[[nodiscard]] constexpr double link_time(double h2d, double d2h, double bidir) noexcept {
    const double one_way = h2d > d2h ? h2d : d2h, shared = (h2d + d2h) / (2.0 * bidir);
    return one_way > shared ? one_way : shared;
}

// The GPU-to-GPU fabric's per-direction peak: NVLink where the GPU has it,
// else its PCIe host link (B/s, before η_nvlink).
[[nodiscard]] inline double gpu_fabric_bandwidth(const HardwareSpec& hw) noexcept {
    return hw.gpu.nvlink_bandwidth.raw() > 0 ? hw.gpu.nvlink_bandwidth.raw() : hw.link.bandwidth.raw();
}

// A ring all-reduce of n bytes over t GPUs sends and receives 2(t−1)/t · n
// bytes per GPU (reduce-scatter, then all-gather), each direction at the
// fabric's rate: NVLink where the GPU has it, else its PCIe host link.
// A group larger than the NVLink domain D runs it hierarchically: within each
// domain a reduce-scatter and an all-gather (2(D−1)/D · n over NVLink), and
// between the k = t/D domains an all-reduce of each GPU's n/D shard over its
// own NIC (2(k−1)/k · n/D over the network):
//   s per byte = 2(D−1)/D / (η_nvlink · NVLink) + 2(k−1)/k / (D · network)
[[nodiscard]] inline double allreduce_s_per_byte(const HardwareSpec& hw) noexcept {
    if (hw.deployment.gpus <= 1) return 0.0;
    const double t = hw.deployment.gpus;
    const double fabric = gpu_fabric_bandwidth(hw);
    if (hw.deployment.gpus <= hw.gpu.nvlink_domain) return 2.0 * (t - 1.0) / t / (hw.gpu.eta_nvlink * fabric);
    const double D = hw.gpu.nvlink_domain, k = t / D;
    const double inside = D > 1 ? 2.0 * (D - 1.0) / D / (hw.gpu.eta_nvlink * fabric) : 0.0;
    return inside + 2.0 * (k - 1.0) / k / (D * hw.net.bandwidth.raw());
}

// α of one all-reduce: the NVLink kernel's within the domain; beyond it the
// ring between the k = t/D domains adds 2(k − 1) network steps, each the
// network's latency (NCCL's cost model charges a ring its steps' latencies).
[[nodiscard]] inline double allreduce_alpha(const HardwareSpec& hw) noexcept {
    if (hw.deployment.gpus <= 1) return 0.0;
    if (hw.deployment.gpus <= hw.gpu.nvlink_domain) return hw.gpu.allreduce_latency.raw();
    const double k = static_cast<double>(hw.deployment.gpus) / hw.gpu.nvlink_domain;
    return (hw.gpu.nvlink_domain > 1 ? hw.gpu.allreduce_latency.raw() : 0.0) + 2.0 * (k - 1.0) * hw.net.latency.raw();
}

// An all-to-all over e expert-parallel GPUs in an NVLink domain of D: each of
// the `gpus` GPUs sends its B/gpus tokens' bytes; with experts spread evenly,
// (min(e, D) − 1)/e of them cross NVLink and (e − min(e, D))/e the scale-out
// network, both fabrics at once; the busiest GPU moves λ times the mean (and
// expert_load times that where e does not divide the experts: call_demand.hpp):
//   s per byte per sequence = λ / gpus · max((min(e,D) − 1)/e / (η_nvlink·NVLink), (e − min(e,D))/e / network)
[[nodiscard]] inline double alltoall_s_per_byte(const HardwareSpec& hw) noexcept {
    if (hw.deployment.ep <= 1) return 0.0;
    const double e = hw.deployment.ep, inside = hw.deployment.ep < hw.gpu.nvlink_domain ? hw.deployment.ep : hw.gpu.nvlink_domain;
    const double fabric = gpu_fabric_bandwidth(hw);
    const double nvlink = (inside - 1.0) / e / (hw.gpu.eta_nvlink * fabric);
    const double network = (e - inside) / e / hw.net.bandwidth.raw();
    return hw.deployment.expert_imbalance * (nvlink > network ? nvlink : network) / hw.deployment.gpus;
}
// α of one all-to-all: the NVLink all-reduce's within the domain, the slower
// of it and the network's beyond.
[[nodiscard]] inline double alltoall_latency(const HardwareSpec& hw) noexcept {
    if (hw.deployment.ep <= 1) return 0.0;
    const double nv = hw.gpu.allreduce_latency.raw(), net = hw.net.latency.raw();
    return hw.deployment.ep <= hw.gpu.nvlink_domain || nv > net ? nv : net;
}

// `math`: the GEMMs' precision (gemm_dtype); `attention_math`: attention's (attention_dtype).
[[nodiscard]] inline SystemRates system_rates(const HardwareSpec& hw, DType math = DType::bf16,
                                              DType attention_math = DType::bf16) noexcept {
    const double g = hw.deployment.gpus;
    const double cpus = g * hw.host.cpus_per_gpu;
    return SystemRates{
        gemm_peak(hw, math) * (g * hw.gpu.eta_compute),
        hw.gpu.hbm_bandwidth * (g * hw.gpu.eta_mem),
        (hw.gpu.hbm_capacity - hw.gpu.hbm_reserve) * g,
        hw.host.flops * (cpus * hw.host.eta_compute),
        hw.host.dram_bandwidth * (cpus * hw.host.eta_dram),
        hw.host.memory * cpus,
        hw.link.bandwidth * (g * hw.link.eta),
        hw.link.eta_bidir,
        allreduce_alpha(hw),
        allreduce_s_per_byte(hw),
        alltoall_latency(hw),
        alltoall_s_per_byte(hw),
        hw.gpu.moe_layer_latency.raw(),
        gemm_peak(hw, math).raw() / gemm_peak(hw, attention_math).raw(),
    };
}

}  // namespace kvroof
