// SPDX-License-Identifier: MIT
// The rows of the knob table (include/kvroof/spec/knobs.hpp says how to add one).
#include "kvroof/spec/knobs.hpp"

#include <stdexcept>
#include <type_traits>

#include "kvroof/analysis/point_step.hpp"
#include "kvroof/analysis/serving.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof {
namespace {

// The SI value of a field, and the field set from one, for every field type a knob may hold.
template <class T>
double raw_of(const T& v) {
    if constexpr (std::is_arithmetic_v<T>)
        return static_cast<double>(v);
    else if constexpr (requires { v.has_value(); })
        return v ? v->raw() : std::numeric_limits<double>::quiet_NaN();
    else
        return v.raw();
}
template <class T>
void assign(T& field, double si) {
    if constexpr (std::is_same_v<T, int>)
        field = static_cast<int>(si);  // whole knobs: checked before
    else if constexpr (std::is_arithmetic_v<T>)
        field = si;
    else if constexpr (requires { field.has_value(); }) {
        if (si == si)
            field.emplace(si);  // NaN: "none"
        else
            field.reset();
    } else
        field = T(si);
}

// The typed accessor of a numeric field of the hardware or the policy.
// A field of one part of the hardware (its GPU, host, link or network).
template <auto Part, auto Field>
KnobAccess on_hw() {
    return {[](Scenario& s, const KnobValue& v) { assign(s.hardware.*Part.*Field, std::get<double>(v)); },
            [](const Scenario& s) { return raw_of(s.hardware.*Part.*Field); }};
}
template <auto Field>
KnobAccess on_deployment() {
    return {[](Scenario& s, const KnobValue& v) { assign(s.hardware.deployment.*Field, std::get<double>(v)); },
            [](const Scenario& s) { return raw_of(s.hardware.deployment.*Field); }};
}
template <auto Field>
KnobAccess on_policy() {
    return {[](Scenario& s, const KnobValue& v) { assign(s.policy.*Field, std::get<double>(v)); },
            [](const Scenario& s) { return raw_of(s.policy.*Field); }};
}
// A link, host or network preset: every figure it has, then its name in `Name`.
template <auto Part, auto Name>
KnobAccess on_link_preset() {
    return {[](Scenario& s, const KnobValue& v) {
                const LinkPreset& l = *std::get<std::shared_ptr<const LinkPreset>>(v);
                for (const auto& [k, si] : l.figures) k->access.apply(s, si);
                s.hardware.*Part.*Name = l.name;
            },
            nullptr};
}
template <auto Field, class T>
KnobAccess on_policy_enum() {
    return {[](Scenario& s, const KnobValue& v) { s.policy.*Field = std::get<T>(v); }, nullptr};
}

constexpr std::string_view kScenario = "Scenario";
constexpr std::string_view kHardware = "Hardware overrides (a bare number takes the unit shown)";
constexpr std::string_view kPolicy = "Policy";
constexpr std::string_view kSweep = "Sweep only";

// The rows are a table: one knob per entry, laid out by hand.
// clang-format off
// What is served on what: presets and the workload.
std::vector<Knob> scenario_rows() {
    return {
        {.name = "hardware", .column = "hardware", .type = KnobType::text, .fallback = io::kDefaultHardware,
         .help = "hardware preset or JSON file (see `kvroof presets`)", .group = kScenario, .decode = io::decode_hardware,
         .access = {[](Scenario& s, const KnobValue& v) { s.hardware = *std::get<std::shared_ptr<const HardwareSpec>>(v); }, nullptr}},
        {.name = "deployment", .column = "deployment", .type = KnobType::text, .shown_default = "none: --hardware",
         .help = "deployment preset (see `kvroof presets`: hgx-h100x8, hgx-h200x8, hgx-b200x8, gb200-nvl72, gh200x2): sets the "
                 "hardware preset, --gpus, --nvlink-domain and --net; not with --hardware; --gpus, --nvlink-domain, --net and the "
                 "other hardware flags given too override it",
         .group = kScenario, .decode = io::decode_deployment,
         .access = {[](Scenario& s, const KnobValue& v) { s.hardware = *std::get<std::shared_ptr<const HardwareSpec>>(v); }, nullptr}},
        {.name = "model", .column = "model", .type = KnobType::text, .fallback = io::kDefaultModel,
         .help = "model preset, JSON file, or a Hugging Face config.json", .group = kScenario, .decode = io::decode_model,
         .access = {[](Scenario& s, const KnobValue& v) {
                        s.model = *std::get<std::shared_ptr<const ModelSpec>>(v);
                        // A quantised checkpoint's own precision, else the default; --weight-dtype (a later row)
                        // overrides it. Always assigned, so no model inherits another's format.
                        s.policy.weight_dtype = served_weights(s.model);
                    }, nullptr}},
        {.name = "workload", .column = "workload", .type = KnobType::text, .fallback = io::kDefaultWorkload,
         .help = "workload preset, JSON file, or \"s_cached=N,a_append=N,o_output=N[,idle_gap=10s]\" (without idle_gap: the "
                 "codex preset's gap; --isl/--osl have none)",
         .group = kScenario,
         .list_sep = ';', .decode = io::decode_workload,
         .access = {[](Scenario& s, const KnobValue& v) { s.mix = *std::get<std::shared_ptr<const Mix>>(v); }, nullptr}},
        {.name = "mix", .column = "mix", .type = KnobType::text, .shown_default = "none: --workload's classes",
         .help = "concurrent class mix, e.g. \"long:0.7,short:0.3\" (classes: codex long mid short prefill), or a mix file "
                 "FILE.json (kvroof trace writes one); replaces --workload",
         .group = kScenario, .list_sep = ';', .decode = io::decode_mix,
         .access = {[](Scenario& s, const KnobValue& v) { s.mix = *std::get<std::shared_ptr<const Mix>>(v); }, nullptr}},
    };
}

// Figures of the hardware preset a user may override.
std::vector<Knob> hardware_rows() {
    using namespace limits;
    return {
        {.name = "link", .column = "link", .type = KnobType::text, .shown_default = "from --hardware",
         .help = "GPU<->CPU link preset: pcie-gen3|4|5[-measured], nvlink-c2c[-measured]; sets every figure the preset has",
         .group = kHardware, .decode = io::decode_link,
         .access = {[](Scenario& s, const KnobValue& v) {
                        on_link_preset<&HardwareSpec::link, &LinkSpec::name>().apply(s, v);
                        // The board's own link keeps its per-GPU share, whichever preset of it is named.
                        HardwareSpec& hw = s.hardware;
                        if (std::get<std::shared_ptr<const LinkPreset>>(v)->physical_link() == hw.board_link)
                            hw.link.bandwidth = hw.link.bandwidth / hw.board_link_shared_by;
                    }, nullptr}},
        {.name = "host", .column = "host", .type = KnobType::text, .shown_default = "from --hardware",
         .help = "CPU host preset (see `kvroof presets`) or a host JSON file, e.g. from `kvroof probe --cpu --out FILE` (a value "
                 "with '/' or ending in .json is a file); sets every host figure, replacing the hardware preset's host",
         .group = kHardware, .decode = io::decode_host,
         .access = on_link_preset<&HardwareSpec::host, &HostSpec::name>()},
        {.name = "gpus", .column = "gpus", .type = KnobType::whole, .shown_default = "from --hardware", .lo = 1, .hi = kMaxGpus,
         .help = "GPUs in one tensor-parallel group (HBM, bandwidth and FLOP/s pooled)", .group = kHardware,
         .preset = PresetFile::hardware, .preset_key = "gpus", .access = on_deployment<&DeploymentSpec::gpus>()},
        {.name = "tp", .column = "tp", .type = KnobType::whole, .shown_default = "--gpus", .lo = 1, .hi = kMaxGpus,
         .help = "tensor-parallel group size: the explicit name of --gpus (given with it, the two must agree)", .group = kHardware,
         .access = on_deployment<&DeploymentSpec::gpus>()},
        {.name = "gpu-flops", .column = "gpu_flops_TFLOPS", .type = KnobType::quantity, .unit = UnitKind::flop_rate, .bare = "TFLOPS",
         .shown_default = "from --hardware", .lo = kMinFlops, .hi = kMaxFlops, .help = "dense BF16 peak per GPU, e.g. 2.5PFLOPS",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "gpu_flops_TFLOPS", .preset_required = true,
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::flops>()},
        {.name = "hbm-cap", .column = "hbm_cap_GB", .type = KnobType::quantity, .unit = UnitKind::bytes, .bare = "GB",
         .shown_default = "from --hardware", .lo = kMinCapacity, .hi = kMaxCapacity, .help = "HBM capacity per GPU, e.g. 141GB or 80GiB",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "hbm_capacity_GB", .preset_required = true,
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::hbm_capacity>()},
        {.name = "hbm-bw", .column = "hbm_bw_TBps", .type = KnobType::quantity, .unit = UnitKind::bandwidth, .bare = "TB/s",
         .shown_default = "from --hardware", .lo = kMinBandwidth, .hi = kMaxBandwidth, .help = "HBM bandwidth per GPU, e.g. 4.8TB/s",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "hbm_bandwidth_TBps", .preset_required = true,
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::hbm_bandwidth>()},
        {.name = "hbm-reserve", .column = "hbm_reserve_GB", .type = KnobType::quantity, .unit = UnitKind::bytes, .bare = "GB",
         .fallback = "", .shown_default = "2", .lo = 0, .hi = kMaxCapacity, .help = "HBM held back per GPU for activations (< --hbm-cap)",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "hbm_reserve_GB",
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::hbm_reserve>()},
        {.name = "c2c-bw", .column = "c2c_bw_GBps", .type = KnobType::quantity, .unit = UnitKind::bandwidth, .bare = "GB/s",
         .shown_default = "from --link", .lo = kMinBandwidth, .hi = kMaxBandwidth,
         .help = "GPU<->CPU link bandwidth per GPU per direction, e.g. 900GB/s (link becomes \"custom\")", .group = kHardware,
         .preset = PresetFile::link, .preset_key = "bandwidth_GBps", .preset_required = true,
         .access = {[](Scenario& s, const KnobValue& v) {
                        s.hardware.link.bandwidth = BytesPerSecond(std::get<double>(v));
                        s.hardware.link.name = "custom";
                    },
                    [](const Scenario& s) { return s.hardware.link.bandwidth.raw(); }}},
        {.name = "link-latency", .column = "link_latency_us", .type = KnobType::quantity, .unit = UnitKind::time, .bare = "us",
         .shown_default = "from --link", .lo = 0, .hi = kMaxLinkLatency,
         .help = "round trip of one layer's offload exchange, charged once per layer per decode step when f > 0, e.g. 1.2us",
         .group = kHardware, .preset = PresetFile::link, .preset_key = "latency_us",
         .access = on_hw<&HardwareSpec::link, &LinkSpec::latency>()},
        {.name = "cpu-dram-bw", .column = "cpu_dram_bw_GBps", .type = KnobType::quantity, .unit = UnitKind::bandwidth, .bare = "GB/s",
         .shown_default = "from --hardware", .lo = kMinBandwidth, .hi = kMaxBandwidth, .help = "DRAM bandwidth per CPU socket",
         .group = kHardware, .preset = PresetFile::host, .preset_key = "cpu_dram_bandwidth_GBps", .preset_required = true,
         .access = on_hw<&HardwareSpec::host, &HostSpec::dram_bandwidth>()},
        {.name = "cpu-flops", .column = "cpu_flops_TFLOPS", .type = KnobType::quantity, .unit = UnitKind::flop_rate, .bare = "TFLOPS",
         .shown_default = "from --hardware", .lo = kMinFlops, .hi = kMaxFlops, .help = "BF16 peak per CPU socket", .group = kHardware,
         .preset = PresetFile::host, .preset_key = "cpu_flops_TFLOPS", .preset_required = true, .access = on_hw<&HardwareSpec::host, &HostSpec::flops>()},
        {.name = "cpu-mem", .column = "cpu_mem_GB", .type = KnobType::quantity, .unit = UnitKind::bytes, .bare = "GB",
         .shown_default = "from --hardware", .lo = kMinCapacity, .hi = kMaxCapacity, .help = "DRAM capacity per CPU socket",
         .group = kHardware, .preset = PresetFile::host, .preset_key = "cpu_memory_GB", .preset_required = true, .access = on_hw<&HardwareSpec::host, &HostSpec::memory>()},
        {.name = "cpus-per-gpu", .column = "cpus_per_gpu", .type = KnobType::number, .shown_default = "from --hardware",
         .lo = kMinCpusPerGpu, .hi = kMaxCpusPerGpu, .help = "CPU sockets per GPU (0.5 = one CPU shared by two GPUs)", .group = kHardware,
         .preset = PresetFile::hardware, .preset_key = "cpus_per_gpu", .preset_required = true, .access = on_hw<&HardwareSpec::host, &HostSpec::cpus_per_gpu>()},
        {.name = "gpu-flops-fp8", .column = "gpu_flops_fp8_TFLOPS", .type = KnobType::quantity, .unit = UnitKind::flop_rate,
         .bare = "TFLOPS", .shown_default = "from --hardware", .lo = 0, .hi = kMaxFlops,
         .help = "dense FP8 peak per GPU (0: no FP8 math), used when the GEMMs run in FP8", .group = kHardware,
         .preset = PresetFile::hardware, .preset_key = "gpu_flops_fp8_TFLOPS", .access = on_hw<&HardwareSpec::gpu, &GpuSpec::flops_fp8>()},
        {.name = "gpu-flops-fp4", .column = "gpu_flops_fp4_TFLOPS", .type = KnobType::quantity, .unit = UnitKind::flop_rate,
         .bare = "TFLOPS", .shown_default = "from --hardware", .lo = 0, .hi = kMaxFlops,
         .help = "dense FP4 peak per GPU (0: no FP4 math), used when the GEMMs run in FP4", .group = kHardware,
         .preset = PresetFile::hardware, .preset_key = "gpu_flops_fp4_TFLOPS", .access = on_hw<&HardwareSpec::gpu, &GpuSpec::flops_fp4>()},
    };
}

// The GPU<->GPU fabric that carries the tensor-parallel all-reduces.
std::vector<Knob> fabric_rows() {
    using namespace limits;
    return {
        {.name = "nvlink-bw", .column = "nvlink_bw_GBps", .type = KnobType::quantity, .unit = UnitKind::bandwidth, .bare = "GB/s",
         .shown_default = "from --hardware", .lo = 0, .hi = kMaxBandwidth,
         .help = "NVLink bandwidth per GPU per direction, carrying the tensor-parallel all-reduces (0: none, they use the host link)",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "nvlink_bandwidth_GBps",
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::nvlink_bandwidth>()},
        {.name = "nvlink-domain", .column = "nvlink_domain", .type = KnobType::whole, .shown_default = "from --hardware, else 8",
         .lo = 1, .hi = kMaxGpus, .help = "GPUs one NVLink fabric joins: the largest tensor-parallel group `kvroof parallel` tries",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "nvlink_domain",
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::nvlink_domain>()},
        {.name = "allreduce-latency", .column = "allreduce_latency_us", .type = KnobType::quantity, .unit = UnitKind::time,
         .bare = "us", .shown_default = "from --hardware, else 5", .lo = 0, .hi = kMaxLinkLatency,
         .help = "time of one small all-reduce across the GPUs (two per layer per step when --gpus > 1), e.g. 8us",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "allreduce_latency_us",
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::allreduce_latency>()},
        {.name = "ep", .column = "ep", .type = KnobType::whole, .shown_default = "1", .lo = 1, .hi = kMaxGpus,
         .help = "expert parallelism: GPUs the routed experts are sharded over (divides --gpus, at most the routed experts; where it does not divide them the busiest GPU holds ceil(E/ep) of them; MoE models); adds an all-to-all dispatch and combine per MoE layer",
         .group = kHardware, .access = on_deployment<&DeploymentSpec::ep>()},
        {.name = "attention-dp", .column = "attention_dp", .type = KnobType::whole, .shown_default = "0 (off)", .lo = 0, .hi = 1,
         .help = "data-parallel attention over the --gpus group, MLA models (SGLang --enable-dp-attention): 1 = each GPU holds only its own sequences' latent KV and a whole copy of the attention weights; the FFN stays TP/EP",
         .group = kHardware, .access = on_deployment<&DeploymentSpec::attention_dp>()},
        {.name = "pp", .column = "pp", .type = KnobType::whole, .shown_default = "1", .lo = 1, .hi = kMaxGpus,
         .help = "pipeline-parallel stages of --tp GPUs each, every stage holding its share of the layers; a token's latency spans every stage",
         .group = kHardware, .access = on_deployment<&DeploymentSpec::pp>()},
        {.name = "pp-microbatches", .column = "pp_microbatches", .type = KnobType::whole, .shown_default = "0 (= --pp)", .lo = 0,
         .hi = kMaxGpus, .help = "micro-batches the batch is split into across the pipeline stages (1: the stages take turns)",
         .group = kHardware, .access = on_deployment<&DeploymentSpec::pp_microbatches>()},
        {.name = "dp", .column = "dp", .type = KnobType::whole, .shown_default = "1", .lo = 1, .hi = kMaxGpus,
         .help = "data-parallel replicas of the --tp x --pp GPUs, requests split evenly: throughput x dp, per-GPU figures unchanged",
         .group = kHardware, .access = on_deployment<&DeploymentSpec::dp>()},
        {.name = "expert-imbalance", .column = "expert_imbalance", .type = KnobType::number,
         .shown_default = "1.115 (measured with EPLB; 2.564 without)", .lo = 1, .hi = kMaxGpus,
         .help = "the busiest GPU's routed tokens over the mean under --ep (1: perfect balance; TensorRT-LLM measured "
                 "1.115 with EPLB, 2.564 without)",
         .group = kHardware,
         .access = on_deployment<&DeploymentSpec::expert_imbalance>()},
        {.name = "net", .column = "net", .type = KnobType::text, .shown_default = "from --hardware, else 50 GB/s and 14 us",
         .help = "scale-out network preset (see `kvroof presets`: ib-ndr, ib-ndr-measured, ib-xdr, roce-400g) or a network JSON "
                 "file (a value with '/' or ending in .json); sets --net-bw and --net-latency, which override it when given too",
         .group = kHardware, .decode = io::decode_net,
         .access = on_link_preset<&HardwareSpec::net, &NetSpec::name>()},
        {.name = "net-bw", .column = "net_bw_GBps", .type = KnobType::quantity, .unit = UnitKind::bandwidth, .bare = "GB/s",
         .shown_default = "from --net, else 50 (a 400 Gb/s NIC per GPU)", .lo = kMinBandwidth, .hi = kMaxBandwidth,
         .help = "scale-out network per GPU per direction (InfiniBand NDR / RoCE 400G: 50GB/s), carrying the all-to-alls beyond the NVLink domain",
         .group = kHardware, .preset = PresetFile::net, .preset_key = "net_bandwidth_GBps", .preset_required = true,
         .access = {[](Scenario& s, const KnobValue& v) {  // no longer the preset's figure: "custom", as --c2c-bw makes its link
                        s.hardware.net.bandwidth = BytesPerSecond(std::get<double>(v));
                        s.hardware.net.name = "custom";
                    },
                    [](const Scenario& s) { return s.hardware.net.bandwidth.raw(); }}},
        {.name = "net-latency", .column = "net_latency_us", .type = KnobType::quantity, .unit = UnitKind::time, .bare = "us",
         .shown_default = "from --net, else 14 (NCCL's network-step latency)", .lo = 0, .hi = kMaxLinkLatency,
         .help = "fixed time of one all-to-all or pipeline transfer over the scale-out network, e.g. 14us", .group = kHardware,
         .preset = PresetFile::net, .preset_key = "net_latency_us", .preset_required = true,
         .access = on_hw<&HardwareSpec::net, &NetSpec::latency>()},
    };
}

// The achievable fraction of each peak, and the fixed time per step (docs/model.md, "Efficiencies").
std::vector<Knob> efficiency_rows() {
    using namespace limits;
    return {
        {.name = "eta", .column = "eta", .type = KnobType::number, .shown_default = "per resource", .lo = kMinEta, .hi = kMaxEta,
         .help = "achievable fraction of every peak: GPU and CPU FLOP/s, HBM, DRAM and the link", .group = kHardware,
         .access = {[](Scenario& s, const KnobValue& v) {
                        auto& h = s.hardware;
                        h.gpu.eta_compute = h.gpu.eta_mem = h.host.eta_compute = h.host.eta_dram = h.link.eta = std::get<double>(v);
                    }, nullptr}},
        {.name = "eta-compute", .column = "eta_compute", .type = KnobType::number, .shown_default = "0.7", .lo = kMinEta, .hi = kMaxEta,
         .help = "achievable fraction of the GPU's GEMM peak (prefill MFU)", .group = kHardware, .preset = PresetFile::hardware,
         .preset_key = "eta_compute", .access = on_hw<&HardwareSpec::gpu, &GpuSpec::eta_compute>()},
        {.name = "eta-mem", .column = "eta_mem", .type = KnobType::number, .shown_default = "0.85", .lo = kMinEta, .hi = kMaxEta,
         .help = "achievable fraction of the HBM bandwidth", .group = kHardware, .preset = PresetFile::hardware,
         .preset_key = "eta_mem", .access = on_hw<&HardwareSpec::gpu, &GpuSpec::eta_mem>()},
        {.name = "eta-moe-gemm", .column = "eta_moe_gemm", .type = KnobType::number, .shown_default = "0 (= --eta-compute)",
         .lo = 0, .hi = kMaxEta,
         .help = "routed-expert GEMM efficiency of a MoE model: the achievable fraction of the GEMM peak in its grouped expert "
                 "GEMMs, decode and serving prefill (not kvroof prefill's C_eff); engines' kernels reach 0.07-0.68 "
                 "(docs/model.md); 0: --eta-compute",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "eta_moe_gemm",
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::eta_moe_gemm>()},
        {.name = "eta-cpu-compute", .column = "eta_cpu_compute", .type = KnobType::number, .shown_default = "0.5", .lo = kMinEta,
         .hi = kMaxEta, .help = "achievable fraction of the CPU's FLOP/s peak", .group = kHardware, .preset = PresetFile::host,
         .preset_key = "eta_cpu_compute", .access = on_hw<&HardwareSpec::host, &HostSpec::eta_compute>()},
        {.name = "eta-dram", .column = "eta_dram", .type = KnobType::number, .shown_default = "from --hardware's host, else 0.5", .lo = kMinEta, .hi = kMaxEta,
         .help = "achievable fraction of the CPU DRAM bandwidth", .group = kHardware, .preset = PresetFile::host,
         .preset_key = "eta_dram", .access = on_hw<&HardwareSpec::host, &HostSpec::eta_dram>()},
        {.name = "eta-link", .column = "eta_link", .type = KnobType::number, .shown_default = "1", .lo = kMinEta, .hi = kMaxEta,
         .help = "achievable fraction of --c2c-bw per direction (link presets are already measured figures)", .group = kHardware,
         .preset = PresetFile::link, .preset_key = "eta", .access = on_hw<&HardwareSpec::link, &LinkSpec::eta>()},
        {.name = "eta-link-bidir", .column = "eta_link_bidir", .type = KnobType::number, .shown_default = "from --link, else 1",
         .lo = kMinEta, .hi = kMaxEta,
         .help = "share of the one-way link rate each direction keeps when both directions run at once (measured presets < 1)",
         .group = kHardware, .preset = PresetFile::link, .preset_key = "eta_bidir",
         .access = on_hw<&HardwareSpec::link, &LinkSpec::eta_bidir>()},
        {.name = "eta-nvlink", .column = "eta_nvlink", .type = KnobType::number, .shown_default = "from --hardware, else 0.8",
         .lo = kMinEta, .hi = kMaxEta, .help = "all-reduce bus bandwidth as a fraction of --nvlink-bw (nccl-tests busbw / peak)",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "eta_nvlink",
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::eta_nvlink>()},
        {.name = "step-overhead", .column = "step_overhead_ms", .type = KnobType::quantity, .unit = UnitKind::time, .bare = "ms",
         .shown_default = "1.5", .lo = 0, .hi = kMaxStepOverhead,
         .help = "fixed time per decode step outside the roofline (kernel launch, scheduling), e.g. 0.5ms", .group = kHardware,
         .preset = PresetFile::hardware, .preset_key = "step_overhead_ms", .access = on_hw<&HardwareSpec::gpu, &GpuSpec::step_overhead>()},
        {.name = "moe-layer-latency", .column = "moe_layer_latency_us", .type = KnobType::quantity, .unit = UnitKind::time,
         .bare = "us", .shown_default = "27", .lo = 0, .hi = kMaxLinkLatency,
         .help = "fixed time per MoE layer per forward pass beyond its expert weight read (routing, top-k, the expert kernels' "
                 "floor), e.g. 20us; 0 for none",
         .group = kHardware, .preset = PresetFile::hardware, .preset_key = "moe_layer_latency_us",
         .access = on_hw<&HardwareSpec::gpu, &GpuSpec::moe_layer_latency>()},
    };
}

// How the system is run; f and ov, which only a sweep varies.
std::vector<Knob> policy_rows() {
    using namespace limits;
    return {
        {.name = "sparse", .column = "sparse", .type = KnobType::number, .shown_default = "1", .lo = kMinSparse, .hi = 1,
         .help = "fraction of context KV attention reads per token, GPU and CPU alike", .group = kPolicy,
         .access = on_policy<&PolicySpec::sparse>()},
        {.name = "r", .column = "r", .type = KnobType::number, .shown_default = "1", .lo = 0, .hi = 1,
         .help = "fraction of CPU-resident KV reloaded to the GPU for append-prefill", .group = kPolicy, .access = on_policy<&PolicySpec::r>()},
        {.name = "kv-dtype", .column = "kv_dtype", .type = KnobType::text, .shown_default = "bf16", .help = "KV cache dtype: bf16, fp16, fp8, int8, int4, fp4 (nvfp4), mxfp4",
         .group = kPolicy, .decode = io::decode_dtype, .access = on_policy_enum<&PolicySpec::kv_dtype, DType>()},
        {.name = "weight-dtype", .column = "weight_dtype", .type = KnobType::text, .shown_default = "the checkpoint's, else bf16",
         .help = "weight format: bf16, fp16, fp8, int8, int4 (AWQ/GPTQ g128), fp4 (nvfp4), mxfp4", .group = kPolicy, .decode = io::decode_dtype,
         .access = on_policy_enum<&PolicySpec::weight_dtype, DType>()},
        {.name = "compute-dtype", .column = "compute_dtype", .type = KnobType::text, .shown_default = "from --weight-dtype",
         .help = "GEMM math precision: bf16, fp8, int8, fp4 (e.g. bf16 for W4A16 or weight-only FP8); mxfp4 runs at the FP4 peak, and int4 (no preset GPU has INT4 math) or a math the GPU lacks at the BF16 peak, as the echo says", .group = kPolicy,
         .decode = io::decode_dtype,
         .access = {[](Scenario& s, const KnobValue& v) { s.policy.compute_dtype = std::get<DType>(v); }, nullptr}},
        {.name = "attention-dtype", .column = "attention_dtype", .type = KnobType::text, .shown_default = "from --kv-dtype",
         .help = "attention math precision: bf16 or fp8; fp8 over an fp8 KV cache (FlashAttention-3, TensorRT-LLM's FP8 FMHA), else bf16; bf16 for an engine that dequantises an fp8 cache (SGLang's default)", .group = kPolicy,
         .decode = io::decode_dtype,
         .access = {[](Scenario& s, const KnobValue& v) { s.policy.attention_math = std::get<DType>(v); }, nullptr}},
        {.name = "slo-tpot", .column = "slo_tpot_ms", .type = KnobType::quantity, .unit = UnitKind::time, .bare = "ms",
         .fallback = io::kDefaultSloTpot, .lo = kMinSloS, .hi = kMaxSloS, .help = "TPOT SLO capping the batch, or none", .group = kPolicy,
         .none_text = "none", .access = on_policy<&PolicySpec::slo_tpot>()},
        {.name = "slo-ttft", .column = "slo_ttft_ms", .type = KnobType::quantity, .unit = UnitKind::time, .bare = "ms",
         .shown_default = "none", .lo = kMinSloS, .hi = kMaxSloS, .help = "TTFT SLO, or none", .group = kPolicy, .none_text = "none",
         .access = on_policy<&PolicySpec::slo_ttft>()},
        {.name = "slo-tpot-bounds", .column = "slo_tpot_bounds", .type = KnobType::text, .shown_default = "itl",
         .help = "what --slo-tpot bounds: itl (the step plus interleaved prefill, what users see) or step (the bare step, as the Python reference model bounds it)",
         .group = kPolicy, .decode = io::decode_slo_target, .access = on_policy_enum<&PolicySpec::slo_tpot_bounds, SloTarget>()},
        {.name = "idle", .column = "idle", .type = KnobType::text, .shown_default = "hold",
         .help = "idle sessions: hold (KV stays in HBM) or park (KV moves to CPU DRAM)", .group = kPolicy, .decode = io::decode_idle,
         .access = on_policy_enum<&PolicySpec::idle, IdlePolicy>()},
        {.name = "f", .column = "f", .type = KnobType::number, .lo = 0, .hi = 1,
         .help = "offload fraction: with an f axis each row is the band (or, with a load, the operating point) at that f, else the verdict's best f (with a load, f = 0)",
         .group = kSweep, .grid_only = true},
        {.name = "ov", .column = "ov", .type = KnobType::number, .lo = 0, .hi = 1, .help = "overlap inside the band: adds tps_ov and gain_ov (with a load: the points' ov)",
         .group = kSweep, .grid_only = true},
        // A load axis makes every row an operating point (analysis/operating_point.hpp) instead of a verdict.
        {.name = "batch", .column = "load_batch_seq", .type = KnobType::number, .lo = 0, .hi = limits::kMaxLoad,
         .help = "operating points at a fixed decode batch of B sequences", .group = kSweep, .grid_only = true},
        {.name = "concurrency", .column = "load_clients", .type = KnobType::whole, .lo = 1, .hi = limits::kMaxLoad,
         .help = "operating points at C closed-loop clients, or max (every request at once, as --concurrency max)",
         .group = kSweep, .grid_only = true, .top_text = "max"},
        {.name = "request-rate", .column = "load_request_rate_per_s", .type = KnobType::number, .lo = 0, .hi = limits::kMaxLoad,
         .help = "operating points at R requests per second arriving (open loop)", .group = kSweep, .grid_only = true},
    };
}

// clang-format on

}  // namespace

const std::vector<Knob>& knobs() {
    static const std::vector<Knob> table = [] {
        std::vector<Knob> t = scenario_rows();
        for (auto part : {hardware_rows(), fabric_rows(), efficiency_rows(), policy_rows()})
            t.insert(t.end(), part.begin(), part.end());
        return t;
    }();
    return table;
}

const Knob* find_knob(std::string_view name) noexcept {
    for (const Knob& k : knobs())
        if (k.name == name) return &k;
    return nullptr;
}

const Knob& knob(std::string_view name) {
    const Knob* k = find_knob(name);
    if (!k) throw std::logic_error("no knob '" + std::string(name) + "' in the table");
    return *k;
}

size_t knob_index(const Knob& k) noexcept { return static_cast<size_t>(&k - knobs().data()); }

}  // namespace kvroof
