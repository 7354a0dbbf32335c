// SPDX-License-Identifier: MIT
#pragma once
// Knob values (as text) -> a validated Scenario, by iterating the knob table
// (spec/knobs.hpp): decode each given value once to its typed value, apply
// them in table order onto the defaults, check the specs, record what was given.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvroof/analysis/serving.hpp"
#include "kvroof/spec/knobs.hpp"

namespace kvroof::io {

inline constexpr const char* kDefaultHardware = "gb200";
inline constexpr const char* kDefaultModel = "llama-3.1-70b";
inline constexpr const char* kDefaultWorkload = "codex";
inline constexpr const char* kDefaultSloTpot = "50ms";

// Where a knob's text came from.
enum class Origin { command_line, config, command_line_over_config };
[[nodiscard]] const char* describe(Origin o) noexcept;  // "command line", "--config", "command line, overrides --config"

struct GivenValue {
    std::string text;
    Origin origin = Origin::command_line;
};

// The scenario knobs that were given, as typed (units allowed), by knob.
class ScenarioInputs {
public:
    ScenarioInputs();
    // Throws InputError naming `where` when `name` is not a scenario knob.
    void set(std::string_view name, std::string text, Origin origin = Origin::command_line, std::string_view where = "knob");
    void set(const Knob& k, std::string text, Origin origin = Origin::command_line);
    [[nodiscard]] const std::optional<GivenValue>& get(const Knob& k) const { return values_[knob_index(k)]; }
    [[nodiscard]] const std::optional<GivenValue>& get(std::string_view name) const { return get(knob(name)); }
    [[nodiscard]] bool given(std::string_view name) const { return get(name).has_value(); }
    void clear(std::string_view name) { values_[knob_index(knob(name))].reset(); }  // as if never given
    // Every knob given in `over` replaces this one's, marked as overriding it where this one had a value.
    void override_with(const ScenarioInputs& over);

private:
    std::vector<std::optional<GivenValue>> values_;  // by knob_index
};

struct BuiltScenario {
    Scenario scenario;
    std::vector<std::pair<std::string, std::string>> overrides;  // flag -> value as given
    std::string workload_label;  // what the user asked for
    std::vector<std::string> warnings;  // allowed but suspicious inputs, one line each (the CLI prints them to stderr)
};

// Decoded values by knob_index, fallbacks included: what a scenario is assembled from.
using DecodedInputs = std::vector<std::optional<KnobValue>>;

// SI value of one bare unit of a knob (1e9 for GB/s, the unit of its bare numbers and columns); 1 for plain numbers.
[[nodiscard]] double bare_si(const Knob& k);
// One knob's text -> its typed value (numbers in SI units), naming `flag` on error.
[[nodiscard]] KnobValue decode_knob(const Knob& k, std::string_view flag, std::string_view text);
// Every given knob decoded, plus the fallbacks of those not given; checks the rules on given knobs (--mix xor --workload).
[[nodiscard]] DecodedInputs decode_inputs(const ScenarioInputs& in);
// The knobs applied in table order onto a default Scenario; no checks. Cheap: a sweep calls it per point.
void assemble(const DecodedInputs& values, Scenario& out);
// Every spec check, each error naming the flag ("--hbm-reserve: must be < hbm-cap").
void check_scenario(const Scenario& s);

// Every numeric knob's value in `s`, keyed by its column and in its bare unit
// ({"hbm_bw_TBps": 8, "slo_ttft_ms": null, ...}): the echo of the resolved
// inputs, so a knob added to the table is echoed without renderer code.
[[nodiscard]] nlohmann::json knob_values(const Scenario& s);

// decode_inputs + assemble + check_scenario. Throws InputError naming the flag on any bad value.
[[nodiscard]] BuiltScenario build_scenario(const ScenarioInputs& in);

// One line for each workload class whose context at the end of a call, S + O,
// is longer than the model's context window (ModelSpec::max_context): allowed,
// as engines serve such contexts with RoPE scaling, but said.
[[nodiscard]] std::vector<std::string> context_warnings(const Scenario& s);
// One line when the tensor-parallel group does not divide the attention heads, naming it as `flag` (--gpus or --tp).
[[nodiscard]] std::vector<std::string> tensor_parallel_warnings(const Scenario& s, std::string_view flag = "--gpus");

// The decoders of the text knobs (rows of the table), each loading its preset once per process.
[[nodiscard]] KnobValue decode_hardware(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_model(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_workload(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_mix(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_link(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_host(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_net(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_deployment(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_dtype(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_idle(std::string_view flag, std::string_view text);
[[nodiscard]] KnobValue decode_slo_target(std::string_view flag, std::string_view text);

// Sets one scenario knob by its name ("cpus-per-gpu", "hardware"), as a sweep
// file or a report config does. Throws InputError naming `where` for an unknown one.
void set_scenario_flag(ScenarioInputs& in, std::string_view flag, const std::string& value, std::string_view where,
                       Origin origin = Origin::config);

}  // namespace kvroof::io
