// SPDX-License-Identifier: MIT
#include "kvroof/io/compare_render.hpp"

#include <fmt/format.h>

#include "kvroof/analysis/report_study.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {
using nlohmann::json;

namespace {
std::string gain(double g) { return std::isfinite(g) ? fmt::format("{:.2f}×", g) : std::string("—"); }

struct Cells {
    std::string base, per_gpu, bankable, overlap, parking, time_bound, batch_limit, kind;
};

Cells cells(const CompareRow& r) {
    const Verdict& v = r.verdict;
    const ServingPoint& b = v.baseline.conservative;
    const BestGains g = best_gains(v);
    return {fmt::format("{:.1f}", b.throughput),
            fmt::format("{:.1f}", r.baseline_per_gpu),
            fmt::format("f={:.2f} {:.1f} ({})", v.best_conservative.f, v.best_conservative.throughput, gain(g.conservative)),
            fmt::format("f={:.2f} {:.1f} ({})", v.best_optimistic.f, v.best_optimistic.throughput, gain(g.optimistic)),
            gain(v.parking_gain_conservative),
            std::string(name(b.binding)),
            std::string(name(b.batch_limit)),
            std::string(name(v.kind))};
}

std::string table(const CompareStudy& s, bool markdown) {
    std::string out =
        markdown
            ? "| scenario | tok/s at f=0 | per GPU | best f, no overlap | best f, perfect overlap | parking alone | time bound "
              "by | batch limited by | verdict |\n|---|---|---|---|---|---|---|---|---|\n"
            : fmt::format("  {:<30}{:>10}{:>9}  {:<26}{:<26}{:>8}  {:<14}{:<15}{}\n", "scenario", "tok/s f=0", "per GPU",
                          "best f, ov=0", "best f, ov=1", "parking", "time bound", "batch limit", "verdict");
    for (const CompareRow& r : s.rows) {
        const Cells c = cells(r);
        out += markdown ? fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.label, c.base, c.per_gpu, c.bankable,
                                      c.overlap, c.parking, c.time_bound, c.batch_limit, c.kind)
                        : fmt::format("  {:<30}{:>10}{:>9}  {:<26}{:<26}{:>8}  {:<14}{:<15}{}\n", r.label, c.base, c.per_gpu,
                                      c.bankable, c.overlap, c.parking, c.time_bound, c.batch_limit, c.kind);
    }
    return out;
}

const char* kNote =
    "Each row is `kvroof verdict` for that scenario: tok/s at f = 0, the best f and its throughput and gain at each end of "
    "the band (ov = 0: no overlap, bankable; ov = 1: a perfect layer-ahead pipeline), parking idle sessions alone (f = 0, "
    "ov = 0), what bounds the step's time and what limits the batch at f = 0.\n";
}  // namespace

std::string compare_line(const CompareStudy& s) {
    if (s.rows.empty()) return "COMPARE: nothing to compare\n";
    const CompareRow& b = s.rows[s.best];
    return fmt::format(
        "COMPARE: {} serves the most per GPU: {:.1f} tok/s per GPU at its bankable best (f = {:.2f}), of {} "
        "scenarios\n",
        b.label, b.best_per_gpu,
        b.verdict.best_conservative.throughput > b.verdict.baseline.conservative.throughput ? b.verdict.best_conservative.f : 0.0,
        s.rows.size());
}

std::string render_compare_text(const CompareStudy& s, const std::string& base_flags) {
    return fmt::format("Compared on top of:{}\n\n", base_flags.empty() ? " the defaults" : base_flags) + table(s, false) + "\n" +
           kNote + compare_line(s);
}

std::string render_compare_markdown(const CompareStudy& s, const std::string& base_flags) {
    const std::string l = compare_line(s);
    return fmt::format("# Comparison\n\nOn top of: `kvroof compare{}`\n\n", base_flags) + table(s, true) + "\n" + kNote + "\n`" +
           l.substr(0, l.size() - 1) + "`\n";
}

json compare_json(const CompareStudy& s, const std::string& base_flags) {
    json rows = json::array();
    for (const CompareRow& r : s.rows) {
        const Verdict& v = r.verdict;
        rows.push_back({{"scenario", r.label},
                        {"gpus", r.scenario.hardware.gpus},
                        {"verdict", name(v.kind)},
                        {"baseline", point_json(v.baseline.conservative)},
                        {"best_conservative", point_json(v.best_conservative)},
                        {"best_optimistic", point_json(v.best_optimistic)},
                        {"baseline_per_gpu_tok_s", r.baseline_per_gpu},
                        {"best_per_gpu_tok_s", r.best_per_gpu},
                        {"parking_gain_conservative", render::finite_or_null(v.parking_gain_conservative)}});
    }
    const std::string l = compare_line(s);
    return json{{"base_flags", base_flags}, {"rows", std::move(rows)}, {"best", s.best}, {"compare", l.substr(9, l.size() - 10)}};
}

}  // namespace kvroof::io
