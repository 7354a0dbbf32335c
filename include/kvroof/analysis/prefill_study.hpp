// SPDX-License-Identifier: MIT
#pragma once
// `kvroof prefill` as one computation: κ_crit and TTFT of one scenario on a
// tensor-parallel group, the VRAM-bound scheduler, what-ifs over links,
// models and measured workloads, and optionally seed 001's κ_crit table.
// The caller resolves presets into the setup and the question lists
// (configs/prefill_kappa.json); this header only computes.

#include <optional>
#include <string>
#include <vector>

#include "kvroof/analysis/prefill_kappa.hpp"
#include "kvroof/analysis/tensor_parallel.hpp"
#include "kvroof/physics/attention_layers.hpp"
#include "kvroof/physics/call_demand.hpp"
#include "kvroof/spec/hardware.hpp"
#include "kvroof/spec/scenario.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof {

// The resolved inputs of one prefill question. Rates are per GPU; the group
// combines them by the rule of tensor_parallel.hpp.
struct PrefillSetup {
    HardwareSpec hardware;
    ModelSpec model;
    CallClass workload;  // K = s_cached, T = a_append
    std::string link_name;
    BytesPerSecond link;  // per GPU
    FlopPerSecond c_eff;  // effective prefill FLOP/s per GPU
    std::string c_eff_from;  // how C_eff was set: "--prefill-flops", or "0.7 × FP8 peak"
    // C_eff follows the weights' precision (nothing fixed it): each what-if model
    // then runs at its own checkpoint's, as the setup for that model would.
    bool c_eff_follows_weights = false;
    DType kv = DType::bf16;
    // The prefill's attention (Q·Kᵀ, P·V) per GPU: η_compute × the dense peak in the attention precision, which
    // follows the KV cache, not the weights (spec/policy.hpp attention_dtype), as verdict's TTFT charges it.
    FlopPerSecond attention_flops;
    DType attention_math = DType::bf16;  // the precision it runs in (attention_dtype: an FP4 cache attends in BF16)
    DType weights = DType::bf16;  // the weights' storage precision: what V_eff subtracts
    TensorParallel tp;
    double ov = 0;
    std::optional<Bytes> vram;  // V_eff of the group; default: HBM − reserve over the group − the weights
    double token_budget = 4096;  // scheduler tokens per iteration
};

struct NamedLink {
    std::string name;
    BytesPerSecond bandwidth;  // per GPU
    std::string physical;  // the physical link it describes (LinkPreset::physical_link)
};
struct NamedModel {
    std::string name;  // as listed
    ModelSpec model;
};
struct WorkloadRatio {
    std::string name;
    double kappa_ratio = 0;  // K/T, a measured median
    std::string source;
};
struct KappaTableRow {
    std::string label, hardware, link;
    BytesPerSecond bandwidth;
    FlopPerSecond c_eff;
};

// The what-ifs and the seed table, as data.
struct PrefillQuestions {
    std::vector<NamedLink> links;  // the study adds this GPU's own HBM as the last
    std::vector<NamedModel> models;
    std::vector<WorkloadRatio> workloads;
    bool table = false;  // also compute seed 001's κ_crit table
    std::vector<ModelSpec> table_models;
    std::vector<KappaTableRow> table_rows;
};

struct LinkWhatIf {
    NamedLink link;
    KappaResult result;
};
struct ModelWhatIf {
    std::string name;
    Attention attention = Attention::gqa;
    bool moe = false;
    Flop f_pf;
    Bytes b_kv;
    FlopPerSecond c_eff;  // per GPU, at this model's GEMM precision where C_eff follows the weights
    KappaResult result;
};
struct WorkloadWhatIf {
    WorkloadRatio workload;
    bool transfer_bound = false;  // κ_ratio > κ_crit
    double p_oh = 0;  // κ_ratio / κ_crit
    double link_share = 0;  // P_OH / (1 + P_OH)
};
struct KappaTableCells {
    KappaTableRow row;
    std::vector<double> kappa_crit;  // one per table model, bf16 KV
};

// The answer for the setup's own scenario: what a prefill sweep's row shows.
struct PrefillPoint {
    Flop f_pf;
    Bytes b_kv;  // of the group: every copy it holds of a token's KV is reloaded (kv_copies of them)
    double kv_copies = 1;
    KappaInputs inputs;  // of the group
    KappaResult result;
    // What F_pf (the κ_crit paper's 2·N_active) leaves out: the prefill's attention, T queries over the K
    // cached keys and T/2 new ones on average, at C_eff (the group). verdict's TTFT counts it.
    Seconds attention;
    Bytes vram;  // V_eff used by the scheduler
    std::optional<SchedulerResult> scheduler;  // none when no VRAM is left or T = 0
};

// The point, and the what-ifs around it.
struct PrefillStudy : PrefillPoint {
    PrefillSetup setup;
    std::vector<LinkWhatIf> links;
    std::vector<ModelWhatIf> models;
    std::vector<WorkloadWhatIf> workloads;
    bool table = false;
    std::vector<std::string> table_models;
    std::vector<KappaTableCells> table_rows;
};

// The group's κ inputs: per-GPU link and C_eff pooled over tp, per-token
// amounts unchanged (tensor_parallel.hpp), so κ_crit does not depend on tp and
// the times divide by it.
[[nodiscard]] inline KappaInputs group_kappa_inputs(const PrefillSetup& s, Flop f_pf, Bytes b_kv) {
    return KappaInputs{f_pf, b_kv, s.tp.pooled(s.link), s.tp.pooled(s.c_eff), s.workload.s_cached, s.workload.a_append, s.ov};
}

// HBM of the group after the weights (in their own precision, as the verdict's capacity has them): what the KV of
// prefilling requests may hold.
[[nodiscard]] inline Bytes group_vram_for_kv(const PrefillSetup& s) {
    return s.tp.pooled(s.hardware.gpu.hbm_capacity - s.hardware.gpu.hbm_reserve) - weight_bytes(s.model, s.weights);
}

// B_kv of a reload of K cached tokens: the KV bytes they hold per token,
// held(K)/K (physics/attention_layers.hpp: a window layer reloads at most W
// tokens, a linear layer its state); KV per token with full attention only.
[[nodiscard]] inline Bytes reload_bytes_per_cached_token(const ModelSpec& m, DType kv, double k_cached) noexcept {
    const AttentionLayout a = attention_layout(m, kv);
    const Bytes per_token = kv_bytes_per_token(m, kv);
    if (a.plain() || k_cached <= 0) return per_token;
    return per_token * (kv_tokens_held(a, k_cached) / k_cached);
}

// What a group of tp GPUs reloads per cached token: every copy it holds
// (kv_replication: an MLA latent on every GPU, GQA with fewer KV heads than
// GPUs on several), each over the link of the GPU that holds it.
[[nodiscard]] inline Bytes group_reload_bytes(const ModelSpec& m, DType kv, double k_cached, int tp) noexcept {
    return reload_bytes_per_cached_token(m, kv, k_cached) * kv_replication(m, tp);
}

// The KV a group of tp GPUs holds for one request at its K + T tokens, every
// copy (kv_replication): (K + T)·B_kv with full attention; a window layer
// holds at most its window, a linear-attention or Mamba layer its state
// (kv_tokens_held), so N_max is verdict's resident sessions at the same memory.
[[nodiscard]] inline Bytes prefill_request_bytes(const ModelSpec& m, DType kv, double k_cached, double t_new, int tp) noexcept {
    const AttentionLayout a = attention_layout(m, kv);
    return kv_bytes_per_token(m, kv) * kv_replication(m, tp) * kv_tokens_held(a, k_cached + t_new);
}

// The default C_eff per GPU: η_compute of the GPU's dense peak in the GEMM
// precision `math` (bf16 on a GPU without that math).
[[nodiscard]] inline FlopPerSecond default_prefill_flops(const HardwareSpec& hw, DType math) noexcept {
    return gemm_peak(hw, math) * hw.gpu.eta_compute;
}

// The prefill question of a scenario, as `kvroof prefill` asks it at the same
// figures: its hardware, model and one class (K = s_cached, T = a_append);
// the cached KV reloaded over the GPU's own link (c2c-bw, per GPU); C_eff the
// default of the scenario's GEMM precision; its KV precision; the --gpus group
// as the tensor-parallel group; V_eff and the token budget at their defaults.
// A mix of classes has no one answer: an error naming "mix".
[[nodiscard]] inline PrefillSetup prefill_setup(const Scenario& s, double ov) {
    if (s.mix.entries.size() != 1)
        throw InputError("mix: the prefill analysis answers for one class, got " + std::to_string(s.mix.entries.size()) +
                         "; give a workload");
    PrefillSetup p;
    p.hardware = s.hardware;
    p.model = s.model;
    p.workload = s.mix.entries.front().cls;
    p.link_name = s.hardware.link.name;
    p.link = s.hardware.link.bandwidth;
    p.c_eff = default_prefill_flops(s.hardware, gemm_dtype(s.policy));
    p.kv = s.policy.kv_dtype;
    p.attention_math = attention_dtype(s.policy);
    p.attention_flops = default_prefill_flops(s.hardware, p.attention_math);
    p.weights = s.policy.weight_dtype;
    p.tp.gpus = s.hardware.deployment.gpus;
    p.ov = ov;
    return p;
}

[[nodiscard]] inline PrefillPoint prefill_point(const PrefillSetup& setup) {
    setup.tp.check_validity("gpus");
    PrefillPoint p;
    p.f_pf = prefill_flop_per_token(setup.model);
    p.kv_copies = kv_replication(setup.model, setup.tp.gpus);
    p.b_kv = group_reload_bytes(setup.model, setup.kv, setup.workload.s_cached, setup.tp.gpus);
    p.inputs = group_kappa_inputs(setup, p.f_pf, p.b_kv);
    p.result = analyse_prefill(p.inputs);
    const AttentionLayout layout = attention_layout(setup.model, setup.kv);
    const PrefillKeys keys = prefill_keys(layout, setup.workload.s_cached, setup.workload.a_append, 0.0, 1.0);
    p.attention =
        time_for(Flop(attention_flop_per_key(setup.model, Phase::prefill) * keys.gpu + layout.index_flop_per_key * keys.index),
                 setup.tp.pooled(setup.attention_flops));
    p.vram = setup.vram.value_or(group_vram_for_kv(setup));
    if (p.vram.raw() > 0 && setup.workload.a_append > 0)
        p.scheduler = schedule_prefill(
            p.vram, setup.token_budget, setup.workload.a_append,
            prefill_request_bytes(setup.model, setup.kv, setup.workload.s_cached, setup.workload.a_append, setup.tp.gpus));
    return p;
}

namespace detail {
inline std::vector<KappaTableCells> kappa_table(const PrefillQuestions& q) {
    std::vector<KappaTableCells> rows;
    for (const KappaTableRow& row : q.table_rows) {
        KappaTableCells cells{row, {}};
        for (const ModelSpec& m : q.table_models)
            cells.kappa_crit.push_back(
                kappa_crit(prefill_flop_per_token(m), kv_bytes_per_token(m, DType::bf16), row.bandwidth, row.c_eff));
        rows.push_back(std::move(cells));
    }
    return rows;
}
}  // namespace detail

[[nodiscard]] inline PrefillStudy prefill_study(const PrefillSetup& setup, const PrefillQuestions& q) {
    PrefillStudy st;
    static_cast<PrefillPoint&>(st) = prefill_point(setup);
    st.setup = setup;
    if (q.table) {
        st.table = true;
        for (const ModelSpec& m : q.table_models) st.table_models.push_back(m.name);
        st.table_rows = detail::kappa_table(q);
    }
    std::vector<NamedLink> links = q.links;
    // The board's own link is shared as the scenario's is (GB200: one NVLink-C2C per two GPUs): each GPU's share,
    // the figure --link gives it; another link would be each GPU's own.
    const HardwareSpec& hw = setup.hardware;
    for (NamedLink& l : links)
        if (l.physical == hw.board_link) l.bandwidth = l.bandwidth / hw.board_link_shared_by;
    links.push_back({"unified HBM (this GPU)", setup.hardware.gpu.hbm_bandwidth, {}});
    for (const NamedLink& l : links) {
        KappaInputs k = st.inputs;
        k.link = setup.tp.pooled(l.bandwidth);
        st.links.push_back({l, analyse_prefill(k)});
    }
    for (const NamedModel& nm : q.models) {
        KappaInputs k = st.inputs;
        k.f_pf = prefill_flop_per_token(nm.model);
        k.b_kv = group_reload_bytes(nm.model, setup.kv, setup.workload.s_cached, setup.tp.gpus);
        FlopPerSecond c_eff = setup.c_eff;
        if (setup.c_eff_follows_weights) {  // DeepSeek-V3's FP8 checkpoint at the FP8 peak, Mixtral's BF16 at the BF16
            PolicySpec own;
            own.weight_dtype = served_weights(nm.model);
            c_eff = default_prefill_flops(setup.hardware, gemm_dtype(own));
        }
        k.c_eff = setup.tp.pooled(c_eff);
        st.models.push_back({nm.name, nm.model.attention, nm.model.is_moe(), k.f_pf, k.b_kv, c_eff, analyse_prefill(k)});
    }
    for (const WorkloadRatio& w : q.workloads) {
        const double poh = w.kappa_ratio / st.result.kappa_crit;
        st.workloads.push_back({w, w.kappa_ratio > st.result.kappa_crit, poh, poh / (1 + poh)});
    }
    return st;
}

}  // namespace kvroof
