// SPDX-License-Identifier: MIT
// `kvroof report`: regenerate every report and plot from configs/.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "kvroof/io/report.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {

Action setup_report(CLI::App& app) {
    auto out = std::make_shared<std::string>("outputs");
    CLI::App* sub =
        app.add_subcommand("report", "regenerate every report and plot (markdown + SVG) from the scenario files in configs/");
    sub->footer(
        "Deterministic: a rerun writes byte-identical files (the tool version, never a date). Plots need gnuplot (gnuplot-nox).\n"
        "All or nothing: DIR is replaced whole when every file is ready, or left as it was; it must be new or hold only an "
        "earlier report.\n"
        "Examples:\n"
        "  kvroof report                 # into outputs/\n"
        "  kvroof report --out /tmp/r && diff -r /tmp/r outputs   # what CI checks");
    sub->add_option("--out", *out, with_default("folder to write into (replaced whole)", *out))->type_name("DIR");
    return [out] {
        for (const auto& f : io::write_reports(*out)) std::printf("%s/%s\n", out->c_str(), f.c_str());
    };
}

}  // namespace kvroof::cli
