// SPDX-License-Identifier: MIT
#pragma once
// Private to src/sweep/: a sweep's inputs decoded once. The fixed knobs and
// every list value of every axis are decoded to their typed values (SI
// numbers, decoded presets) when the grid is built; a range value is computed
// from its index. A point's Scenario is assembled from them through the knob
// table's accessors, in table order: no text is parsed per point.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/io/sweep.hpp"

namespace kvroof::io::sweep_detail {

struct TypedAxis {
    size_t axis = 0;  // index into SweepSpec::axes
    const Knob* knob = nullptr;
    std::vector<KnobValue> values;  // list axes: decoded once
};

class TypedGrid {
public:
    // Decodes spec.fixed and every list value; throws InputError naming the
    // flag (fixed) or "--grid knob=value" (an axis value) that does not decode.
    explicit TypedGrid(const SweepSpec& spec);

    // The scenario of point `idx` (one index per axis of the spec), unchecked.
    void assemble(const std::vector<std::uint64_t>& idx, Scenario& out) const;
    // Brings `s` from the point `last` to the point `idx`, re-applying in table
    // order every knob from the first one whose axis value changed (each apply
    // only assigns, so the knobs before it stand as they were); a `fresh` s is
    // assembled whole. Updates `last` and clears `fresh`. Same result as assemble.
    void update(const std::vector<std::uint64_t>& idx, std::vector<std::uint64_t>& last, bool& fresh, Scenario& s) const;
    // The scenario axes (all but f and ov), in spec order.
    [[nodiscard]] const std::vector<TypedAxis>& axes() const noexcept { return axes_; }

private:
    void apply_from(size_t first_knob, const std::vector<std::uint64_t>& idx, Scenario& out) const;

    const SweepSpec* spec_;
    DecodedInputs fixed_;  // by knob_index, fallbacks included
    std::vector<int> axis_of_knob_;  // by knob_index: index into axes_, or -1
    std::vector<TypedAxis> axes_;
};

// "--grid a=v, b=w" for the given axes at `idx`.
[[nodiscard]] std::string grid_values(const SweepSpec& spec, const std::vector<size_t>& axes,
                                      const std::vector<std::uint64_t>& idx);

// idx from a point index: mixed radix, the last axis fastest.
void decompose(const SweepSpec& spec, std::uint64_t point, std::vector<std::uint64_t>& idx);
[[nodiscard]] int axis_of(const SweepSpec& spec, std::string_view knob);
[[nodiscard]] inline bool is_f_or_ov(const GridAxis& a) { return a.knob == "f" || a.knob == "ov"; }
// A load axis (batch, concurrency, request-rate): it makes every row an operating point.
[[nodiscard]] inline bool is_load_axis(const GridAxis& a) { return a.row->grid_only && !is_f_or_ov(a); }
// The index of the sweep's load axis, or -1.
[[nodiscard]] int load_axis(const SweepSpec& spec);
// The load of a sweep whose rows are operating points (load flags, or a load
// axis, which sets the mode), or none for verdict rows. Throws InputError for
// two loads (two load axes, or a load flag beside a load axis) and for engine
// flags (--prefill, --prefill-chunk, --max-seqs) without a load.
[[nodiscard]] std::optional<LoadSpec> sweep_load(const SweepSpec& spec);

}  // namespace kvroof::io::sweep_detail
