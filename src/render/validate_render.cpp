// SPDX-License-Identifier: MIT
// Renderers of `kvroof validate` (text, JSON, markdown) and its calibration file, read and written.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "kvroof/error.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/validate.hpp"
#include "kvroof/spec/knobs.hpp"
#include "render_util.hpp"

namespace kvroof::io {
namespace {
using nlohmann::json;

constexpr double kGoalMape = 0.08;  // issue 13's goal for the leave-one-out MAPE

std::string pct(double x) { return fmt::format("{:.1f}%", 100 * x); }
// A metric's error, "—" where no point measures it (an average over nothing is not 0 %).
std::string pct(const MetricSummary& m, double x) { return m.n ? pct(x) : "—"; }
std::string signed_pct(double x) { return fmt::format("{:+.0f}%", 100 * x); }

// A knob's value in its bare unit (step-overhead in ms, moe-layer-latency in us), and that unit.
double bare(const std::string& knob_name, double si) {
    const Knob& k = knob(knob_name);
    return k.type == KnobType::quantity ? si / parse_quantity(k.flag(), "1", k.unit, k.bare) : si;
}
std::string unit(const std::string& knob_name) {
    const Knob& k = knob(knob_name);
    return k.type == KnobType::quantity ? " " + std::string(k.bare) : "";
}

// The interval of measured / predicted the LOO errors give: [exp(−q_hi), exp(−q_lo)] − 1.
std::string interval(const MetricSummary& m) {
    if (m.n == 0) return "—";
    return fmt::format("{} … {}", signed_pct(std::exp(-m.q_hi) - 1), signed_pct(std::exp(-m.q_lo) - 1));
}

std::string metric_title(const std::string& name) {
    if (name == "itl") return "ITL (TPOT)";
    if (name == "ttft") return "TTFT (closed and open loop)";
    return "output throughput";
}

std::string headline(const ValidationResult& r) {
    std::string s = fmt::format("VALIDATE: {} measured points ({}): leave-one-out MAPE", r.points.size(), r.source);
    bool met = true;
    for (const MetricSummary& m : r.metrics) {
        if (m.n == 0) continue;
        s += fmt::format(" {} {} ({})", m.name, pct(m.mape_loo), m.n);
        met = met && m.mape_loo <= kGoalMape;
    }
    s += fmt::format("; goal ≤ {:.0f} % {}; {} measurement(s) and {} prediction(s) below the physical floor", 100 * kGoalMape,
                     met ? "met" : "NOT met", r.data_defects, r.model_defects);
    return s;
}

json metrics_json(const Metrics& m) {
    auto v = [](double x) { return x > 0 ? json(x) : json(nullptr); };
    return {{"itl_s", v(m.itl)}, {"ttft_s", v(m.ttft)}, {"throughput_tok_s", v(m.throughput)}};
}

std::string cell(double predicted, double measured, double scale) {
    if (!(measured > 0)) return "—";
    return fmt::format("{:.4g} ({})", predicted * scale, signed_pct(predicted / measured - 1));
}

std::string point_rows(const ValidationResult& r) {
    std::string s =
        "| point | GPU | model | ISL/OSL | load | metric | measured | defaults | fitted | leave-one-out | floor |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const ValidatedPoint& p : r.points) {
        const MeasuredPoint& m = p.measured;
        const struct {
            const char* name;
            double Metrics::*field;
            double scale, floor;
        } rows[] = {{"ITL ms", &Metrics::itl, 1e3, p.floor.itl_floor * 1e3},
                    {"TTFT ms", &Metrics::ttft, 1e3, p.floor.ttft_floor * 1e3},
                    {"tok/s", &Metrics::throughput, 1, p.floor.throughput_ceiling}};
        for (const auto& row : rows) {
            const double o = p.observed.*row.field;
            if (!(o > 0)) continue;
            s += fmt::format("| {} | {}×{} | {} | {:.0f}/{:.0f} | {} {:.4g} | {} | {:.4g} | {} | {} | {} | {}{:.4g} |\n", m.id,
                             m.gpus, m.gpu, m.model, m.isl, m.osl, m.load, m.load_value, row.name, o * row.scale,
                             cell(p.at_defaults.*row.field, o, row.scale), cell(p.fitted.*row.field, o, row.scale),
                             cell(p.loo.*row.field, o, row.scale), row.field == &Metrics::throughput ? "≤ " : "≥ ", row.floor);
        }
    }
    return s;
}

std::string defects_md(const ValidationResult& r) {
    std::string s;
    for (const ValidatedPoint& p : r.points) {
        for (const std::string& d : p.floor.data_defects) s += fmt::format("- {}: DATA DEFECT: {}\n", p.measured.id, d);
        for (const std::string& d : p.floor.model_defects) s += fmt::format("- {}: MODEL DEFECT: {}\n", p.measured.id, d);
    }
    return s.empty() ? "- none: every measurement and every prediction is at or above its floor\n" : s;
}

double number_at(const json& j, const std::string& where, const char* key) {
    if (!j.is_object() || !j.contains(key) || !j.at(key).is_number())
        throw InputError(fmt::format("{}: {}: must be a number", where, key));
    const double v = j.at(key).get<double>();
    if (!std::isfinite(v)) throw InputError(fmt::format("{}: {}: must be finite", where, key));
    return v;
}
}  // namespace

std::string render_validate_text(const ValidationResult& r) {
    std::string s = headline(r) + "\n\n";
    s += fmt::format(
        "Fit: bounded Levenberg–Marquardt on ln(predicted / measured), {} errors, {} iterations, RMS log error {:.3f}\n",
        r.fit.residuals, r.fit.iterations, std::sqrt(r.fit.ssr / std::max<double>(1.0, static_cast<double>(r.fit.residuals))));
    s += fmt::format("  {:<17} {:>10} {:>20} {:>16}\n", "knob", "default", "fitted ± 1σ", "bounds");
    for (const FitParameter& p : r.params)
        s += fmt::format(
            "  {:<17} {:>10} {:>20} {:>16}{}\n", p.knob, fmt::format("{:.3g}{}", bare(p.knob, p.start), unit(p.knob)),
            p.identified ? fmt::format("{:.3g} ± {:.2g}{}", bare(p.knob, p.value), bare(p.knob, p.sigma), unit(p.knob))
                         : std::string("not fitted"),
            fmt::format("[{:.3g}, {:.3g}]", bare(p.knob, p.lo), bare(p.knob, p.hi)),
            p.at_bound     ? "  at its bound"
            : p.identified ? ""
                           : "  no prediction moves with it");
    s += "\nError per metric (MAPE); interval: 5th–95th percentile of measured / predicted, leave one out\n";
    s += fmt::format("  {:<30} {:>6} {:>9} {:>8} {:>8} {:>14}\n", "metric", "points", "defaults", "fitted", "LOO", "interval");
    for (const MetricSummary& m : r.metrics)
        s += fmt::format("  {:<30} {:>6} {:>9} {:>8} {:>8} {:>14}\n", metric_title(m.name), m.n, pct(m, m.mape_defaults),
                         pct(m, m.mape_fitted), pct(m, m.mape_loo), interval(m));
    s += r.gain_pairs == 0
             ? fmt::format(
                   "\nGain (a throughput ratio within one series): no two points of one series, so no ratio was "
                   "tested; the built-in ±{:.0f} % (×{:.2f}) is written as the gain band\n",
                   100 * std::expm1(r.gain_half_width), std::exp(r.gain_half_width))
             : fmt::format(
                   "\nGain (a throughput ratio within one series): {} pairs; 90 % of the leave-one-out ratio errors "
                   "within ×{:.2f} (±{:.0f} %)\n",
                   r.gain_pairs, std::exp(r.gain_half_width), 100 * std::expm1(r.gain_half_width));
    s += fmt::format(
        "\nFloor check: {} measurement(s) below the physical floor (data defects), {} prediction(s) (model defects)\n",
        r.data_defects, r.model_defects);
    for (const ValidatedPoint& p : r.points) {
        for (const std::string& d : p.floor.data_defects) s += fmt::format("  {}: DATA DEFECT: {}\n", p.measured.id, d);
        for (const std::string& d : p.floor.model_defects) s += fmt::format("  {}: MODEL DEFECT: {}\n", p.measured.id, d);
    }
    return s;
}

json validate_json(const ValidationResult& r) {
    json j = calibration_json(r);
    j["summary"] = headline(r);
    j["data_defects"] = r.data_defects;
    j["model_defects"] = r.model_defects;
    json pts = json::array();
    for (const ValidatedPoint& p : r.points) {
        pts.push_back({{"id", p.measured.id},
                       {"measured", metrics_json(p.observed)},
                       {"defaults", metrics_json(p.at_defaults)},
                       {"fitted", metrics_json(p.fitted)},
                       {"leave_one_out", metrics_json(p.loo)},
                       {"floor",
                        {{"itl_s", p.floor.itl_floor},
                         {"ttft_s", p.floor.ttft_floor},
                         {"throughput_ceiling_tok_s", p.floor.throughput_ceiling}}},
                       {"data_defects", p.floor.data_defects},
                       {"model_defects", p.floor.model_defects}});
    }
    j["points_detail"] = std::move(pts);
    return j;
}

json calibration_json(const ValidationResult& r) {
    json knobs = json::object();
    for (const FitParameter& p : r.params)
        knobs[p.knob] = {{"value", p.value},
                         {"sigma", p.identified ? json(p.sigma) : json(nullptr)},
                         {"identified", p.identified},
                         {"default", p.start},
                         {"lo", p.lo},
                         {"hi", p.hi},
                         {"at_bound", p.at_bound},
                         {"unit", knob(p.knob).type == KnobType::quantity ? "s" : "fraction"}};
    json metrics = json::object();
    for (const MetricSummary& m : r.metrics)
        metrics[m.name] = m.n == 0
                              ? json{{"points", 0},         {"mape_defaults", nullptr}, {"mape_fitted", nullptr},
                                     {"mape_loo", nullptr}, {"log_error_q05", nullptr}, {"log_error_q95", nullptr}}
                              : json{{"points", m.n},          {"mape_defaults", m.mape_defaults}, {"mape_fitted", m.mape_fitted},
                                     {"mape_loo", m.mape_loo}, {"log_error_q05", m.q_lo},          {"log_error_q95", m.q_hi}};
    return {{"kind", "kvroof-calibration"},
            {"version", 1},
            {"source", r.source},
            {"points", r.points.size()},
            {"residuals", r.fit.residuals},
            {"ssr", r.fit.ssr},
            {"knobs", std::move(knobs)},
            {"metrics", std::move(metrics)},
            {"gain", {{"pairs", r.gain_pairs}, {"log_half_width_q90", r.gain_half_width}}}};
}

CalibrationFile read_calibration(const std::string& where, const json& j) {
    if (!j.is_object() || !j.contains("kind") || j.at("kind") != "kvroof-calibration")
        throw InputError(fmt::format("{}: kind: must be \"kvroof-calibration\" (a file `kvroof validate --out` writes)", where));
    if (!j.contains("version") || j.at("version") != 1)
        throw InputError(fmt::format("{}: version: must be 1 (the version this kvroof writes)", where));
    CalibrationFile c;
    if (!j.contains("knobs") || !j.at("knobs").is_object()) throw InputError(fmt::format("{}: knobs: must be an object", where));
    for (const auto& [key, value] : j.at("knobs").items())
        if (std::find(kFitKnobs.begin(), kFitKnobs.end(), key) == kFitKnobs.end())
            throw InputError(fmt::format("{}: knobs.{}: unknown knob; the fit sets {}", where, key, fmt::join(kFitKnobs, ", ")));
    for (const std::string_view name : kFitKnobs) {
        const std::string key(name), at = fmt::format("{}: knobs.{}", where, key);
        if (!j.at("knobs").contains(key)) throw InputError(fmt::format("{}: missing", at));
        const double v = number_at(j.at("knobs").at(key), at, "value");
        const Knob& k = knob(name);
        // The value is in SI units (s) or a fraction, as written; a unit of another name would be misread.
        const std::string_view unit = k.type == KnobType::quantity ? "s" : "fraction";
        if (const json& o = j.at("knobs").at(key); o.contains("unit") && !(o.at("unit").is_string() && o.at("unit") == unit))
            throw InputError(fmt::format("{}.unit: must be \"{}\" (the value is in {}), got {}", at, unit,
                                         unit == "s" ? "seconds" : "a fraction", o.at("unit").dump()));
        if (!(v >= k.lo && v <= k.hi)) throw InputError(fmt::format("{}.value: must be in [{}, {}], got {}", at, k.lo, k.hi, v));
        c.values.push_back(v);
    }
    const std::string tp = where + ": metrics.throughput";
    if (!j.contains("metrics") || !j.at("metrics").contains("throughput")) throw InputError(fmt::format("{}: missing", tp));
    // Log errors within ±30: beyond what any two figures a measured point may hold can differ by (its bounds span
    // a factor of 1e12, ln = 27.6), so validate never writes one, and the intervals stay finite numbers.
    constexpr double kMaxLogError = 30.0;
    c.throughput_q_lo = number_at(j.at("metrics").at("throughput"), tp, "log_error_q05");
    c.throughput_q_hi = number_at(j.at("metrics").at("throughput"), tp, "log_error_q95");
    for (const auto& [v, key] : {std::pair{c.throughput_q_lo, "log_error_q05"}, {c.throughput_q_hi, "log_error_q95"}})
        if (!(std::abs(v) <= kMaxLogError)) throw InputError(fmt::format("{}: {}: must be in [-30, 30], got {}", tp, key, v));
    if (c.throughput_q_lo > c.throughput_q_hi) throw InputError(fmt::format("{}: log_error_q05: must be ≤ log_error_q95", tp));
    if (!j.contains("gain")) throw InputError(fmt::format("{}: gain: missing", where));
    c.gain_half_width = number_at(j.at("gain"), where + ": gain", "log_half_width_q90");
    // A file without the count (written before it was read) is taken as measured on pairs.
    c.gain_pairs = j.at("gain").contains("pairs") && j.at("gain").at("pairs").is_number_unsigned()
                       ? j.at("gain").at("pairs").get<std::size_t>()
                       : 1;
    if (!(c.gain_half_width >= 0 && c.gain_half_width <= kMaxLogError))
        throw InputError(fmt::format("{}: gain: log_half_width_q90: must be in [0, 30], got {}", where, c.gain_half_width));
    const double points = number_at(j, where, "points");
    if (!(points >= static_cast<double>(kFitKnobs.size()) && points <= 1e9 && points == std::floor(points)))
        throw InputError(fmt::format("{}: points: must be a whole number of at least {} (the fit's knobs), got {}", where,
                                     kFitKnobs.size(), points));
    c.points = static_cast<std::size_t>(points);
    return c;
}

std::string render_validate_markdown(const ValidationResult& r, const std::string& description) {
    std::string s = "# Validation: the efficiencies refitted to measured serving points\n\n";
    if (!description.empty()) s += description + "\n\n";
    s += fmt::format(
        "`kvroof validate` over {} measured points ({}; sources and conditions in data/measurements/README.md). Every "
        "prediction is the accuracy table's (`kvroof verdict` at the point's load, docs/model.md \"Accuracy\"); only the "
        "knobs below change. The fit minimises the sum of squared log errors ln(predicted / measured) over every measured "
        "metric with bounded Levenberg–Marquardt (docs/model.md, \"Validation\"). Leave one out: each point predicted by the "
        "fit to the other {}.\n\n**{}**\n\n",
        r.points.size(), r.source, r.points.size() - 1, headline(r));
    s += fmt::format(
        "## Fit\n\n{} log errors, {} iterations, RMS log error {:.3f}. ±: one standard error, "
        "from s²·(JᵀJ)⁻¹.\n\n| knob | default | fitted ± 1σ | bounds |\n|---|---|---|---|\n",
        r.fit.residuals, r.fit.iterations, std::sqrt(r.fit.ssr / std::max<double>(1.0, static_cast<double>(r.fit.residuals))));
    for (const FitParameter& p : r.params) {
        const std::string fitted = p.identified ? fmt::format("{:.3g} ± {:.2g}{}{}", bare(p.knob, p.value), bare(p.knob, p.sigma),
                                                              unit(p.knob), p.at_bound ? " (at its bound)" : "")
                                                : std::string("not fitted: no prediction moves with it");
        s += fmt::format("| `--{}` | {:.3g}{} | {} | [{:.3g}, {:.3g}] |\n", p.knob, bare(p.knob, p.start), unit(p.knob), fitted,
                         bare(p.knob, p.lo), bare(p.knob, p.hi));
    }
    s += "\n## Error per metric\n\nMAPE at the defaults, of the fit (in sample) and leave one out; the interval is the 5th "
         "to 95th percentile of measured / predicted − 1 over the leave-one-out predictions, the band `kvroof verdict "
         "--calibration` puts around a prediction.\n\n| metric | points | defaults | fitted | leave-one-out | 90 % interval "
         "|\n|---|---|---|---|---|---|\n";
    for (const MetricSummary& m : r.metrics)
        s += fmt::format("| {} | {} | {} | {} | {} | {} |\n", metric_title(m.name), m.n, pct(m, m.mape_defaults),
                         pct(m, m.mape_fitted), pct(m, m.mape_loo), interval(m));
    s += r.gain_pairs == 0
             ? fmt::format(
                   "\nA gain is a ratio of two throughputs on one machine. No two points here are of one series "
                   "(accuracy.md's series), so no ratio was tested: the built-in ±{:.0f} % is written as the gain "
                   "band.\n",
                   100 * std::expm1(r.gain_half_width))
             : fmt::format(
                   "\nA gain is a ratio of two throughputs on one machine. Over the {} pairs of points of one series "
                   "(accuracy.md's series), 90 % of the leave-one-out errors of the ratio are within ×{:.2f} "
                   "(±{:.0f} %).\n",
                   r.gain_pairs, std::exp(r.gain_half_width), 100 * std::expm1(r.gain_half_width));
    s += "\n## Floor check\n\nThe physical floor of each point: a decode step reads at least the weights a token touches "
         "(active parameters less the embedding table) and, where the point states its KV dtype, the batch's KV at context "
         "ISL over the peak HBM bandwidth, and does at least 2 FLOP per such parameter per token at the peak GEMM rate; a "
         "first token at least its prefill's FLOP. Throughput ceiling: the peak GEMM rate / (2 FLOP per parameter per "
         "token), and at a fixed batch or concurrency C, C tokens per floor step.\n\n";
    s += defects_md(r);
    if (!r.holdout.empty()) {
        s += fmt::format(
            "\n## Hold-out check\n\nThe {} Llama-3.1/3.3-70B points kept out of the fit and of the defaults "
            "(data/measurements/holdout_llama_3_1_70b.json), predicted at the defaults and at the fit above.\n\n"
            "| metric | points | defaults | fitted |\n|---|---|---|---|\n",
            r.holdout_points);
        for (const MetricSummary& m : r.holdout)
            s +=
                fmt::format("| {} | {} | {} | {} |\n", metric_title(m.name), m.n, pct(m, m.mape_defaults), pct(m, m.mape_fitted));
    }
    s += "\n## Points\n\n" + point_rows(r);
    return s;
}

CalibratedFigure calibrated_throughput(const CalibrationFile& c, std::string name, double tps) {
    return {std::move(name), tps, tps * std::exp(-c.throughput_q_hi), tps * std::exp(-c.throughput_q_lo), false};
}

CalibratedFigure calibrated_gain(const CalibrationFile& c, std::string name, double gain) {
    return {std::move(name), gain, gain * std::exp(-c.gain_half_width), gain * std::exp(c.gain_half_width), true};
}

std::string render_calibrated_text(const CalibrationFile& c, const std::string& where,
                                   const std::vector<CalibratedFigure>& figures, const std::string& kind) {
    std::string s = fmt::format("\nCALIBRATED ({}, fitted to {} measured points):", where, c.points);
    for (std::size_t j = 0; j < kFitKnobs.size(); ++j)
        s += fmt::format(" {} {:.3g}{}", kFitKnobs[j], bare(std::string(kFitKnobs[j]), c.values[j]),
                         unit(std::string(kFitKnobs[j])));
    s += fmt::format(
        "; the figures above use them (the VERDICT above keeps kvroof's stated gain uncertainty). 90 % intervals from the "
        "leave-one-out errors{}\n",
        c.gain_pairs > 0 ? "" : " (a gain's: kvroof's median error on a gain, the fit having no pairs of one series)");
    for (const CalibratedFigure& f : figures)
        s += f.gain && !std::isfinite(f.value) ? fmt::format("  {:<34} {}\n", f.name, render::fmt_gain_cell(f.value))
             : f.gain ? fmt::format("  {:<34} {:.2f}×  [{:.2f}×, {:.2f}×]\n", f.name, f.value, f.lo, f.hi)
                      : fmt::format("  {:<34} {:.0f} tok/s  [{:.0f}, {:.0f}]\n", f.name, f.value, f.lo, f.hi);
    if (!kind.empty())
        s += fmt::format("CALIBRATED VERDICT: {} (a gain under {:.0f} %, {}, is MARGINAL)\n", kind,
                         100 * std::expm1(c.gain_half_width),
                         c.gain_pairs > 0 ? "the fit's 90 % gain band"
                                          : "kvroof's built-in median error on a gain: the fit had no pairs to measure a band");
    return s;
}

json calibrated_json(const CalibrationFile& c, const std::string& where, const std::vector<CalibratedFigure>& figures,
                     const std::string& kind) {
    json knobs = json::object(), figs = json::array();
    for (std::size_t j = 0; j < kFitKnobs.size(); ++j) knobs[std::string(kFitKnobs[j])] = c.values[j];
    for (const CalibratedFigure& f : figures)
        figs.push_back(
            {{"name", f.name}, {"kind", f.gain ? "gain" : "throughput_tok_s"}, {"value", f.value}, {"lo", f.lo}, {"hi", f.hi}});
    return {{"file", where},
            {"points", c.points},
            {"knobs", std::move(knobs)},
            {"marginal_below_gain", std::exp(c.gain_half_width)},
            {"interval", "90 % of leave-one-out errors"},
            {"figures", std::move(figs)},
            {"verdict", kind.empty() ? json(nullptr) : json(kind)}};
}

PlotSpec validation_plot(const ValidationResult& r) {
    PlotSpec p;
    p.title = "kvroof validate: output throughput, predicted / measured";
    p.xlabel = "measured output throughput, tok/s";
    p.ylabel = "predicted / measured";
    p.log_x = true;
    PlotSeries defaults{PlotSeries::Style::points, "at the defaults", {}, {}, {}, "#999999"};
    PlotSeries loo{PlotSeries::Style::points, "fitted, leave one out", {}, {}, {}, "#1f77b4"};
    for (const ValidatedPoint& pt : r.points) {
        const double o = pt.observed.throughput;
        if (!(o > 0)) continue;
        defaults.x.push_back(o), defaults.y.push_back(pt.at_defaults.throughput / o);
        loo.x.push_back(o), loo.y.push_back(pt.loo.throughput / o);
    }
    p.series = {defaults, loo};
    const MetricSummary& t = r.metrics.back();
    p.hlines = {{1.0, "exact", "#555555"},
                {std::exp(t.q_lo), "5th percentile, leave one out", "#d62728"},
                {std::exp(t.q_hi), "95th percentile, leave one out", "#d62728"}};
    return p;
}

}  // namespace kvroof::io
