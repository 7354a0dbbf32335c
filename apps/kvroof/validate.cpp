// SPDX-License-Identifier: MIT
// `kvroof validate`: measured points against the physical floor, and the efficiencies refitted to them.
#include <memory>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/validate.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct ValidateOptionsText {
    OutputOptions output;
    std::optional<std::string> points, out, threads;
};

void run_validate(const ValidateOptionsText& o) {
    const int threads = parse_threads(o.threads, 1024).value_or(0);
    const std::string_view out = o.out ? std::string_view(*o.out) : std::string_view();
    check_distinct_outputs({{"--out", out}, {"--report", o.output.report}});
    check_outputs_spare_inputs({{"--out", out}, {"--report", o.output.report}},
                               {{"--points", o.points ? std::string_view(*o.points) : std::string_view()}});
    std::vector<io::MeasuredPoint> points;
    std::string source = "data/measurements/serving_points.json";
    if (o.points) {
        source = *o.points;
        points = io::measured_points_from(fmt::format("--points {}", *o.points), io::read_json_file("--points", *o.points));
    } else {
        points = io::measured_points();
    }
    // The fit's temporary is made before the run, so a --out that cannot be written fails before anything else,
    // and it is committed only after --report is written: a failing --report leaves no fit behind.
    std::unique_ptr<io::AtomicFile> fit = o.out ? std::make_unique<io::AtomicFile>(*o.out) : nullptr;
    const io::ValidationResult r = io::validate(points, source, threads);
    if (fit) fit->write(io::calibration_json(r).dump(2) + "\n");
    emit_lazy(
        o.output, [&] { return io::render_validate_text(r); }, [&] { return io::validate_json(r).dump(2) + "\n"; },
        [&] { return io::render_validate_markdown(r); });
    if (fit) fit->commit();
}
}  // namespace

Action setup_validate(CLI::App& app) {
    auto o = std::make_shared<ValidateOptionsText>();
    CLI::App* sub = app.add_subcommand(
        "validate",
        "measured serving points against the physical floor; the efficiencies and overheads (eta-compute, eta-mem, "
        "step-overhead, moe-layer-latency) refitted to them, with leave-one-out errors and prediction intervals");
    sub->footer(
        "Examples:\n"
        "  kvroof validate                                  # the shipped points of data/measurements/\n"
        "  kvroof validate --out fit.json                   # then: kvroof verdict --calibration fit.json\n"
        "  kvroof validate --points my_runs.json --json     # your own runs, schema in data/measurements/README.md");
    add_text_option(*sub, "--points", o->points, "FILE", "Options",
                    "measured points in serving_points.json's schema (data/measurements/README.md)",
                    fmt::format("the shipped {}", io::measured_points().size()));
    add_text_option(*sub, "--out", o->out, "FIT.json", "Options",
                    "write the fit and its intervals as JSON, for kvroof verdict --calibration", "none");
    add_text_option(*sub, "--threads", o->threads, "N", "Options",
                    "worker threads for the leave-one-out refits (the result is the same for any count)", "all cores");
    add_output_flags(*sub, o->output);
    return [o] { run_validate(*o); };
}

}  // namespace kvroof::cli
