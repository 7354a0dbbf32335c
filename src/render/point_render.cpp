// SPDX-License-Identifier: MIT
// The offload question at a fixed operating point: text, JSON and markdown.
#include "kvroof/io/point_render.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
namespace {
using nlohmann::json;

// What caps an open loop's requests in the engine: memory, the chunk budget (chunked prefill), --max-seqs.
std::string saturation_limits(const LoadSpec& l) {
    const bool chunked = l.prefill == PrefillMode::chunked, capped = std::isfinite(l.max_seqs);
    const std::string cap = capped ? fmt::format("--max-seqs {:g}", l.max_seqs) : std::string();
    if (chunked && capped) return "memory, the chunk budget and " + cap;
    if (chunked || capped) return "memory and " + (chunked ? std::string("the chunk budget") : cap);
    return "memory and the GPU's time";
}

std::string load_text(const LoadSpec& l, const Scenario& sc) {
    std::string prefill = l.prefill == PrefillMode::chunked
                              ? fmt::format("prefill chunked ({})", render::chunk_budget_text(l.chunk, sc))
                              : std::string("prefill as separate passes");
    if (std::isfinite(l.requests)) prefill += fmt::format(", a run of {:g} request{}", l.requests, l.requests == 1 ? "" : "s");
    switch (l.mode) {
        case LoadMode::batch: return fmt::format("batch {:g} (sequences decoding together), {}", l.value, prefill);
        case LoadMode::concurrency: return fmt::format("concurrency {:g} (closed-loop clients), {}", l.value, prefill);
        case LoadMode::request_rate: return fmt::format("request rate {:g}/s (open loop), {}", l.value, prefill);
        case LoadMode::saturate:  // whichever binds first: the chunk budget may stop it with HBM to spare
            return fmt::format("concurrency max (as many requests as {} admit), {}", saturation_limits(l), prefill);
        case LoadMode::best:
            return fmt::format("the best load: the most requests that fit in memory and meet the SLOs (solved mode), {}",
                               prefill);
    }
    return prefill;
}

std::string fits_text(const OperatingPoint& p) {
    if (!p.weights_fit) return "no: the weights exceed HBM";
    if (!p.session_fits) return "no: one session at its longest does not fit";
    if (p.hbm_used > p.hbm_capacity) return "no: HBM over capacity";
    if (p.dram_used > p.dram_capacity) return "no: CPU DRAM over capacity";
    return "yes";
}

struct Row {
    const char* label;
    double (*get)(const OperatingPoint&);
    const char* spec;
    double scale;
    bool needs_fit = true;  // a figure of a run: none exists where the point does not fit ("—"); memory is shown always
    bool needs_decode = false;  // a figure of the decode: none where nothing decodes (requests of one output token)
    bool only_if_any = false;  // shown only where the f = 0 point has some: what TP's all-reduces and EP's all-to-alls add
};

const Row kRows[] = {
    {"batch decoding (mean)", [](const OperatingPoint& p) { return p.batch; }, "{:.1f}", 1.0},
    {"requests running", [](const OperatingPoint& p) { return p.running; }, "{:.1f}", 1.0},
    {"ITL, ms", [](const OperatingPoint& p) { return p.itl; }, "{:.2f}", 1e3, true, true},
    {"decode step alone, ms", [](const OperatingPoint& p) { return p.step_bare; }, "{:.2f}", 1e3, true, true},
    {"all-reduce per step, ms", [](const OperatingPoint& p) { return p.step_allreduce; }, "{:.2f}", 1e3, true, false, true},
    {"all-to-all per step, ms", [](const OperatingPoint& p) { return p.step_alltoall; }, "{:.2f}", 1e3, true, false, true},
    {"TTFT, ms", [](const OperatingPoint& p) { return p.ttft; }, "{:.1f}", 1e3},
    {"end-to-end, s", [](const OperatingPoint& p) { return p.e2e; }, "{:.2f}", 1.0},
    {"throughput, tok/s", [](const OperatingPoint& p) { return p.throughput; }, "{:.0f}", 1.0},
    {"per GPU, tok/s", [](const OperatingPoint& p) { return p.throughput_per_gpu; }, "{:.0f}", 1.0},
    {"per user, tok/s", [](const OperatingPoint& p) { return p.throughput_per_user; }, "{:.1f}", 1.0, true, true},
    {"requests/s", [](const OperatingPoint& p) { return p.requests_per_s; }, "{:.2f}", 1.0},
    {"HBM used, GB", [](const OperatingPoint& p) { return p.hbm_used; }, "{:.1f}", 1e-9, false},
    {"DRAM used, GB", [](const OperatingPoint& p) { return p.dram_used; }, "{:.1f}", 1e-9, false},
};

// A row's cell for the band's two ends (one value where they agree).
std::string row_cell(const Row& r, const OperatingPoint& con, const OperatingPoint& opt) {
    const auto one = [&r](const OperatingPoint& p) {
        const bool none = (r.needs_fit && !p.fits) || (r.needs_decode && !(p.batch > 0));
        return none ? std::string("—") : fmt::format(fmt::runtime(r.spec), r.get(p) * r.scale);
    };
    const std::string a = one(con), b = one(opt);
    return a == b ? a : a + " – " + b;
}

// Columns a cell takes on a terminal: its code points (UTF-8 lead bytes), as fmt's width counts them.
std::size_t columns(std::string_view t) {
    return static_cast<std::size_t>(std::count_if(t.begin(), t.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// A text row: the label, then the two cells right-aligned in 22 and 26 columns,
// each wider where it must be so that a space always parts it from the one before.
std::string text_row(std::string_view label, std::string_view a, std::string_view b) {
    return fmt::format("  {:<24}{:>{}}{:>{}}\n", label, a, std::max<std::size_t>(22, columns(a) + 1), b,
                       std::max<std::size_t>(26, columns(b) + 1));
}

std::string table(const PointStudy& s, bool markdown) {
    const std::string head = s.f_fixed ? fmt::format("f = {} (given)", render::fmt_f(s.f)) : "best f = " + render::fmt_f(s.f);
    std::string out = markdown ? fmt::format("| | f = 0 | {} |\n|---|---|---|\n", head) : text_row("", "f = 0", head);
    auto row = [&](const char* label, const std::string& a, const std::string& b) {
        out += markdown ? fmt::format("| {} | {} | {} |\n", label, a, b) : text_row(label, a, b);
    };
    for (const Row& r : kRows) {
        if (r.only_if_any && !(r.get(s.baseline.conservative) > 0)) continue;
        row(r.label, row_cell(r, s.baseline.conservative, s.baseline.optimistic),
            row_cell(r, s.at_f.conservative, s.at_f.optimistic));
    }
    auto slo = [](const OperatingPoint& p) -> std::string {
        if (!p.fits) return "—";
        if (p.within_slo_tpot && p.within_slo_ttft) return "yes";
        if (!p.within_slo_tpot && !p.within_slo_ttft) return "no: TPOT, TTFT";
        return p.within_slo_tpot ? "no: TTFT" : "no: TPOT";
    };
    // At the chosen f each row gives both ends of the band where they differ (at f = 0 they are one point).
    auto ends = [](const std::string& con, const std::string& opt) { return con == opt ? con : con + " – " + opt; };
    const std::string sa = slo(s.baseline.conservative), sb = ends(slo(s.at_f.conservative), slo(s.at_f.optimistic));
    out += markdown ? fmt::format("| within the SLOs | {} | {} |\n", sa, sb) : text_row("within the SLOs", sa, sb);
    const std::string fa = fits_text(s.baseline.conservative),
                      fb = ends(fits_text(s.at_f.conservative), fits_text(s.at_f.optimistic));
    auto bound = [](const OperatingPoint& p) { return p.fits ? std::string(name(p.binding)) : std::string("—"); };
    const std::string ba = bound(s.baseline.conservative), bb = ends(bound(s.at_f.conservative), bound(s.at_f.optimistic));
    out += markdown ? fmt::format("| fits | {} | {} |\n| step bound by | {} | {} |\n", fa, fb, ba, bb)
                    : text_row("fits", fa, fb) + text_row("step bound by", ba, bb);
    return out;
}

// What keeps requests waiting: the prefill chunk, memory or --max-seqs, a run's backlog.
std::string queue_notes(const PointStudy& s, const BuiltScenario& built) {
    std::string out;
    const auto queued = [](const OperatingPoint& p) { return p.prefill_bound && p.queue_wait > 0; };
    const bool closed = s.load.mode == LoadMode::concurrency;
    // The chunk budget binds; a closed loop may fill it with none waiting.
    if (s.baseline.conservative.prefill_bound || s.at_f.conservative.prefill_bound)
        out += fmt::format(
            "The prefill chunk ({}) {}.\n", render::chunk_budget_text(s.load.chunk, built.scenario),
            closed && !queued(s.baseline.conservative) && !queued(s.at_f.conservative)
                ? "runs full: requests start as fast as it allows, and a client more would only wait (in TTFT)"
            : closed ? "limits how fast requests start: the load asked for is not reached; the other clients wait (in TTFT)"
                     : "limits how fast requests start: the load asked for is not reached");
    if (s.baseline.conservative.memory_queued || s.at_f.conservative.memory_queued)
        out += fmt::format(
            "Not every request is admitted at once (memory{}): {:.1f} run at f = 0{}; the rest wait their turn (in "
            "TTFT).\n",
            std::isfinite(s.load.max_seqs) ? fmt::format(" or --max-seqs {:g}", s.load.max_seqs) : std::string(),
            s.baseline.conservative.running,
            s.f > 0 ? fmt::format(", {:.1f} at f = {}", s.at_f.conservative.running, render::fmt_f(s.f)) : std::string());
    // A run sent at once that does not all run (concurrency max, an open loop's backlog): its wait, as TTFT has it.
    const OperatingPoint& b0 = s.baseline.conservative;
    if (std::isfinite(s.load.requests) && b0.fits && b0.queue_wait > 0 && !b0.memory_queued && !b0.prefill_bound)
        out += fmt::format(
            "Of the run's {:g} requests, those beyond what runs at once wait their turn: {:.1f} s on average at f = 0, in "
            "TTFT.\n",
            s.load.requests, b0.queue_wait);
    const auto& classes = built.scenario.mix.entries;
    if ((s.baseline.conservative.memory_queued || s.at_f.conservative.memory_queued) &&
        std::any_of(classes.begin(), classes.end(), [](const MixEntry& e) { return e.cls.s_cached > 0; }))
        out +=
            "The waiting requests hold no KV, yet each is prefilled only past its cached prefix when admitted: an engine "
            "this short of memory would likely have evicted that prefix and recompute it, so TTFT and throughput here are "
            "optimistic.\n";
    return out;
}

std::string notes(const PointReport& r, const BuiltScenario& built) {
    const PointStudy& s = r.study;
    std::string out;
    out += "Ranges are the overlap band: offloaded work serialised (ov = 0) – perfectly hidden (ov = 1).\n";
    const double batches[] = {s.baseline.conservative.batch, s.baseline.optimistic.batch, s.at_f.conservative.batch,
                              s.at_f.optimistic.batch};
    if (std::any_of(std::begin(batches), std::end(batches), [](double b) { return b != std::floor(b); }))
        out +=
            "The batch is the mean number of sequences decoding (a time average, so it may be fractional); ITL is the "
            "step a decoding request sees, itself beside the others.\n";
    out += queue_notes(s, built);
    const bool run = s.load.mode == LoadMode::request_rate && std::isfinite(s.load.requests);
    if (s.baseline.conservative.saturated)
        out += run ? "At f = 0 the request rate asked needs more requests in the engine than memory, --max-seqs or the run "
                     "allow: it runs as many as it may and the rest queue.\n"
                   : fmt::format(
                         "The request rate asked exceeds what the system serves at f = 0: the queue grows without "
                         "bound; shown as full as {} allow.\n",
                         saturation_limits(s.load));
    if (s.baseline.conservative.one_wave)
        out += fmt::format(
            "{}, in one wave: prefill first (TTFT spread over it), {}; ITL, TTFT and "
            "throughput are over that wave, {:.0f} tok/s at f = 0 in a steady state of as many running.\n",
            s.load.requests == 1 ? std::string("The run's one request runs alone")
                                 : fmt::format("All {:g} requests run at once", s.load.requests),
            s.baseline.conservative.batch > 0 ? "then decode together"
                                              : "and nothing decodes (one output token each: the step shown is the prefill's)",
            s.baseline.conservative.steady_throughput);
    if (run)
        out += fmt::format(
            "Throughput is over the run of {:g} request{}, from the first arrival to the last completion (the last ones "
            "drain with none arriving): {:.0f} tok/s at f = 0 in the steady state.\n",
            s.load.requests, s.load.requests == 1 ? "" : "s", s.baseline.conservative.steady_throughput);
    const StatedError& e = s.stated_error;
    const std::vector<std::string> moved = efficiency_flags(built);
    if (!moved.empty())
        out += fmt::format(
            "Measured error (outputs/accuracy.md) is kvroof's at its default efficiencies; this run sets {}, so it does not "
            "apply{}.\n",
            fmt::join(moved, ", "),
            std::find(moved.begin(), moved.end(), "--calibration") != moved.end() ? "; the calibration's intervals below do"
                                                                                  : "");
    else
        out += fmt::format(
            "Measured error at these defaults ({} models, outputs/accuracy.md): mean absolute ITL {:.0f} %, throughput "
            "{:.0f} %{} "
            "over public vLLM, TensorRT-LLM, SGLang and LMDeploy points{}.\n",
            e.moe ? "MoE" : "dense", 100 * e.itl, 100 * e.throughput,
            std::isnan(e.ttft) ? std::string() : fmt::format(", TTFT {:.0f} %", 100 * e.ttft),
            e.moe ? "; MoE throughput is over-predicted" : "");
    if (!s.baseline.conservative.fits && s.smallest_f_that_fits)
        out += fmt::format("At f = 0 the point does not fit; it needs f >= {} to fit.\n",
                           render::f_flag(*s.smallest_f_that_fits, *s.smallest_f_that_fits));
    if (const auto& c = s.slo_cap)  // the engine admits every request that fits: a cap trades TTFT for ITL
        out += fmt::format(
            "At f = 0 the SLOs hold with --max-seqs {:g} (the engine's running requests capped; the rest "
            "queue): ITL {:.2f} ms, TTFT {:.0f} ms, {:.0f} tok/s.\n",
            s.slo_max_seqs, c->itl * 1e3, c->ttft * 1e3, c->throughput);
    return out;
}
}  // namespace

// The flags of this run that move an efficiency or an overhead away from the defaults
// the measured error was taken at (--eta*, --step-overhead, --moe-layer-latency, --calibration).
// --eta-moe-gemm is not one: the MoE figures are the table's with the engine's expert-GEMM
// efficiency stated where known (kStatedErrorMoe), as a user states it.
std::vector<std::string> efficiency_flags(const BuiltScenario& built) {
    std::vector<std::string> out;
    for (const auto& [flag, value] : built.overrides)
        if ((flag.rfind("--eta", 0) == 0 && flag != "--eta-moe-gemm") || flag == "--step-overhead" ||
            flag == "--moe-layer-latency" || flag == "--calibration")
            out.push_back(flag);
    return out;
}

PointReport point_report(const Scenario& sc, const LoadSpec& load, std::optional<double> fixed_f) {
    const PreparedScenario ps(sc);
    return {point_study(sc, load, fixed_f), scenario_facts(ps)};
}

namespace {
// The SLOs a fitting point breaks: "TPOT", "TTFT" or both.
std::string broken_slos(const OperatingPoint& p) {
    return !p.within_slo_tpot && !p.within_slo_ttft ? "TPOT and TTFT" : !p.within_slo_tpot ? "TPOT" : "TTFT";
}

std::string point_offload_facts(const PointStudy& s) {
    const OperatingPoint& base = s.baseline.conservative;
    if (s.kind == VerdictKind::infeasible) {  // some end fits: the pipelined one where it does
        const bool opt = s.at_f.optimistic.fits;
        const OperatingPoint& p = opt ? s.at_f.optimistic : s.at_f.conservative;
        return fmt::format("{} the {} SLO breaks {} (ITL {:.2f} ms, TTFT {:.0f} ms)",
                           s.f_fixed ? "the chosen f=" + render::fmt_f(p.f) + " does not keep the SLOs:"
                                     : "no f keeps the SLOs; at the best, f=" + render::fmt_f(p.f) + ",",
                           broken_slos(p), opt ? "even with perfect overlap" : "with no overlap", p.itl * 1e3, p.ttft * 1e3);
    }
    auto one = [&](const char* what, const OperatingPoint& p, double g, const char* ov) {
        const std::string at = fmt::format("{}f={}", s.f_fixed ? "the chosen " : "", render::fmt_f(p.f));
        if (!p.fits) return fmt::format("{} does not fit at {} ({})", what, at, ov);
        if (!within_slos(p) && base.fits && within_slos(base))  // a gain of 0: only f = 0 keeps the SLOs
            return fmt::format("{} breaks the {} SLO at {} ({})", what, broken_slos(p), at, ov);
        if (std::isfinite(g)) return fmt::format("{} {} at {} ({})", what, render::fmt_gain(g), at, ov);
        // Only the point serves, or only it keeps the SLOs: its own throughput.
        return fmt::format("{} {:.0f} tok/s{} at {} ({})", what, p.throughput,
                           base.fits && !within_slos(base) && within_slos(p) ? " within the SLOs" : "", at, ov);
    };
    return "offload: " + one("bankable", s.bankable, s.gain_bankable, "no overlap") + ", " +
           one("pipelined", s.pipelined, s.gain_pipelined, "perfect overlap");
}
}  // namespace

std::string point_verdict_line(const PointStudy& s) {
    const std::string at = s.load.mode == LoadMode::best           ? std::string("the best load")
                           : s.load.mode == LoadMode::saturate     ? std::string("concurrency max")
                           : s.load.mode == LoadMode::request_rate ? fmt::format("request rate {:g}/s", s.load.value)
                                                                   : fmt::format("{} {:g}", name(s.load.mode), s.load.value);
    if (s.kind == VerdictKind::does_not_fit && s.f_fixed && s.smallest_f_that_fits)
        return fmt::format("VERDICT: DOES NOT FIT at {} at the chosen f={}; it fits from f >= {} (no overlap)\n", at,
                           render::fmt_f(s.f), render::f_flag(*s.smallest_f_that_fits, *s.smallest_f_that_fits));
    if (s.kind == VerdictKind::does_not_fit) return fmt::format("VERDICT: DOES NOT FIT at {} at any f\n", at);
    std::string head;
    switch (s.kind) {
        case VerdictKind::offload: head = "OFFLOAD f=" + render::fmt_f(s.f); break;
        case VerdictKind::offload_with_overlap: head = "OFFLOAD ONLY WITH OVERLAP f=" + render::fmt_f(s.f); break;
        case VerdictKind::marginal:
            head =
                fmt::format("MARGINAL (offload gains under {:.1f} %, kvroof's median error on a gain)", 100 * kGainUncertainty);
            break;
        case VerdictKind::infeasible: head = "INFEASIBLE"; break;
        default: head = "KEEP KV ON GPU"; break;
    }
    const OperatingPoint& b = s.baseline.conservative;
    const std::string base =
        b.fits ? fmt::format("at f=0: {}{:.0f} tok/s, step bound by {}{}",
                             b.batch > 0 ? fmt::format("ITL {:.2f} ms, ", b.itl * 1e3)
                                         : std::string("TTFT ") + fmt::format("{:.1f} ms, ", b.ttft * 1e3),
                             b.throughput, time_words(b.binding), within_slos(b) ? "" : ", over the " + broken_slos(b) + " SLO")
               : std::string("f=0 does not fit");
    const std::string cap =
        s.slo_cap ? fmt::format(" (with --max-seqs {:g} it keeps them: {:.0f} tok/s)", s.slo_max_seqs, s.slo_cap->throughput)
                  : std::string();
    return fmt::format("VERDICT: {} at {} — {}; {}{}\n", head, at, point_offload_facts(s), base, cap);
}

std::string render_point_text(const PointReport& r, const BuiltScenario& built) {
    std::string s = render::inputs_text(built, r.facts) + "\n";
    s += "Operating point: " + load_text(r.study.load, built.scenario) + "\n";
    s += table(r.study, false) + "\n" + notes(r, built) + point_verdict_line(r.study);
    return s;
}

std::string render_point_markdown(const PointReport& r, const BuiltScenario& built) {
    std::string s = "# Operating point\n\n" + load_text(r.study.load, built.scenario) + "\n\n## Inputs\n\n```\n" +
                    render::inputs_text(built, r.facts);
    s += "```\n\n## At f = 0 and at the chosen f\n\n" + table(r.study, true) + "\n" + notes(r, built) + "\n`" +
         point_verdict_line(r.study).substr(0, point_verdict_line(r.study).size() - 1) + "`\n";
    return s;
}

}  // namespace kvroof::io
