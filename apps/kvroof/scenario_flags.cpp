// SPDX-License-Identifier: MIT
#include "scenario_flags.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "kvroof/io/atomic_write.hpp"

namespace kvroof::cli {

std::string knob_help(const Knob& k) {
    std::string h(k.help);
    if (!k.bare.empty()) h += fmt::format(" [{}]", k.bare);
    const std::string_view def = k.fallback.empty() ? k.shown_default : k.fallback;
    if (!def.empty()) h += fmt::format(" [default: {}]", def);
    return h;
}

void add_scenario_flags(CLI::App& app, io::ScenarioInputs& in) {
    for (const Knob& k : knobs()) {
        if (k.grid_only) continue;
        const Knob* kp = &k;
        app.add_option_function<std::string>(
               k.flag(), [&in, kp](const std::string& v) { in.set(*kp, v); }, knob_help(k))
            ->type_name(k.type == KnobType::text ? "TEXT" : "VALUE")
            ->group(std::string(k.group));
    }
}

void add_output_flags(CLI::App& app, OutputOptions& out) {
    app.add_flag("--json", out.json, "print one JSON object with every number instead of the text report")->group("Output");
    app.add_option("--report", out.report, "also write the report as markdown to FILE (atomically)")
        ->type_name("FILE.md")
        ->group("Output");
}

void emit(const OutputOptions& out, const std::string& text, const std::string& json_text, const std::string& markdown) {
    if (!out.report.empty()) io::write_file_atomic(out.report, markdown);
    const std::string& s = out.json ? json_text : text;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}

}  // namespace kvroof::cli
