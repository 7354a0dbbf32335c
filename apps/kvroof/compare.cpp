// SPDX-License-Identifier: MIT
// `kvroof compare`: the verdict of several scenarios side by side, e.g. --across hardware=h100-sxm,h200,b200.
#include <memory>
#include <vector>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/io/compare_render.hpp"
#include "kvroof/io/sweep.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
constexpr std::uint64_t kMaxVariants = 1000;

struct CompareOptionsText {
    io::ScenarioInputs scenario;
    OutputOptions output;
    std::vector<std::string> across;
};

void run_compare(const CompareOptionsText& o) {
    if (o.across.empty()) throw InputError("--across: give at least one, e.g. --across hardware=h100-sxm,h200,b200");
    std::vector<io::GridAxis> axes;
    std::uint64_t n = 1;
    for (const std::string& e : o.across) {
        io::GridAxis a = io::parse_grid_entry(e);
        if (a.knob == "f" || a.knob == "ov")
            throw InputError(fmt::format("--across: '{}': f and ov are what the verdict chooses; compare scenarios", e));
        n *= a.size();
        if (n > kMaxVariants) throw InputError(fmt::format("--across: at most {} scenarios, got more", kMaxVariants));
        axes.push_back(std::move(a));
    }
    std::string base;
    for (const auto& [k, v] : io::build_scenario(o.scenario).overrides) base += fmt::format(" {}={}", k, v);
    std::vector<std::pair<std::string, Scenario>> scenarios;
    for (std::uint64_t i = 0; i < n; ++i) {  // the first axis varies slowest
        io::ScenarioInputs in = o.scenario;
        std::string label;
        std::uint64_t rest = i, stride = n;
        for (const io::GridAxis& a : axes) {
            stride /= a.size();
            const std::string v = a.value(rest / stride);
            rest %= stride;
            in.set(a.knob, v);
            label += fmt::format("{}{}={}", label.empty() ? "" : ", ", a.knob, v);
        }
        scenarios.emplace_back(label, io::build_scenario(in).scenario);
    }
    const CompareStudy s = compare_study(scenarios);
    emit_lazy(
        o.output, [&] { return io::render_compare_text(s, base); }, [&] { return io::compare_json(s, base).dump(2) + "\n"; },
        [&] { return io::render_compare_markdown(s, base); });
}
}  // namespace

Action setup_compare(CLI::App& app) {
    auto o = std::make_shared<CompareOptionsText>();
    CLI::App* sub = app.add_subcommand("compare", "several scenarios side by side: the verdict of each, per GPU, in one table");
    sub->footer(
        "--across KNOB=V1,V2,... (repeatable; every combination) varies any scenario knob on top of the other flags.\n\n"
        "Examples:\n"
        "  kvroof compare --across hardware=h100-sxm,h200,b200 --model llama-3.1-70b --gpus 2\n"
        "  kvroof compare --across kv-dtype=bf16,fp8,int4 --across cpus-per-gpu=0.5,1,2 --json\n"
        "  kvroof compare --across model=llama-3.1-70b,qwen3-235b-a22b --hardware h200 --gpus 8 --report compare.md");
    add_scenario_flags(*sub, o->scenario);
    sub->add_option("--across", o->across, "a knob and its values to compare, KNOB=V1,V2,...")
        ->type_name("KNOB=LIST")
        ->group("Compare");
    add_output_flags(*sub, o->output);
    return [o] { run_compare(*o); };
}

}  // namespace kvroof::cli
