// SPDX-License-Identifier: MIT
// The pieces every serving renderer shares: the echo of the resolved inputs
// (text and JSON) and one serving point as JSON.
#include "kvroof/io/parse.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {

using nlohmann::json;
using render::finite_or_null;

namespace {
// The weights' format in words: one format, or a quantised checkpoint as it
// stores them ("mxfp4 experts; attention, routers, embeddings and LM head bf16").
std::string weights_words(const ModelSpec& m, DType w) {
    if (!stored_as_checkpoint(m, w)) return to_string(w);
    const char* q = to_string(w);
    if (m.checkpoint_bf16_attention >= 1.0 && m.is_moe() && m.first_dense_layers == 0 && m.shared_experts == 0)
        return fmt::format("{} experts; attention, routers, embeddings and LM head bf16 ({})", q, m.checkpoint_weights_from);
    const std::string attention = m.checkpoint_bf16_attention > 0
                                      ? fmt::format("attention of {:.0f} % of the layers, ", 100 * m.checkpoint_bf16_attention)
                                      : std::string();
    return fmt::format("{}; {}{}embeddings and LM head bf16 ({})", q, attention, m.is_moe() ? "routers, " : "",
                       m.checkpoint_weights_from);
}
// The GEMM math in words: the precision run, and the one asked for when this GPU lacks it.
std::string math_words(const HardwareSpec& hw, DType asked) {
    const DType run = gemm_math_on(hw, asked);
    const DType wanted = asked == DType::mxfp4 ? DType::fp4 : asked;
    if (run == wanted) return to_string(run);
    const double peak = wanted == DType::fp4                            ? hw.gpu.flops_fp4.raw()
                        : wanted == DType::fp8 || wanted == DType::int8 ? hw.gpu.flops_fp8.raw()
                                                                        : 0.0;  // int4: no math of its own
    return peak > 0 ? fmt::format("{} (its {} peak is not above BF16's)", to_string(run), to_string(wanted))
                    : fmt::format("{} (no {} math on this GPU)", to_string(run), to_string(wanted));
}
// The GPUs' arrangement: the tensor-parallel all-reduces, the deployment and
// its pipeline, and the scale-out network (what --net set, and what uses it).
// Where the study picks the deployments (`group` false: --gpus is every GPU,
// not one group), only the network, and what may use it.
std::string parallel_text(const HardwareSpec& hw, const ModelSpec& model, bool group) {
    std::string s;
    if (!group)
        return fmt::format("            network {}: {} per GPU per direction, {:g} us per transfer; {}\n",
                           hw.net.name.empty() ? "default" : hw.net.name, format_bandwidth(hw.net.bandwidth.raw()),
                           hw.net.latency.raw() * 1e6,
                           hw.deployment.gpus > hw.gpu.nvlink_domain
                               ? fmt::format("carries what crosses the NVLink domain of {}", hw.gpu.nvlink_domain)
                               : fmt::format("unused here (all {} GPUs within the NVLink domain of {})", hw.deployment.gpus,
                                             hw.gpu.nvlink_domain));
    // NVLink domains of one GPU have no step inside a domain: the all-reduce is the network's alone (allreduce_alpha).
    const std::string each =
        hw.gpu.nvlink_domain <= 1 && hw.deployment.gpus > 1
            ? std::string("each over the network alone (NVLink domains of 1 GPU: --allreduce-latency and --nvlink-bw unused)")
            : fmt::format(
                  "each {:g} us + bytes at {:g} x {} per direction ({})", hw.gpu.allreduce_latency.raw() * 1e6, hw.gpu.eta_nvlink,
                  format_bandwidth(hw.gpu.nvlink_bandwidth.raw() > 0 ? hw.gpu.nvlink_bandwidth.raw() : hw.link.bandwidth.raw()),
                  hw.gpu.nvlink_bandwidth.raw() > 0 ? "NVLink" : "no NVLink: over the host link");
    const int t = hw.deployment.gpus;
    if (t > 1 && hw.deployment.attention_dp == 1 && model.attention == Attention::mla) {
        // As detail::apply_attention_dp charges it: no attention all-reduce; the FFN blocks gathered, under EP only the dense ones.
        const int ffn = model.layers - model.mlp_free_layers, moe = hw.deployment.ep > 1 ? param_counts(model).moe_layers : 0;
        s += fmt::format(
            "            data-parallel attention x{}: no attention all-reduce; an all-gather and a reduce-scatter "
            "around each of {} {}FFN blocks{}, {}\n",
            t, ffn - moe, moe > 0 ? "dense " : "",
            moe > 0 ? fmt::format(" (the {} MoE layers: the EP {} all-to-alls instead)", moe, hw.deployment.ep) : std::string(),
            each);
    } else if (t > 1) {
        s += fmt::format("            tensor parallel x{}: 2 all-reduces per layer, {}\n", t, each);
    }
    if (hw.deployment.gpus > hw.gpu.nvlink_domain)
        s += fmt::format(
            "            the group spans {:g} NVLink domains of {}: each all-reduce also crosses the network, hierarchically "
            "({:g} us in all per all-reduce)\n",
            static_cast<double>(hw.deployment.gpus) / hw.gpu.nvlink_domain, hw.gpu.nvlink_domain, allreduce_alpha(hw) * 1e6);
    const Pipeline pipe = pipeline_of(hw, model);
    if (hw.deployment.pp > 1 || hw.deployment.dp > 1) {
        s += fmt::format(
            "  deploy    tp {} x pp {} x dp {} = {} GPUs (ep {}{}); results are per replica of {} GPUs, dp {} of "
            "them serve {}x the throughput\n",
            hw.deployment.gpus, hw.deployment.pp, hw.deployment.dp, deployment_gpus(hw), hw.deployment.ep,
            hw.deployment.attention_dp == 1 ? ", attention-dp" : "", replica_gpus(hw), hw.deployment.dp, hw.deployment.dp);
        if (hw.deployment.pp > 1)
            s += fmt::format(
                "            pipeline: {:g} micro-batches, stage imbalance {:.4g}, cycle stretch {:.4g}; "
                "{} stage boundaries on NVLink, {} on the network: {:.3g} us + {:.3g} us per sequence per token\n",
                pipe.microbatches, pipe.imbalance, pipe.sigma, pipe.boundaries_nvlink, pipe.boundaries_network,
                pipe.transfer_latency * 1e6, pipe.transfer_per_sequence * 1e6);
    }
    if (hw.deployment.gpus == 1 && hw.deployment.pp == 1 && hw.deployment.dp == 1 && hw.net.name.empty()) return s;
    std::string uses;
    if (hw.deployment.gpus > hw.gpu.nvlink_domain)
        uses = fmt::format("the TP {} all-reduces between domains", hw.deployment.gpus);
    if (hw.deployment.ep > hw.gpu.nvlink_domain)
        uses += fmt::format("{}EP {} all-to-alls, {}/{} of each token's expert copies", uses.empty() ? "" : " and ",
                            hw.deployment.ep, hw.deployment.ep - hw.gpu.nvlink_domain, hw.deployment.ep);
    if (pipe.boundaries_network > 0)
        uses += fmt::format("{}{} of {} pipeline boundaries", uses.empty() ? "" : " and ", pipe.boundaries_network,
                            hw.deployment.pp - 1);
    s += fmt::format("            network {}: {} per GPU per direction, {:g} us per transfer; {}\n",
                     hw.net.name.empty() ? "default" : hw.net.name, format_bandwidth(hw.net.bandwidth.raw()),
                     hw.net.latency.raw() * 1e6,
                     uses.empty() ? fmt::format("unused here (all traffic within the NVLink domain of {})", hw.gpu.nvlink_domain)
                                  : "carries " + uses);
    return s;
}
}  // namespace

// The VERDICT line of a chosen f at which one session does not fit (chosen_f_does_not_fit): both shares against
// what holds them, and the f that fits.
std::string render::chosen_f_misfit_line(const Verdict& v, const ScenarioFacts& facts) {
    const Scenario& sc = facts.scenario;
    const double kv = facts.session_kv_max.raw(), span = std::max(1.0, static_cast<double>(facts.kv_session_span));
    const double dram_share = sc.policy.idle == IdlePolicy::park ? 1.0 : v.f;
    // Too little offloaded (its GPU share overflows HBM), or too much (its CPU share overflows DRAM, --idle hold).
    const bool hbm_short = (1.0 - v.f) * kv * span > facts.hbm_free.raw();
    const std::string fits_from =
        hbm_short ? "from f >= " + (v.smallest_f_that_fits ? render::f_flag(*v.smallest_f_that_fits, *v.smallest_f_that_fits)
                                                           : std::string("—"))
                  : fmt::format("up to f <= {:.2f}", std::floor(100 * facts.cpu_memory.raw() / kv) / 100);
    return fmt::format(
        "VERDICT: DOES NOT FIT at the chosen f={} — one session's KV {}: {} in HBM ({} free for KV), {} in CPU DRAM ({}); "
        "it fits {}",
        render::fmt_f(v.f), format_bytes(kv), format_bytes((1.0 - v.f) * kv * span), format_bytes(facts.hbm_free.raw()),
        format_bytes(dram_share * kv), format_bytes(facts.cpu_memory.raw()), fits_from);
}

std::string render::point_summary(const ServingPoint& p) {
    if (!p.session_fits) return "does not fit: one session's KV at this f";
    if (!p.feasible) return "infeasible";
    // ITL is what a user sees and what --slo-tpot bounds (B / throughput: the step with its interleaved prefill); the
    // bare step beside it. It said "TPOT" of the step alone, 48.3 ms under a 50 ms SLO that bound the ITL at 50.0.
    // The rate resource its time is bound by (sweep's and mix's binding_* columns are the headline: a capacity where
    // HBM bandwidth binds at a capacity-limited batch), so not called "binding" here.
    return fmt::format("{:.1f} tok/s (batch {}, ITL {}, step {}, TTFT {}, time bound by {})", p.throughput, fmt_batch(p.batch),
                       render::fmt_ms_if(true, p.tpot_observed), fmt_ms(p.tpot), fmt_ms(p.ttft), name(p.binding));
}

json point_json(const ServingPoint& p) {
    json u = json::object();
    json share = json::object();
    for (const ResourceSeconds& r : per_resource_seconds(p)) {
        u[std::string(name(r.resource))] = r.util_sec.raw();
        share[std::string(name(r.resource))] = r.timeline_share.raw();
    }
    return json{{"f", p.f},
                {"ov", p.ov},
                {"fits", p.fits},  // the weights fit in HBM
                {"session_fits", p.session_fits},  // one session of the longest class fits at this f
                {"feasible", p.feasible},
                {"throughput_tok_per_s", p.throughput},
                {"lambda_max_calls_per_s", p.lambda_max},
                {"batch", finite_or_null(p.batch)},
                {"b_cap_hbm", finite_or_null(p.b_cap_hbm)},
                {"b_cap_dram", finite_or_null(p.b_cap_dram)},
                {"b_slo", finite_or_null(p.b_slo)},
                {"tpot_s", p.tpot},
                {"tpot_observed_s", finite_or_null(p.tpot_observed)},
                {"ttft_s", p.ttft},
                {"gpu_timeline_s_per_call", p.gpu_timeline},
                {"util_sec_per_call", u},
                {"gpu_timeline_share_s_per_call", share},
                {"binding", name(p.binding)},
                {"batch_limit", name(p.batch_limit)},
                {"headline_binding", name(p.headline)}};
}

// How the GPUs are arranged (tp · pp · dp of them), and what the pipeline costs (analysis/pipeline.hpp).
json deployment_json(const HardwareSpec& hw, const ModelSpec& m) {
    const Pipeline pipe = pipeline_of(hw, m);
    return json{{"tp", hw.deployment.gpus},
                {"pp", hw.deployment.pp},
                {"pp_microbatches", pipe.microbatches},
                {"ep", hw.deployment.ep},
                {"dp", hw.deployment.dp},
                {"attention_dp", hw.deployment.attention_dp == 1},
                {"gpus_per_replica", replica_gpus(hw)},
                {"total_gpus", deployment_gpus(hw)},
                {"pp_stage_imbalance", pipe.imbalance},
                {"pp_cycle_stretch", pipe.sigma},
                {"pp_stage_boundaries_nvlink", pipe.boundaries_nvlink},
                {"pp_stage_boundaries_network", pipe.boundaries_network},
                {"pp_transfer_latency_s", pipe.transfer_latency},
                {"pp_transfer_s_per_sequence", pipe.transfer_per_sequence}};
}

json inputs_json(const BuiltScenario& b, const ScenarioFacts& facts) {
    const Scenario& sc = b.scenario;
    const HardwareSpec& hw = sc.hardware;
    const ModelSpec& m = sc.model;
    const PolicySpec& p = sc.policy;
    json mix = json::array();
    for (const auto& e : sc.mix.entries)
        mix.push_back({{"class", e.cls.name},
                       {"weight", e.weight},
                       {"s_cached_tokens", e.cls.s_cached},
                       {"a_append_tokens", e.cls.a_append},
                       {"o_output_tokens", e.cls.o_output},
                       {"idle_gap_s", e.cls.idle_gap.raw()}});
    json overrides = json::object();
    for (const auto& [k, v] : b.overrides) overrides[k] = v;
    json j{{"hardware",
            {{"preset", hw.name},
             {"gpus", hw.deployment.gpus},
             {"gpu_flops_per_s", hw.gpu.flops.raw()},
             {"memory_type", hw.gpu.memory_type},
             {"hbm_capacity_bytes", hw.gpu.hbm_capacity.raw()},
             {"hbm_bandwidth_bytes_per_s", hw.gpu.hbm_bandwidth.raw()},
             {"hbm_reserve_bytes", hw.gpu.hbm_reserve.raw()},
             {"nvlink_bandwidth_bytes_per_s", hw.gpu.nvlink_bandwidth.raw()},
             {"link", hw.link.name},
             {"link_bandwidth_bytes_per_s", hw.link.bandwidth.raw()},
             {"host", hw.host.name},
             {"net", hw.net.name},
             {"cpus_per_gpu", hw.host.cpus_per_gpu},
             {"cpu_flops_per_s", hw.host.flops.raw()},
             {"cpu_dram_bandwidth_bytes_per_s", hw.host.dram_bandwidth.raw()},
             {"cpu_memory_bytes", hw.host.memory.raw()},
             {"gpu_flops_fp8_per_s", hw.gpu.flops_fp8.raw()},
             {"gpu_flops_fp4_per_s", hw.gpu.flops_fp4.raw()},
             {"gemm_flops_per_s", gemm_peak(hw, gemm_dtype(p)).raw()},
             {"eta_compute", hw.gpu.eta_compute},
             {"eta_mem", hw.gpu.eta_mem},
             {"eta_cpu_compute", hw.host.eta_compute},
             {"eta_dram", hw.host.eta_dram},
             {"eta_link", hw.link.eta},
             {"step_overhead_s", hw.gpu.step_overhead.raw()},
             {"moe_layer_latency_s", hw.gpu.moe_layer_latency.raw()}}},
           {"model",
            {{"name", m.name},
             {"attention", m.attention == Attention::gqa ? "gqa" : "mla"},
             {"moe", m.is_moe()},
             {"layers", m.layers},
             {"params_total", facts.params.total},
             {"params_active", facts.params.active},
             {"weight_bytes", facts.weights.raw()},
             {"weight_layout", weights_words(m, p.weight_dtype)},
             {"kv_bytes_per_token", facts.kv_per_token.raw()},
             {"kv_replication", facts.kv_replication},
             {"window_layers", m.window_layers},
             {"window", m.window},
             {"linear_layers", m.linear_layers},
             {"linear_state_bytes", linear_state_bytes(m).raw()},
             {"index_topk", m.index_topk}}},
           {"workload", b.workload_label},
           {"mix", mix},
           {"policy",
            {{"sparse", p.sparse},
             {"r", p.r},
             {"kv_dtype", to_string(p.kv_dtype)},
             {"weight_dtype", to_string(p.weight_dtype)},
             {"compute_dtype", to_string(gemm_math_on(hw, gemm_dtype(p)))},
             {"attention_dtype", to_string(gemm_math_on(hw, attention_dtype(p)))},
             {"slo_tpot_s", p.slo_tpot ? json(p.slo_tpot->raw()) : json(nullptr)},
             {"slo_ttft_s", p.slo_ttft ? json(p.slo_ttft->raw()) : json(nullptr)},
             {"idle", to_string(p.idle)}}},
           {"deployment", deployment_json(hw, sc.model)},
           {"overrides", overrides},
           {"knobs", knob_values(sc)}};
    if (m.full_layers_differ())  // Gemma-4's full-attention layers
        j["model"]["full_layers"] = {{"head_dim", m.full_dim()}, {"kv_heads", m.full_kv()}, {"k_eq_v", m.full_k_eq_v}};
    return j;
}

std::string render::inputs_text(const BuiltScenario& b, const ScenarioFacts& facts, bool group) {
    const Scenario& sc = b.scenario;
    const HardwareSpec& hw = sc.hardware;
    const PolicySpec& p = sc.policy;
    std::string s;
    s += fmt::format("Inputs\n");
    s += fmt::format("  hardware  {} x{}: GPU {} {} | {} {} @ {} (reserve {}) | link {} {} per GPU\n", hw.name,
                     hw.deployment.gpus, format_flops(gemm_peak(hw, gemm_dtype(p)).raw()), math_words(hw, gemm_dtype(p)),
                     hw.gpu.memory_type, format_bytes(hw.gpu.hbm_capacity.raw()), format_bandwidth(hw.gpu.hbm_bandwidth.raw()),
                     format_bytes(hw.gpu.hbm_reserve.raw()), hw.link.name, format_bandwidth(hw.link.bandwidth.raw()));
    s += fmt::format("            host {} x{:g} sockets per GPU: CPU {} | DRAM {} @ {}\n", hw.host.name, hw.host.cpus_per_gpu,
                     format_flops(hw.host.flops.raw()), format_bytes(hw.host.memory.raw()),
                     format_bandwidth(hw.host.dram_bandwidth.raw()));
    s += fmt::format(
        "            eta GEMM {:g}, HBM {:g}, CPU {:g}, DRAM {:g}, link {:g}; step overhead {:g} ms{}\n", hw.gpu.eta_compute,
        hw.gpu.eta_mem, hw.host.eta_compute, hw.host.eta_dram, hw.link.eta, hw.gpu.step_overhead.raw() * 1e3,
        !sc.model.is_moe() ? std::string()
        : hw.gpu.eta_moe_gemm > 0
            ? fmt::format(", MoE layer {:g} us, expert GEMMs {:g}", hw.gpu.moe_layer_latency.raw() * 1e6, hw.gpu.eta_moe_gemm)
            : fmt::format(", MoE layer {:g} us", hw.gpu.moe_layer_latency.raw() * 1e6));
    s += parallel_text(hw, sc.model, group);
    const ParamCounts& pc = facts.params;
    // Attention's math where it is not the GEMMs' (an FP8 cache beside BF16 GEMMs, a BF16 one beside FP8 or FP4).
    const DType attn_math = gemm_math_on(hw, attention_dtype(p));
    const std::string attn =
        attn_math == gemm_math_on(hw, gemm_dtype(p)) ? std::string() : fmt::format(" (attention in {})", to_string(attn_math));
    s += fmt::format("  model     {} ({}{}): {:.1f}B params ({:.1f}B active), weights {} {}, KV {:.0f} B/token {}{}\n",
                     sc.model.name, sc.model.attention == Attention::gqa ? "GQA" : "MLA", sc.model.is_moe() ? ", MoE" : "",
                     pc.total / 1e9, pc.active / 1e9,
                     format_bytes((facts.weights - facts.weights_replicated).raw()),  // the checkpoint's: copies in Capacity
                     weights_words(sc.model, p.weight_dtype), facts.kv_per_token.raw(), to_string(p.kv_dtype), attn);
    const ModelSpec& m = sc.model;
    if (m.window_layers > 0 || m.linear_layers > 0 || m.index_topk > 0 || m.mlp_only_layers > 0) {
        s += fmt::format("            layers {} full attention", m.attention_layers() - m.window_layers);
        if (m.full_layers_differ())
            s += fmt::format(" (heads of {} with {} KV heads{})", m.full_dim(), m.full_kv(),
                             m.full_k_eq_v ? ", keys reused as values" : "");
        if (m.window_layers > 0) s += fmt::format(", {} sliding window of {} tokens", m.window_layers, m.window);
        if (m.linear_layers > 0)
            s += fmt::format(", {} {} (state {} per sequence, {})", m.linear_layers,
                             m.linear_kind == LinearKind::mamba2      ? "Mamba-2"
                             : m.linear_kind == LinearKind::lightning ? "lightning attention"
                                                                      : "linear attention",
                             format_bytes(linear_state_bytes(m).raw()), m.linear_state_fp32 ? "recurrent fp32" : "bf16");
        if (m.mlp_only_layers > 0) s += fmt::format(", {} MLP only", m.mlp_only_layers);
        if (m.index_topk > 0)
            s += fmt::format(
                ", DeepSeek sparse attention: top {} keys per query (its indexer caches {} more elements per token and layer)",
                m.index_topk, m.index_head_dim);
        s += " (KV per token counts the attention layers)\n";
    }
    for (const auto& e : sc.mix.entries)
        s += fmt::format("  workload  {} p={:.3g}: S_c={:.0f} A={:.0f} O={:.0f} tokens, idle gap {:.2f} s\n", e.cls.name,
                         e.weight, e.cls.s_cached, e.cls.a_append, e.cls.o_output, e.cls.idle_gap.raw());
    s += fmt::format("  policy    sparse={:g} r={:g} SLO TPOT {} TTFT {} | idle sessions: {}\n", p.sparse, p.r,
                     // What it bounds, where not the ITL shown beside each point (--slo-tpot-bounds step).
                     !p.slo_tpot                           ? std::string("none")
                     : p.slo_tpot_bounds == SloTarget::itl ? fmt_ms(p.slo_tpot->raw())
                                                           : fmt_ms(p.slo_tpot->raw()) + " (on the bare step)",
                     p.slo_ttft ? fmt_ms(p.slo_ttft->raw()) : "none", to_string(p.idle));
    if (!b.overrides.empty()) {
        s += "  overrides";
        for (const auto& [k, v] : b.overrides) s += fmt::format(" {}={}", k, v);
        s += "\n";
    }
    return s;
}

}  // namespace kvroof::io
