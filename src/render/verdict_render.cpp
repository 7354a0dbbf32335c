// SPDX-License-Identifier: MIT
#include "kvroof/io/verdict_render.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kvroof/io/parse.hpp"

namespace kvroof::io {
namespace {

using nlohmann::json;

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string fmt_batch(double b) { return std::isfinite(b) ? fmt::format("{:.2f}", b) : "unbounded"; }
// A gain over a baseline that serves nothing is undefined, not infinite.
std::string fmt_gain(double g) { return std::isfinite(g) ? fmt::format("{:.2f}×", g) : "— (f=0 serves nothing)"; }
std::string fmt_ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }

std::string sparse_tag(const Scenario& sc) { return fmt::format("sparse={:g}", sc.policy.sparse); }

std::string infeasible_reason(const ServingPoint& p, const Scenario& sc, const PreparedScenario& ps) {
    if (p.binding == Resource::slo_ttft && sc.policy.slo_ttft) {
        double worst = 0;
        for (size_t i = 0; i < sc.mix.entries.size(); ++i) worst = std::max(worst, p.ttft_class[i]);
        return fmt::format("TTFT {} exceeds the TTFT SLO {}", fmt_ms(worst), fmt_ms(sc.policy.slo_ttft->raw()));
    }
    if (p.batch_limit == Resource::slo_tpot && sc.policy.slo_tpot) {
        const double floor = ps.mc.weights_read(0.0).raw() / ps.sys.hbm_bandwidth.raw();
        return fmt::format("even an empty decode step ({}) exceeds the TPOT SLO {}", fmt_ms(floor), fmt_ms(sc.policy.slo_tpot->raw()));
    }
    return fmt::format("no batch fits ({})", name(p.batch_limit));
}

std::string point_summary(const ServingPoint& p) {
    if (!p.feasible) return "infeasible";
    return fmt::format("{:.1f} tok/s (batch {}, TPOT {}, TTFT {}, binding {})", p.throughput, fmt_batch(p.batch),
                       fmt_ms(p.tpot), fmt_ms(p.ttft), name(p.binding));
}

}  // namespace

std::string verdict_line(const Verdict& v, const Scenario& sc) {
    const auto& b = v.baseline.conservative;
    if (v.kind == VerdictKind::does_not_fit && v.session_does_not_fit) {
        const PreparedScenario ps(sc);
        const std::string where =
            sc.policy.idle == IdlePolicy::park
                ? fmt::format("CPU DRAM {} (idle sessions are parked there whole)", format_bytes(ps.sys.cpu_memory.raw()))
                : fmt::format("free HBM {} + CPU DRAM {} at any f", format_bytes(ps.hbm_free_bytes()),
                              format_bytes(ps.sys.cpu_memory.raw()));
        return fmt::format("VERDICT: DOES NOT FIT — one session's KV {} exceeds {}", format_bytes(ps.session_kv_max), where);
    }
    if (v.kind == VerdictKind::does_not_fit) {
        const PreparedScenario ps(sc);
        return fmt::format("VERDICT: DOES NOT FIT — weights {} > HBM {} usable ({} x {} GPU(s) minus {} reserve each)",
                           format_bytes(ps.mc.weights.raw()), format_bytes(ps.sys.hbm_capacity.raw()), sc.hardware.gpus,
                           format_bytes(sc.hardware.hbm_capacity.raw()), format_bytes(sc.hardware.hbm_reserve.raw()));
    }
    if (v.kind == VerdictKind::infeasible) {
        const PreparedScenario ps(sc);
        return fmt::format("VERDICT: INFEASIBLE — {}", infeasible_reason(b, sc, ps));
    }
    // Where f = 0 cannot hold one session, a gain over it has no meaning: give the throughput offload makes possible.
    const std::string band =
        b.session_fits ? fmt::format("{} (no overlap) .. {} (perfect overlap)", fmt_gain(v.gain_conservative),
                                     fmt_gain(v.gain_optimistic))
                       : fmt::format("{:.1f} (no overlap) .. {:.1f} (perfect overlap) tok/s where f=0 cannot hold one session",
                                     v.at_f.conservative.throughput, v.at_f.optimistic.throughput);
    const std::string tail = fmt::format("binding at f=0: {}", name(b.headline));
    switch (v.kind) {
        case VerdictKind::offload:
            return fmt::format("VERDICT: OFFLOAD f={:.2f} ({}) — {}; {}", v.f, sparse_tag(sc), band, tail);
        case VerdictKind::offload_with_overlap:
            return fmt::format("VERDICT: OFFLOAD ONLY WITH OVERLAP f={:.2f} ({}) — {}; the gain needs a layer-ahead pipeline; {}",
                               v.f, sparse_tag(sc), band, tail);
        default:
            return fmt::format("VERDICT: KEEP KV ON GPU — {} f={:.2f} ({}) gives {}; {}", v.f_fixed ? "the chosen" : "the best",
                               v.f, sparse_tag(sc), band, tail);
    }
}

json point_json(const ServingPoint& p) {
    json u = json::object();
    for (size_t i = 0; i < kRateResources.size(); ++i) u[std::string(name(kRateResources[i]))] = p.util_sec[static_cast<int>(i)];
    json share = json::object();
    for (size_t i = 0; i < kRateResources.size(); ++i)
        share[std::string(name(kRateResources[i]))] = p.timeline_share[static_cast<int>(i)];
    return json{{"f", p.f},
                {"ov", p.ov},
                {"fits", p.fits},
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

json inputs_json(const BuiltScenario& b) {
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
    const auto pc = param_counts(m);
    return json{
        {"hardware",
         {{"preset", hw.name},
          {"gpus", hw.gpus},
          {"gpu_flops_per_s", hw.gpu_flops.raw()},
          {"hbm_capacity_bytes", hw.hbm_capacity.raw()},
          {"hbm_bandwidth_bytes_per_s", hw.hbm_bandwidth.raw()},
          {"hbm_reserve_bytes", hw.hbm_reserve.raw()},
          {"nvlink_bandwidth_bytes_per_s", hw.nvlink_bandwidth.raw()},
          {"link", hw.link_name},
          {"link_bandwidth_bytes_per_s", hw.link_bandwidth.raw()},
          {"host", hw.cpu_name},
          {"cpus_per_gpu", hw.cpus_per_gpu},
          {"cpu_flops_per_s", hw.cpu_flops.raw()},
          {"cpu_dram_bandwidth_bytes_per_s", hw.cpu_dram_bandwidth.raw()},
          {"cpu_memory_bytes", hw.cpu_memory.raw()},
          {"eta_compute", hw.eta_compute},
          {"eta_mem", hw.eta_mem}}},
        {"model",
         {{"name", m.name},
          {"attention", m.attention == Attention::gqa ? "gqa" : "mla"},
          {"moe", m.is_moe()},
          {"layers", m.layers},
          {"params_total", pc.total},
          {"params_active", pc.active},
          {"weight_bytes", weight_bytes(m, p.weight_dtype).raw()},
          {"kv_bytes_per_token", kv_bytes_per_token(m, p.kv_dtype).raw()}}},
        {"workload", b.workload_label},
        {"mix", mix},
        {"policy",
         {{"sparse", p.sparse},
          {"r", p.r},
          {"kv_dtype", to_string(p.kv_dtype)},
          {"weight_dtype", to_string(p.weight_dtype)},
          {"slo_tpot_s", p.slo_tpot ? json(p.slo_tpot->raw()) : json(nullptr)},
          {"slo_ttft_s", p.slo_ttft ? json(p.slo_ttft->raw()) : json(nullptr)},
          {"idle", to_string(p.idle)}}},
        {"overrides", overrides},
        {"knobs", knob_values(sc)}};
}

namespace {

std::string inputs_text(const BuiltScenario& b) {
    const Scenario& sc = b.scenario;
    const HardwareSpec& hw = sc.hardware;
    const PolicySpec& p = sc.policy;
    const PreparedScenario ps(sc);
    std::string s;
    s += fmt::format("Inputs\n");
    s += fmt::format("  hardware  {} x{}: GPU {} | HBM {} @ {} (reserve {}) | link {} {} per GPU\n", hw.name, hw.gpus,
                     format_flops(hw.gpu_flops.raw()), format_bytes(hw.hbm_capacity.raw()),
                     format_bandwidth(hw.hbm_bandwidth.raw()), format_bytes(hw.hbm_reserve.raw()), hw.link_name,
                     format_bandwidth(hw.link_bandwidth.raw()));
    s += fmt::format("            host {} x{:g} per GPU: CPU {} | DRAM {} @ {} | eta compute {:g}, memory {:g}\n",
                     hw.cpu_name, hw.cpus_per_gpu, format_flops(hw.cpu_flops.raw()), format_bytes(hw.cpu_memory.raw()),
                     format_bandwidth(hw.cpu_dram_bandwidth.raw()), hw.eta_compute, hw.eta_mem);
    const auto pc = param_counts(sc.model);
    s += fmt::format("  model     {} ({}{}): {:.1f}B params ({:.1f}B active), weights {} {}, KV {:.0f} B/token {}\n",
                     sc.model.name, sc.model.attention == Attention::gqa ? "GQA" : "MLA", sc.model.is_moe() ? ", MoE" : "",
                     pc.total / 1e9, pc.active / 1e9, format_bytes(ps.mc.weights.raw()), to_string(p.weight_dtype),
                     ps.mc.kv_per_token.raw(), to_string(p.kv_dtype));
    for (const auto& e : sc.mix.entries)
        s += fmt::format("  workload  {} p={:.3g}: S_c={:.0f} A={:.0f} O={:.0f} tokens, idle gap {:.2f} s\n", e.cls.name, e.weight,
                         e.cls.s_cached, e.cls.a_append, e.cls.o_output, e.cls.idle_gap.raw());
    s += fmt::format("  policy    sparse={:g} r={:g} SLO TPOT {} TTFT {} | idle sessions: {}\n", p.sparse, p.r,
                     p.slo_tpot ? fmt_ms(p.slo_tpot->raw()) : "none", p.slo_ttft ? fmt_ms(p.slo_ttft->raw()) : "none",
                     to_string(p.idle));
    if (!b.overrides.empty()) {
        s += "  overrides";
        for (const auto& [k, v] : b.overrides) s += fmt::format(" {}={}", k, v);
        s += "\n";
    }
    return s;
}

std::string capacity_text(const Scenario& sc) {
    const PreparedScenario ps(sc);
    const double free = ps.sys.hbm_capacity.raw() - ps.mc.weights.raw();
    std::string s = fmt::format("Capacity\n  HBM {} usable - weights {} = {} for KV\n", format_bytes(ps.sys.hbm_capacity.raw()),
                                format_bytes(ps.mc.weights.raw()), format_bytes(free));
    for (const auto& e : sc.mix.entries) {
        const double session = ps.mc.kv_per_token.raw() * e.cls.context();
        s += fmt::format("  {}: one session's KV at S={:.0f} is {} -> {:.2f} resident sessions fit in HBM, {:.1f} in CPU DRAM\n",
                         e.cls.name, e.cls.context(), format_bytes(session), free > 0 ? free / session : 0.0,
                         ps.sys.cpu_memory.raw() / session);
    }
    return s;
}

}  // namespace

std::string render_verdict_text(const Verdict& v, const RenderContext& ctx) {
    const Scenario& sc = ctx.built->scenario;
    std::string s = fmt::format("kvroof {} — verdict\n\n", KVROOF_VERSION);
    s += inputs_text(*ctx.built) + "\n" + capacity_text(sc) + "\n";
    const auto& b = v.baseline;
    if (v.kind != VerdictKind::does_not_fit) {
        s += "Without offload (f = 0)\n";
        s += fmt::format("  {}\n", point_summary(b.conservative));
        s += fmt::format("  batch limited by {} (b_cap_hbm {}, b_cap_dram {}, b_slo {})\n", name(b.conservative.batch_limit),
                         fmt_batch(b.conservative.b_cap_hbm), fmt_batch(b.conservative.b_cap_dram), fmt_batch(b.conservative.b_slo));
        s += fmt::format("  binding at f=0: {} = {}\n\n", name(b.conservative.headline), meaning(b.conservative.headline));
        s += "Best offload fraction\n";
        s += fmt::format("  conservative (ov=0): f*={:.3f} -> {} ({})\n", v.best_conservative.f,
                         point_summary(v.best_conservative), fmt_gain(gain(v.best_conservative, b.conservative)));
        s += fmt::format("  optimistic   (ov=1): f*={:.3f} -> {} ({})\n\n", v.best_optimistic.f,
                         point_summary(v.best_optimistic), fmt_gain(gain(v.best_optimistic, b.optimistic)));
        s += fmt::format("Band at f={:.3f}{}\n", v.f, v.f_fixed ? " (chosen with --f)" : "");
        s += fmt::format("  conservative (ov=0): {} -> {}\n", point_summary(v.at_f.conservative), fmt_gain(v.gain_conservative));
        s += fmt::format("  optimistic   (ov=1): {} -> {}\n", point_summary(v.at_f.optimistic), fmt_gain(v.gain_optimistic));
        if (ctx.ov_point) {
            const PreparedScenario ps(sc);
            const ServingPoint at = evaluate(ps, v.f, *ctx.ov_point);
            s += fmt::format("  at ov={:g}:          {} -> {}\n", *ctx.ov_point, point_summary(at), fmt_gain(gain(at, b.conservative)));
        }
        if (v.f > 0 && v.at_f.conservative.feasible)
            s += fmt::format("  binding at f={:.3f}: {} = {}\n", v.f, name(v.at_f.conservative.headline),
                             meaning(v.at_f.conservative.headline));
        s += "\nIdle sessions\n";
        s += fmt::format("  the verdict assumes idle sessions {} (--idle {})\n",
                         v.idle == IdlePolicy::hold ? "keep their KV in HBM" : "park their KV in CPU DRAM", to_string(v.idle));
        s += fmt::format("  parking alone (f=0, no attention offload): {} (no overlap) .. {} (perfect overlap), {:.1f} tok/s\n",
                         fmt_gain(v.parking_gain_conservative), fmt_gain(v.parking_gain_optimistic),
                         v.parked_baseline.conservative.throughput);
    }
    if (v.calibration) {
        const auto& c = *v.calibration;
        s += "\nCalibration\n";
        if (c.ov) {
            s += fmt::format("  measured {:.1f} tok/s at f={:.3f} -> ov = {:.3f}; calibrated gain {}\n", c.measured_tps, c.f, *c.ov,
                             fmt_gain(c.calibrated_gain));
            if (c.best_at_ov)
                s += fmt::format("  at ov={:.3f} the best f is {:.3f}: {}\n", *c.ov, c.best_at_ov->f, point_summary(*c.best_at_ov));
        } else {
            s += fmt::format("  measured {:.1f} tok/s lies outside the band [{:.1f} .. {:.1f}] at f={:.3f}: something other than "
                             "overlap is off (efficiency, bandwidth or the workload)\n",
                             c.measured_tps, c.band_low, c.band_high, c.f);
        }
    }
    s += "\n";
    s += verdict_line(v, sc);
    s += "\n";
    return s;
}

json verdict_json(const Verdict& v, const RenderContext& ctx) {
    const Scenario& sc = ctx.built->scenario;
    json j{{"tool", "kvroof"},
           {"version", KVROOF_VERSION},
           {"command", "verdict"},
           {"inputs", inputs_json(*ctx.built)},
           {"baseline", {{"conservative", point_json(v.baseline.conservative)}, {"optimistic", point_json(v.baseline.optimistic)}}},
           {"best_conservative", point_json(v.best_conservative)},
           {"best_optimistic", point_json(v.best_optimistic)},
           {"at_f", {{"conservative", point_json(v.at_f.conservative)}, {"optimistic", point_json(v.at_f.optimistic)}}},
           {"gain", {{"conservative", finite_or_null(v.gain_conservative)}, {"optimistic", finite_or_null(v.gain_optimistic)}}},
           {"idle",
            {{"policy", to_string(v.idle)},
             {"parked_baseline", {{"conservative", point_json(v.parked_baseline.conservative)},
                                  {"optimistic", point_json(v.parked_baseline.optimistic)}}},
             {"parking_gain", {{"conservative", finite_or_null(v.parking_gain_conservative)},
                               {"optimistic", finite_or_null(v.parking_gain_optimistic)}}}}},
           {"verdict", {{"kind", name(v.kind)}, {"f", v.f}, {"f_fixed", v.f_fixed}, {"line", verdict_line(v, sc)}}}};
    if (ctx.ov_point) {
        const PreparedScenario ps(sc);
        j["at_ov"] = point_json(evaluate(ps, v.f, *ctx.ov_point));
    }
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
    return fmt::format("| {} | {:.3f} | {:g} | {:.1f} | {} | {} | {} | {} | {} | {} |\n", label, p.f, p.ov, p.throughput,
                       fmt_gain(g), fmt_batch(p.batch), fmt_ms(p.tpot), fmt_ms(p.ttft), name(p.binding), name(p.batch_limit));
}
constexpr const char* kPointHeader =
    "| point | f | ov | tok/s | gain | batch | TPOT | TTFT | binding | batch limit |\n|---|---|---|---|---|---|---|---|---|---|\n";
}  // namespace

std::string render_verdict_markdown(const Verdict& v, const RenderContext& ctx) {
    const Scenario& sc = ctx.built->scenario;
    std::string s = fmt::format("# kvroof verdict\n\nGenerated by kvroof {} (`kvroof verdict`", KVROOF_VERSION);
    for (const auto& [k, val] : ctx.built->overrides) s += fmt::format(" {} \"{}\"", k, val);
    s += ").\n\n";
    s += fmt::format("**{}**\n\n", verdict_line(v, sc));
    s += "## Inputs\n\n```\n" + inputs_text(*ctx.built) + "```\n\n## Capacity\n\n```\n" + capacity_text(sc) + "```\n\n";
    if (v.kind != VerdictKind::does_not_fit) {
        s += "## Throughput band\n\n";
        s += kPointHeader;
        s += md_point_row("f = 0, ov = 0", v.baseline.conservative, 1.0);
        s += md_point_row("f = 0, ov = 1", v.baseline.optimistic, 1.0);
        s += md_point_row("f\\*_con, ov = 0", v.best_conservative, gain(v.best_conservative, v.baseline.conservative));
        s += md_point_row("f\\*_opt, ov = 1", v.best_optimistic, gain(v.best_optimistic, v.baseline.optimistic));
        s += md_point_row("chosen f, ov = 0", v.at_f.conservative, v.gain_conservative);
        s += md_point_row("chosen f, ov = 1", v.at_f.optimistic, v.gain_optimistic);
        s += fmt::format("\nBinding at f = 0: `{}` — {}.\n", name(v.baseline.conservative.headline),
                         meaning(v.baseline.conservative.headline));
        if (v.f > 0 && v.at_f.conservative.feasible)
            s += fmt::format("Binding at f = {:.3f}: `{}` — {}.\n", v.f, name(v.at_f.conservative.headline),
                             meaning(v.at_f.conservative.headline));
        s += fmt::format("\n## Idle sessions\n\nThe verdict assumes `--idle {}`. Parking idle sessions' KV in CPU DRAM alone "
                         "(f = 0) gives {} (no overlap) .. {} (perfect overlap).\n",
                         to_string(v.idle), fmt_gain(v.parking_gain_conservative), fmt_gain(v.parking_gain_optimistic));
    }
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

MixTable make_mix_table(const Scenario& sc, double step, std::optional<double> ov) {
    sc.check_validity();
    const PreparedScenario ps(sc);
    MixTable t;
    t.baseline = band(ps, 0.0);
    const int n = static_cast<int>(std::lround(1.0 / step));
    for (int i = 0; i <= n; ++i) {
        const double f = std::min(1.0, i * step);
        t.fs.push_back(f);
        t.rows.push_back(band(ps, f));
    }
    t.best_conservative = optimise_f(ps, 0.0);
    t.best_optimistic = optimise_f(ps, 1.0);
    if (ov) t.at_ov = optimise_f(ps, *ov);
    return t;
}

std::string render_mix_text(const MixTable& t, const RenderContext& ctx) {
    std::string s = fmt::format("kvroof {} — concurrent mix\n\n", KVROOF_VERSION);
    s += inputs_text(*ctx.built) + "\n";
    s += fmt::format("{:>6} {:>12} {:>12} {:>8} {:>8} {:>9} {:>9} {:>13} {:>13}\n", "f", "tok/s@con", "tok/s@opt", "gain@con",
                     "gain@opt", "batch@con", "TPOT@con", "binding@con", "binding@opt");
    for (size_t i = 0; i < t.rows.size(); ++i) {
        const auto& r = t.rows[i];
        s += fmt::format("{:>6.2f} {:>12.1f} {:>12.1f} {:>8} {:>8} {:>9} {:>9} {:>13} {:>13}\n", t.fs[i], r.conservative.throughput,
                         r.optimistic.throughput, fmt_gain(gain(r.conservative, t.baseline.conservative)),
                         fmt_gain(gain(r.optimistic, t.baseline.optimistic)), fmt_batch(r.conservative.batch),
                         fmt_ms(r.conservative.tpot), name(r.conservative.headline), name(r.optimistic.headline));
    }
    s += fmt::format("\nbinding @ f=0: {} = {}\n", name(t.baseline.conservative.headline), meaning(t.baseline.conservative.headline));
    s += fmt::format("best f: {:.3f} at ov=0 ({}), {:.3f} at ov=1 ({})\n", t.best_conservative.f,
                     fmt_gain(gain(t.best_conservative, t.baseline.conservative)), t.best_optimistic.f,
                     fmt_gain(gain(t.best_optimistic, t.baseline.optimistic)));
    if (t.at_ov)
        s += fmt::format("best f at ov={:g}: {:.3f} ({})\n", t.at_ov->ov, t.at_ov->f,
                         fmt_gain(gain(*t.at_ov, t.baseline.conservative)));
    return s;
}

json mix_json(const MixTable& t, const RenderContext& ctx) {
    json rows = json::array();
    for (size_t i = 0; i < t.rows.size(); ++i)
        rows.push_back({{"f", t.fs[i]},
                        {"conservative", point_json(t.rows[i].conservative)},
                        {"optimistic", point_json(t.rows[i].optimistic)},
                        {"gain_conservative", finite_or_null(gain(t.rows[i].conservative, t.baseline.conservative))},
                        {"gain_optimistic", finite_or_null(gain(t.rows[i].optimistic, t.baseline.optimistic))}});
    json j{{"tool", "kvroof"},
           {"version", KVROOF_VERSION},
           {"command", "mix"},
           {"inputs", inputs_json(*ctx.built)},
           {"rows", rows},
           {"best_conservative", point_json(t.best_conservative)},
           {"best_optimistic", point_json(t.best_optimistic)}};
    if (t.at_ov) j["best_at_ov"] = point_json(*t.at_ov);
    return j;
}

std::string render_mix_markdown(const MixTable& t, const RenderContext& ctx) {
    std::string s = fmt::format("# kvroof concurrent mix\n\nGenerated by kvroof {} (`kvroof mix`", KVROOF_VERSION);
    for (const auto& [k, val] : ctx.built->overrides) s += fmt::format(" {} \"{}\"", k, val);
    s += ").\n\n## Inputs\n\n```\n" + inputs_text(*ctx.built) + "```\n\n## Band by offload fraction\n\n";
    s += "| f | tok/s (ov=0) | tok/s (ov=1) | gain (ov=0) | gain (ov=1) | batch (ov=0) | TPOT (ov=0) | binding (ov=0) | binding (ov=1) |\n";
    s += "|---|---|---|---|---|---|---|---|---|\n";
    for (size_t i = 0; i < t.rows.size(); ++i) {
        const auto& r = t.rows[i];
        s += fmt::format("| {:.2f} | {:.1f} | {:.1f} | {} | {} | {} | {} | {} | {} |\n", t.fs[i], r.conservative.throughput,
                         r.optimistic.throughput, fmt_gain(gain(r.conservative, t.baseline.conservative)),
                         fmt_gain(gain(r.optimistic, t.baseline.optimistic)), fmt_batch(r.conservative.batch),
                         fmt_ms(r.conservative.tpot), name(r.conservative.headline), name(r.optimistic.headline));
    }
    s += fmt::format("\nBest f: {:.3f} at ov = 0 ({}), {:.3f} at ov = 1 ({}).\n", t.best_conservative.f,
                     fmt_gain(gain(t.best_conservative, t.baseline.conservative)), t.best_optimistic.f,
                     fmt_gain(gain(t.best_optimistic, t.baseline.optimistic)));
    return s;
}

}  // namespace kvroof::io
