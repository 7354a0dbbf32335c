// SPDX-License-Identifier: MIT
// `kvroof sweep --plot`: a sweep's rows drawn as an SVG, from the numbers the rows were made of.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "sweep_plot.hpp"

namespace kvroof::cli {

// --x must be the last, numeric --grid knob and --y a numeric column of the rows.
int check_plot_axes(const io::SweepSpec& spec, const std::string& x_knob, const std::string& y_col) {
    int x_axis = -1;
    for (size_t i = 0; i < spec.axes.size(); ++i)
        if (spec.axes[i].knob == x_knob) x_axis = static_cast<int>(i);
    if (x_axis < 0) throw InputError("--x: must be one of the --grid knobs, got '" + x_knob + "'");
    if (spec.axes[static_cast<size_t>(x_axis)].text()) throw InputError("--x: must be a numeric knob, got '" + x_knob + "'");
    if (x_axis != static_cast<int>(spec.axes.size()) - 1)
        throw InputError("--x: must be the last --grid (the one that varies fastest), got '" + x_knob + "'");
    io::check_tap_column(spec, y_col);
    return x_axis;
}

namespace {
// The fixed scenario a title carries on its second line: "llama-3.1-70b on gb200" (a knob on a grid is named in the legend instead).
std::string scenario_phrase(const io::SweepSpec& spec) {
    bool model = true, hardware = true;
    for (const auto& a : spec.axes) {
        model = model && a.knob != "model";
        hardware = hardware && a.knob != "hardware";
    }
    try {
        const Scenario sc = io::build_scenario(spec.fixed).scenario;
        if (model && hardware) return fmt::format("\n{} on {}", sc.model.name, sc.hardware.name);
        if (model || hardware) return "\n" + (model ? sc.model.name : sc.hardware.name);
    } catch (const InputError&) {  // the fixed knobs alone may not make a scenario (a grid completes it): no phrase
    }
    return {};
}
// A number as the CSV shows it, six significant digits: the plot draws what the rows say.
double as_shown(double v) {
    char buf[io::kNumber6Max + 1];
    *io::write_number6(buf, v) = '\0';
    return std::strtod(buf, nullptr);
}
// A grid value as its cell shows it.
std::string cell_text(const io::GridAxis& a, std::uint64_t i) {
    if (a.text()) return a.cell(i);
    if (!a.row->top_text.empty() && a.number(i) == std::numeric_limits<double>::infinity())
        return std::string(a.row->top_text);  // concurrency's max, as its cell says it
    std::string t;
    io::append_number6(t, a.number(i));
    return t;
}
}  // namespace

io::PlotSpec plot_from_rows(const io::SweepSpec& spec, const std::string& x_knob, const io::ColumnTap& y) {
    const auto x_axis = static_cast<size_t>(check_plot_axes(spec, x_knob, y.column));
    const io::GridAxis& xa = spec.axes[x_axis];
    io::PlotSpec p;
    // Axis labels with units from the knob table and the column list, never a raw column name.
    const std::string xl = io::sweep_column_label(xa.column), yl = io::sweep_column_label(y.column);
    p.xlabel = xl.empty() ? xa.column : xl;
    p.ylabel = yl.empty() ? y.column : yl;
    p.title = fmt::format("{} vs {}{}", p.ylabel.substr(0, p.ylabel.find(" (")), p.xlabel.substr(0, p.xlabel.find(" (")),
                          scenario_phrase(spec));
    if (y.column.rfind("gain", 0) == 0) p.hlines.push_back({1.0, "1x: break-even"});
    const std::uint64_t per_series = xa.size();
    const std::string palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"};
    for (std::uint64_t row = 0; row < y.values.size(); ++row) {
        if (row % per_series == 0) {  // a new combination of the other grid knobs (f and ov too) names a series
            io::PlotSeries s;
            s.style = io::PlotSeries::Style::line;
            std::string title;
            std::uint64_t rest = row / per_series;
            std::vector<std::string> parts(x_axis);
            for (size_t i = x_axis; i-- > 0;) {
                const io::GridAxis& a = spec.axes[i];
                parts[i] =
                    fmt::format("{}={}{}{}", a.knob, cell_text(a, rest % a.size()), a.row->bare.empty() ? "" : " ", a.row->bare);
                rest /= a.size();
            }
            for (const std::string& part : parts) title += (title.empty() ? "" : " ") + part;
            s.title = title.empty() ? p.ylabel : title;
            s.color = palette[p.series.size() % 8];
            p.series.push_back(s);
        }
        const double v = y.values[row];
        if (!std::isfinite(v)) continue;  // an empty cell (status does_not_fit, or no baseline)
        p.series.back().x.push_back(as_shown(xa.number(row % per_series)));
        p.series.back().y.push_back(as_shown(v));
    }
    return p;
}

}  // namespace kvroof::cli
