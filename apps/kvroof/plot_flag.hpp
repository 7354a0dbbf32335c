// SPDX-License-Identifier: MIT
#pragma once
// `--plot FILE.svg` as every subcommand that draws one has it: a missing
// gnuplot fails before any work, and the SVG is written beside the report,
// committed after it, so the files appear together or not at all.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "kvroof/io/plot.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {

inline void add_plot_option(CLI::App& app, std::string& path, std::string_view what) {
    app.add_option("--plot", path,
                   with_default(std::string("also draw ") + std::string(what) + " to FILE.svg (needs gnuplot)", "none"))
        ->type_name("FILE.svg")
        ->group("Output");
}

class PlotOutput {
public:
    explicit PlotOutput(std::string path) : path_(std::move(path)) {
        if (!path_.empty()) (void)io::find_gnuplot();  // fails here, before the first byte
    }
    // Draws `spec` when a path was given (make_spec is called only then).
    template <class MakeSpec>
    void draw(const MakeSpec& make_spec) {
        if (path_.empty()) return;
        svg_ = std::make_unique<io::AtomicFile>(path_);
        io::render_svg(make_spec(), *svg_);
    }
    void commit() {
        if (svg_) svg_->commit();
    }

private:
    std::string path_;
    std::unique_ptr<io::AtomicFile> svg_;
};

}  // namespace kvroof::cli
