// SPDX-License-Identifier: MIT
#include "kvroof/io/presets.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "kvroof/analysis/serving.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/spec/check.hpp"
#include "kvroof/spec/knobs.hpp"
#include "presets_json.hpp"

namespace kvroof::io {

using namespace json_read;

const json& presets(std::string_view kind) {
    static const std::map<std::string, json, std::less<>> cache = [] {
        std::map<std::string, json, std::less<>> m;
        for (const char* k : {"hardware", "hosts", "links", "networks", "deployments", "models", "workloads", "checkpoints"})
            m.emplace(k, json::parse(embedded_file(k)));
        return m;
    }();
    const auto it = cache.find(kind);
    if (it == cache.end()) throw InputError(fmt::format("unknown preset kind '{}'", kind));
    return it->second;
}

const json& embedded_config(std::string_view name) {
    static const std::map<std::string, json, std::less<>> cache = [] {
        std::map<std::string, json, std::less<>> m;
        for (const char* k : {"prefill_kappa", "layers_budget", "report"}) m.emplace(k, json::parse(embedded_file(k)));
        return m;
    }();
    const auto it = cache.find(name);
    if (it == cache.end()) throw InputError(fmt::format("unknown embedded config '{}'", name));
    return it->second;
}

std::vector<std::string> preset_names(std::string_view kind) {
    std::vector<std::string> out;
    for (const auto& [k, _] : presets(kind).items()) out.push_back(k);
    return out;
}

bool is_path(std::string_view text) noexcept {
    return text.find('/') != std::string_view::npos || (text.size() > 5 && text.substr(text.size() - 5) == ".json");
}

nlohmann::json parse_json_text(std::string_view where, std::string_view text) {
    std::string last_key;
    std::vector<std::set<std::string>> keys;  // per open object, the keys it has had (a key given twice is an error,
        // not the last one winning silently)
    const json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= kMaxJsonDepth)
            throw InputError(fmt::format("{}: JSON nested deeper than {} levels", where, kMaxJsonDepth));
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        if (event == json::parse_event_t::key && parsed.is_string()) {
            last_key = parsed.get<std::string>();
            if (!keys.empty() && !keys.back().insert(last_key).second)
                throw InputError(fmt::format("{}: key '{}' given twice in one object", where, last_key));
        }
        return true;
    };
    try {
        return json::parse(text, cb);
    } catch (const json::out_of_range& e) {  // 406: a number beyond double, e.g. 1e400
        if (last_key.empty()) throw InputError(fmt::format("{}: {} (numbers must be finite doubles)", where, json_message(e)));
        throw InputError(fmt::format("{}: '{}': {} (numbers must be finite doubles)", where, last_key, json_message(e)));
    } catch (const json::exception& e) {
        throw InputError(fmt::format("{}: invalid JSON: {}", where, json_message(e)));
    }
}

namespace {
std::string python_literals_to_json(std::string_view t) {
    std::string out;
    out.reserve(t.size());
    bool in_string = false, escaped = false;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        if (in_string) {
            out += c;
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
            out += c;
        } else if (t.compare(i, 8, "Infinity") == 0) {
            out += "1.7976931348623157e308";
            i += 7;
        } else if (t.compare(i, 3, "NaN") == 0) {
            // Not null, which reads as "absent" and takes a field's default (NaN KV heads became MHA): a field
            // kvroof reads says it got "NaN"; one it does not read stays harmless.
            out += "\"NaN\"";
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

std::string read_text_file(std::string_view flag, std::string_view path, std::string_view what) {
    std::error_code ec;
    const std::filesystem::path p(path);
    if (std::filesystem::is_directory(p, ec)) throw InputError(fmt::format("{}: '{}' is a folder; give {}", flag, path, what));
    // A device is no file (/dev/zero never ends; a terminal is refused with it: pipe or redirect into /dev/stdin);
    // a name that is not UTF-8 cannot be echoed in JSON.
    const auto st = std::filesystem::status(p, ec);
    if (!ec && (std::filesystem::is_character_file(st) || std::filesystem::is_block_file(st)))
        throw InputError(
            fmt::format("{}: '{}' is a device; give {} (or pipe or redirect one into /dev/stdin)", flag, path, what));
    if (!valid_utf8(path))
        throw InputError(fmt::format("{}: the file name is not valid UTF-8 (the reports echo it); rename the file", flag));
    std::ifstream in{std::string(path)};
    if (!in) throw InputError(fmt::format("{}: cannot open file '{}'", flag, path));
    note_input_file(path);  // no output of this run may replace it
    // Read straight into the string, sized up front where the file has a size (a pipe grows it): a stringstream
    // and its str() copy held a trace of hundreds of MB twice.
    std::string text;
    if (!ec && std::filesystem::is_regular_file(st)) {
        const auto size = std::filesystem::file_size(p, ec);
        if (!ec) text.reserve(static_cast<std::size_t>(size));
    }
    std::array<char, 1 << 16> buf{};
    while (in.read(buf.data(), buf.size()) || in.gcount() > 0) text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    if (in.bad()) throw InputError(fmt::format("{}: cannot read file '{}'", flag, path));
    return text;
}

nlohmann::json read_python_json_file(std::string_view flag, std::string_view path) {
    return parse_json_text(fmt::format("{} {}", flag, path), python_literals_to_json(read_text_file(flag, path)));
}

nlohmann::json read_json_file(std::string_view flag, std::string_view path) {
    return parse_json_text(fmt::format("{} {}", flag, path), read_text_file(flag, path));
}

namespace {

// A knob's SI value from its preset key, which is in the knob's bare unit.
double knob_from_json(std::string_view where, const json& j, const Knob& k) {
    const std::string key(k.preset_key);
    if (k.type == KnobType::whole) return integer(where, j, key.c_str(), static_cast<int>(k.lo), static_cast<int>(k.hi));
    const double v = number(where, j, key.c_str()), bare = bare_si(k);
    // The knob's own range, in the file's unit and under the file's key (a flag's message would show SI units).
    if (!(v * bare >= k.lo && v * bare <= k.hi))
        throw InputError(
            fmt::format("{}: '{}' must be in [{:g}, {:g}], got {}", where, key, k.lo / bare, k.hi / bare, check::show(v)));
    return v * bare;
}

// Every knob `file` holds, read from `j` onto `s` in table order; a key that
// is not required and absent leaves the spec's default. The keys it knows.
std::set<std::string> apply_preset_knobs(std::string_view where, const json& j, PresetFile file, Scenario& s) {
    std::set<std::string> keys;
    for (const Knob& k : knobs()) {
        if (k.preset != file) continue;
        keys.emplace(k.preset_key);
        if (!k.preset_required && (!j.contains(std::string(k.preset_key)) || j.at(std::string(k.preset_key)).is_null())) continue;
        k.access.apply(s, knob_from_json(where, j, k));
    }
    return keys;
}

LinkPreset link_from_json(std::string_view where, const json& l, std::string name) {
    LinkPreset p{std::move(name), {}, {}};
    std::set<std::string> keys;
    for (const Knob& k : knobs()) {
        if (k.preset != PresetFile::link) continue;
        keys.emplace(k.preset_key);
        if (!k.preset_required && !l.contains(std::string(k.preset_key))) continue;
        p.figures.emplace_back(&k, knob_from_json(where, l, k));
    }
    keys.emplace("physical");
    only_keys(where, l, with_meta(keys));
    if (l.contains("physical")) {
        p.physical = string(where, l, "physical");
        (void)find_preset(fmt::format("{}: physical", where), "links", p.physical,
                          false);  // a link preset, or the error names them
    }
    return p;
}

// Every host knob from one hosts.json-shaped entry, in table order, each within
// its knob's range; an absent optional key is the spec's default, so a host
// given after a hardware preset replaces every figure of the preset's host.
LinkPreset host_from_json(std::string_view where, const json& c, std::string name) {
    LinkPreset p{std::move(name), {}, {}};
    std::set<std::string> keys;
    const Scenario defaults;
    for (const Knob& k : knobs()) {
        if (k.preset != PresetFile::host) continue;
        const std::string key(k.preset_key);
        keys.emplace(key);
        if (!k.preset_required && (!c.contains(key) || c.at(key).is_null())) {
            p.figures.emplace_back(&k, k.access.get(defaults));
            continue;
        }
        const double v = knob_from_json(where, c, k);
        const double bare = bare_si(k);
        if (!(v >= k.lo && v <= k.hi))
            throw InputError(
                fmt::format("{}: '{}' must be in [{:g}, {:g}], got {:g}", where, key, k.lo / bare, k.hi / bare, v / bare));
        p.figures.emplace_back(&k, v);
    }
    only_keys(where, c, with_meta(keys));
    return p;
}

// Every network knob (--net-bw, --net-latency) from one networks.json-shaped
// entry, each required and within its knob's range.
LinkPreset net_from_json(std::string_view where, const json& n, std::string name) {
    LinkPreset p{std::move(name), {}, {}};
    std::set<std::string> keys;
    for (const Knob& k : knobs()) {
        if (k.preset != PresetFile::net) continue;
        const std::string key(k.preset_key);
        keys.emplace(key);
        const double v = knob_from_json(where, n, k), bare = bare_si(k);
        if (!(v >= k.lo && v <= k.hi))
            throw InputError(
                fmt::format("{}: '{}' must be in [{:g}, {:g}], got {:g}", where, key, k.lo / bare, k.hi / bare, v / bare));
        p.figures.emplace_back(&k, v);
    }
    only_keys(where, n, with_meta(keys));
    return p;
}

HardwareSpec hardware_from_json(std::string_view where, const json& h, std::string name) {
    std::set<std::string> keys = {"prefill_flops_TFLOPS", "link", "link_shared_by_gpus", "host", "net", "memory_type"};
    for (const Knob& k : knobs())
        if (k.preset == PresetFile::hardware) keys.emplace(k.preset_key);
    only_keys(where, h, with_meta(keys));
    Scenario s;
    HardwareSpec& hw = s.hardware;
    (void)apply_preset_knobs(where, h, PresetFile::hardware, s);
    hw.name = std::move(name);
    if (h.contains("memory_type")) hw.gpu.memory_type = string(where, h, "memory_type");
    hw.gpu.prefill_flops = teraflops(number_or(where, h, "prefill_flops_TFLOPS", hw.gpu.flops.raw() / kTera));
    // One link serves link_shared_by_gpus GPUs: each gets its share of the bandwidth.
    const std::string link = string(where, h, "link");
    const double shared = number_or(where, h, "link_shared_by_gpus", 1.0);
    check::in_range(fmt::format("{}: link_shared_by_gpus", where), shared, 1.0, limits::kMaxGpus);
    const std::shared_ptr<const LinkPreset> board = load_link_preset(fmt::format("{}: link", where), link);
    hw.board_link = board->physical_link();
    hw.board_link_shared_by = shared;
    knob("link").access.apply(s, board);
    knob("host").access.apply(s, load_host_preset(fmt::format("{}: host", where), string(where, h, "host")));
    // The scale-out network: the preset's, else the spec's default (a 400 Gb/s NIC per GPU).
    if (h.contains("net")) knob("net").access.apply(s, load_net_preset(fmt::format("{}: net", where), string(where, h, "net")));
    return hw;
}

}  // namespace

namespace {
// A preset of `section` by name, or the one entry of a JSON file by path (its
// `required` key names the kind); cached under the section, since links,
// hosts and networks share the cache's type and may share a name or a path.
std::shared_ptr<const LinkPreset> section_preset(std::string_view flag, std::string_view name_or_path, const char* section,
                                                 const char* required,
                                                 LinkPreset (*from_json)(std::string_view, const json&, std::string)) {
    return cached<LinkPreset>(fmt::format("{}.{}", section, name_or_path), [&] {
        if (!is_path(name_or_path))
            return from_json(fmt::format("{}.{}", section, name_or_path), find_preset(flag, section, name_or_path),
                             std::string(name_or_path));
        const json j = read_json_file(flag, name_or_path);
        const Entry e = single_entry(flag, name_or_path, j, required);
        return from_json(fmt::format("{} {}", flag, name_or_path), e.value, e.name);
    });
}
}  // namespace

std::shared_ptr<const LinkPreset> load_link_preset(std::string_view flag, std::string_view name) {
    return cached<LinkPreset>(fmt::format("links.{}", name), [&] {
        return link_from_json(fmt::format("links.{}", name), find_preset(flag, "links", name, false), std::string(name));
    });
}

std::shared_ptr<const LinkPreset> load_host_preset(std::string_view flag, std::string_view name_or_path) {
    return section_preset(flag, name_or_path, "hosts", "cpu_flops_TFLOPS", host_from_json);
}

std::shared_ptr<const LinkPreset> load_net_preset(std::string_view flag, std::string_view name_or_path) {
    return section_preset(flag, name_or_path, "networks", "net_bandwidth_GBps", net_from_json);
}

std::shared_ptr<const HardwareSpec> load_deployment(std::string_view flag, std::string_view name) {
    // Keyed apart from the hardware presets, which share the cache's type.
    return cached<HardwareSpec>("deployments." + std::string(name), [&] {
        const json& d = find_preset(flag, "deployments", name, false);
        const std::string where = fmt::format("deployments.{}", name);
        only_keys(where, d, with_meta({"hardware", "gpus", "nvlink_domain", "net"}));
        Scenario s;
        s.hardware = *hardware_preset(fmt::format("{}: hardware", where), string(where, d, "hardware"));
        s.hardware.deployment.gpus = integer(where, d, "gpus", 1, limits::kMaxGpus);
        s.hardware.gpu.nvlink_domain = integer(where, d, "nvlink_domain", 1, limits::kMaxGpus);
        knob("net").access.apply(s, load_net_preset(fmt::format("{}: net", where), string(where, d, "net")));
        return s.hardware;
    });
}

BytesPerSecond load_link(std::string_view flag, std::string_view name) {
    Scenario s;
    knob("link").access.apply(s, load_link_preset(flag, name));
    return s.hardware.link.bandwidth;
}

const json& hardware_preset_json(std::string_view flag, std::string_view name) {
    return find_preset(flag, "hardware", name, false);
}

HardwareSpec load_hardware(std::string_view flag, std::string_view name_or_path) { return *hardware_preset(flag, name_or_path); }

std::shared_ptr<const HardwareSpec> hardware_preset(std::string_view flag, std::string_view name_or_path) {
    return cached<HardwareSpec>(name_or_path, [&] {
        if (!is_path(name_or_path))
            return hardware_from_json(fmt::format("hardware.{}", name_or_path), find_preset(flag, "hardware", name_or_path),
                                      std::string(name_or_path));
        const json j = read_json_file(flag, name_or_path);
        const Entry e = single_entry(flag, name_or_path, j, "gpu_flops_TFLOPS");
        const std::string where = fmt::format("{} {}", flag, name_or_path);
        HardwareSpec hw = hardware_from_json(where, e.value, e.name);
        try {
            hw.check_validity();
        } catch (const InputError& err) {
            throw InputError(fmt::format("{}: {}", where, err.what()));
        }
        return hw;
    });
}

}  // namespace kvroof::io
