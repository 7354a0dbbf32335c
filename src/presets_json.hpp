// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cctype>
#include <vector>
// Private to the preset loaders (src/presets*.cpp): strict reading of one JSON
// entry, each failure an InputError naming the file or preset and the key.

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/spec/model.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof::io::json_read {

using nlohmann::json;

inline std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
}

// Every key of `j` must be in `allowed`.
inline void only_keys(std::string_view where, const json& j, const std::set<std::string>& allowed) {
    for (const auto& [k, _] : j.items()) {
        if (!allowed.count(k)) {
            std::vector<std::string> names(allowed.begin(), allowed.end());
            throw InputError(fmt::format("{}: unknown key '{}'; allowed: {}", where, k, join(names)));
        }
    }
}

inline const json& require(std::string_view where, const json& j, const char* key) {
    if (!j.contains(key)) throw InputError(fmt::format("{}: missing required key '{}'", where, key));
    return j.at(key);
}

// "number 5", "array [1,2]": what a value is, for an error message (cut short).
inline std::string found(const json& v) {
    if (v.is_null()) return "null";
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return fmt::format("{} {}", v.type_name(), text);
}

inline double number(std::string_view where, const json& j, const char* key) {
    const json& v = require(where, j, key);
    if (!v.is_number()) throw InputError(fmt::format("{}: '{}' must be a number, got {}", where, key, found(v)));
    const double d = v.get<double>();
    if (!std::isfinite(d)) throw InputError(fmt::format("{}: '{}' must be finite", where, key));
    return d;
}

inline double number_or(std::string_view where, const json& j, const char* key, double fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return number(where, j, key);
}

// A whole number in [lo, hi], range-checked before the conversion to int.
inline int integer(std::string_view where, const json& j, const char* key, int lo, int hi) {
    const double d = number(where, j, key);
    if (d != std::floor(d) || d < lo || d > hi)
        throw InputError(
            fmt::format("{}: '{}' must be a whole number in [{}, {}], got {}", where, key, lo, hi, j.at(key).dump()));
    return static_cast<int>(d);
}
inline int integer_or(std::string_view where, const json& j, const char* key, int lo, int hi, int fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return integer(where, j, key, lo, hi);
}
// The same for a model field stored under `key`, with the range of data/models.json's `field`.
inline int field(std::string_view where, const json& j, const char* key, std::string_view field_name) {
    const ModelFieldRange& r = model_field_range(field_name);
    return integer(where, j, key, r.lo, r.hi);
}
inline int field_or(std::string_view where, const json& j, const char* key, std::string_view field_name, int fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return field(where, j, key, field_name);
}

inline std::string string(std::string_view where, const json& j, const char* key) {
    const json& v = require(where, j, key);
    if (!v.is_string()) throw InputError(fmt::format("{}: '{}' must be a string, got {}", where, key, found(v)));
    return v.get<std::string>();
}

// A string field, or `fallback` where it is absent or not a string (for optional text keys read leniently).
inline std::string text_or(const json& j, const char* key, const std::string& fallback = {}) {
    return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : fallback;
}
inline bool boolean_or(std::string_view where, const json& j, const char* key, bool fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    const json& v = j.at(key);
    if (!v.is_boolean()) throw InputError(fmt::format("{}: '{}' must be true or false, got {}", where, key, found(v)));
    return v.get<bool>();
}

// nlohmann's what() without its "[json.exception.parse_error.101] " tag, on one line.
inline std::string json_message(const json::exception& e) {
    std::string m = e.what();
    if (!m.empty() && m.front() == '[') {
        const auto close = m.find("] ");
        if (close != std::string::npos) m = m.substr(close + 2);
    }
    for (char& c : m)
        if (c == '\n' || c == '\r') c = ' ';
    return m;
}

inline const std::set<std::string> kMeta = {"description", "source", "note"};
inline std::set<std::string> with_meta(std::set<std::string> s) {
    s.insert(kMeta.begin(), kMeta.end());
    return s;
}

// A file may hold one entry, or a {name: entry} object with exactly one entry.
// The entry is returned by reference into `j`, never copied.
struct Entry {
    std::string name;
    const json& value;
};
inline Entry single_entry(std::string_view flag, std::string_view path, const json& j, std::string_view required_key) {
    if (!j.is_object()) throw InputError(fmt::format("{} {}: expected a JSON object, got {}", flag, path, j.type_name()));
    if (j.contains(std::string(required_key))) {
        std::string stem(path);
        const auto slash = stem.find_last_of('/');
        if (slash != std::string::npos) stem = stem.substr(slash + 1);
        const auto dot = stem.rfind(".json");
        if (dot != std::string::npos) stem = stem.substr(0, dot);
        return {stem, j};
    }
    if (j.size() == 1 && j.begin().value().is_object()) return {j.begin().key(), j.begin().value()};
    throw InputError(
        fmt::format("{} {}: expected one preset entry (with '{}') or {{\"name\": entry}}", flag, path, required_key));
}

// Edit distance (insertions, deletions, substitutions) between two short names.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

inline std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// A preset by name, case-insensitively ("H200" is h200); an unknown name is an
// error listing the valid ones, with the nearest as "did you mean" when it is close. `file_too`: the flag
// also takes a path to a JSON file, and the error says so.
inline const json& find_preset(std::string_view flag, std::string_view kind, std::string_view name, bool file_too = true) {
    const json& all = presets(kind);
    if (const auto it = all.find(std::string(name)); it != all.end()) return *it;
    const std::string want = lower(name);
    std::string nearest;
    std::size_t best = std::string::npos;
    for (auto it = all.begin(); it != all.end(); ++it) {
        const std::string have = lower(it.key());
        if (have == want) return it.value();
        if (const std::size_t d = edit_distance(have, want); d < best) best = d, nearest = it.key();
    }
    const std::string hint = best <= std::max<std::size_t>(2, want.size() / 4) ? fmt::format(" did you mean '{}'?", nearest) : "";
    throw InputError(fmt::format("{}: unknown {} preset '{}';{} valid: {}{}", flag, kind, name, hint, join(preset_names(kind)),
                                 file_too ? " (or a path to a JSON file)" : ""));
}

// A preset decoded once per process: the first successful `load()` for an
// embedded preset's `name` is kept (failures are not, so each names its own
// flag). A file path is read afresh each time: its text may change between
// calls (a sweep decodes each grid value once anyway). Thread-safe.
template <class T, class Load>
std::shared_ptr<const T> cached(std::string_view name, const Load& load) {
    if (is_path(name)) return std::make_shared<const T>(load());
    static std::mutex m;
    static std::map<std::string, std::shared_ptr<const T>, std::less<>> cache;
    {
        std::lock_guard lock(m);
        if (const auto it = cache.find(name); it != cache.end()) return it->second;
    }
    auto value = std::make_shared<const T>(load());
    std::lock_guard lock(m);
    return cache.emplace(std::string(name), std::move(value)).first->second;
}

}  // namespace kvroof::io::json_read

namespace kvroof::io {
// A mix file's classes (mix_file.hpp) from its parsed text; errors name `file` and the class.
[[nodiscard]] Mix mix_from_json(const std::string& file, const nlohmann::json& j);
}  // namespace kvroof::io
