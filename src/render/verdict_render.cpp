// SPDX-License-Identifier: MIT
// `kvroof verdict` as text, JSON and markdown, from one VerdictReport.
#include "kvroof/io/verdict_render.hpp"

#include "kvroof/io/ladder_render.hpp"
#include "kvroof/io/parse.hpp"
#include "render_util.hpp"

namespace kvroof::io {
namespace {

using nlohmann::json;
using render::finite_or_null;
using render::fmt_batch;
using render::fmt_gain;
using render::fmt_ms;
using render::point_summary;
using render::shown_f;

std::string infeasible_reason(const ServingPoint& p, const ScenarioFacts& facts) {
    const Scenario& sc = facts.scenario;
    if (p.binding == Resource::slo_ttft && sc.policy.slo_ttft) {
        double worst = 0;
        for (size_t i = 0; i < sc.mix.entries.size(); ++i) worst = std::max(worst, p.ttft_class[i]);
        return fmt::format("TTFT {} exceeds the TTFT SLO {}", fmt_ms(worst), fmt_ms(sc.policy.slo_ttft->raw()));
    }
    if (p.batch_limit == Resource::slo_tpot && sc.policy.slo_tpot)
        return fmt::format("even an empty decode step ({}) exceeds the TPOT SLO {}", fmt_ms(facts.empty_step.raw()),
                           fmt_ms(sc.policy.slo_tpot->raw()));
    return fmt::format("no batch fits ({})", name(p.batch_limit));
}

std::string does_not_fit_line(const Verdict& v, const ScenarioFacts& facts) {
    const Scenario& sc = facts.scenario;
    if (chosen_f_does_not_fit(v)) return render::chosen_f_misfit_line(v, facts);
    if (v.session_does_not_fit) {
        const std::string where =
            sc.policy.idle == IdlePolicy::park
                ? fmt::format("CPU DRAM {} (idle sessions are parked there whole)", format_bytes(facts.cpu_memory.raw()))
                : fmt::format("free HBM {} + CPU DRAM {} at any f", format_bytes(facts.hbm_free.raw()),
                              format_bytes(facts.cpu_memory.raw()));
        const std::string copies = facts.kv_replication > 1 ? fmt::format(" (held {:.3g} times in HBM)", facts.kv_replication)
                                   : facts.kv_session_span > 1
                                       ? fmt::format(" (held by one GPU of {}: data-parallel attention)", facts.kv_session_span)
                                       : std::string();
        return fmt::format("VERDICT: DOES NOT FIT — one session's KV {}{} exceeds {}", format_bytes(facts.session_kv_max.raw()),
                           copies, where);
    }
    const HardwareSpec& hw = sc.hardware;
    const int pp = hw.deployment.pp, L = sc.model.layers;
    const std::string stages = pp > 1 ? fmt::format(", x {:.4g}: {} pipeline stages, the busiest holding {} of {} layers",
                                                    pipeline_of(hw, sc.model).capacity_scale, pp, (L + pp - 1) / pp, L)
                                      : std::string();
    return fmt::format("VERDICT: DOES NOT FIT — weights {} > HBM {} usable ({} x {} GPU(s) minus {} reserve each{})",
                       format_bytes(facts.weights.raw()), format_bytes(facts.hbm_usable.raw()), hw.deployment.gpus,
                       format_bytes(hw.gpu.hbm_capacity.raw()), format_bytes(hw.gpu.hbm_reserve.raw()), stages);
}

std::string capacity_text(const ScenarioFacts& facts) {
    const bool weights_fit = facts.hbm_free.raw() > 0;
    std::string s =
        weights_fit ? fmt::format("Capacity\n  HBM {} usable - weights {} = {} for KV\n", format_bytes(facts.hbm_usable.raw()),
                                  format_bytes(facts.weights.raw()), format_bytes(facts.hbm_free.raw()))
                    : fmt::format("Capacity\n  HBM {} usable < weights {}: the weights do not fit, nothing is left for KV\n",
                                  format_bytes(facts.hbm_usable.raw()), format_bytes(facts.weights.raw()));
    if (facts.kv_replication > 1) {
        const ModelSpec& m = facts.scenario.model;
        const int gpus = facts.scenario.hardware.deployment.gpus;
        s += m.attention == Attention::gqa
                 ? fmt::format("  HBM holds each token's KV {:.3g} times: {} GPUs share {} KV heads{}\n", facts.kv_replication,
                               gpus, m.kv_heads,
                               m.full_kv() != m.kv_heads
                                   ? fmt::format(" ({} in the full-attention layers; the larger factor is charged)", m.full_kv())
                                   : std::string())
                 : fmt::format("  HBM holds each token's KV {} times: each of the {} GPUs holds the whole MLA latent\n", gpus,
                               gpus);
    }
    if (facts.weights_replicated.raw() > 0)
        s += fmt::format(
            "  data-parallel attention: each GPU holds only its own sessions' latent; the weights include {} "
            "of attention (and shared-expert) copies, {} per GPU\n",
            format_bytes(facts.weights_replicated.raw()),
            format_bytes(facts.weights_replicated.raw() / facts.scenario.hardware.deployment.gpus));
    if (facts.weights_uneven.raw() > 0) {
        const int e = facts.scenario.hardware.deployment.ep, E = facts.scenario.model.experts;
        s += fmt::format(
            "  EP {} over {} routed experts: the busiest GPU holds {} of them ({:.4g}x the mean {:.4g}); the weights "
            "include {} for every GPU holding as many\n",
            e, E, (E + e - 1) / e, facts.expert_load, static_cast<double>(E) / e, format_bytes(facts.weights_uneven.raw()));
    }
    for (const ClassFit& c : facts.classes)
        if (!weights_fit)
            s += fmt::format("  {}: one session's KV at S={:.0f} is {}; {:.1f} sessions in CPU DRAM\n", c.name, c.context,
                             format_bytes(c.session_kv.raw()), c.dram_sessions);
        else
            s += fmt::format(
                "  {}: one session's KV at S={:.0f} is {} -> {:.2f} resident sessions fit in HBM, {:.1f} in CPU DRAM{}\n", c.name,
                c.context, format_bytes(c.session_kv.raw()), c.hbm_sessions, c.dram_sessions,
                // The solved mode holds a call's context at S (seed 000); one that outgrows HBM as it decodes is named.
                c.hbm_sessions >= 1 && c.hbm_sessions_end < 1
                    ? fmt::format("; at the end of its call (S + O) {:.2f} fit: an engine would preempt it at f = 0, which "
                                  "this solved mode (context held at S) does not see; `--concurrency` and `kvroof sim` do",
                                  c.hbm_sessions_end)
                    : std::string());
    return s;
}

// A lever alone as the VERDICT names it: the ladder's rung label without its "+ ".
std::string lever_name(const LadderRung& l) {
    const std::string label = rung_label(l);
    return label.rfind("+ ", 0) == 0 ? label.substr(2) : label;
}

// A lever's gain; where the scenario serves nothing, what the lever does: where it did not fit, it fits; where
// it fit but no batch met the SLOs, it serves.
std::string lever_gain(const LadderRung& l, VerdictKind kind) {
    if (std::isfinite(l.gain)) return fmt::format("{:.2f}×", l.gain);
    return kind == VerdictKind::does_not_fit ? "makes it fit" : "makes it serve";
}

std::string levers_text(const VerdictReport& r) {
    if (r.levers.empty()) return "";
    std::string s = "\nEach lever alone (tok/s per GPU at ov=0 over the scenario as given)\n";
    for (const LadderRung& l : r.levers)
        s += fmt::format("  {:<44} {:<18} {:>10.1f} tok/s per GPU  {}\n", lever_name(l), rung_flag(l), l.per_gpu_conservative,
                         lever_gain(l, r.verdict.kind));
    return s;
}

std::string band_text(const VerdictReport& r) {
    const Verdict& v = r.verdict;
    const auto& b = v.baseline;
    std::string s = "Without offload (f = 0)\n";
    s += fmt::format("  {}\n", point_summary(b.conservative));
    s += fmt::format("  batch limited by {} (b_cap_hbm {}, b_cap_dram {}, b_slo {})\n", name(b.conservative.batch_limit),
                     fmt_batch(b.conservative.b_cap_hbm), fmt_batch(b.conservative.b_cap_dram), fmt_batch(b.conservative.b_slo));
    s += fmt::format("  time bound by {} ({}); batch limited by {} ({})\n", time_words(b.conservative.binding),
                     name(b.conservative.binding), limit_words(b.conservative.batch_limit), name(b.conservative.batch_limit));
    s += fmt::format("  what to act on: {}\n", meaning(b.conservative.headline));
    if (!b.conservative.session_fits && v.smallest_f_that_fits)
        s += fmt::format("  one session of the longest class does not fit at f = 0: it needs f >= {}\n",
                         render::f_flag(*v.smallest_f_that_fits, *v.smallest_f_that_fits, 3));
    const double shown[] = {b.conservative.batch, v.best_conservative.batch, v.best_optimistic.batch};
    if (std::any_of(std::begin(shown), std::end(shown), [](double x) { return std::isfinite(x) && x != std::floor(x); }))
        s += "  (a batch is the mean number of sequences decoding in a step, a fluid mean; below 1, a session decodes part of "
             "the time)\n";
    s += "\nBest offload fraction\n";
    s += fmt::format("  bankable  (ov=0, no overlap):      f*={} -> {} ({})\n", shown_f(v, v.best_conservative.f, 3),
                     point_summary(v.best_conservative), fmt_gain(gain(v.best_conservative, b.conservative)));
    s += fmt::format("  pipelined (ov=1, perfect overlap): f*={} -> {} ({})\n", shown_f(v, v.best_optimistic.f, 3),
                     point_summary(v.best_optimistic), fmt_gain(gain(v.best_optimistic, b.optimistic)));
    s += fmt::format("  a gain under {:.1f} % is MARGINAL: kvroof's median error on a gain (outputs/accuracy.md)\n\n",
                     100 * kGainUncertainty);
    s += fmt::format("Band at f={}{}\n", shown_f(v, v.f, 3), v.f_fixed ? " (chosen with --f)" : "");
    s += fmt::format("  conservative (ov=0): {} -> {}\n", point_summary(v.at_f.conservative), fmt_gain(v.gain_conservative));
    s += fmt::format("  optimistic   (ov=1): {} -> {}\n", point_summary(v.at_f.optimistic), fmt_gain(v.gain_optimistic));
    if (r.at_ov)
        s += fmt::format("  at ov={:g}:          {} -> {}\n", r.at_ov->ov, point_summary(*r.at_ov),
                         fmt_gain(gain(*r.at_ov, *r.base_at_ov)));
    if (v.f > 0 && v.at_f.conservative.feasible)
        s += fmt::format("  at f={}: time bound by {}; batch limited by {}\n", shown_f(v, v.f, 3),
                         time_words(v.at_f.conservative.binding), limit_words(v.at_f.conservative.batch_limit));
    s += "\nIdle sessions\n";
    s += fmt::format("  the verdict assumes idle sessions {} (--idle {})\n",
                     v.idle == IdlePolicy::hold ? "keep their KV in HBM" : "park their KV in CPU DRAM", to_string(v.idle));
    if (std::isnan(v.parking_gain_conservative) && std::isnan(v.parking_gain_optimistic))
        s += "  parking alone (f=0, no attention offload): serves nothing, held or parked\n";
    else
        s += fmt::format("  parking alone (f=0, no attention offload): {} (no overlap) .. {} (perfect overlap), {:.1f} tok/s\n",
                         fmt_gain(v.parking_gain_conservative), fmt_gain(v.parking_gain_optimistic),
                         v.parked_baseline.conservative.throughput);
    s += levers_text(r);
    return s;
}

std::string calibration_text(const Calibration& c) {
    std::string s = "\nCalibration\n";
    if (c.ov) {
        s += fmt::format("  measured {:.1f} tok/s at f={:.3f} -> ov = {:.3f}; calibrated gain {}\n", c.measured_tps, c.f, *c.ov,
                         fmt_gain(c.calibrated_gain));
        if (c.best_at_ov)
            s += fmt::format("  at ov={:.3f} the best f is {:.3f}: {}\n", *c.ov, c.best_at_ov->f, point_summary(*c.best_at_ov));
    } else {
        s += fmt::format(
            "  measured {:.1f} tok/s lies outside the band [{:.1f} .. {:.1f}] at f={:.3f}: something other than "
            "overlap is off (efficiency, bandwidth or the workload)\n",
            c.measured_tps, c.band_low, c.band_high, c.f);
    }
    return s;
}

// The two offload facts, each at its own f and its own end of the band.
std::string offload_facts(const Verdict& v) {
    const bool fits0 = v.baseline.conservative.session_fits;
    auto one = [&](const char* what, const ServingPoint& p, double g, const char* ov) {
        const std::string at = v.f_fixed ? "the chosen f=" + shown_f(v, v.f) : "f=" + shown_f(v, p.f);
        return fits0 ? fmt::format("{} {} at {} ({})", what, fmt_gain(g), at, ov)
                     : fmt::format("{} {:.1f} tok/s at {} ({})", what, p.throughput, at, ov);
    };
    const ServingPoint& con = v.f_fixed ? v.at_f.conservative : v.best_conservative;
    const ServingPoint& opt = v.f_fixed ? v.at_f.optimistic : v.best_optimistic;
    std::string s = "offload: " + one("bankable", con, v.gain_bankable, "no overlap") + ", " +
                    one("pipelined", opt, v.gain_pipelined, "perfect overlap");
    if (!fits0) s += ", where f=0 holds no session";
    return s;
}

// "; best lever: park idle sessions in CPU DRAM (--idle park) 1.32×", or that none gains.
std::string lever_clause(const VerdictReport& r) {
    if (r.levers.empty() || !(r.levers.front().gain > 1.0))
        return r.verdict.kind == VerdictKind::does_not_fit ? "; no single lever makes it fit"
               : r.verdict.kind == VerdictKind::infeasible ? "; no single lever makes it serve"
                                                           : "; no single lever gains";
    const LadderRung& best = r.levers.front();
    const std::string g =
        std::isfinite(best.gain) ? lever_gain(best, r.verdict.kind) + " per GPU" : lever_gain(best, r.verdict.kind);
    return fmt::format("; best lever: {} ({}) {}{}", lever_name(best), rung_flag(best), g,
                       best.gain < 1.0 + kGainUncertainty ? " (marginal)" : "");
}

}  // namespace

std::string verdict_line(const VerdictReport& r) {
    const Verdict& v = r.verdict;
    const auto& b = v.baseline.conservative;
    if (v.kind == VerdictKind::does_not_fit) return does_not_fit_line(v, r.facts) + lever_clause(r);
    if (v.kind == VerdictKind::infeasible) return fmt::format("VERDICT: INFEASIBLE — {}", infeasible_reason(b, r.facts));
    const std::string sparse =
        r.facts.scenario.policy.sparse < 1 ? fmt::format(" (sparse={:g})", r.facts.scenario.policy.sparse) : std::string();
    std::string head;
    switch (v.kind) {
        case VerdictKind::offload: head = fmt::format("OFFLOAD f={}{}", shown_f(v, v.f), sparse); break;
        case VerdictKind::offload_with_overlap:
            head = fmt::format("OFFLOAD ONLY WITH OVERLAP f={}{}", shown_f(v, v.f), sparse);
            break;
        case VerdictKind::marginal:
            head = fmt::format("MARGINAL{} (offload gains under {:.1f} %, kvroof's median error on a gain)", sparse,
                               100 * kGainUncertainty);
            break;
        default: head = fmt::format("KEEP KV ON GPU{}", sparse); break;
    }
    return fmt::format("VERDICT: {} — {}{}; at f=0 time bound by {}, batch limited by {}", head, offload_facts(v),
                       lever_clause(r), time_words(b.binding), limit_words(b.batch_limit));
}

std::string render_verdict_text(const VerdictReport& r, const BuiltScenario& built) {
    const Verdict& v = r.verdict;
    std::string s = fmt::format("kvroof {} — verdict\n\n", KVROOF_VERSION);
    s += render::inputs_text(built, r.facts) + "\n" + capacity_text(r.facts) + "\n";
    if (v.kind != VerdictKind::does_not_fit || chosen_f_does_not_fit(v)) s += band_text(r);
    if (v.calibration) s += calibration_text(*v.calibration);
    s += "\n";
    s += verdict_line(r);
    s += "\n";
    return s;
}

namespace {
json lever_json(const LadderRung& l) {
    return {{"lever", lever_name(l)},
            {"flag", rung_flag(l)},
            {"tok_per_s_per_gpu", l.per_gpu_conservative},
            {"gain_per_gpu", finite_or_null(l.gain)},
            {"marginal", l.gain < 1.0 + kGainUncertainty}};
}

// The VERDICT's facts, each its own object: the two offload ends at their own
// f, what the time is bound by and what limits the batch (two vocabularies),
// and the levers alone, best first.
void add_decision_json(json& j, const VerdictReport& r) {
    const Verdict& v = r.verdict;
    const ServingPoint& con = v.f_fixed ? v.at_f.conservative : v.best_conservative;
    const ServingPoint& opt = v.f_fixed ? v.at_f.optimistic : v.best_optimistic;
    const ServingPoint& b = v.baseline.conservative;
    j["verdict"]["offload"] = {
        {"bankable", {{"f", con.f}, {"ov", 0}, {"gain", finite_or_null(v.gain_bankable)}, {"tok_per_s", con.throughput}}},
        {"pipelined", {{"f", opt.f}, {"ov", 1}, {"gain", finite_or_null(v.gain_pipelined)}, {"tok_per_s", opt.throughput}}},
        {"marginal_below_gain", 1.0 + kGainUncertainty}};
    j["verdict"]["time_bound_by"] = {{"resource", name(b.binding)}, {"words", time_words(b.binding)}};
    j["verdict"]["batch_limited_by"] = {{"limit", name(b.batch_limit)}, {"words", limit_words(b.batch_limit)}};
    json levers = json::array();
    for (const LadderRung& l : r.levers) levers.push_back(lever_json(l));
    j["verdict"]["best_lever"] = r.levers.empty() || !(r.levers.front().gain > 1.0) ? json(nullptr) : levers.front();
    j["verdict"]["levers"] = std::move(levers);
}
}  // namespace

json verdict_json(const VerdictReport& r, const BuiltScenario& built) {
    const Verdict& v = r.verdict;
    json j{
        {"tool", "kvroof"},
        {"version", KVROOF_VERSION},
        {"command", "verdict"},
        {"inputs", inputs_json(built, r.facts)},
        {"baseline", {{"conservative", point_json(v.baseline.conservative)}, {"optimistic", point_json(v.baseline.optimistic)}}},
        {"best_conservative", point_json(v.best_conservative)},
        {"best_optimistic", point_json(v.best_optimistic)},
        {"at_f", {{"conservative", point_json(v.at_f.conservative)}, {"optimistic", point_json(v.at_f.optimistic)}}},
        {"gain", {{"conservative", finite_or_null(v.gain_conservative)}, {"optimistic", finite_or_null(v.gain_optimistic)}}},
        {"idle",
         {{"policy", to_string(v.idle)},
          {"parked_baseline",
           {{"conservative", point_json(v.parked_baseline.conservative)},
            {"optimistic", point_json(v.parked_baseline.optimistic)}}},
          {"parking_gain",
           {{"conservative", finite_or_null(v.parking_gain_conservative)},
            {"optimistic", finite_or_null(v.parking_gain_optimistic)}}}}},
        {"verdict",
         {{"kind", name(v.kind)},
          {"f", v.f},
          {"f_fixed", v.f_fixed},
          {"smallest_f_that_fits", v.smallest_f_that_fits ? json(*v.smallest_f_that_fits) : json(nullptr)},
          {"line", verdict_line(r)}}}};
    add_decision_json(j, r);
    if (r.at_ov) j["at_ov"] = point_json(*r.at_ov);
    if (v.calibration) {
        const auto& c = *v.calibration;
        j["calibration"] = {{"measured_tok_per_s", c.measured_tps},
                            {"f", c.f},
                            {"ov", c.ov ? json(*c.ov) : json(nullptr)},
                            {"inside_band", c.ov.has_value()},
                            {"band_tok_per_s", {c.band_low, c.band_high}},
                            {"calibrated_gain", c.ov ? json(c.calibrated_gain) : json(nullptr)},
                            {"best_at_ov", c.best_at_ov ? point_json(*c.best_at_ov) : json(nullptr)}};
    }
    return j;
}

namespace {
std::string md_point_row(const char* label, const ServingPoint& p, double g) {
    // ITL (what --slo-tpot bounds, the step with its interleaved prefill) beside the bare step; none where no batch runs.
    return fmt::format("| {} | {:.3f} | {:g} | {:.1f} | {} | {} | {} | {} | {} | {} | {} |\n", label, p.f, p.ov, p.throughput,
                       fmt_gain(g), fmt_batch(p.batch), render::fmt_ms_if(p.feasible, p.tpot_observed),
                       render::fmt_ms_if(p.feasible, p.tpot), fmt_ms(p.ttft), time_words(p.binding), limit_words(p.batch_limit));
}
constexpr const char* kPointHeader =
    "| point | f | ov | tok/s | gain | batch | ITL | step | TTFT | time bound by | batch limited by "
    "|\n|---|---|---|---|---|---|---|---|---|---|---|\n";

std::string band_markdown(const VerdictReport& r) {
    const Verdict& v = r.verdict;
    std::string s = "## Throughput band\n\n";
    s += kPointHeader;
    s += md_point_row("f = 0, ov = 0", v.baseline.conservative, gain(v.baseline.conservative, v.baseline.conservative));
    s += md_point_row("f = 0, ov = 1", v.baseline.optimistic, gain(v.baseline.optimistic, v.baseline.optimistic));
    s += md_point_row("bankable: f\\*_con, ov = 0", v.best_conservative, gain(v.best_conservative, v.baseline.conservative));
    s += md_point_row("pipelined: f\\*_opt, ov = 1", v.best_optimistic, gain(v.best_optimistic, v.baseline.optimistic));
    s += md_point_row("chosen f, ov = 0", v.at_f.conservative, v.gain_conservative);
    s += md_point_row("chosen f, ov = 1", v.at_f.optimistic, v.gain_optimistic);
    s += fmt::format(
        "\nThe bankable and pipelined rows are each at their own best f. A gain under {:.1f} % is MARGINAL: it is "
        "kvroof's median error on a gain (outputs/accuracy.md). What to act on at f = 0: {}.\n",
        100 * kGainUncertainty, meaning(v.baseline.conservative.headline));
    s += fmt::format(
        "\n## Idle sessions\n\nThe verdict assumes `--idle {}`. Parking idle sessions' KV in CPU DRAM alone "
        "(f = 0) gives {} (no overlap) .. {} (perfect overlap).\n",
        to_string(v.idle), fmt_gain(v.parking_gain_conservative), fmt_gain(v.parking_gain_optimistic));
    if (!r.levers.empty()) {
        s += "\n## Each lever alone\n\n| lever | flag | tok/s per GPU (ov = 0) | gain per GPU |\n|---|---|---|---|\n";
        for (const LadderRung& l : r.levers)
            s += fmt::format("| {} | `{}` | {:.1f} | {} |\n", lever_name(l), rung_flag(l), l.per_gpu_conservative,
                             lever_gain(l, r.verdict.kind));
    }
    return s;
}
}  // namespace

std::string render_verdict_markdown(const VerdictReport& r, const BuiltScenario& built, const std::string& command) {
    const Verdict& v = r.verdict;
    std::string s = fmt::format("# kvroof verdict\n\nGenerated by kvroof {} ({}).\n\n", KVROOF_VERSION,
                                command.empty() ? "`kvroof verdict`" + render::overrides_echo(built) : "`" + command + "`");
    s += fmt::format("**{}**\n\n", verdict_line(r));
    s += "## Inputs\n\n```\n" + render::inputs_text(built, r.facts) + "```\n\n## Capacity\n\n```\n" + capacity_text(r.facts) +
         "```\n\n";
    if (v.kind != VerdictKind::does_not_fit || chosen_f_does_not_fit(v)) s += band_markdown(r);
    if (v.calibration) {
        const auto& c = *v.calibration;
        s += "\n## Calibration\n\n";
        if (c.ov)
            s += fmt::format("Measured {:.1f} tok/s at f = {:.3f} fits ov = {:.3f}; calibrated gain {}.\n", c.measured_tps, c.f,
                             *c.ov, fmt_gain(c.calibrated_gain));
        else
            s += fmt::format("Measured {:.1f} tok/s lies outside the band [{:.1f} .. {:.1f}] at f = {:.3f}.\n", c.measured_tps,
                             c.band_low, c.band_high, c.f);
    }
    return s;
}

}  // namespace kvroof::io
