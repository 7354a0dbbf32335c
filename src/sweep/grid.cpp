// SPDX-License-Identifier: MIT
// --grid entries -> axes, and a sweep's inputs decoded once (TypedGrid).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kvroof/io/parse.hpp"
#include "kvroof/io/sweep.hpp"
#include "typed_grid.hpp"

namespace kvroof::io {
namespace {

// SI value of one numeric grid value.
double knob_si(const Knob& k, std::string_view where, std::string_view v) {
    return k.type == KnobType::quantity ? parse_quantity(where, v, k.unit, k.bare) : parse_number(where, v);
}

// SI value of one bare unit (1e12 for TB/s), so that SI / bare is in the column's unit.
double bare_si(const Knob& k, std::string_view where) {
    return k.type == KnobType::quantity ? parse_quantity(where, fmt::format("1{}", k.bare), k.unit, k.bare) : 1.0;
}

void parse_range(const Knob& k, const std::string& where, const std::string& rest, GridAxis& a) {
    const auto parts = split(rest, ':');
    const double lo = knob_si(k, where, parts[0]);
    const double hi = knob_si(k, where, parts[1]);
    const double step = knob_si(k, where, parts[2]);
    if (!(step > 0)) throw InputError(fmt::format("{}: step must be > 0, got '{}'", where, parts[2]));
    if (hi < lo) throw InputError(fmt::format("{}: empty range, {} > {}", where, parts[0], parts[1]));
    const double n = std::floor((hi - lo) / step * (1 + 1e-12) + 1e-9) + 1;
    if (n > 1e9) throw InputError(fmt::format("{}: {:.3g} values in one axis; at most 1e9", where, n));
    if (k.type == KnobType::whole && (lo != std::floor(lo) || step != std::floor(step)))
        throw InputError(
            fmt::format("{}: {} takes whole numbers, so the start and step must be whole, got '{}'", where, k.name, rest));
    a.is_range = true;
    a.count = static_cast<std::uint64_t>(n);
    a.lo = lo;
    a.step = step;
}

}  // namespace

const std::vector<std::string>& grid_knobs() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto& k : knobs()) v.emplace_back(k.name);
        return v;
    }();
    return names;
}

GridAxis parse_grid_entry(std::string_view entry, std::string_view flag) {
    const std::string where = fmt::format("{} '{}'", flag, entry);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) throw InputError(where + ": expected knob=values, e.g. f=0:1:0.05 or sparse=0.1,1");
    const std::string name = trim(entry.substr(0, eq));
    const Knob* k = find_knob(name);
    if (!k) {
        std::string allowed;
        for (const auto& n : grid_knobs()) allowed += (allowed.empty() ? "" : ", ") + n;
        throw InputError(fmt::format("{}: unknown knob '{}'; allowed: {}", where, name, allowed));
    }
    const std::string rest = trim(entry.substr(eq + 1));
    if (rest.empty()) throw InputError(where + ": no values");
    GridAxis a;
    a.knob = k->name;
    a.column = k->column;
    a.row = k;
    a.entry = entry;
    if (k->numeric()) {
        a.bare = bare_si(*k, where);
    }
    // Workload strings and mixes contain commas: their alternatives are separated by ';'.
    const bool is_range =
        k->numeric() && rest.find(k->list_sep) == std::string::npos && std::count(rest.begin(), rest.end(), ':') == 2;
    if (is_range) {
        parse_range(*k, where, rest, a);
    } else {
        for (const auto& v : split(rest, k->list_sep)) {
            if (v.empty()) throw InputError(fmt::format("{}: empty value in the list", where));
            // "none" (an SLO's) is a value as on the command line: an empty CSV cell, null in JSON.
            const bool none = !k->none_text.empty() && trim(v) == k->none_text;
            const bool top = !k->top_text.empty() && trim(v) == k->top_text;  // shown as its text (CellWriter::axes)
            if (k->numeric())
                a.numbers.push_back(none  ? std::numeric_limits<double>::quiet_NaN()
                                    : top ? std::numeric_limits<double>::infinity()
                                          : knob_si(*k, where, v) / a.bare);  // divided: 1/bare is inexact (1e-9)
            if (k->type == KnobType::whole && !none && a.numbers.back() != std::floor(a.numbers.back()))
                throw InputError(fmt::format("{}: {} takes whole numbers, got '{}'", where, name, v));
            a.values.push_back(v);
        }
    }
    if (a.size() == 0) throw InputError(where + ": no values");
    return a;
}

std::string GridAxis::value(std::uint64_t i) const {
    if (!is_range) return values[i];
    // In the knob's bare unit, with enough digits to round-trip.
    return fmt::format("{:.17g}", (lo + static_cast<double>(i) * step) / bare);
}

namespace sweep_detail {

TypedGrid::TypedGrid(const SweepSpec& spec) : spec_(&spec), fixed_(decode_inputs(spec.fixed)), axis_of_knob_(knobs().size(), -1) {
    // The layer-offload analysis budgets the whole card (--hbm-cap), as `kvroof layers` does: no reserve (it reads none,
    // and validate_sweep refuses a given one); 0 keeps the scenario's check of reserve < cap from refusing a small card.
    std::optional<KnobValue>& reserve = fixed_[knob_index(knob("hbm-reserve"))];
    if (spec.analysis == SweepAnalysis::layers && !reserve) reserve = KnobValue(0.0);
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        const GridAxis& a = spec.axes[i];
        if (a.row->grid_only) continue;  // f, ov and a load never reach the scenario
        TypedAxis t{i, a.row, {}};
        if (!a.is_range) {
            for (size_t v = 0; v < a.values.size(); ++v) {
                try {
                    t.values.push_back(decode_knob(*a.row, a.row->flag(), a.values[v]));
                } catch (const InputError& e) {
                    throw InputError(fmt::format("--grid {}={}: {}", a.knob, a.values[v], e.what()));
                }
            }
        }
        axis_of_knob_[knob_index(*a.row)] = static_cast<int>(axes_.size());
        axes_.push_back(std::move(t));
    }
}

void TypedGrid::assemble(const std::vector<std::uint64_t>& idx, Scenario& out) const {
    out = Scenario{};
    apply_from(0, idx, out);
}

void TypedGrid::update(const std::vector<std::uint64_t>& idx, std::vector<std::uint64_t>& last, bool& fresh, Scenario& s) const {
    size_t first = knobs().size();
    if (fresh) {
        s = Scenario{};
        first = 0;
    } else {
        // A preset sets figures of knobs after it (a link preset's latency, a checkpoint's weight format) that
        // not every preset names; the next one would inherit them, so a preset change assembles afresh.
        bool preset = false;
        for (const TypedAxis& t : axes_)
            if (idx[t.axis] != last[t.axis]) {
                first = std::min(first, knob_index(*t.knob));
                preset = preset || t.knob->type == KnobType::text;
            }
        if (preset) s = Scenario{}, first = 0;
    }
    apply_from(first, idx, s);
    last = idx;
    fresh = false;
}

void TypedGrid::apply_from(size_t first_knob, const std::vector<std::uint64_t>& idx, Scenario& out) const {
    const auto& table = knobs();
    for (size_t i = first_knob; i < table.size(); ++i) {
        const int ax = axis_of_knob_[i];
        if (ax < 0) {
            if (fixed_[i]) table[i].access.apply(out, *fixed_[i]);
            continue;
        }
        const TypedAxis& t = axes_[static_cast<size_t>(ax)];
        const GridAxis& a = spec_->axes[t.axis];
        const std::uint64_t at = idx[t.axis];
        if (!a.is_range) {
            table[i].access.apply(out, t.values[at]);
            continue;
        }
        double si = a.si(at);
        // A whole knob's range may run past its bounds: checked before any conversion to int.
        if (t.knob->type == KnobType::whole)
            si = check::whole_in_range(t.knob->flag(), si, static_cast<int>(t.knob->lo), static_cast<int>(t.knob->hi));
        table[i].access.apply(out, KnobValue(si));
    }
}

std::string grid_values(const SweepSpec& spec, const std::vector<size_t>& axes, const std::vector<std::uint64_t>& idx) {
    std::string s = "--grid ";
    for (size_t k = 0; k < axes.size(); ++k)
        s += fmt::format("{}{}={}", k ? ", " : "", spec.axes[axes[k]].knob, spec.axes[axes[k]].value(idx[axes[k]]));
    return s;
}

void decompose(const SweepSpec& spec, std::uint64_t point, std::vector<std::uint64_t>& idx) {
    for (size_t i = spec.axes.size(); i-- > 0;) {
        const std::uint64_t n = spec.axes[i].size();
        idx[i] = point % n;
        point /= n;
    }
}

int load_axis(const SweepSpec& spec) {
    int found = -1;
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        if (!is_load_axis(spec.axes[i])) continue;
        if (found >= 0)
            throw InputError(fmt::format("--grid {}: one load axis at most, got {} too", spec.axes[i].knob,
                                         spec.axes[static_cast<size_t>(found)].knob));
        found = static_cast<int>(i);
    }
    return found;
}

std::optional<LoadSpec> sweep_load(const SweepSpec& spec) {
    const int axis = load_axis(spec);
    LoadText t = spec.load;
    if (axis >= 0) {
        const std::string& knob = spec.axes[static_cast<size_t>(axis)].knob;
        if (t.any_load())
            throw InputError(fmt::format("--grid {}: a second load beside --{}; give one", knob,
                                         t.batch  ? "batch"
                                         : t.rate ? "request-rate"
                                                  : "concurrency"));
        t.concurrency = "1";  // the axis sets the mode and the value; the flags set the engine
    } else if (!t.any_load()) {
        if (t.empty()) return std::nullopt;  // verdict rows
        if (!t.prefill && !t.chunk && !t.max_seqs)
            throw InputError("--requests: needs a load: --concurrency, --request-rate, or a --grid of one");
        throw InputError(fmt::format("{}: needs a load: --batch, --concurrency, --request-rate, or a --grid of one",
                                     t.prefill ? "--prefill"
                                     : t.chunk ? "--prefill-chunk"
                                               : "--max-seqs"));
    }
    LoadSpec l = *parse_load(t).load;
    if (axis >= 0) {
        const std::string& knob = spec.axes[static_cast<size_t>(axis)].knob;
        l.mode = knob == "batch" ? LoadMode::batch : knob == "concurrency" ? LoadMode::concurrency : LoadMode::request_rate;
        if (l.mode == LoadMode::batch && t.requests)
            throw InputError(
                "--requests: the requests in a benchmark's run; needs --request-rate or --concurrency, not --grid batch");
        if (l.mode == LoadMode::batch && t.max_seqs)
            throw InputError(
                "--max-seqs: caps the requests running under --concurrency or --request-rate; --grid batch fixes "
                "the batch");
    }
    return l;
}

int axis_of(const SweepSpec& spec, std::string_view knob) {
    for (size_t i = 0; i < spec.axes.size(); ++i)
        if (spec.axes[i].knob == knob) return static_cast<int>(i);
    return -1;
}

}  // namespace sweep_detail
}  // namespace kvroof::io
