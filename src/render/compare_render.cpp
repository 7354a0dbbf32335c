// SPDX-License-Identifier: MIT
#include "kvroof/io/compare_render.hpp"

#include <fmt/format.h>

#include "kvroof/analysis/report_study.hpp"
#include "kvroof/io/ladder_render.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
using nlohmann::json;

namespace {
std::string gain(double g) { return std::isfinite(g) ? fmt::format("{:.2f}×", g) : std::string("—"); }

struct Cells {
    std::string base, per_gpu, per_user, bankable, overlap, parking, lever, time_bound, batch_limit, kind;
};

// The best single lever as its flag and per-GPU gain ("--gpus 2 2.66×"; where the scenario serves nothing
// without it, "--gpus 2 makes it fit" or "makes it serve" as verdict words it), or "none" when no lever gains.
std::string best_lever(const CompareRow& r, std::string_view group) {
    if (r.levers.empty() || !(r.levers.front().gain > 1.0)) return "none";
    const LadderRung& l = r.levers.front();
    if (std::isfinite(l.gain)) return fmt::format("{} {}", rung_flag(l, group), gain(l.gain));
    return rung_flag(l, group) + (r.verdict.kind == VerdictKind::does_not_fit ? " makes it fit" : " makes it serve");
}

// A row that serves nothing at f = 0 (does not fit) shows "—" where a number does not exist.
Cells cells(const CompareRow& r, std::string_view group) {
    const Verdict& v = r.verdict;
    const ServingPoint& b = v.baseline.conservative;
    const BestGains g = best_gains(v);
    const bool served = b.throughput > 0;
    const std::string none = "—";
    // f as verdict's VERDICT line shows it: never rounded below the least f at which one session fits.
    auto best = [&](const ServingPoint& p, double total, double gn) {
        return p.throughput > 0 ? fmt::format("f={} {:.1f} ({})", render::shown_f(v, p.f), total, gain(gn)) : none;
    };
    return {served ? fmt::format("{:.1f}", r.baseline_total) : none,
            served ? fmt::format("{:.1f}", r.baseline_per_gpu) : none,
            served && r.baseline_per_user > 0 ? fmt::format("{:.1f}", r.baseline_per_user) : none,  // no ITL: no rate
            best(v.best_conservative, r.best_conservative_total, g.conservative),
            best(v.best_optimistic, r.best_optimistic_total, g.optimistic),
            served ? gain(v.parking_gain_conservative) : none,
            best_lever(r, group),
            served ? std::string(name(b.binding)) : none,  // no batch runs: nothing binds its time (as verdict says)
            std::string(name(b.batch_limit)),
            std::string(name(v.kind))};
}

std::string table(const CompareStudy& s, bool markdown, std::string_view group) {
    constexpr const char* kText = "  {:<30}{:>10}{:>9}{:>9}  {:<26}{:<26}{:>8}  {:<30}  {:<14}{:<15}{}\n";
    std::string out = markdown
                          ? "| scenario | tok/s at f=0 | per GPU | per user | best f, no overlap | best f, perfect overlap | "
                            "parking alone | best lever | time bound by | batch limited by | verdict |\n"
                            "|---|---|---|---|---|---|---|---|---|---|---|\n"
                          : fmt::format(kText, "scenario", "tok/s f=0", "per GPU", "per user", "best f, ov=0", "best f, ov=1",
                                        "parking", "best lever", "time bound", "batch limit", "verdict");
    for (const CompareRow& r : s.rows) {
        const Cells c = cells(r, group);
        out += markdown ? fmt::format("| {} | {} | {} | {} | {} | {} | {} | `{}` | {} | {} | {} |\n", r.label, c.base, c.per_gpu,
                                      c.per_user, c.bankable, c.overlap, c.parking, c.lever, c.time_bound, c.batch_limit, c.kind)
                        : fmt::format(kText, r.label, c.base, c.per_gpu, c.per_user, c.bankable, c.overlap, c.parking, c.lever,
                                      c.time_bound, c.batch_limit, c.kind);
    }
    return out;
}

const char* kNote =
    "Each row is `kvroof verdict` for that scenario: tok/s at f = 0 (all GPUs, --tp x --pp x --dp; per GPU; and per user: 1 / "
    "the inter-token "
    "time a user sees), the best f and its throughput and gain at each end of the band (ov = 0: no overlap, bankable; "
    "ov = 1: a perfect layer-ahead pipeline), parking idle sessions alone (f = 0, ov = 0), the best single lever (its flag "
    "and per-GPU gain at ov = 0, as `kvroof verdict` lists them), what bounds the step's time and what limits the batch at "
    "f = 0. A — is a number that does not exist (nothing is served).\n";
// The tensor-parallel group's flag as the base flags name it (" --tp=2"), so a lever's flag copies back onto them.
std::string_view group_of(const std::string& base_flags) {
    return base_flags.find(" --tp=") != std::string::npos ? "--tp" : "--gpus";
}
}  // namespace

std::string compare_line(const CompareStudy& s) {
    if (s.rows.empty()) return "COMPARE: nothing to compare\n";
    const CompareRow& b = s.rows[s.best];
    return fmt::format(
        "COMPARE: {} serves the most per GPU: {:.1f} tok/s per GPU at its bankable best (f = {}), of {} "
        "scenarios\n",
        b.label, b.best_per_gpu,
        render::fmt_f(b.verdict.best_conservative.throughput > b.verdict.baseline.conservative.throughput
                          ? b.verdict.best_conservative.f
                          : 0.0),
        s.rows.size());
}

std::string render_compare_text(const CompareStudy& s, const std::string& base_flags) {
    return fmt::format("Compared on top of:{}\n\n", base_flags.empty() ? " the defaults" : base_flags) +
           table(s, false, group_of(base_flags)) + "\n" + kNote + compare_line(s);
}

std::string render_compare_markdown(const CompareStudy& s, const std::string& base_flags) {
    const std::string l = compare_line(s);
    return fmt::format("# Comparison\n\nOn top of: `kvroof compare{}`\n\n", base_flags) + table(s, true, group_of(base_flags)) +
           "\n" + kNote + "\n`" + l.substr(0, l.size() - 1) + "`\n";
}

json compare_json(const CompareStudy& s, const std::string& base_flags) {
    json rows = json::array();
    const auto served = [](double tps, double x) { return tps > 0 ? render::finite_or_null(x) : json(nullptr); };
    for (const CompareRow& r : s.rows) {
        const Verdict& v = r.verdict;
        const double dp = r.scenario.hardware.deployment.dp;
        rows.push_back(
            {{"scenario", r.label},
             {"gpus", deployment_gpus(r.scenario.hardware)},  // every replica's; "baseline" and the best are one replica's
             {"gpus_per_replica", replica_gpus(r.scenario.hardware)},
             {"dp", r.scenario.hardware.deployment.dp},
             {"verdict", name(v.kind)},
             {"baseline", point_json(v.baseline.conservative)},
             {"best_conservative", point_json(v.best_conservative)},
             {"best_optimistic", point_json(v.best_optimistic)},
             // The text's figures: tok/s of every replica together, per GPU and per user; null where nothing is served.
             {"baseline_tok_s", served(v.baseline.conservative.throughput, v.baseline.conservative.throughput * dp)},
             {"best_conservative_tok_s", served(v.best_conservative.throughput, v.best_conservative.throughput * dp)},
             {"best_optimistic_tok_s", served(v.best_optimistic.throughput, v.best_optimistic.throughput * dp)},
             {"baseline_per_gpu_tok_s", served(v.baseline.conservative.throughput, r.baseline_per_gpu)},
             {"best_per_gpu_tok_s", served(r.best_per_gpu, r.best_per_gpu)},
             {"baseline_per_user_tok_s", served(v.baseline.conservative.throughput, r.baseline_per_user)},
             {"best_lever", r.levers.empty() || !(r.levers.front().gain > 1.0)
                                ? json(nullptr)
                                : json{{"flag", rung_flag(r.levers.front(), group_of(base_flags))},
                                       {"gain_per_gpu", render::finite_or_null(r.levers.front().gain)}}},
             {"parking_gain_conservative", render::finite_or_null(v.parking_gain_conservative)}});
    }
    const std::string l = compare_line(s);
    return json{{"base_flags", base_flags}, {"rows", std::move(rows)}, {"best", s.best}, {"compare", l.substr(9, l.size() - 10)}};
}

}  // namespace kvroof::io
