// SPDX-License-Identifier: MIT
#pragma once
// Plots drawn by gnuplot's SVG terminal (Debian package gnuplot-nox). The data
// travel inline in the script, so the same spec gives the same bytes.

#include <string>
#include <vector>

#include "kvroof/io/atomic_write.hpp"

namespace kvroof::io {

struct PlotSeries {
    enum class Style { line, points, band };  // band: the area between y_low and y
    Style style = Style::line;
    std::string title;
    std::vector<double> x, y, y_low;
    std::string color;  // "#rrggbb"
};

// A reference line across the plot: horizontal at y (a break-even), or
// vertical at x (a marker: f*, the preset's real CPU:GPU ratio), with its legend entry.
struct PlotLine {
    double at = 0;
    std::string title;
    std::string color = "#555555";
};

struct PlotSpec {
    std::string title, xlabel, ylabel;  // a title may have a line break ('\n')
    std::vector<PlotSeries> series;
    bool log_x = false;
    std::vector<std::string> y_categories;  // non-empty: y values are 1-based category indices with these labels
    std::string key = "outside right top";  // outside the data
    std::vector<PlotLine> hlines, vlines;
};

// The gnuplot script for `spec`, writing to `svg_path`.
[[nodiscard]] std::string gnuplot_script(const PlotSpec& spec, const std::string& svg_path);

// The gnuplot program on PATH, as a path to run. Throws std::runtime_error
// (one line saying how to install it) when there is none: callers ask before
// writing anything, so a missing gnuplot fails a command before its first byte.
[[nodiscard]] std::string find_gnuplot();

// Runs gnuplot and puts the SVG at `svg_path` atomically. Throws
// std::runtime_error when gnuplot is missing or fails; leaves no file behind.
void render_svg(const PlotSpec& spec, const std::string& svg_path);

// The same into `out`, which the caller commits (with the files drawn from the
// same data, so they appear together or not at all).
void render_svg(const PlotSpec& spec, AtomicFile& out);

}  // namespace kvroof::io
