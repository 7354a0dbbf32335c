// SPDX-License-Identifier: MIT
#pragma once
// The knob table: every scenario knob spelled once. One row per knob holds its
// name (the flag without dashes, the --grid knob and the sweep file's "fixed"
// key), its sweep column (with the unit), its bare-number unit (also the unit
// of the column and of its preset JSON key), its default, bounds, help, and a
// typed accessor onto a Scenario. The CLI flags and --help of every scenario
// subcommand, scenario building, the sweep's knobs, axes and columns, the sweep
// file's keys, the preset loaders' knob keys and the echoed inputs all iterate
// this table (src/knobs.cpp); nothing else spells a knob.
//
// Adding a knob (e.g. --link-latency, the per-layer round trip of the offload
// exchange, with a default per link preset) touches three files:
//   1. its field in the spec, with its check in that spec's check_validity
//      (include/kvroof/spec/hardware.hpp: `Seconds latency;` in LinkSpec and
//      its check in HardwareSpec::check_validity; the field's initialiser is the default);
//   2. its row in src/knobs.cpp, in the order overrides apply:
//        {.name = "link-latency", .column = "link_latency_us", .type = KnobType::quantity,
//         .unit = UnitKind::time, .bare = "us", .lo = 0, .hi = 1, .help = "...",
//         .group = kHardware, .preset = PresetFile::link, .preset_key = "latency_us",
//         .access = on_hw<&HardwareSpec::link, &LinkSpec::latency>()},
//      A link preset (data/links.json) that has "latency_us" sets it whenever
//      that link is chosen (--link, or a hardware preset's "link"); the
//      loaders read every knob key generically, so data needs no loader code;
//   3. its use in physics (include/kvroof/physics/...).
// Flags, --help, sweep axes and columns, sweep files, echo and provenance follow.

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kvroof/spec/model.hpp"
#include "kvroof/spec/policy.hpp"

namespace kvroof {

struct Scenario;
struct HardwareSpec;
struct Mix;
struct Knob;

// What a quantity measures; its text may carry any unit of that kind.
enum class UnitKind { bytes, bandwidth, flop_rate, time };

enum class KnobType {
    number,  // a plain number ("0.5")
    whole,  // a whole number ("4")
    quantity,  // a number with a unit ("4.8TB/s"; a bare number is in `bare`)
    text,  // a name or a string decoded to a preset ("h200", "long:0.7,short:0.3")
};

// Where a knob's value may come from besides the command line.
enum class PresetFile { none, hardware, host, link, net };

// A link, host or network preset decoded once: its name and the SI value of
// every knob it sets (a host gives every host knob: an absent key is the spec's default).
struct LinkPreset {
    std::string name;
    std::vector<std::pair<const Knob*, double>> figures;
    // A link preset's physical link: the preset whose link its figures describe (nvlink-c2c-measured and
    // nvlink-c2c-total describe nvlink-c2c); empty where it is its own. Unused by hosts and networks.
    std::string physical;
    [[nodiscard]] const std::string& physical_link() const noexcept { return physical.empty() ? name : physical; }
};

// A knob's value decoded once from its text: a number in SI units (NaN for
// "none"), or the decoded preset or enum of a text knob.
using KnobValue = std::variant<double, DType, IdlePolicy, SloTarget, std::shared_ptr<const HardwareSpec>,
                               std::shared_ptr<const ModelSpec>, std::shared_ptr<const Mix>, std::shared_ptr<const LinkPreset>>;

// The typed accessor: apply sets the knob's field(s) from a decoded value; get
// reads the SI value back (numeric knobs only).
struct KnobAccess {
    void (*apply)(Scenario&, const KnobValue&) = nullptr;
    double (*get)(const Scenario&) = nullptr;
};

inline constexpr double kNoBound = std::numeric_limits<double>::infinity();

struct Knob {
    std::string_view name{};  // flag without dashes: "c2c-bw"; the --grid knob and sweep file key
    std::string_view column{};  // sweep CSV column / JSON Lines key, with the bare unit: "c2c_bw_GBps"
    KnobType type = KnobType::number;
    UnitKind unit = UnitKind::bytes;  // quantity knobs only
    std::string_view bare{};  // unit of a bare number, of the column and of preset_key ("GB/s")
    std::string_view fallback{};  // applied when not given ("gb200", "50ms"); empty: the preset's or spec's value stands
    std::string_view shown_default{};  // the default --help shows ("0.5", "from --hardware")
    double lo = -kNoBound, hi = kNoBound;  // documented range of the SI value (docs/model.md, "Input ranges")
    std::string_view help{};
    std::string_view group{};  // --help section
    PresetFile preset = PresetFile::none;
    std::string_view preset_key{};  // key in that preset file, in the bare unit ("hbm_bandwidth_TBps")
    bool preset_required = false;  // every entry of that file must have the key (else the spec's default stands)
    bool grid_only = false;  // f and ov: sweep axes, not scenario flags
    char list_sep = ',';  // separator of a --grid list (';' where values hold commas)
    std::string_view none_text{};  // text meaning "no value" ("none" for an SLO), or empty
    std::string_view top_text{};  // a grid value meaning "as many as memory holds" (concurrency's "max"): +inf
    // Text knobs: text -> value, throwing InputError naming `flag`.
    KnobValue (*decode)(std::string_view flag, std::string_view text) = nullptr;
    KnobAccess access{};

    [[nodiscard]] bool numeric() const noexcept { return type != KnobType::text; }
    [[nodiscard]] std::string flag() const { return "--" + std::string(name); }
};

// Every knob, in the order their overrides apply (a preset before the figures
// that override it; --link before --c2c-bw; --eta before --eta-compute).
[[nodiscard]] const std::vector<Knob>& knobs();
[[nodiscard]] const Knob* find_knob(std::string_view name) noexcept;
[[nodiscard]] const Knob& knob(std::string_view name);  // throws std::logic_error for a name not in the table
[[nodiscard]] size_t knob_index(const Knob& k) noexcept;

}  // namespace kvroof
