// SPDX-License-Identifier: MIT
// `kvroof prefill` as text, markdown and JSON, from one PrefillStudy.
#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/offload_reports.hpp"
#include "kvroof/io/parse.hpp"

namespace kvroof::io {
namespace {

using nlohmann::json;

const char* regime_name(PrefillRegime r) { return name(r); }
const char* regime_name(bool transfer_bound) {
    return name(transfer_bound ? PrefillRegime::transfer_bound : PrefillRegime::compute_bound);
}
const char* model_kind(const ModelWhatIf& m) {
    return m.attention == Attention::mla ? "MLA MoE" : (m.moe ? "GQA MoE" : "GQA dense");
}

std::string fmt_kappa(double k) {
    if (!std::isfinite(k)) return "∞";
    if (k >= 100) return fmt::format("{:.0f}", k);
    if (k >= 10) return fmt::format("{:.1f}", k);
    return fmt::format("{:.2f}", k);
}

json result_json(const KappaResult& r) {
    auto fin = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    return {{"kappa_m_flop_per_byte", r.kappa_m},
            {"kappa_hw_byte_per_flop", r.kappa_hw},
            {"kappa_crit", r.kappa_crit},
            {"kappa_ratio", fin(r.kappa_ratio)},
            {"regime", regime_name(r.regime)},
            {"t_link_s", r.t_link},
            {"t_gpu_s", r.t_gpu},
            {"ttft_serial_s", r.ttft_serial},
            {"ttft_s", r.ttft},
            {"p_oh", fin(r.p_oh)},
            {"utilisation", r.utilisation},
            {"link_share", r.link_share}};
}

std::string table_text(const PrefillStudy& st) {
    std::string head = fmt::format("{:<48} {:>9}", "hardware / link", "GB/s");
    for (const auto& m : st.table_models) head += fmt::format(" {:>16}", m);
    std::string t = "κ_crit = (F_pf / B_kv) · (BW / C_eff): a prefill whose K/T exceeds it waits on the link\n" + head + "\n";
    for (const KappaTableCells& row : st.table_rows) {
        t += fmt::format("{:<48} {:>9.1f}", row.row.label, row.row.bandwidth.raw() / 1e9);
        for (double k : row.kappa_crit) t += fmt::format(" {:>16}", fmt_kappa(k));
        t += "\n";
    }
    return t +
           "F_pf = 2 x active parameters per new token; C_eff per hardware preset (prefill_flops_TFLOPS, see docs/model.md)\n\n";
}

std::string table_markdown(const PrefillStudy& st) {
    std::string mdh = "| hardware / link | GB/s |";
    std::string mds = "|---|---|";
    for (const auto& m : st.table_models) {
        mdh += fmt::format(" {} |", m);
        mds += "---|";
    }
    std::string md = "## κ_crit by model and link\n\n" + mdh + "\n" + mds + "\n";
    for (const KappaTableCells& row : st.table_rows) {
        md += fmt::format("| {} | {:.1f} |", row.row.label, row.row.bandwidth.raw() / 1e9);
        for (double k : row.kappa_crit) md += fmt::format(" {} |", fmt_kappa(k));
        md += "\n";
    }
    return md +
           "\nF_pf = 2 × active parameters per new token; C_eff from each hardware preset's `prefill_flops_TFLOPS`: the κ_crit "
           "paper's "
           "effective rate (the FP8 dense peak at η = 1, fitted for H100 and B200). The scenario above uses `verdict`'s "
           "definition instead, η × the dense peak (docs/model.md shows both).\n\n";
}

// F_pf is the κ_crit paper's linear FLOP only: what the prefill's attention would add, as verdict's TTFT counts it.
std::string attention_note(const PrefillStudy& st) {
    const KappaResult& r = st.result;
    const double a = st.attention.raw(), serial = r.ttft_serial + a;
    // The precision attention runs in on this GPU (BF16 where it has no FP8 math), as C_eff's is named.
    const DType runs = gemm_math_on(st.setup.hardware, st.setup.attention_math);
    const std::string math = runs == DType::bf16 ? "BF16" : to_string(runs);
    const bool given = st.setup.c_eff_from == "--prefill-flops";
    if (!(a > 0)) return "F_pf leaves attention out (the κ_crit paper's reading); this prefill has none to add";
    return fmt::format(
        "F_pf leaves attention out (the κ_crit paper's reading): this prefill's attention over K + T/2 keys per new "
        "token would add {:.1f} ms of GPU time at {} per GPU (η × the {} peak{}), as verdict's TTFT counts it; "
        "with it, {:.1f} ms serial, the link "
        "{:.0f}% "
        "of it",
        a * 1e3, format_flops(st.setup.attention_flops.raw()), math, given ? "; --prefill-flops sets the GEMMs' rate only" : "",
        serial * 1e3, serial > 0 ? 100 * r.t_link / serial : 0.0);
}

std::string scenario_text(const PrefillStudy& st) {
    const PrefillSetup& s = st.setup;
    const KappaResult& r = st.result;
    std::string t = fmt::format("Scenario\n  {} on {} x{} (C_eff {} per GPU: {}), link {} at {} per GPU, KV {}\n", s.model.name,
                                s.hardware.name, s.tp.gpus, format_flops(s.c_eff.raw()), s.c_eff_from, s.link_name,
                                format_bandwidth(s.link.raw()), to_string(s.kv));
    t += fmt::format("  workload {}: K = {:.0f} cached, T = {:.0f} new tokens\n", s.workload.name, s.workload.s_cached,
                     s.workload.a_append);
    const bool by_layer = st.b_kv.raw() != st.kv_copies * kv_bytes_per_token(s.model, s.kv).raw();
    t += fmt::format("  F_pf {:.4g} GFLOP/token, B_kv {:.0f} B/token{}{}\n\n", st.f_pf.raw() / 1e9, st.b_kv.raw(),
                     by_layer ? " (the KV K cached tokens hold, per token: window or linear layers)" : "",
                     st.kv_copies > 1
                         ? fmt::format(" (the group holds and reloads {:.3g} copies of each token's KV)", st.kv_copies)
                         : std::string());
    t += fmt::format("κ_M = {:.4g} FLOP/B, κ_HW = {:.4g} B/FLOP, κ_crit = {}\n", r.kappa_m, r.kappa_hw, fmt_kappa(r.kappa_crit));
    t += fmt::format("κ_ratio = K/T = {} -> {}\n", fmt_kappa(r.kappa_ratio), regime_name(r.regime));
    t += fmt::format("TTFT = {:.1f} ms link + {:.1f} ms GPU = {:.1f} ms serial (Eq. 3); at ov={:g}: {:.1f} ms\n", r.t_link * 1e3,
                     r.t_gpu * 1e3, r.ttft_serial * 1e3, s.ov, r.ttft * 1e3);
    t += attention_note(st) + "\n";
    if (std::isfinite(r.p_oh))
        t += fmt::format("P_OH = t_link / t_gpu = {:.3g}; GPU utilisation U = 1/(1+P_OH) = {:.1f}%\n", r.p_oh,
                         100 * r.utilisation);
    else
        t +=
            "P_OH = t_link / t_gpu: no new tokens (T = 0), so the GPU does no prefill work and the link is all of TTFT; U = 0%\n";
    if (st.scheduler) {
        const SchedulerResult& sc = *st.scheduler;
        t += fmt::format(
            "Scheduler (Eq. 9-10): VRAM {} holds N_max = {:.2f} such requests -> T_sched = {:.0f} of a {:.0f}-token budget "
            "({:.1f}%, {})\n",
            format_bytes(st.vram.raw()), sc.n_max, sc.t_sched, s.token_budget, 100 * sc.budget_utilisation,
            sc.vram_bound ? "VRAM-bound" : "budget-bound");
    } else if (!(s.workload.a_append > 0)) {
        t += "Scheduler (Eq. 9-10): no new tokens (T = 0), so there is no prefill to schedule\n";
    } else {
        t += st.vram.raw() < 0 ? fmt::format(
                                     "Scheduler (Eq. 9-10): no VRAM left for KV: the weights exceed the HBM by {} (--vram "
                                     "sets the KV budget)\n",
                                     format_bytes(-st.vram.raw()))
                               : "Scheduler (Eq. 9-10): no VRAM left for KV (--vram sets it)\n";
    }
    return t;
}

std::string scenario_markdown(const PrefillStudy& st) {
    const PrefillSetup& s = st.setup;
    const KappaResult& r = st.result;
    std::string md = fmt::format(
        "## Scenario\n\n{} on {} ×{}, link `{}` at {} per GPU, C_eff {} per GPU ({}); workload {} (K = {:.0f}, T = {:.0f}).\n\n",
        s.model.name, s.hardware.name, s.tp.gpus, s.link_name, format_bandwidth(s.link.raw()), format_flops(s.c_eff.raw()),
        s.c_eff_from, s.workload.name, s.workload.s_cached, s.workload.a_append);
    md +=
        "| κ_M (FLOP/B) | κ_HW (B/FLOP) | κ_crit | κ_ratio | regime | t_link | t_gpu | TTFT serial | P_OH | U |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
    md += fmt::format("| {:.4g} | {:.4g} | {} | {} | {} | {:.1f} ms | {:.1f} ms | {:.1f} ms | {} | {:.1f}% |\n\n", r.kappa_m,
                      r.kappa_hw, fmt_kappa(r.kappa_crit), fmt_kappa(r.kappa_ratio), regime_name(r.regime), r.t_link * 1e3,
                      r.t_gpu * 1e3, r.ttft_serial * 1e3, std::isfinite(r.p_oh) ? fmt::format("{:.3g}", r.p_oh) : "— (T = 0)",
                      100 * r.utilisation);
    md += attention_note(st) + "\n\n";
    if (s.ov > 0)  // the table's TTFT is serial (Eq. 3); the reload overlapping the compute is the answer asked for
        md += fmt::format("At ov = {:g} (the reload overlapping the compute): TTFT {:.1f} ms.\n\n", s.ov, r.ttft * 1e3);
    if (st.scheduler) {
        const SchedulerResult& sc = *st.scheduler;
        md += fmt::format(
            "Scheduler (Eq. 9–10): VRAM {} holds N_max = {:.2f} requests → T_sched = {:.0f} of {:.0f} tokens ({:.1f} %, {}).\n\n",
            format_bytes(st.vram.raw()), sc.n_max, sc.t_sched, s.token_budget, 100 * sc.budget_utilisation,
            sc.vram_bound ? "VRAM-bound" : "budget-bound");
    }
    return md;
}

// What the model what-ifs hold fixed: C_eff too, or each model's own GEMM precision.
std::string model_what_if_basis(const PrefillStudy& st) {
    return st.setup.c_eff_follows_weights ? "same link and GPU; C_eff at each checkpoint's own GEMM precision"
                                          : "same link, GPU and C_eff";
}

std::string what_ifs_text(const PrefillStudy& st) {
    std::string t = "\nWhat if the link were …\n";
    for (const LinkWhatIf& l : st.links)
        t += fmt::format("  {:<22} {:>9.1f} GB/s  κ_crit {:>7}  {:<15} link {:>5.1f}% of TTFT\n", l.link.name,
                         l.link.bandwidth.raw() / 1e9, fmt_kappa(l.result.kappa_crit), regime_name(l.result.regime),
                         100 * l.result.link_share);
    t += fmt::format("\nWhat if the model were … ({})\n", model_what_if_basis(st));
    for (const ModelWhatIf& m : st.models)
        t += fmt::format("  {:<16} {:<10} F_pf {:>7.1f} GFLOP  B_kv {:>7.0f} B  C_eff {:>6.0f} TF  κ_crit {:>7}  {}\n", m.name,
                         model_kind(m), m.f_pf.raw() / 1e9, m.b_kv.raw(), m.c_eff.raw() / 1e12, fmt_kappa(m.result.kappa_crit),
                         regime_name(m.result.regime));
    t += fmt::format("\nWorkloads against κ_crit {} (P_OH = κ_ratio / κ_crit)\n", fmt_kappa(st.result.kappa_crit));
    for (const WorkloadWhatIf& w : st.workloads)
        t += fmt::format("  {:<12} κ_ratio {:>7}  {:<15} P_OH {:>8.3g}  link {:>5.1f}% of TTFT\n", w.workload.name,
                         fmt_kappa(w.workload.kappa_ratio), regime_name(w.transfer_bound), w.p_oh, 100 * w.p_oh / (1 + w.p_oh));
    return t;
}

std::string what_ifs_markdown(const PrefillStudy& st) {
    std::string md =
        "## What if the link were …\n\n| link | GB/s | κ_crit | regime at this K/T | link share of TTFT "
        "|\n|---|---|---|---|---|\n";
    for (const LinkWhatIf& l : st.links)
        md += fmt::format("| {} | {:.1f} | {} | {} | {:.1f} % |\n", l.link.name, l.link.bandwidth.raw() / 1e9,
                          fmt_kappa(l.result.kappa_crit), regime_name(l.result.regime), 100 * l.result.link_share);
    md += fmt::format(
        "\n## What if the model were … ({})\n\n| model | attention | F_pf (GFLOP) | B_kv (B) | C_eff (TFLOP/s per GPU) | "
        "κ_crit | regime |\n|---|---|---|---|---|---|---|\n",
        model_what_if_basis(st));
    for (const ModelWhatIf& m : st.models)
        md += fmt::format("| {} | {} | {:.1f} | {:.0f} | {:.0f} | {} | {} |\n", m.name, model_kind(m), m.f_pf.raw() / 1e9,
                          m.b_kv.raw(), m.c_eff.raw() / 1e12, fmt_kappa(m.result.kappa_crit), regime_name(m.result.regime));
    md += fmt::format(
        "\n## Workloads against κ_crit {}\n\n| workload | κ_ratio (median) | regime | P_OH | link share | source "
        "|\n|---|---|---|---|---|---|\n",
        fmt_kappa(st.result.kappa_crit));
    for (const WorkloadWhatIf& w : st.workloads)
        md += fmt::format("| {} | {} | {} | {:.3g} | {:.1f} % | {} |\n", w.workload.name, fmt_kappa(w.workload.kappa_ratio),
                          regime_name(w.transfer_bound), w.p_oh, 100 * w.p_oh / (1 + w.p_oh), w.workload.source);
    return md;
}

}  // namespace

std::string prefill_answer(const PrefillStudy& st) {
    const KappaResult& r = st.result;
    const std::string cmp = r.regime == PrefillRegime::transfer_bound ? ">" : "<=";
    // κ_crit is a ratio of the hardware and the model; a TTFT assumes the request runs, which it cannot where
    // the group's HBM does not hold the weights.
    const std::string runs =
        st.vram.raw() > 0 ? std::string()
        : st.vram.raw() < 0
            ? fmt::format("; no request runs here: the weights exceed the HBM of {} GPU(s) by {} (the TTFT is a what-if)",
                          st.setup.tp.gpus, format_bytes(-st.vram.raw()))
            : std::string("; no request runs here: the weights leave no HBM for KV (the TTFT is a what-if)");
    return fmt::format("PREFILL: {} — κ_ratio {} {} κ_crit {}; {:.0f}% of TTFT is the link{}", regime_name(r.regime),
                       fmt_kappa(r.kappa_ratio), cmp, fmt_kappa(r.kappa_crit), 100 * r.link_share, runs);
}

std::string prefill_text(const PrefillStudy& st) {
    std::string t = fmt::format("kvroof {} — prefill κ_crit (reload cached KV over the link vs compute)\n\n", KVROOF_VERSION);
    if (st.table) t += table_text(st);
    t += scenario_text(st) + what_ifs_text(st);
    return t + "\n" + prefill_answer(st) + "\n";
}

std::string prefill_markdown(const PrefillStudy& st, const GivenFlags& given) {
    std::string md = fmt::format("# kvroof prefill κ_crit\n\nGenerated by kvroof {} (`kvroof prefill", KVROOF_VERSION);
    for (const auto& [k, v] : given) md += fmt::format(" {} \"{}\"", k, v);
    md += "`).\n\n";
    if (st.table) md += table_markdown(st);
    md += scenario_markdown(st) + what_ifs_markdown(st);
    return md + "\n**" + prefill_answer(st) + "**\n";
}

json prefill_json(const PrefillStudy& st, const GivenFlags& given_flags) {
    const PrefillSetup& s = st.setup;
    json whatif_links = json::array(), whatif_models = json::array(), workloads = json::array();
    for (const LinkWhatIf& l : st.links)
        whatif_links.push_back(
            {{"link", l.link.name}, {"bandwidth_bytes_per_s", l.link.bandwidth.raw()}, {"result", result_json(l.result)}});
    for (const ModelWhatIf& m : st.models)
        whatif_models.push_back(
            {{"model", m.name}, {"prefill_flops_per_gpu_per_s", m.c_eff.raw()}, {"result", result_json(m.result)}});
    for (const WorkloadWhatIf& w : st.workloads)
        workloads.push_back({{"workload", w.workload.name},
                             {"kappa_ratio", w.workload.kappa_ratio},
                             {"p_oh", w.p_oh},
                             {"link_share", w.link_share}});
    json given = json::object();
    for (const auto& [k, v] : given_flags) given[k] = v;
    const std::optional<SchedulerResult>& sched = st.scheduler;
    json out = {{"tool", "kvroof"},
                {"version", KVROOF_VERSION},
                {"command", "prefill"},
                {"inputs",
                 {{"hardware", s.hardware.name},
                  {"model", s.model.name},
                  {"workload", {{"name", s.workload.name}, {"k_cached", s.workload.s_cached}, {"t_new", s.workload.a_append}}},
                  {"link", s.link_name},
                  {"link_bandwidth_bytes_per_s", s.link.raw()},
                  {"prefill_flops_per_s", s.c_eff.raw()},
                  {"prefill_flops_from", s.c_eff_from},
                  {"gpus", s.tp.gpus},
                  {"kv_dtype", to_string(s.kv)},
                  {"f_pf_flop_per_token", st.f_pf.raw()},
                  {"attention_gpu_s", st.attention.raw()},
                  {"b_kv_bytes_per_token", st.b_kv.raw()},
                  {"kv_copies", st.kv_copies},
                  {"ov", s.ov},
                  {"vram_bytes", st.vram.raw() > 0 ? json(st.vram.raw()) : json(nullptr)},  // none left for KV: null
                  {"token_budget", s.token_budget},
                  {"given", given}}},
                {"result", result_json(st.result)},
                {"scheduler", sched ? json{{"n_max", sched->n_max},
                                           {"t_sched", sched->t_sched},
                                           {"budget_utilisation", sched->budget_utilisation},
                                           {"vram_bound", sched->vram_bound}}
                                    : json(nullptr)},
                {"what_if_links", whatif_links},
                {"what_if_models", whatif_models},
                {"workloads", workloads},
                {"answer", prefill_answer(st)}};
    if (st.table) {
        json table = json::array();
        for (const KappaTableCells& row : st.table_rows) {
            json cells = json::object();
            for (size_t i = 0; i < row.kappa_crit.size(); ++i) cells[st.table_models[i]] = row.kappa_crit[i];
            table.push_back({{"label", row.row.label},
                             {"hardware", row.row.hardware},
                             {"link", row.row.link},
                             {"bandwidth_bytes_per_s", row.row.bandwidth.raw()},
                             {"prefill_flops_per_s", row.row.c_eff.raw()},
                             {"kappa_crit", cells}});
        }
        out["kappa_table"] = table;
    }
    return out;
}

}  // namespace kvroof::io
