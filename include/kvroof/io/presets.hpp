// SPDX-License-Identifier: MIT
#pragma once
// Presets: hardware, hosts, links, models and workloads, embedded in the
// binary from data/*.json at build time. Wherever a preset name is accepted, a
// path to a JSON file of the same schema works too; --model also accepts a
// Hugging Face config.json. Unknown keys are errors.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/analysis/layer_offload.hpp"
#include "kvroof/spec/hardware.hpp"
#include "kvroof/spec/knobs.hpp"
#include "kvroof/spec/model.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof::io {

// The embedded text of data/<name>.json ("hardware", "hosts", "links",
// "models", "workloads"); empty if there is no such file.
[[nodiscard]] std::string_view embedded_file(std::string_view name);

// The parsed embedded presets of one kind.
[[nodiscard]] const nlohmann::json& presets(std::string_view kind);
[[nodiscard]] std::vector<std::string> preset_names(std::string_view kind);

// JSON read strictly: nesting deeper than kMaxJsonDepth, a number beyond
// double (1e400) or a syntax error is an InputError naming `where` (or
// "`flag` `path`"), never a crash. Every JSON file kvroof reads goes through
// these two.
inline constexpr int kMaxJsonDepth = 64;
[[nodiscard]] nlohmann::json parse_json_text(std::string_view where, std::string_view text);
[[nodiscard]] nlohmann::json read_json_file(std::string_view flag, std::string_view path);
// The whole of a file the run reads (noted: no output of the run may replace it); a folder, or a file that cannot
// be opened or read, is an InputError naming `flag`; `what` is what a folder should have been.
[[nodiscard]] std::string read_text_file(std::string_view flag, std::string_view path, std::string_view what = "a file");
// The same, accepting the literals Python's json module writes and JSON lacks
// (Infinity, -Infinity, NaN), as Hugging Face config.json files may hold:
// outside strings they read as ±the largest double and null.
[[nodiscard]] nlohmann::json read_python_json_file(std::string_view flag, std::string_view path);

// True when `text` names a file rather than a preset.
[[nodiscard]] bool is_path(std::string_view text) noexcept;

// `flag` names the option in error messages. Each preset or file is decoded
// once per process and kept (successes only: every failure names its flag).
// A hardware preset's own JSON entry, by name (no file): what `kvroof probe --gpu --out` starts from.
[[nodiscard]] const nlohmann::json& hardware_preset_json(std::string_view flag, std::string_view name);
[[nodiscard]] HardwareSpec load_hardware(std::string_view flag, std::string_view name_or_path);
[[nodiscard]] std::shared_ptr<const HardwareSpec> hardware_preset(std::string_view flag, std::string_view name_or_path);
// A link preset: its name and the value of every knob data/links.json gives it
// (each knob row with PresetFile::link; a new key needs a row, not loader code).
[[nodiscard]] std::shared_ptr<const LinkPreset> load_link_preset(std::string_view flag, std::string_view name);
// A host preset (data/hosts.json) or a file of its entry schema (what `kvroof
// probe --cpu --out FILE` writes; a name with '/' or ending in .json, is_path):
// every knob with PresetFile::host, an absent optional key as the spec's default.
[[nodiscard]] std::shared_ptr<const LinkPreset> load_host_preset(std::string_view flag, std::string_view name_or_path);
// A network preset (data/networks.json) or a file of its entry schema: every
// knob with PresetFile::net (the net-bw and net-latency knobs).
[[nodiscard]] std::shared_ptr<const LinkPreset> load_net_preset(std::string_view flag, std::string_view name_or_path);
// A deployment preset (data/deployments.json): the hardware preset it names
// with its GPU count, NVLink domain and network applied.
[[nodiscard]] std::shared_ptr<const HardwareSpec> load_deployment(std::string_view flag, std::string_view name);
[[nodiscard]] ModelSpec load_model(std::string_view flag, std::string_view name_or_path);
[[nodiscard]] CallClass load_workload(std::string_view flag, std::string_view name_or_path);
[[nodiscard]] BytesPerSecond load_link(std::string_view flag, std::string_view name);
[[nodiscard]] Checkpoint load_checkpoint(std::string_view flag, std::string_view name_or_path);

// Embedded scenario files from configs/ ("prefill_kappa", "layers_budget").
[[nodiscard]] const nlohmann::json& embedded_config(std::string_view name);

// Parses one model entry of data/models.json's schema, or a Hugging Face
// config.json (recognised by "num_hidden_layers").
[[nodiscard]] ModelSpec model_from_json(std::string_view where, const nlohmann::json& j, std::string name);
[[nodiscard]] ModelSpec model_from_hf_config(std::string_view where, const nlohmann::json& j, std::string name);

// Mean of a lognormal with the given median and 99th percentile.
[[nodiscard]] double lognormal_mean_from_median_p99(double median, double p99) noexcept;

}  // namespace kvroof::io
