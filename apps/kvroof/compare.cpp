// SPDX-License-Identifier: MIT
// `kvroof compare`: the verdict of several scenarios side by side, e.g. --across hardware=h100-sxm,h200,b200,
// or --config a.json --config b.json (one scenario per file).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include "commands.hpp"

#include "kvroof/io/compare_render.hpp"
#include "kvroof/io/presets.hpp"
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
    std::vector<std::string> configs;
};

// One scenario file: {"description": "...", "fixed": {"knob": "value", ...}}, a sweep file's fixed
// part; the command line's flags override its values. Its label is the file's stem.
struct ScenarioFile {
    std::string label;
    io::ScenarioInputs inputs;
    std::vector<std::string> overridden;  // the file's "knob=value" the command line replaced
};

ScenarioFile load_scenario_file(const std::string& path, const io::ScenarioInputs& command_line) {
    const std::string where = fmt::format("--config {}", path);
    const nlohmann::json j = io::read_json_file("--config", path);
    if (!j.is_object()) throw InputError(where + ": expected a JSON object {\"fixed\": {\"knob\": \"value\", ...}}");
    for (const auto& [k, _] : j.items())
        if (k != "fixed" && k != "description")
            throw InputError(fmt::format("{}: unknown key '{}'; allowed: description, fixed (one scenario per file)", where, k));
    if (!j.contains("fixed") || !j.at("fixed").is_object())
        throw InputError(where + ": 'fixed' must be an object of knob: \"value\", e.g. {\"hardware\": \"h200\"}");
    ScenarioFile f{std::filesystem::path(path).stem().string(), {}, {}};
    for (const auto& [k, v] : j.at("fixed").items()) {
        if (!v.is_string()) throw InputError(fmt::format("{}: fixed.{} must be a string like on the command line", where, k));
        io::set_scenario_flag(f.inputs, k, v.get<std::string>(), where, io::Origin::config);
        if (command_line.given(k)) f.overridden.push_back(fmt::format("{}={}", k, v.get<std::string>()));
    }
    f.inputs.override_with(command_line);
    return f;
}

// The base scenarios: one per --config file, or the command line's alone.
std::vector<ScenarioFile> base_scenarios(const CompareOptionsText& o) {
    if (o.configs.empty()) return {{"", o.scenario, {}}};
    std::vector<ScenarioFile> out;
    for (const std::string& path : o.configs) {
        ScenarioFile f = load_scenario_file(path, o.scenario);
        for (const ScenarioFile& e : out)
            if (e.label == f.label)
                throw InputError(fmt::format(
                    "--config {}: another file is also named '{}'; each column is named by its file's stem", path, f.label));
        out.push_back(std::move(f));
    }
    return out;
}

// The scenario of one column, its warnings on stderr under its label; a file's bad value names the file.
Scenario build_column(const ScenarioFile& base, const io::ScenarioInputs& in, const std::string& path, const std::string& label) {
    io::BuiltScenario b;
    try {
        b = io::build_scenario(in);
    } catch (const InputError& e) {
        if (base.label.empty()) throw;
        throw InputError(fmt::format("--config {}: {}", path, e.what()));
    }
    print_warnings(b, false, label);
    return std::move(b.scenario);
}

void run_compare(const CompareOptionsText& o) {
    if (o.across.empty() && o.configs.empty())
        throw InputError("--across: give at least one, e.g. --across hardware=h100-sxm,h200,b200, or two --config files");
    std::vector<io::GridAxis> axes;
    std::uint64_t n = 1;
    for (const std::string& e : o.across) {
        io::GridAxis a = io::parse_grid_entry(e, "--across");
        if (a.knob == "f" || a.knob == "ov")
            throw InputError(fmt::format("--across: '{}': f and ov are what the verdict chooses; compare scenarios", e));
        if (a.row->grid_only)
            throw InputError(fmt::format("--across: '{}': a load is a sweep's axis (kvroof sweep --grid); compare scenarios", e));
        if (o.scenario.get(*a.row))
            throw InputError(fmt::format("--across {}: also given as --{}; give it one way", a.knob, a.knob));
        for (const io::GridAxis& b : axes)
            if (b.knob == a.knob)
                throw InputError(fmt::format("--across: '{}': {} is already varied by '{}'; give its values in one --across", e,
                                             a.knob, b.entry));
        n *= a.size();
        if (n > kMaxVariants) throw InputError(fmt::format("--across: at most {} scenarios, got more", kMaxVariants));
        axes.push_back(std::move(a));
    }
    std::string base;
    for (const auto& [k, v] : io::build_scenario(o.scenario).overrides) base += fmt::format(" {}={}", k, v);
    const std::vector<ScenarioFile> bases = base_scenarios(o);
    for (std::size_t i = 0; i < o.configs.size(); ++i)  // each file under the flags, and what they replaced in it
        base += fmt::format(" --config {}{}", o.configs[i],
                            bases[i].overridden.empty()
                                ? std::string()
                                : fmt::format(" (the flags override its {})", fmt::join(bases[i].overridden, ", ")));
    if (bases.size() * n > kMaxVariants) throw InputError(fmt::format("--config: at most {} scenarios, got more", kMaxVariants));
    std::vector<std::pair<std::string, Scenario>> scenarios;
    for (std::size_t b = 0; b < bases.size(); ++b)
        for (std::uint64_t i = 0; i < n; ++i) {  // the first axis varies slowest
            io::ScenarioInputs in = bases[b].inputs;
            std::string label = bases[b].label;
            std::uint64_t rest = i, stride = n;
            for (const io::GridAxis& a : axes) {
                stride /= a.size();
                const std::string v = a.value(rest / stride);
                rest %= stride;
                in.set(a.knob, v);
                label += fmt::format("{}{}={}", label.empty() ? "" : ", ", a.knob, v);
            }
            scenarios.emplace_back(label, build_column(bases[b], in, o.configs.empty() ? "" : o.configs[b], label));
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
        "--across KNOB=V1,V2,... (repeatable; every combination) varies any scenario knob on top of the other flags.\n"
        "--config FILE (repeatable) adds one scenario per file, named by the file's stem: a JSON object\n"
        "{\"description\": \"...\", \"fixed\": {\"hardware\": \"h200\", \"gpus\": \"8\"}}, a sweep file's fixed part; the\n"
        "command line's flags override every file's values, and --across varies each file's scenario.\n\n"
        "Examples:\n"
        "  kvroof compare --across hardware=h100-sxm,h200,b200 --model llama-3.1-70b --gpus 2\n"
        "  kvroof compare --across kv-dtype=bf16,fp8,int4 --across cpus-per-gpu=0.5,1,2 --json\n"
        "  kvroof compare --across model=llama-3.1-70b,qwen3-235b-a22b --hardware h200 --gpus 8 --report compare.md\n"
        "  kvroof compare --config h200x8.json --config b200x8.json --model qwen3-235b-a22b");
    add_scenario_flags(*sub, o->scenario);
    sub->add_option(
           "--across", o->across,
           with_default("a knob and its values to compare, KNOB=V1,V2,... (repeatable)", "none; compare needs it or --config"))
        ->type_name("KNOB=LIST")
        ->group("Compare");
    sub->add_option("--config", o->configs,
                    with_default("a scenario file to compare, one row per file, named by its stem (repeatable)",
                                 "none: the command line's scenario"))
        ->type_name("FILE.json")
        ->group("Compare");
    add_output_flags(*sub, o->output);
    return [o] { run_compare(*o); };
}

}  // namespace kvroof::cli
