// SPDX-License-Identifier: MIT
// Sweep files (--config) and the provenance a sweep writes next to its output.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>

#include "kvroof/io/presets.hpp"
#include "kvroof/io/shard.hpp"
#include "kvroof/io/sweep.hpp"

namespace kvroof::io {

namespace {
// A relative path that is not here but is shipped with an installed kvroof
// (<prefix>/share/kvroof/configs/…, next to <prefix>/bin/kvroof): the shipped
// file, so the README's `--config configs/…` examples run from any folder
// after `cmake --install`. Anything else stands as given.
std::string shipped_or_given(std::string_view path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path given(path);
    if (given.is_absolute() || fs::exists(given, ec)) return std::string(path);
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return std::string(path);
    const fs::path shipped = exe.parent_path().parent_path() / "share" / "kvroof" / given;
    return fs::is_regular_file(shipped, ec) ? shipped.string() : std::string(path);
}
// A relative file path a provenance file names, read from the current folder:
// `base` (the file's folder) joined to it. Anything else stands as given.
std::string rebased(const std::string& value, const std::filesystem::path& base) {
    if (base.empty() || !is_path(value) || std::filesystem::path(value).is_absolute()) return value;
    return (base / value).lexically_normal().generic_string();
}

// The inverse, for writing one: a relative path that names a file here, relative
// to the folder `dir` the provenance goes to.
std::string relocated(const std::string& value, const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!is_path(value) || fs::path(value).is_absolute() || !fs::exists(value, ec)) return value;
    const fs::path here = fs::absolute(value, ec).lexically_normal(), there = fs::absolute(dir, ec).lexically_normal();
    if (ec) return value;
    const fs::path rel = here.lexically_relative(there);
    if (rel.empty()) return value;
    // Still a path when read back: "h200" alone would name the preset, not the file.
    const std::string out = rel.generic_string();
    return is_path(out) ? out : "./" + out;
}

// A text axis's values through `f`, its entry rewritten where one changed (numeric axes hold no paths).
template <class F>
void map_paths(GridAxis& a, F f) {
    if (!a.text()) return;
    bool changed = false;
    std::string entry = a.knob + "=";
    for (std::size_t i = 0; i < a.values.size(); ++i) {
        std::string v = f(a.values[i]);
        changed = changed || v != a.values[i];
        a.values[i] = std::move(v);
        if (i) entry += a.row->list_sep;  // ';' between workloads and mixes, which hold commas
        entry += a.values[i];
    }
    if (changed) a.entry = std::move(entry);
}
// kvroof.cells of a provenance file: per text axis, the cell of each value as the run that wrote it showed it.
void read_cells(const std::string& where, const nlohmann::json& cells, SweepSpec& spec) {
    const std::string at = where + ": kvroof.cells";
    if (!cells.is_object()) throw InputError(at + ": must be an object of text axes' cells");
    for (const auto& item : cells.items()) {
        const std::string& knob = item.key();  // not a structured binding: clang 14 cannot capture one
        const nlohmann::json& c = item.value();
        const auto it = std::find_if(spec.axes.begin(), spec.axes.end(), [&](const GridAxis& a) { return a.knob == knob; });
        if (it == spec.axes.end() || !it->text())
            throw InputError(fmt::format("{}.{}: no text axis '{}' on the grid", at, knob, knob));
        if (!c.is_array() || c.size() != it->values.size())
            throw InputError(fmt::format("{}.{}: must be a list of {} cells, one per value", at, knob, it->values.size()));
        it->shown.clear();
        for (const auto& v : c) {
            if (!v.is_string())
                throw InputError(fmt::format("{}.{}: each cell must be a string, got {}", at, knob, v.type_name()));
            it->shown.push_back(v.get<std::string>());
        }
    }
}
}  // namespace

SweepAnalysis parse_sweep_analysis(std::string_view flag, std::string_view text) {
    if (text == "verdict") return SweepAnalysis::verdict;
    if (text == "prefill") return SweepAnalysis::prefill;
    if (text == "layers") return SweepAnalysis::layers;
    throw InputError(fmt::format("{}: must be verdict, prefill or layers, got '{}'", flag, text));
}

SweepSpec load_sweep_file(std::string_view given) {
    const std::string path = shipped_or_given(given);
    // Depth-capped, and every failure an InputError naming --config and the file.
    const nlohmann::json j = read_json_file("--config", path);
    const std::string where = fmt::format("--config {}", path);
    if (!j.is_object()) throw InputError(where + ": expected a JSON object");
    for (const auto& [k, _] : j.items())
        if (k != "fixed" && k != "grid" && k != "load" && k != "description" && k != "analysis" && k != "kvroof")
            throw InputError(
                fmt::format("{}: unknown key '{}'; allowed: description, analysis, fixed, load, grid, kvroof", where, k));
    SweepSpec spec;
    // A provenance file (its "kvroof" key) names files relative to its own folder.
    const std::filesystem::path base = j.contains("kvroof") ? std::filesystem::path(path).parent_path() : std::filesystem::path();
    if (j.contains("analysis")) {
        if (!j.at("analysis").is_string())
            throw InputError(fmt::format("{}: 'analysis' must be a string, got {}", where, j.at("analysis").type_name()));
        spec.analysis = parse_sweep_analysis(where + ": analysis", j.at("analysis").get<std::string>());
    }
    if (j.contains("description")) {
        if (!j.at("description").is_string())
            throw InputError(fmt::format("{}: 'description' must be a string, got {}", where, j.at("description").type_name()));
        spec.description = j.at("description").get<std::string>();
    }
    if (j.contains("fixed")) {
        if (!j.at("fixed").is_object())
            throw InputError(
                fmt::format("{}: 'fixed' must be an object of flag: \"value\", got {}", where, j.at("fixed").type_name()));
        for (const auto& [k, v] : j.at("fixed").items()) {
            if (!v.is_string()) throw InputError(fmt::format("{}: fixed.{} must be a string like on the command line", where, k));
            set_scenario_flag(spec.fixed, k, rebased(v.get<std::string>(), base), where, Origin::config);
        }
    }
    if (j.contains("load")) spec.load = load_text_from_json(where, j.at("load"));  // a benchmark's load: operating-point rows
    if (j.contains("kvroof") && j.at("kvroof").is_object()) {  // a provenance file: its output's format and shard
        const nlohmann::json& k = j.at("kvroof");
        if (k.contains("format")) {
            const nlohmann::json& f = k.at("format");
            if (!f.is_string() || (f != "csv" && f != "jsonl"))
                throw InputError(fmt::format("{}: kvroof.format must be \"csv\" or \"jsonl\", got {}", where, f.dump()));
            spec.format = f == "csv" ? SweepFormat::csv : SweepFormat::jsonl;
        }
        if (k.contains("shard")) {
            if (!k.at("shard").is_string())
                throw InputError(
                    fmt::format("{}: kvroof.shard must be a string like \"2/8\", got {}", where, k.at("shard").dump()));
            const Shard sh = parse_shard(where + ": kvroof.shard", k.at("shard").get<std::string>());
            spec.shard_index = sh.index;
            spec.shard_count = sh.count;
        }
    }
    if (!j.contains("grid") || !j.at("grid").is_array()) throw InputError(where + ": 'grid' must be a list of \"knob=values\"");
    const bool provenance = j.contains("kvroof") && j.at("kvroof").is_object();
    for (const auto& g : j.at("grid")) {
        if (!g.is_string())
            throw InputError(
                fmt::format("{}: each 'grid' entry must be a string like \"f=0:1:0.05\", got {}", where, g.type_name()));
        spec.axes.push_back(parse_grid_entry(g.get<std::string>()));
        GridAxis& a = spec.axes.back();
        const std::vector<std::string> written = a.values;
        map_paths(a, [&](const std::string& v) { return rebased(v, base); });
        // A provenance file whose paths needed no rewriting (its sweep wrote it beside the files) holds no
        // kvroof.cells: its values are the cells that sweep wrote.
        if (provenance && a.values != written) a.shown = written;
    }
    if (j.contains("kvroof") && j.at("kvroof").is_object() && j.at("kvroof").contains("cells"))
        read_cells(where, j.at("kvroof").at("cells"), spec);
    return spec;
}

nlohmann::json sweep_provenance(const SweepSpec& spec, std::string_view meta_path) {
    const std::filesystem::path dir = std::filesystem::path(meta_path).parent_path();
    const auto place = [&](const std::string& v) { return meta_path.empty() ? v : relocated(v, dir); };
    nlohmann::json fixed = nlohmann::json::object(), inputs = nlohmann::json::array(), resolved = nlohmann::json::object();
    for (const Knob& k : knobs()) {
        if (k.grid_only) continue;
        if (const auto& g = spec.fixed.get(k)) {
            fixed[std::string(k.name)] = place(g->text);
            inputs.push_back({{"knob", k.name}, {"value", place(g->text)}, {"from", describe(g->origin)}});
        } else if (!k.fallback.empty()) {
            bool on_grid = false;
            for (const auto& a : spec.axes) on_grid = on_grid || a.row == &k;
            if (!on_grid) resolved[std::string(k.name)] = std::string(k.fallback);
        }
    }
    nlohmann::json grid = nlohmann::json::array(), cells = nlohmann::json::object();
    for (const GridAxis& given : spec.axes) {
        GridAxis a = given;
        map_paths(a, place);
        grid.push_back(a.entry);
        if (a.values == given.values && given.shown.empty()) continue;
        // A path rewritten for the sidecar's folder: the replay's rows keep the cells this run wrote.
        nlohmann::json c = nlohmann::json::array();
        for (std::size_t i = 0; i < given.values.size(); ++i) c.push_back(given.cell(i));
        cells[a.knob] = std::move(c);
    }
    const auto range = shard_range(spec);
    nlohmann::json out = {{"fixed", fixed},
                          {"grid", grid},
                          {"kvroof",
                           {{"version", KVROOF_VERSION},
                            {"command", "sweep"},
                            {"format", spec.format == SweepFormat::csv ? "csv" : "jsonl"},
                            {"shard", fmt::format("{}/{}", spec.shard_index, spec.shard_count)},
                            {"points", sweep_points(spec)},
                            {"rows", range.second - range.first},
                            {"inputs", inputs},
                            {"defaults", resolved}}}};
    if (!cells.empty()) out["kvroof"]["cells"] = std::move(cells);
    // What the command line gave over the --config file beside the fixed knobs (those are in `inputs`).
    if (!spec.load_overrides.empty() || !spec.axes_replaced.empty())
        out["kvroof"]["overrides_config"] = {{"load", spec.load_overrides}, {"grid", spec.axes_replaced}};
    if (!spec.load.empty()) out["load"] = load_text_json(spec.load);
    if (spec.analysis != SweepAnalysis::verdict) out["analysis"] = std::string(name(spec.analysis));
    if (!spec.description.empty()) out["description"] = spec.description;
    return out;
}

}  // namespace kvroof::io
