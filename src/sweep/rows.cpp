// SPDX-License-Identifier: MIT
// One sweep row: the verdict of its point (kept per worker) and the band at its f.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "sweep_rows.hpp"

namespace kvroof::io::sweep_detail {
namespace {
// The JSON keys of kResultColumns[8..16], each with its colon.
constexpr std::string_view kJsonKeys[] = {"\"tps_con_tok_per_s\":",
                                          "\"tps_opt_tok_per_s\":",
                                          "\"tps_con_per_gpu_tok_per_s\":",
                                          "\"tps_opt_per_gpu_tok_per_s\":",
                                          "\"gain_con\":",
                                          "\"gain_opt\":",
                                          "\"batch_con_seq\":",
                                          "\"tpot_con_ms\":",
                                          "\"ttft_con_ms\":"};
// The cells that depend only on the point's verdict, in column order (kResultColumns[2..7]).
constexpr std::string_view kVerdictKeys[] = {"\"f_star_con\":",
                                             "\"f_star_opt\":",
                                             "\"tps_base_con_tok_per_s\":",
                                             "\"tps_base_opt_tok_per_s\":",
                                             "\"tps_base_con_per_gpu_tok_per_s\":",
                                             "\"tps_base_opt_per_gpu_tok_per_s\":"};
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
// A gain exists where the point fits and its baseline serves: else an empty cell, null in JSON.
double gain_cell(bool fits, const ServingPoint& at, const ServingPoint& base) {
    return fits && base.throughput > 0 ? gain(at, base) : kNone;
}
}  // namespace

RowWorker::RowWorker(const SweepSpec& spec, const TypedGrid& grid, int tap_column)
    : spec_(spec),
      grid_(grid),
      f_axis_(axis_of(spec, "f")),
      ov_axis_(axis_of(spec, "ov")),
      csv_(spec.format == SweepFormat::csv),
      idx_(spec.axes.size()),
      tap_column_(tap_column) {
    for (size_t i = 0; i < spec.axes.size(); ++i) {
        if (is_f_or_ov(spec.axes[i])) continue;
        key_axes_.push_back(i);
        key_count_ = key_count_ > kDirectMax ? key_count_ : key_count_ * spec.axes[i].size();
    }
    if (f_axis_ >= 0 || ov_axis_ >= 0) {
        if (key_count_ <= kDirectMax) direct_.resize(key_count_);
    } else {
        scratch_ = std::make_unique<CachedPoint>();
    }
}

void RowWorker::fill(CachedPoint& p) {
    if (scratch_) {
        grid_.update(idx_, work_idx_, work_fresh_, p.scenario);
    } else {
        grid_.update(idx_, work_idx_, work_fresh_, work_);
        p.scenario = work_;
    }
    // Rows without f or ov read only the verdict; the others evaluate the band on the prepared scenario.
    if (!scratch_) p.prepared.emplace(p.scenario);
    // No row shows the parking comparison, and validate_sweep checked every point before the first row.
    VerdictOptions opt;
    opt.parking = false;
    opt.checked = true;
    p.verdict = make_verdict(p.scenario, opt);
    p.prefix.clear();
    p.fstar.clear();
    for (size_t i : key_axes_) {
        const GridAxis& a = spec_.axes[i];
        if (csv_) {
            if (a.text())
                append_csv_text(p.prefix, a.cell(idx_[i]));
            else
                append_number(p.prefix, a.number(idx_[i]));
            p.prefix += ',';
            continue;
        }
        p.prefix.append("\"").append(a.column).append("\":");
        if (a.text())
            p.prefix += nlohmann::json(a.cell(idx_[i])).dump();
        else
            append_json_number(p.prefix, a.number(idx_[i]));
        p.prefix += ',';
    }
    // f* exists only where something fits and serves; the baseline only where it fits.
    const Verdict& v = p.verdict;
    const bool none = v.kind == VerdictKind::does_not_fit || v.kind == VerdictKind::infeasible;
    // Throughput of every replica together (dp of them); per GPU, one replica's over its tp·pp GPUs.
    const double gpus = replica_gpus(p.scenario.hardware), dp = p.scenario.hardware.deployment.dp;
    const double base_con = tps_or_none(v.baseline.conservative), base_opt = tps_or_none(v.baseline.optimistic);
    const double cells[] = {none ? kNone : v.best_conservative.f,
                            none ? kNone : v.best_optimistic.f,
                            base_con * dp,
                            base_opt * dp,
                            base_con / gpus,
                            base_opt / gpus};
    std::copy(std::begin(cells), std::end(cells), p.fstar_numbers.begin());
    for (size_t i = 0; i < std::size(cells); ++i) {
        if (csv_) {
            append_number(p.fstar, cells[i]);
        } else {
            p.fstar.append(kVerdictKeys[i]);
            append_json_number(p.fstar, cells[i]);
        }
        p.fstar += ',';
    }
}

const CachedPoint& RowWorker::point() {
    if (scratch_) {
        fill(*scratch_);
        return *scratch_;
    }
    std::uint64_t key = 0;
    for (size_t i : key_axes_) key = key * spec_.axes[i].size() + idx_[i];
    if (last_ && key == last_key_) return *last_;
    std::unique_ptr<CachedPoint>* slot = nullptr;
    if (!direct_.empty()) {
        slot = &direct_[key];
    } else {
        if (map_.size() >= kMapMax && !map_.count(key)) map_.clear();
        slot = &map_[key];
    }
    if (!*slot) {
        *slot = std::make_unique<CachedPoint>();
        fill(**slot);
    }
    last_ = slot->get();
    last_key_ = key;
    return *last_;
}

std::array<double, 3> RowWorker::ov_cells(const CachedPoint& p, double f, bool fits) const {
    if (ov_axis_ < 0) return {kNone, kNone, kNone};
    const double ov = spec_.axes[static_cast<size_t>(ov_axis_)].number(idx_[static_cast<size_t>(ov_axis_)]);
    const ServingPoint at = evaluate(*p.prepared, f, ov);
    const ServingPoint base = evaluate(*p.prepared, 0.0, ov);  // gain_ov is over f = 0 at the same ov, as gain_con's
    return {ov, fits ? at.throughput : kNone, gain_cell(fits, at, base)};
}

namespace {
// The verdict at the row's f, as `kvroof verdict --f f` judges it (classify with a fixed f); the solved
// verdict's own kind where no f axis fixes it.
VerdictKind kind_at(const Verdict& v, const Band& b, double f, bool f_axis) {
    if (!f_axis || v.kind == VerdictKind::does_not_fit) return v.kind;
    const ServingPoint& base = v.baseline.conservative;
    if (!base.feasible && !b.conservative.feasible && !b.optimistic.feasible) return VerdictKind::infeasible;
    return offload_kind(f > 0, gain(b.conservative, base), f > 0, gain(b.optimistic, v.baseline.optimistic), kGainUncertainty);
}
}  // namespace

void RowWorker::append_row(const CachedPoint& p, std::string& out, Numbers* numbers) {
    if (csv_)
        append_row_as<true>(p, out, numbers);
    else
        append_row_as<false>(p, out, numbers);
}

// The row in one format: its separators and keys are constants, so each is a fixed-size copy.
template <bool Csv>
void RowWorker::append_row_as(const CachedPoint& p, std::string& out, Numbers* numbers) {
    const Verdict& v = p.verdict;
    const double f = f_axis_ >= 0 ? spec_.axes[static_cast<size_t>(f_axis_)].number(idx_[static_cast<size_t>(f_axis_)]) : v.f;
    const Band b = f_axis_ < 0 ? v.at_f : band_row(*p.prepared, f);  // the fields a row shows, equal to band()'s
    const ServingPoint& con = b.conservative;
    const ServingPoint& opt = b.optimistic;
    const std::string_view status = row_status(b);
    const bool fits = status != "does_not_fit";
    const double gpus = replica_gpus(p.scenario.hardware), dp = p.scenario.hardware.deployment.dp;
    const double tps_con = fits ? con.throughput : kNone, tps_opt = fits ? opt.throughput : kNone;
    const double nums[] = {tps_con * dp,
                           tps_opt * dp,
                           tps_con / gpus,
                           tps_opt / gpus,
                           gain_cell(fits, con, v.baseline.conservative),
                           gain_cell(fits, opt, v.baseline.optimistic),
                           fits ? con.batch : kNone,
                           con.feasible ? con.tpot * 1e3 : kNone,  // no step runs where no batch serves
                           fits ? con.ttft * 1e3 : kNone};
    if constexpr (!Csv) out += '{';
    out += p.prefix;
    // The rest of the row has a bounded length: built in a buffer, appended once.
    char buf[1536];
    char* w = buf;
    const auto put = [&w](std::string_view t) {
        std::memcpy(w, t.data(), t.size());
        w += t.size();
    };
    const auto num = [&](double x) {
        if (std::isfinite(x))
            w = write_number6(w, x);
        else if constexpr (!Csv)
            put("null");
    };
    put(Csv ? "" : "\"f\":");
    num(f);
    put(Csv ? "," : ",\"status\":\"");
    put(status);
    put(Csv ? "," : "\",");
    put(p.fstar);
    // On one GPU in all (one replica of one) a per-GPU cell is x / 1 == x: the text of tps_con and tps_opt is
    // copied, not formatted again. (With --dp the totals are x·dp: a replica of one GPU with dp 2 once showed
    // twice its per-GPU throughput.)
    const bool one_gpu = gpus == 1.0 && dp == 1.0;
    std::string_view tps_text[2];
    for (size_t i = 0; i < std::size(nums); ++i) {
        if constexpr (!Csv) put(kJsonKeys[i]);
        char* const start = w;
        if (one_gpu && (i == 2 || i == 3))
            put(tps_text[i - 2]);
        else
            num(nums[i]);
        if (i < 2) tps_text[i] = std::string_view(start, static_cast<size_t>(w - start));
        *w++ = ',';
    }
    put(Csv ? "" : "\"binding_con\":\"");
    put(name(con.headline));
    put(Csv ? "," : "\",\"binding_opt\":\"");
    put(name(opt.headline));
    put(Csv ? "," : "\",\"verdict\":\"");
    put(name(kind_at(v, b, f, f_axis_ >= 0)));
    if constexpr (!Csv) *w++ = '"';
    const std::array<double, 3> ov_nums = ov_axis_ >= 0 ? ov_cells(p, f, fits) : std::array<double, 3>{kNone, kNone, kNone};
    if (ov_axis_ >= 0) {
        constexpr std::string_view keys[] = {",\"ov\":", ",\"tps_ov_tok_per_s\":", ",\"gain_ov\":"};
        for (size_t i = 0; i < 3; ++i) {
            put(Csv ? "," : keys[i]);
            num(ov_nums[i]);
        }
    }
    if (numbers) {  // in kResultColumns order: f, status, the six of fstar, the nine above, three texts; then ov's
        numbers->fill(kNone);
        (*numbers)[0] = f;
        std::copy(p.fstar_numbers.begin(), p.fstar_numbers.end(), numbers->begin() + 2);
        std::copy(std::begin(nums), std::end(nums), numbers->begin() + 8);
        std::copy(ov_nums.begin(), ov_nums.end(), numbers->end() - 3);
    }
    if constexpr (!Csv) *w++ = '}';
    *w++ = '\n';
    out.append(buf, static_cast<size_t>(w - buf));
}

void RowWorker::rows(std::uint64_t begin, std::uint64_t end, std::string& out, std::vector<double>* tap) {
    if (begin >= end) return;
    decompose(spec_, begin, idx_);
    const auto k = static_cast<int>(key_axes_.size());
    Numbers numbers;
    const bool tapped = tap && tap_column_ >= 0;
    for (std::uint64_t p = begin;;) {
        append_row(point(), out, tapped && tap_column_ >= k ? &numbers : nullptr);
        if (tapped) {
            if (tap_column_ < k) {  // an axis's own value (a text axis is never tapped: check_tap_column)
                const size_t a = key_axes_[static_cast<size_t>(tap_column_)];
                tap->push_back(spec_.axes[a].number(idx_[a]));
            } else {
                tap->push_back(numbers[static_cast<size_t>(tap_column_ - k)]);
            }
        }
        if (++p == end) return;
        // The next point's indices: an odometer, the last axis fastest.
        for (size_t i = idx_.size(); i-- > 0;) {
            if (++idx_[i] < spec_.axes[i].size()) break;
            idx_[i] = 0;
        }
    }
}

}  // namespace kvroof::io::sweep_detail
