// SPDX-License-Identifier: MIT
// `kvroof sweep --plot`: the rows of a finished sweep CSV drawn as an SVG.
#include <fmt/format.h>

#include <fstream>

#include "sweep_plot.hpp"

namespace kvroof::cli {

// The rows of a finished sweep CSV, for plotting: x = the --x knob's column,
// one series per combination of the other grid knobs.
// --x must be the last, numeric --grid knob and --y a column of the CSV.
int check_plot_axes(const io::SweepSpec& spec, const std::string& x_knob, const std::string& y_col) {
    int x_axis = -1;
    for (size_t i = 0; i < spec.axes.size(); ++i)
        if (spec.axes[i].knob == x_knob) x_axis = static_cast<int>(i);
    if (x_axis < 0) throw InputError("--x: must be one of the --grid knobs, got '" + x_knob + "'");
    if (spec.axes[static_cast<size_t>(x_axis)].text()) throw InputError("--x: must be a numeric knob, got '" + x_knob + "'");
    if (x_axis != static_cast<int>(spec.axes.size()) - 1)
        throw InputError("--x: must be the last --grid (the one that varies fastest), got '" + x_knob + "'");
    const std::string header = io::sweep_header(spec);
    const std::string cols = "," + header.substr(0, header.size() - 1) + ",";
    if (cols.find("," + y_col + ",") == std::string::npos)
        throw InputError("--y: unknown column '" + y_col + "'; allowed: " + header.substr(0, header.size() - 1));
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
// A CSV line's cells; text cells are quoted when they contain commas.
std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> cells;
    std::string cell;
    bool q = false;
    for (char ch : line) {
        if (ch == '"')
            q = !q;
        else if (ch == ',' && !q) {
            cells.push_back(cell);
            cell.clear();
        } else
            cell += ch;
    }
    cells.push_back(cell);
    return cells;
}
}  // namespace

io::PlotSpec plot_from_csv(const std::string& csv_path, const io::SweepSpec& spec, const std::string& x_knob,
                           const std::string& y_col) {
    const int x_axis = check_plot_axes(spec, x_knob, y_col);
    std::ifstream in(csv_path);
    std::string header;
    std::getline(in, header);
    const std::vector<std::string> cols = split_csv_line(header);
    int y_idx = -1;
    for (size_t i = 0; i < cols.size(); ++i)
        if (cols[i] == y_col) y_idx = static_cast<int>(i);
    if (y_idx < 0) {
        std::string allowed;
        for (const auto& c : cols) allowed += (allowed.empty() ? "" : ", ") + c;
        throw InputError("--y: unknown column '" + y_col + "'; allowed: " + allowed);
    }
    const std::string x_col = spec.axes[static_cast<size_t>(x_axis)].column;
    int x_idx = -1;
    for (size_t i = 0; i < cols.size(); ++i)
        if (cols[i] == x_col) x_idx = static_cast<int>(i);
    io::PlotSpec p;
    // Axis labels with units from the knob table and the column list, never a raw column name.
    const std::string xl = io::sweep_column_label(x_col), yl = io::sweep_column_label(y_col);
    p.xlabel = xl.empty() ? x_col : xl;
    p.ylabel = yl.empty() ? y_col : yl;
    p.title = fmt::format("{} vs {}{}", p.ylabel.substr(0, p.ylabel.find(" (")), p.xlabel.substr(0, p.xlabel.find(" (")),
                          scenario_phrase(spec));
    if (y_col.rfind("gain", 0) == 0) p.hlines.push_back({1.0, "1x: break-even"});
    const size_t per_series = static_cast<size_t>(spec.axes.back().size());
    std::string line;
    size_t row = 0;
    const std::string palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"};
    while (std::getline(in, line)) {
        const std::vector<std::string> cells = split_csv_line(line);
        if (row % per_series == 0) {
            io::PlotSeries s;
            s.style = io::PlotSeries::Style::line;
            std::string title;
            for (size_t i = 0; i + 1 < spec.axes.size(); ++i)  // every other grid knob, f and ov too, names the series
                for (size_t c = 0; c < cols.size(); ++c)
                    if (cols[c] == spec.axes[i].column)
                        title += fmt::format("{}{}={}{}{}", title.empty() ? "" : " ", spec.axes[i].knob, cells[c],
                                             spec.axes[i].row->bare.empty() ? "" : " ", spec.axes[i].row->bare);
            s.title = title.empty() ? p.ylabel : title;
            s.color = palette[p.series.size() % 8];
            p.series.push_back(s);
        }
        const int xi = x_idx >= 0 ? x_idx : 0;
        ++row;
        if (cells[static_cast<size_t>(y_idx)].empty()) continue;  // no number there (status does_not_fit, or no baseline)
        try {
            p.series.back().x.push_back(std::stod(cells[static_cast<size_t>(xi)]));
            p.series.back().y.push_back(std::stod(cells[static_cast<size_t>(y_idx)]));
        } catch (const std::exception&) {
            throw InputError("--y: column '" + y_col + "' is not numeric");
        }
    }
    return p;
}

}  // namespace kvroof::cli
