// SPDX-License-Identifier: MIT
#pragma once
// Plots of a sweep's CSV (`kvroof sweep --plot FILE.svg --x KNOB --y COLUMN`).

#include <string>

#include "kvroof/io/plot.hpp"
#include "kvroof/io/sweep.hpp"

namespace kvroof::cli {

// --x must be the last, numeric --grid knob and --y a column of the CSV; returns the x axis.
int check_plot_axes(const io::SweepSpec& spec, const std::string& x_knob, const std::string& y_col);
// One series per combination of the other grid knobs, x = the --x knob's column.
[[nodiscard]] io::PlotSpec plot_from_csv(const std::string& csv_path, const io::SweepSpec& spec, const std::string& x_knob,
                                         const std::string& y_col);

}  // namespace kvroof::cli
