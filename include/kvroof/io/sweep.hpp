// SPDX-License-Identifier: MIT
#pragma once
// Parameter sweeps over any scenario knob. A point is one combination of grid
// values; its row is computed by the same functions `kvroof verdict` uses.
// Points are generated from their index (mixed radix, the last --grid varies
// fastest) and written in index order whatever the thread count, so output is
// byte-identical for any --threads and shards concatenate to the whole.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/io/load_text.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

struct GridAxis {
    std::string knob;  // CLI spelling without dashes: "hbm-bw", "f", "model"
    std::string column;  // CSV header, with its unit: "hbm_bw_TBps"
    const Knob* row = nullptr;  // its row of the knob table
    std::string entry;  // the --grid entry as given, for provenance
    // A list keeps its values; a range "lo:hi:step" is generated on demand, so
    // an axis of 10^8 values costs no memory.
    std::vector<std::string> values;  // list: as given (units allowed)
    // A text list's cells, where they differ from its values: a sweep file
    // replayed from another folder reads its paths rebased, and its rows keep
    // the text the original run showed (the sidecar's kvroof.cells). Empty: values.
    std::vector<std::string> shown;
    std::vector<double> numbers;  // list: in the column's unit (numeric knobs)
    bool is_range = false;
    double lo = 0, step = 0;  // range, in SI units
    double bare = 1;  // SI value of one bare unit (e.g. 1e12 for TB/s)
    std::uint64_t count = 0;  // range length

    [[nodiscard]] std::uint64_t size() const noexcept { return is_range ? count : values.size(); }
    [[nodiscard]] double number(std::uint64_t i) const noexcept {
        // Divided by bare, not multiplied by to_column: 1/bare is inexact (1e-9), and the product put 1015.625 GB
        // at 1015.6250000000001, shown 1015.63.
        return is_range ? (lo + static_cast<double>(i) * step) / bare : numbers[i];
    }
    [[nodiscard]] std::string value(std::uint64_t i) const;  // as text the scenario builder accepts
    [[nodiscard]] bool text() const noexcept { return row->type == KnobType::text; }
    [[nodiscard]] const std::string& cell(std::uint64_t i) const { return shown.empty() ? values[i] : shown[i]; }
    // The SI value of range point i, exactly as parsing value(i) gives it.
    [[nodiscard]] double si(std::uint64_t i) const noexcept { return (lo + static_cast<double>(i) * step) / bare * bare; }
};

// "hbm-bw=3.35TB/s,4.8TB/s", "f=0:1:0.05", "model=llama-3.1-70b,qwen3-235b-a22b".
// Throws InputError naming the entry on unknown knobs, empty lists, steps <= 0,
// values that do not parse or fractions for a whole-number knob (gpus=1.5).
[[nodiscard]] GridAxis parse_grid_entry(std::string_view entry, std::string_view flag = "--grid");

// The knobs a grid may vary (every row of the knob table), in table order.
[[nodiscard]] const std::vector<std::string>& grid_knobs();

enum class SweepFormat { csv, jsonl };

// What each row answers: the verdict (or, under a load, the operating point);
// the prefill question of the row's scenario (κ_crit, TTFT of a reload:
// analysis/prefill_study.hpp, the numbers `kvroof prefill` shows); or its
// layer-offload question (analysis/layers_study.hpp, `kvroof layers`'s row).
enum class SweepAnalysis { verdict, prefill, layers };
// "verdict", "prefill" or "layers"; throws InputError naming `flag` for anything else.
[[nodiscard]] SweepAnalysis parse_sweep_analysis(std::string_view flag, std::string_view text);
[[nodiscard]] constexpr std::string_view name(SweepAnalysis a) noexcept {
    return a == SweepAnalysis::prefill ? "prefill" : a == SweepAnalysis::layers ? "layers" : "verdict";
}

struct SweepSpec {
    ScenarioInputs fixed;
    // The load flags: with a load (or a load axis) every row is an operating
    // point at it (analysis/operating_point.hpp) instead of a verdict.
    LoadText load;
    std::vector<GridAxis> axes;
    SweepAnalysis analysis = SweepAnalysis::verdict;
    SweepFormat format = SweepFormat::csv;
    int threads = 1;
    int shard_index = 1, shard_count = 1;  // --shard K/N, 1-based
    std::string description;  // a sweep file's, carried into the provenance
    // The --config file and the load flags it gave that the command line kept ("requests"): a load error about one
    // of them names the file.
    std::string load_file;
    std::vector<std::string> load_from_file;
    // The load flags and grid axes the command line gave over a --config file's (echoed in the provenance).
    std::vector<std::string> load_overrides, axes_replaced;
};

// Validates the whole spec before any output: the fixed flags, every value of
// every axis and every pair of values of every two axes (which settles every
// rule on one or two knobs for all points of the product; see validate.cpp).
// Uses spec.threads. Throws InputError naming the --grid values at fault.
// Each shard checks the whole grid, so every shard of a bad grid fails alike;
// the cost is one typed scenario assembly and check (~1 us) per value of each
// axis and per pair of values of each two axes other than f and ov.
void validate_sweep(const SweepSpec& spec);

[[nodiscard]] std::uint64_t sweep_points(const SweepSpec& spec);
// The [begin, end) of point indices this shard owns.
[[nodiscard]] std::pair<std::uint64_t, std::uint64_t> shard_range(const SweepSpec& spec);

[[nodiscard]] std::string sweep_header(const SweepSpec& spec);  // CSV header line (with newline); empty for JSONL

// A sweep column as a plot axis says it, with its unit: "throughput, ov = 0
// (tok/s)", "HBM bandwidth per GPU (TB/s)" (a knob's from the knob table).
// Empty for a column it does not know.
[[nodiscard]] std::string sweep_column_label(std::string_view column);

// One column's numbers, row by row, taken as the rows are made (a plot's y,
// without reading the text back): NaN where the cell is empty.
struct ColumnTap {
    std::string column;  // a numeric column of sweep_header (check_tap_column)
    std::vector<double> values;  // one per row of the shard, in order
};
// Throws InputError unless `column` is a column of the sweep's rows holding numbers.
void check_tap_column(const SweepSpec& spec, std::string_view column);

// Runs the shard on spec.threads threads (the calling thread one of them),
// calling `write` with consecutive blocks of output text in order and
// `progress(done, total)` now and then: each from whichever thread writes the
// block, never two at once, each call ordered after the last (a mutex hands
// the writing on). `tap`, when given, gets its column's numbers.
void run_sweep(const SweepSpec& spec, const std::function<void(std::string_view)>& write,
               const std::function<void(std::uint64_t, std::uint64_t)>& progress = {}, ColumnTap* tap = nullptr);

// Six significant digits, trailing zeros dropped: "0.159923", "28.3862",
// "1234560", "1.5e-07"; "inf"/"nan" for non-finite values. Hand-rolled: a sweep
// formats ~10 numbers per point and a general float formatter dominated its time.
void append_number6(std::string& out, double v);
// The same into a buffer of at least kNumber6Max chars; returns the end.
inline constexpr std::size_t kNumber6Max = 32;
char* write_number6(char* p, double v);

// Reads a sweep file (JSON: {"description": "…", "analysis": "prefill",
// "fixed": {"knob": "value", …}, "grid": ["knob=…", …]}); its "fixed" values are marked Origin::config. A
// "kvroof" key (the provenance a sweep writes) is accepted and ignored, so a
// sweep's OUT.meta.json is itself a sweep file that reproduces OUT.
[[nodiscard]] SweepSpec load_sweep_file(std::string_view path);

// The provenance of a sweep's output, written next to --out as OUT.meta.json:
// {"description", "analysis" (when not the verdict), "fixed": {knob: value as given}, "grid": [entries],
//  "kvroof": {"version", "command", "format", "shard", "points", "rows",
//             "inputs": [{"knob", "value", "from"}], "resolved": {knob: value}}}.
// "inputs" says where each fixed value came from ("command line",
// "--config", "command line, overrides --config"); "resolved" names the
// presets and defaults in force for the knobs not given. A relative file a
// knob names (--model sub/config.json, or in a text axis) is written relative
// to the folder of `meta_path`, where the provenance goes, and load_sweep_file
// reads such a file's paths relative to its own folder: `kvroof sweep --config
// OUT.meta.json` finds them from any folder, and from the one the sweep ran in
// gives the same rows. Without a meta_path, paths stand as given.
[[nodiscard]] nlohmann::json sweep_provenance(const SweepSpec& spec, std::string_view meta_path = {});

}  // namespace kvroof::io
