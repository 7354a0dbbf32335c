// SPDX-License-Identifier: MIT
// validate_sweep: every point of the grid is valid, shown before any output.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "kvroof/io/sweep.hpp"
#include "sweep_rows.hpp"
#include "typed_grid.hpp"

namespace kvroof::io {
namespace {

using namespace sweep_detail;

// Which grid values one check sets; the rest of the axes stay at their first value.
struct CheckBlock {
    std::vector<size_t> axes;  // one, two or three scenario axes
    std::vector<std::uint64_t> from;  // first index checked on each (1: index 0 is point 0's)
    std::uint64_t size = 0;  // product of (axis size - from)
};

// The first failing check in block order, or nothing.
struct Failure {
    std::uint64_t at = UINT64_MAX;
    std::string message;
    std::exception_ptr other;  // not an InputError: rethrown as it is
};

void check_point(const TypedGrid& grid, const std::vector<std::uint64_t>& idx, Scenario& scratch) {
    grid.assemble(idx, scratch);
    check_scenario(scratch);
}

// The prefill analysis answers for one scenario and one class at an ov; the
// layer-offload analysis for one scenario's weights (both ends of the overlap
// in every row). Neither has an f or a load; prefill has no mix.
void check_analysis_axes(const SweepSpec& spec) {
    if (spec.analysis == SweepAnalysis::verdict) return;
    const std::string a(name(spec.analysis));
    if (axis_of(spec, "f") >= 0)
        throw InputError(fmt::format(
            "--grid f: the {} analysis has no f ({}); its axes are {}the scenario knobs", a,
            spec.analysis == SweepAnalysis::prefill ? "a reload moves all of a request's cached KV" : "it offloads weights",
            spec.analysis == SweepAnalysis::prefill ? "ov and " : ""));
    if (spec.analysis == SweepAnalysis::layers && axis_of(spec, "ov") >= 0)
        throw InputError("--grid ov: each layers row shows both ends, copy then compute and copy under compute");
    if (!spec.load.empty() || load_axis(spec) >= 0)
        throw InputError(
            fmt::format("--analysis {}: takes no load (--batch, --concurrency, --request-rate, their grids, --prefill, "
                        "--prefill-chunk, --max-seqs)",
                        a));
    if (spec.analysis == SweepAnalysis::prefill && (axis_of(spec, "mix") >= 0 || spec.fixed.given("mix")))
        throw InputError("--analysis prefill: answers for one class; give a --workload, not a --mix");
    const std::span<const std::string_view> reads = analysis_knobs(spec.analysis);
    const auto read = [&reads](std::string_view k) { return std::find(reads.begin(), reads.end(), k) != reads.end(); };
    std::string list;
    for (std::string_view k : reads) list += (list.empty() ? "" : ", ") + std::string(k);
    if (spec.analysis == SweepAnalysis::prefill) list += " (and ov)";
    for (const GridAxis& axis : spec.axes) {
        if (read(axis.knob) || axis.row->grid_only) continue;
        throw InputError(
            fmt::format("--grid {}: the {} analysis does not read {}, so every row would be the same; its knobs are {}",
                        axis.knob, a, axis.knob, list));
    }
    // A fixed flag it does not read would be ignored as silently (layers' --hbm-reserve: the card is the budget).
    for (const Knob& k : knobs())
        if (!k.grid_only && spec.fixed.given(k.name) && !read(k.name))
            throw InputError(fmt::format("{}: the {} analysis does not read it; its knobs are {}", k.flag(), a, list));
}

// Checks items [begin, end) of the flattened blocks; stops at the first failure.
void check_items(const SweepSpec& spec, const TypedGrid& grid, const std::vector<CheckBlock>& blocks, std::uint64_t begin,
                 std::uint64_t end, Failure& f) {
    std::vector<std::uint64_t> idx(spec.axes.size(), 0);
    Scenario scratch;
    std::uint64_t base = 0;
    for (const CheckBlock& b : blocks) {
        if (begin >= base + b.size) {
            base += b.size;
            continue;
        }
        if (base >= end) return;
        for (std::uint64_t w = std::max(begin, base); w < std::min(end, base + b.size); ++w) {
            std::uint64_t r = w - base;
            for (size_t k = b.axes.size(); k-- > 0;) {
                const std::uint64_t n = spec.axes[b.axes[k]].size() - b.from[k];
                idx[b.axes[k]] = b.from[k] + r % n;
                r /= n;
            }
            try {
                check_point(grid, idx, scratch);
            } catch (const InputError& e) {
                f = {w, fmt::format("{}: {}", grid_values(spec, b.axes, idx), e.what()), nullptr};
                return;
            } catch (...) {
                f = {w, {}, std::current_exception()};
                return;
            }
        }
        for (size_t a : b.axes) idx[a] = 0;
        base += b.size;
    }
}

// The load flags of the sweep file that an error names ("--batch fixes the batch"), each as a whole flag ("--prefill"
// is not "--prefill-chunk"): "--batch", or empty where it names none of them.
std::string file_flags_named(const SweepSpec& spec, std::string_view what) {
    const auto names = [what](const std::string& k) {
        const std::string flag = "--" + k;
        for (size_t at = what.find(flag); at != std::string_view::npos; at = what.find(flag, at + 1)) {
            const size_t end = at + flag.size();
            if (end == what.size() || !(std::islower(static_cast<unsigned char>(what[end])) || what[end] == '-')) return true;
        }
        return false;
    };
    std::string from;
    for (const std::string& k : spec.load_from_file)
        if (names(k)) from += (from.empty() ? "--" : ", --") + k;
    return from;
}

// f, ov and a load never reach the scenario: their one rule is their range
// ([0, 1]; a load > 0 and at most limits::kMaxLoad), checked on every value of
// a list and on both ends of a range, whose values rise with the index.
void check_f_and_ov(const SweepSpec& spec) {
    for (const GridAxis& a : spec.axes) {
        if (!a.row->grid_only) continue;
        for (std::uint64_t v = 0; v < a.size(); ++v) {
            if (a.is_range && v > 0 && v + 1 < a.size()) v = a.size() - 1;
            if (!a.is_range && !a.row->top_text.empty() && a.number(v) == std::numeric_limits<double>::infinity())
                continue;  // concurrency's max
            try {
                if (is_f_or_ov(a)) {
                    check::unit_interval(a.knob, a.number(v));
                } else if (a.row->type == KnobType::whole) {  // clients: whole, at least one
                    (void)check::whole_in_range(a.knob, a.number(v), 1, static_cast<int>(limits::kMaxLoad));
                } else {
                    check::above_up_to(a.knob, a.number(v), 0.0, limits::kMaxLoad);
                }
            } catch (const InputError& e) {
                throw InputError(fmt::format("--grid {}={}: {}", a.knob, a.value(v), e.what()));
            }
        }
    }
}

// Point 0: the fixed flags with every axis at its first value. The fixed
// flags' own fault reads better without the grid values.
void check_point_zero(const SweepSpec& spec, const TypedGrid& grid, const std::vector<size_t>& scen) {
    const std::vector<std::uint64_t> zero(spec.axes.size(), 0);
    Scenario scratch;
    try {
        check_point(grid, zero, scratch);
    } catch (const InputError& e) {
        if (scen.empty()) throw;
        bool fixed_fails_alike = false;
        try {
            (void)build_scenario(spec.fixed);
        } catch (const InputError& fixed_e) {
            fixed_fails_alike = std::string_view(fixed_e.what()) == e.what();
        }
        if (fixed_fails_alike) throw;
        throw InputError(fmt::format("{}: {}", grid_values(spec, scen, zero), e.what()));
    }
}

// Runs the checks of `blocks` on the sweep's threads; the failure reported is
// the first in block order whatever the thread count, because a chunk is
// skipped only when it starts after a failure already found.
void check_blocks(const SweepSpec& spec, const TypedGrid& grid, const std::vector<CheckBlock>& blocks) {
    std::uint64_t total = 0;
    for (const auto& b : blocks) total += b.size;
    constexpr std::uint64_t kCheckChunk = 1024;
    const std::uint64_t chunks = (total + kCheckChunk - 1) / kCheckChunk;
    std::atomic<std::uint64_t> next{0}, first_fail{UINT64_MAX};
    std::mutex m;
    Failure best;
    auto worker = [&] {
        for (std::uint64_t c; (c = next.fetch_add(1)) < chunks;) {
            const std::uint64_t b = c * kCheckChunk;
            if (b > first_fail.load()) return;
            Failure f;
            check_items(spec, grid, blocks, b, std::min(total, b + kCheckChunk), f);
            if (f.at == UINT64_MAX) continue;
            std::lock_guard lock(m);
            if (f.at < best.at) best = std::move(f);
            first_fail.store(best.at);
        }
    };
    const auto n = static_cast<size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(1, spec.threads)), chunks));
    if (n <= 1) {
        worker();
    } else {
        std::vector<std::thread> pool;
        pool.reserve(n);
        for (size_t i = 0; i < n; ++i) pool.emplace_back(worker);
        for (auto& t : pool) t.join();
    }
    if (best.other) std::rethrow_exception(best.other);
    if (best.at != UINT64_MAX) throw InputError(best.message);
}

// Every grid point passes the rules of build_scenario and of the specs'
// check_validity, shown without visiting the product of the axes (which may
// be 10^9 points) by checking points that include a violator whenever the
// product holds one:
//  - point 0: the fixed flags with every axis at its first value;
//  - every value of every axis with the others at their first values, which
//    settles each rule on one knob (sparse in (0, 1], a preset name);
//  - every two values of every two axes with the others at their first
//    values, which settles each rule on two knobs.
// Most rules across knobs involve two: hbm-reserve < hbm-cap
// (HardwareSpec::check_validity; either side may come from a hardware preset,
// but an axis for both overrides the preset) and a mix or a workload, not both
// (decode_inputs; checked on the flags before this). The deployment has two
// rules on three knobs (HardwareSpec::check_validity: attention-dp, ep and the
// group; gpus x pp x dp), so every three values of every three deployment axes
// are checked too: kDeploymentKnobs, with the presets that set the group. A new
// rule on three other knobs adds its knobs there. Each check assembles the
// point through the knob table's typed accessors, as the sweep itself does,
// and checks the specs: so every point is valid, and a row skips the checks.
constexpr std::string_view kDeploymentKnobs[] = {"hardware", "deployment", "gpus", "tp", "ep", "attention-dp", "pp", "dp"};
void check_every_point(const SweepSpec& spec) {
    check_f_and_ov(spec);
    const TypedGrid grid(spec);  // every list value decodes
    std::vector<size_t> scen;
    for (const TypedAxis& t : grid.axes()) scen.push_back(t.axis);
    check_point_zero(spec, grid, scen);
    std::vector<CheckBlock> blocks;
    blocks.reserve(scen.size() * (scen.size() + 1) / 2);
    for (size_t i : scen) blocks.push_back({{i}, {1}, spec.axes[i].size() - 1});
    for (size_t x = 0; x < scen.size(); ++x)
        for (size_t y = x + 1; y < scen.size(); ++y)
            blocks.push_back({{scen[x], scen[y]}, {1, 1}, (spec.axes[scen[x]].size() - 1) * (spec.axes[scen[y]].size() - 1)});
    std::vector<size_t> dep;
    for (size_t i : scen)
        if (std::find(std::begin(kDeploymentKnobs), std::end(kDeploymentKnobs), spec.axes[i].knob) != std::end(kDeploymentKnobs))
            dep.push_back(i);
    const auto rest = [&](size_t i) { return spec.axes[i].size() - 1; };
    for (size_t x = 0; x < dep.size(); ++x)
        for (size_t y = x + 1; y < dep.size(); ++y)
            for (size_t z = y + 1; z < dep.size(); ++z)
                blocks.push_back({{dep[x], dep[y], dep[z]}, {1, 1, 1}, rest(dep[x]) * rest(dep[y]) * rest(dep[z])});
    check_blocks(spec, grid, blocks);
}

}  // namespace

void validate_sweep(const SweepSpec& spec) {
    if (spec.axes.empty())
        throw InputError(spec.analysis == SweepAnalysis::verdict ? "--grid: give at least one, e.g. --grid f=0:1:0.05"
                                                                 : "--grid: give at least one, e.g. --grid c2c-bw=16:256:16");
    if (spec.threads < 1) throw InputError("--threads: must be >= 1");
    if (spec.shard_count < 1 || spec.shard_index < 1 || spec.shard_index > spec.shard_count)
        throw InputError(fmt::format("--shard: must be K/N with 1 <= K <= N, got {}/{}", spec.shard_index, spec.shard_count));
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        const GridAxis& a = spec.axes[i];
        for (size_t j = 0; j < i; ++j)
            if (spec.axes[j].knob == a.knob) throw InputError(fmt::format("--grid {}: given twice", a.knob));
        if (!a.row->grid_only && spec.fixed.get(*a.row))
            throw InputError(fmt::format("--grid {}: also given as --{}; give it one way", a.knob, a.knob));
    }
    check_analysis_axes(spec);
    try {
        (void)sweep_load(spec);  // the load flags, and at most one load
    } catch (const InputError& e) {
        const std::string from = file_flags_named(spec, e.what());
        if (from.empty()) throw;
        throw InputError(fmt::format("{} ({} from the sweep file {})", e.what(), from, spec.load_file));
    }
    const bool grid_mix = axis_of(spec, "mix") >= 0, grid_wl = axis_of(spec, "workload") >= 0;
    if ((grid_mix && (grid_wl || spec.fixed.given("workload"))) || (grid_wl && spec.fixed.given("mix")))
        throw InputError("--grid mix: cannot be combined with a workload; give one of them");
    const bool grid_tp = axis_of(spec, "tp") >= 0, grid_gpus = axis_of(spec, "gpus") >= 0;
    if ((grid_tp && (grid_gpus || spec.fixed.given("gpus"))) || (grid_gpus && spec.fixed.given("tp")))
        throw InputError("--grid tp: names the --gpus group, so it cannot be combined with gpus; give one of them");
    double total = 1;
    for (const auto& a : spec.axes) total *= static_cast<double>(a.size());
    if (total > 9.2e18) throw InputError(fmt::format("--grid: {:.3g} points overflow the point counter", total));
    check_every_point(spec);
}

std::uint64_t sweep_points(const SweepSpec& spec) {
    std::uint64_t n = 1;
    for (const auto& a : spec.axes) n *= a.size();
    return n;
}

std::pair<std::uint64_t, std::uint64_t> shard_range(const SweepSpec& spec) {
    const std::uint64_t n = sweep_points(spec);
    const auto k = static_cast<std::uint64_t>(spec.shard_index - 1), m = static_cast<std::uint64_t>(spec.shard_count);
    // n·k/m without overflow for n < 2^63 and m small.
    auto cut = [&](std::uint64_t i) { return (n / m) * i + (n % m) * i / m; };
    return {cut(k), cut(k + 1)};
}

}  // namespace kvroof::io
