// SPDX-License-Identifier: MIT
#pragma once
// Plots of a sweep's rows (`kvroof sweep --plot FILE.svg --x KNOB --y COLUMN`).

#include <string>

#include "kvroof/io/plot.hpp"
#include "kvroof/io/sweep.hpp"

namespace kvroof::cli {

// --x must be the last, numeric --grid knob and --y a numeric column of the rows; returns the x axis.
int check_plot_axes(const io::SweepSpec& spec, const std::string& x_knob, const std::string& y_col);
// One series per combination of the other grid knobs, x = the --x knob's
// values, y = the tapped column (run_sweep's ColumnTap for y.column), both as
// the CSV shows them.
[[nodiscard]] io::PlotSpec plot_from_rows(const io::SweepSpec& spec, const std::string& x_knob, const io::ColumnTap& y);

}  // namespace kvroof::cli
