// SPDX-License-Identifier: MIT
#include "kvroof/io/sweep.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "kvroof/analysis/verdict.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"

namespace kvroof::io {
namespace {

using OptField = std::optional<std::string> ScenarioInputs::*;

struct KnobDef {
    const char* name;
    const char* column;
    KnobUnit unit;
    UnitKind parse_kind;
    const char* bare;   // unit of a bare number, and of the value passed on
    double to_column;   // SI value -> column unit
    OptField field;     // nullptr: hardware/model (plain strings) or f/ov
    bool list_only;     // text knobs: no ranges
    bool whole;         // whole numbers only (the GPU count)
};

const std::vector<KnobDef>& knob_table() {
    static const std::vector<KnobDef> t = {
        {"hardware", "hardware", KnobUnit::text, UnitKind::bytes, "", 1, nullptr, true, false},
        {"model", "model", KnobUnit::text, UnitKind::bytes, "", 1, nullptr, true, false},
        {"workload", "workload", KnobUnit::text, UnitKind::bytes, "", 1, &ScenarioInputs::workload, true, false},
        {"mix", "mix", KnobUnit::text, UnitKind::bytes, "", 1, &ScenarioInputs::mix, true, false},
        {"link", "link", KnobUnit::text, UnitKind::bytes, "", 1, &ScenarioInputs::link, true, false},
        {"gpus", "gpus", KnobUnit::none, UnitKind::bytes, "", 1, &ScenarioInputs::gpus, false, true},
        {"gpu-flops", "gpu_flops_TFLOPS", KnobUnit::tflops, UnitKind::flop_rate, "TFLOPS", 1e-12, &ScenarioInputs::gpu_flops, false, false},
        {"hbm-cap", "hbm_cap_GB", KnobUnit::gb, UnitKind::bytes, "GB", 1e-9, &ScenarioInputs::hbm_cap, false, false},
        {"hbm-bw", "hbm_bw_TBps", KnobUnit::tbps, UnitKind::bandwidth, "TB/s", 1e-12, &ScenarioInputs::hbm_bw, false, false},
        {"hbm-reserve", "hbm_reserve_GB", KnobUnit::gb, UnitKind::bytes, "GB", 1e-9, &ScenarioInputs::hbm_reserve, false, false},
        {"nvlink-bw", "nvlink_bw_GBps", KnobUnit::gbps, UnitKind::bandwidth, "GB/s", 1e-9, &ScenarioInputs::nvlink_bw, false, false},
        {"c2c-bw", "c2c_bw_GBps", KnobUnit::gbps, UnitKind::bandwidth, "GB/s", 1e-9, &ScenarioInputs::c2c_bw, false, false},
        {"cpu-dram-bw", "cpu_dram_bw_GBps", KnobUnit::gbps, UnitKind::bandwidth, "GB/s", 1e-9, &ScenarioInputs::cpu_dram_bw, false, false},
        {"cpu-flops", "cpu_flops_TFLOPS", KnobUnit::tflops, UnitKind::flop_rate, "TFLOPS", 1e-12, &ScenarioInputs::cpu_flops, false, false},
        {"cpu-mem", "cpu_mem_GB", KnobUnit::gb, UnitKind::bytes, "GB", 1e-9, &ScenarioInputs::cpu_mem, false, false},
        {"cpus-per-gpu", "cpus_per_gpu", KnobUnit::none, UnitKind::bytes, "", 1, &ScenarioInputs::cpus_per_gpu, false, false},
        {"eta", "eta", KnobUnit::none, UnitKind::bytes, "", 1, &ScenarioInputs::eta, false, false},
        {"eta-compute", "eta_compute", KnobUnit::none, UnitKind::bytes, "", 1, &ScenarioInputs::eta_compute, false, false},
        {"eta-mem", "eta_mem", KnobUnit::none, UnitKind::bytes, "", 1, &ScenarioInputs::eta_mem, false, false},
        {"sparse", "sparse", KnobUnit::none, UnitKind::bytes, "", 1, &ScenarioInputs::sparse, false, false},
        {"r", "r", KnobUnit::none, UnitKind::bytes, "", 1, &ScenarioInputs::r, false, false},
        {"kv-dtype", "kv_dtype", KnobUnit::text, UnitKind::bytes, "", 1, &ScenarioInputs::kv_dtype, true, false},
        {"weight-dtype", "weight_dtype", KnobUnit::text, UnitKind::bytes, "", 1, &ScenarioInputs::weight_dtype, true, false},
        {"slo-tpot", "slo_tpot_ms", KnobUnit::ms, UnitKind::time, "ms", 1e3, &ScenarioInputs::slo_tpot, false, false},
        {"slo-ttft", "slo_ttft_ms", KnobUnit::ms, UnitKind::time, "ms", 1e3, &ScenarioInputs::slo_ttft, false, false},
        {"idle", "idle", KnobUnit::text, UnitKind::bytes, "", 1, &ScenarioInputs::idle, true, false},
        {"f", "f", KnobUnit::none, UnitKind::bytes, "", 1, nullptr, false, false},
        {"ov", "ov", KnobUnit::none, UnitKind::bytes, "", 1, nullptr, false, false},
    };
    return t;
}

const KnobDef* find_knob(std::string_view name) {
    for (const auto& k : knob_table())
        if (name == k.name) return &k;
    return nullptr;
}

bool numeric_knob(const KnobDef& k) { return k.unit != KnobUnit::text; }
bool unit_knob(const KnobDef& k) { return k.unit != KnobUnit::text && k.unit != KnobUnit::none; }

// SI value of one numeric grid value.
double knob_si(const KnobDef& k, std::string_view where, std::string_view v) {
    return unit_knob(k) ? parse_quantity(where, v, k.parse_kind, k.bare) : parse_number(where, v);
}

bool is_f_or_ov(const GridAxis& a) { return a.knob == "f" || a.knob == "ov"; }

}  // namespace

const std::vector<std::string>& grid_knobs() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto& k : knob_table()) v.emplace_back(k.name);
        return v;
    }();
    return names;
}

GridAxis parse_grid_entry(std::string_view entry) {
    const std::string where = fmt::format("--grid '{}'", entry);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) throw InputError(where + ": expected knob=values, e.g. f=0:1:0.05 or sparse=0.1,1");
    const std::string name = trim(entry.substr(0, eq));
    const KnobDef* k = find_knob(name);
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
    a.unit = k->unit;
    // Workload strings and mixes contain commas: their alternatives are separated by ';'.
    const char sep = (a.knob == "workload" || a.knob == "mix") ? ';' : ',';
    const bool is_range = numeric_knob(*k) && rest.find(sep) == std::string::npos &&
                          std::count(rest.begin(), rest.end(), ':') == 2;
    if (is_range) {
        const auto parts = split(rest, ':');
        const double lo = knob_si(*k, where, parts[0]);
        const double hi = knob_si(*k, where, parts[1]);
        const double step = knob_si(*k, where, parts[2]);
        if (!(step > 0)) throw InputError(fmt::format("{}: step must be > 0, got '{}'", where, parts[2]));
        if (hi < lo) throw InputError(fmt::format("{}: empty range, {} > {}", where, parts[0], parts[1]));
        const double n = std::floor((hi - lo) / step * (1 + 1e-12) + 1e-9) + 1;
        if (n > 1e9) throw InputError(fmt::format("{}: {:.3g} values in one axis; at most 1e9", where, n));
        if (k->whole && (lo != std::floor(lo) || step != std::floor(step)))
            throw InputError(fmt::format("{}: {} takes whole numbers, so the start and step must be whole, got '{}'", where, name, rest));
        a.is_range = true;
        a.count = static_cast<std::uint64_t>(n);
        a.lo = lo;
        a.step = step;
        a.to_column = k->to_column;
        a.bare = unit_knob(*k) ? parse_quantity(where, fmt::format("1{}", k->bare), k->parse_kind, k->bare) : 1.0;
    } else {
        for (const auto& v : split(rest, sep)) {
            if (v.empty()) throw InputError(fmt::format("{}: empty value in the list", where));
            if (numeric_knob(*k)) a.numbers.push_back(knob_si(*k, where, v) * k->to_column);
            if (k->whole && a.numbers.back() != std::floor(a.numbers.back()))
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

namespace {

ScenarioInputs inputs_for(const SweepSpec& spec, const std::vector<std::uint64_t>& idx) {
    ScenarioInputs in = spec.fixed;
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        const GridAxis& a = spec.axes[i];
        const std::string v = a.value(idx[i]);
        if (a.knob == "hardware") in.hardware = v;
        else if (a.knob == "model") in.model = v;
        else if (const KnobDef* k = find_knob(a.knob); k && k->field) in.*(k->field) = v;
    }
    return in;
}

void decompose(const SweepSpec& spec, std::uint64_t point, std::vector<std::uint64_t>& idx) {
    for (size_t i = spec.axes.size(); i-- > 0;) {
        const std::uint64_t n = spec.axes[i].size();
        idx[i] = point % n;
        point /= n;
    }
}

int axis_of(const SweepSpec& spec, std::string_view knob) {
    for (size_t i = 0; i < spec.axes.size(); ++i)
        if (spec.axes[i].knob == knob) return static_cast<int>(i);
    return -1;
}

}  // namespace

namespace {

// Which grid values one check sets; the rest of the axes stay at their first value.
struct CheckBlock {
    std::vector<size_t> axes;        // one or two scenario axes
    std::vector<std::uint64_t> from;  // first index checked on each (1: index 0 is point 0's)
    std::uint64_t size = 0;           // product of (axis size - from)
};

std::string grid_values(const SweepSpec& spec, const std::vector<size_t>& axes, const std::vector<std::uint64_t>& idx) {
    std::string s = "--grid ";
    for (size_t k = 0; k < axes.size(); ++k) s += fmt::format("{}{}={}", k ? ", " : "", spec.axes[axes[k]].knob, spec.axes[axes[k]].value(idx[axes[k]]));
    return s;
}

// The first failing check in block order, or nothing.
struct Failure {
    std::uint64_t at = UINT64_MAX;
    std::string message;
    std::exception_ptr other;  // not an InputError: rethrown as it is
};

// Checks items [begin, end) of the flattened blocks; stops at the first failure.
void check_items(const SweepSpec& spec, const std::vector<CheckBlock>& blocks, std::uint64_t begin, std::uint64_t end, Failure& f) {
    std::vector<std::uint64_t> idx(spec.axes.size(), 0);
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
                (void)build_scenario(inputs_for(spec, idx));
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

// Every grid point passes the rules of build_scenario and of the specs'
// check_validity, shown without visiting the product of the axes (which may
// be 10^9 points) by checking points that include a violator whenever the
// product holds one:
//  - point 0: the fixed flags with every axis at its first value;
//  - every value of every axis with the others at their first values, which
//    settles each rule on one knob (sparse in (0, 1], a preset name);
//  - every two values of every two axes with the others at their first
//    values, which settles each rule on two knobs.
// The rules across knobs involve two at most: hbm-reserve < hbm-cap
// (HardwareSpec::check_validity; either side may come from a hardware preset,
// but an axis for both overrides the preset) and a mix or a workload, not both
// (build_scenario; checked on the flags before this). A rule on three knobs
// would need triples here. f and ov never reach the scenario: their one rule
// is [0, 1], checked on every value of a list and on both ends of a range,
// whose values rise with the index.
void check_every_point(const SweepSpec& spec) {
    std::vector<size_t> scen;
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        const GridAxis& a = spec.axes[i];
        if (!is_f_or_ov(a)) {
            scen.push_back(i);
            continue;
        }
        for (std::uint64_t v = 0; v < a.size(); ++v) {
            if (a.is_range && v > 0 && v + 1 < a.size()) v = a.size() - 1;
            try {
                check::unit_interval(a.knob, a.number(v));
            } catch (const InputError& e) {
                throw InputError(fmt::format("--grid {}={}: {}", a.knob, a.value(v), e.what()));
            }
        }
    }
    const std::vector<std::uint64_t> zero(spec.axes.size(), 0);
    try {
        (void)build_scenario(inputs_for(spec, zero));
    } catch (const InputError& e) {
        if (scen.empty()) throw;
        // The fixed flags' own fault reads better without the grid values.
        bool fixed_fails_alike = false;
        try {
            (void)build_scenario(spec.fixed);
        } catch (const InputError& fixed_e) {
            fixed_fails_alike = std::string_view(fixed_e.what()) == e.what();
        }
        if (fixed_fails_alike) throw;
        throw InputError(fmt::format("{}: {}", grid_values(spec, scen, zero), e.what()));
    }
    std::vector<CheckBlock> blocks;
    blocks.reserve(scen.size() * (scen.size() + 1) / 2);
    for (size_t i : scen) blocks.push_back({{i}, {1}, spec.axes[i].size() - 1});
    for (size_t x = 0; x < scen.size(); ++x)
        for (size_t y = x + 1; y < scen.size(); ++y)
            blocks.push_back({{scen[x], scen[y]}, {1, 1}, (spec.axes[scen[x]].size() - 1) * (spec.axes[scen[y]].size() - 1)});
    std::uint64_t total = 0;
    for (const auto& b : blocks) total += b.size;

    // Chunks claimed in order by the sweep's threads; the failure reported is
    // the first in block order whatever the thread count, because a chunk is
    // skipped only when it starts after a failure already found.
    constexpr std::uint64_t kCheckChunk = 256;
    const std::uint64_t chunks = (total + kCheckChunk - 1) / kCheckChunk;
    std::atomic<std::uint64_t> next{0}, first_fail{UINT64_MAX};
    std::mutex m;
    Failure best;
    auto worker = [&] {
        for (std::uint64_t c; (c = next.fetch_add(1)) < chunks;) {
            const std::uint64_t b = c * kCheckChunk;
            if (b > first_fail.load()) return;
            Failure f;
            check_items(spec, blocks, b, std::min(total, b + kCheckChunk), f);
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

}  // namespace

void validate_sweep(const SweepSpec& spec) {
    if (spec.axes.empty()) throw InputError("--grid: give at least one, e.g. --grid f=0:1:0.05");
    if (spec.threads < 1) throw InputError("--threads: must be >= 1");
    if (spec.shard_count < 1 || spec.shard_index < 1 || spec.shard_index > spec.shard_count)
        throw InputError(fmt::format("--shard: must be K/N with 1 <= K <= N, got {}/{}", spec.shard_index, spec.shard_count));
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        const GridAxis& a = spec.axes[i];
        for (size_t j = 0; j < i; ++j)
            if (spec.axes[j].knob == a.knob) throw InputError(fmt::format("--grid {}: given twice", a.knob));
        const KnobDef* k = find_knob(a.knob);
        const bool fixed_set = (a.knob == "hardware" && spec.hardware_given) || (a.knob == "model" && spec.model_given) ||
                               (k && k->field && (spec.fixed.*(k->field)).has_value());
        if (fixed_set) throw InputError(fmt::format("--grid {}: also given as --{}; give it one way", a.knob, a.knob));
    }
    const bool grid_mix = axis_of(spec, "mix") >= 0, grid_wl = axis_of(spec, "workload") >= 0;
    if ((grid_mix && (grid_wl || spec.fixed.workload)) || (grid_wl && spec.fixed.mix))
        throw InputError("--grid mix: cannot be combined with a workload; give one of them");
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

namespace {
constexpr const char* kResultColumns[] = {"f",           "f_star_con",    "f_star_opt",   "tps_con_tok_per_s", "tps_opt_tok_per_s",
                                          "gain_con",    "gain_opt",      "batch_con_seq", "tpot_con_ms",      "ttft_con_ms",
                                          "binding_con", "binding_opt",   "verdict"};
}

std::string sweep_header(const SweepSpec& spec) {
    if (spec.format != SweepFormat::csv) return {};
    std::string h;
    for (const auto& a : spec.axes)
        if (!is_f_or_ov(a)) h += a.column + ",";
    for (const char* c : kResultColumns) h += std::string(c) + ",";
    if (axis_of(spec, "ov") >= 0) h += "ov,tps_ov_tok_per_s,gain_ov,";
    h.back() = '\n';
    return h;
}

namespace {

// One worker's state: the scenario of the last point and what follows from it.
// What a row needs that depends only on the knobs other than f and ov: the
// scenario and its verdict (the f* optimum, ~130 model evaluations). Kept per
// worker by those knobs' indices, so a row costs the same in any axis order:
// with f the slow axis, a chunk revisits the same few non-f points. Bounded:
// cleared when full (the values do not depend on what is cached).
struct CachedPoint {
    std::unique_ptr<Scenario> scenario;
    std::unique_ptr<PreparedScenario> prepared;  // points into *scenario
    Verdict verdict;
};
struct PointCache {
    static constexpr std::size_t kCapacity = 1024;
    std::vector<std::uint64_t> key;  // scratch: indices of the axes other than f and ov
    std::map<std::vector<std::uint64_t>, CachedPoint> points;
    const CachedPoint* last = nullptr;  // the previous row's point
    std::vector<std::uint64_t> last_key;
};

}  // namespace

void append_number6(std::string& out, double v) {
    if (!std::isfinite(v)) {
        out += std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == 0) {
        out += '0';
        return;
    }
    static constexpr double kPow10[] = {1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12,
                                        1e-11, 1e-10, 1e-9,  1e-8,  1e-7,  1e-6,  1e-5,  1e-4,  1e-3,  1e-2,  1e-1,
                                        1e0,   1e1,   1e2,   1e3,   1e4,   1e5,   1e6,   1e7,   1e8,   1e9,   1e10,
                                        1e11,  1e12,  1e13,  1e14,  1e15,  1e16,  1e17,  1e18,  1e19,  1e20,  1e21, 1e22};
    constexpr int kZero = 22;  // index of 1e0
    char buf[40];
    int n = 0;
    if (v < 0) {
        buf[n++] = '-';
        v = -v;
    }
    if (v < 1e-16 || v >= 1e16) {  // outside the table's reach for a 6-digit mantissa
        out.append(buf, static_cast<size_t>(n));
        fmt::format_to(std::back_inserter(out), "{:.6g}", v);
        return;
    }
    // Decade from the binary exponent: v in [2^b, 2^(b+1)) puts log10(v) in
    // [b·log10 2, (b+1)·log10 2), so the decade is e or e + 1.
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    const int b = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    int e = static_cast<int>(std::floor(b * 0.30102999566398120));
    if (kPow10[kZero + e + 1] <= v) ++e;
    const int shift = 5 - e;  // in [-10, 21]
    auto m = std::llround(v * kPow10[kZero + shift]);  // v > 0: half away from zero = half up
    if (m >= 1000000) {  // rounding carried into the next decade
        m = (m + 5) / 10;
        ++e;
    }
    char d[6];
    for (int i = 5; i >= 0; --i) {
        d[i] = static_cast<char>('0' + m % 10);
        m /= 10;
    }
    int nd = 6;
    while (nd > 1 && d[nd - 1] == '0') --nd;
    if (e >= 0 && e < 15) {
        for (int i = 0; i <= e; ++i) buf[n++] = i < nd ? d[i] : '0';
        if (nd > e + 1) {
            buf[n++] = '.';
            for (int i = e + 1; i < nd; ++i) buf[n++] = d[i];
        }
    } else if (e < 0 && e >= -5) {
        buf[n++] = '0';
        buf[n++] = '.';
        for (int i = 0; i < -e - 1; ++i) buf[n++] = '0';
        for (int i = 0; i < nd; ++i) buf[n++] = d[i];
    } else {
        buf[n++] = d[0];
        if (nd > 1) {
            buf[n++] = '.';
            for (int i = 1; i < nd; ++i) buf[n++] = d[i];
        }
        buf[n++] = 'e';
        buf[n++] = e < 0 ? '-' : '+';
        const int ae = e < 0 ? -e : e;
        buf[n++] = static_cast<char>('0' + ae / 10);
        buf[n++] = static_cast<char>('0' + ae % 10);
    }
    out.append(buf, static_cast<size_t>(n));
}

namespace {

// A CSV cell for a number that has none (a gain over a baseline that serves
// nothing, an unbounded batch) is empty: the CSV convention for a missing value.
void append_number(std::string& out, double v) {
    if (std::isfinite(v)) append_number6(out, v);
}

void append_csv_text(std::string& out, const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) {
        out += s;
        return;
    }
    out += '"';
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
}

void append_json_number(std::string& out, double v) {
    if (std::isfinite(v)) append_number(out, v);
    else out += "null";
}

struct Row {
    double f, f_con, f_opt, tps_con, tps_opt, gain_con, gain_opt, batch, tpot_ms, ttft_ms;
    std::string_view bind_con, bind_opt, verdict;
    bool has_ov = false;
    double ov = 0, tps_ov = 0, gain_ov = 0;
};

Row compute_row(const SweepSpec& spec, PointCache& cache, const std::vector<std::uint64_t>& idx, int f_axis, int ov_axis) {
    cache.key.clear();
    for (size_t i = 0; i < spec.axes.size(); ++i)
        if (static_cast<int>(i) != f_axis && static_cast<int>(i) != ov_axis) cache.key.push_back(idx[i]);
    if (!cache.last || cache.key != cache.last_key) {
        auto it = cache.points.find(cache.key);
        if (it == cache.points.end()) {
            if (cache.points.size() >= PointCache::kCapacity) cache.points.clear();
            CachedPoint p;
            p.scenario = std::make_unique<Scenario>(build_scenario(inputs_for(spec, idx)).scenario);
            p.prepared = std::make_unique<PreparedScenario>(*p.scenario);
            p.verdict = make_verdict(*p.scenario);
            it = cache.points.emplace(cache.key, std::move(p)).first;
        }
        cache.last = &it->second;
        cache.last_key = cache.key;
    }
    const CachedPoint& point = *cache.last;
    const Verdict& v = point.verdict;
    Row r{};
    r.f = f_axis >= 0 ? spec.axes[static_cast<size_t>(f_axis)].number(idx[static_cast<size_t>(f_axis)]) : v.f;
    const bool at_verdict_f = f_axis < 0;
    const Band b = at_verdict_f ? v.at_f : band(*point.prepared, r.f);
    const ServingPoint& con = b.conservative;
    const ServingPoint& opt = b.optimistic;
    r.f_con = v.best_conservative.f;
    r.f_opt = v.best_optimistic.f;
    r.tps_con = con.throughput;
    r.tps_opt = opt.throughput;
    // A gain over a baseline that serves nothing is undefined: an empty cell, null in JSON.
    const auto gain_or_none = [](const ServingPoint& at, const ServingPoint& base) {
        return base.throughput > 0 ? gain(at, base) : std::numeric_limits<double>::quiet_NaN();
    };
    r.gain_con = gain_or_none(con, v.baseline.conservative);
    r.gain_opt = gain_or_none(opt, v.baseline.optimistic);
    r.batch = con.batch;
    r.tpot_ms = con.tpot * 1e3;
    r.ttft_ms = con.ttft * 1e3;
    r.bind_con = name(con.headline);
    r.bind_opt = name(opt.headline);
    r.verdict = name(v.kind);
    if (ov_axis >= 0) {
        r.has_ov = true;
        r.ov = spec.axes[static_cast<size_t>(ov_axis)].number(idx[static_cast<size_t>(ov_axis)]);
        const ServingPoint at = evaluate(*point.prepared, r.f, r.ov);
        r.tps_ov = at.throughput;
        r.gain_ov = gain_or_none(at, v.baseline.conservative);
    }
    return r;
}

void append_row(const SweepSpec& spec, const std::vector<std::uint64_t>& idx, const Row& r, std::string& out) {
    if (spec.format == SweepFormat::csv) {
        for (size_t i = 0; i < spec.axes.size(); ++i) {
            const GridAxis& a = spec.axes[i];
            if (is_f_or_ov(a)) continue;
            if (a.unit == KnobUnit::text) append_csv_text(out, a.values[idx[i]]);
            else append_number(out, a.number(idx[i]));
            out += ',';
        }
        for (double v : {r.f, r.f_con, r.f_opt, r.tps_con, r.tps_opt, r.gain_con, r.gain_opt, r.batch, r.tpot_ms, r.ttft_ms}) {
            append_number(out, v);
            out += ',';
        }
        out.append(r.bind_con).append(",").append(r.bind_opt).append(",").append(r.verdict);
        if (r.has_ov) {
            for (double v : {r.ov, r.tps_ov, r.gain_ov}) {
                out += ',';
                append_number(out, v);
            }
        }
        out += '\n';
        return;
    }
    out += '{';
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        const GridAxis& a = spec.axes[i];
        if (is_f_or_ov(a)) continue;
        out += '"';
        out += a.column;
        out += "\":";
        if (a.unit == KnobUnit::text) out += nlohmann::json(a.values[idx[i]]).dump();
        else append_json_number(out, a.number(idx[i]));
        out += ',';
    }
    const double nums[] = {r.f, r.f_con, r.f_opt, r.tps_con, r.tps_opt, r.gain_con, r.gain_opt, r.batch, r.tpot_ms, r.ttft_ms};
    for (size_t i = 0; i < 10; ++i) {
        out += '"';
        out += kResultColumns[i];
        out += "\":";
        append_json_number(out, nums[i]);
        out += ',';
    }
    out.append("\"binding_con\":\"").append(r.bind_con).append("\",\"binding_opt\":\"").append(r.bind_opt);
    out.append("\",\"verdict\":\"").append(r.verdict).append("\"");
    if (r.has_ov) {
        out += ",\"ov\":";
        append_json_number(out, r.ov);
        out += ",\"tps_ov_tok_per_s\":";
        append_json_number(out, r.tps_ov);
        out += ",\"gain_ov\":";
        append_json_number(out, r.gain_ov);
    }
    out += "}\n";
}

constexpr std::uint64_t kChunk = 4096;

std::string compute_chunk(const SweepSpec& spec, PointCache& cache, std::uint64_t begin, std::uint64_t end, int f_axis, int ov_axis) {
    std::string out;
    out.reserve((end - begin) * 160);
    std::vector<std::uint64_t> idx(spec.axes.size());
    for (std::uint64_t p = begin; p < end; ++p) {
        decompose(spec, p, idx);
        append_row(spec, idx, compute_row(spec, cache, idx, f_axis, ov_axis), out);
    }
    return out;
}

}  // namespace

void run_sweep(const SweepSpec& spec, const std::function<void(std::string_view)>& write,
               const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
    // Plain names, not a structured binding: clang 14 cannot capture one in a lambda.
    const auto range = shard_range(spec);
    const std::uint64_t begin = range.first, end = range.second;
    const int f_axis = axis_of(spec, "f"), ov_axis = axis_of(spec, "ov");
    if (spec.shard_index == 1 && spec.format == SweepFormat::csv) write(sweep_header(spec));
    const std::uint64_t total = end - begin;
    const std::uint64_t chunks = (total + kChunk - 1) / kChunk;
    auto chunk_range = [&](std::uint64_t c) { return std::pair{begin + c * kChunk, std::min(end, begin + (c + 1) * kChunk)}; };

    if (spec.threads == 1 || chunks <= 1) {
        PointCache cache;
        for (std::uint64_t c = 0; c < chunks; ++c) {
            const auto [b, e] = chunk_range(c);
            write(compute_chunk(spec, cache, b, e, f_axis, ov_axis));
            if (progress) progress(e - begin, total);
        }
        return;
    }

    // Workers claim chunks in order; the caller writes them in order. At most
    // `window` chunks are in flight, so memory stays flat however large the grid.
    const std::uint64_t window = static_cast<std::uint64_t>(spec.threads) * 2;
    std::mutex m;
    std::condition_variable cv;
    std::uint64_t next_claim = 0, next_write = 0;
    std::map<std::uint64_t, std::string> ready;
    std::exception_ptr failure;
    bool stop = false;
    auto worker = [&] {
        PointCache cache;
        while (true) {
            std::uint64_t c;
            {
                std::unique_lock lock(m);
                cv.wait(lock, [&] { return stop || next_claim >= chunks || next_claim < next_write + window; });
                if (stop || next_claim >= chunks) return;
                c = next_claim++;
            }
            std::string text;
            try {
                const auto [b, e] = chunk_range(c);
                text = compute_chunk(spec, cache, b, e, f_axis, ov_axis);
            } catch (...) {
                std::lock_guard lock(m);
                if (!failure) failure = std::current_exception();
                stop = true;
                cv.notify_all();
                return;
            }
            std::lock_guard lock(m);
            ready.emplace(c, std::move(text));
            cv.notify_all();
        }
    };
    std::vector<std::thread> pool;
    const int n = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(spec.threads), chunks));
    pool.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) pool.emplace_back(worker);
    std::exception_ptr write_failure;
    while (next_write < chunks) {
        std::string text;
        {
            std::unique_lock lock(m);
            cv.wait(lock, [&] { return stop || ready.count(next_write) > 0; });
            if (stop) break;
            auto it = ready.find(next_write);
            text = std::move(it->second);
            ready.erase(it);
        }
        try {
            write(text);
            if (progress) progress(std::min(total, (next_write + 1) * kChunk), total);
        } catch (...) {
            write_failure = std::current_exception();
        }
        std::lock_guard lock(m);
        ++next_write;
        if (write_failure) stop = true;
        cv.notify_all();
        if (write_failure) break;
    }
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
    if (write_failure) std::rethrow_exception(write_failure);
}

void set_scenario_flag(ScenarioInputs& in, std::string_view flag, const std::string& value, std::string_view where) {
    if (flag == "hardware") in.hardware = value;
    else if (flag == "model") in.model = value;
    else if (const KnobDef* k = find_knob(flag); k && k->field) in.*(k->field) = value;
    else throw InputError(fmt::format("{}: unknown flag '{}'", where, flag));
}

SweepSpec load_sweep_file(std::string_view path) {
    // Depth-capped, and every failure an InputError naming --config and the file.
    const nlohmann::json j = read_json_file("--config", path);
    const std::string where = fmt::format("--config {}", path);
    if (!j.is_object()) throw InputError(where + ": expected a JSON object");
    for (const auto& [k, _] : j.items())
        if (k != "fixed" && k != "grid" && k != "description")
            throw InputError(fmt::format("{}: unknown key '{}'; allowed: description, fixed, grid", where, k));
    SweepSpec spec;
    if (j.contains("description") && !j.at("description").is_string())
        throw InputError(fmt::format("{}: 'description' must be a string, got {}", where, j.at("description").type_name()));
    if (j.contains("fixed")) {
        if (!j.at("fixed").is_object())
            throw InputError(fmt::format("{}: 'fixed' must be an object of flag: \"value\", got {}", where, j.at("fixed").type_name()));
        for (const auto& [k, v] : j.at("fixed").items()) {
            if (!v.is_string()) throw InputError(fmt::format("{}: fixed.{} must be a string like on the command line", where, k));
            set_scenario_flag(spec.fixed, k, v.get<std::string>(), where);
            if (k == "hardware") spec.hardware_given = true;
            if (k == "model") spec.model_given = true;
        }
    }
    if (!j.contains("grid") || !j.at("grid").is_array()) throw InputError(where + ": 'grid' must be a list of \"knob=values\"");
    for (const auto& g : j.at("grid")) {
        if (!g.is_string())
            throw InputError(fmt::format("{}: each 'grid' entry must be a string like \"f=0:1:0.05\", got {}", where,
                                         g.type_name()));
        spec.axes.push_back(parse_grid_entry(g.get<std::string>()));
    }
    return spec;
}

}  // namespace kvroof::io
