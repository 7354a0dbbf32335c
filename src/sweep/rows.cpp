// SPDX-License-Identifier: MIT
// One sweep row: the verdict of its point (kept per worker) and the band at its f.
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "sweep_rows.hpp"

namespace kvroof::io::sweep_detail {
namespace {
// "\"tps_con_tok_per_s\":" and so on: the JSON keys of kResultColumns[3..9].
constexpr std::string_view kJsonKeys[] = {"\"tps_con_tok_per_s\":", "\"tps_opt_tok_per_s\":", "\"gain_con\":",   "\"gain_opt\":",
                                          "\"batch_con_seq\":",     "\"tpot_con_ms\":",       "\"ttft_con_ms\":"};
}  // namespace

RowWorker::RowWorker(const SweepSpec& spec, const TypedGrid& grid)
    : spec_(spec),
      grid_(grid),
      f_axis_(axis_of(spec, "f")),
      ov_axis_(axis_of(spec, "ov")),
      csv_(spec.format == SweepFormat::csv),
      idx_(spec.axes.size()) {
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
    p.verdict = make_verdict(p.scenario);
    p.prefix.clear();
    p.fstar.clear();
    for (size_t i : key_axes_) {
        const GridAxis& a = spec_.axes[i];
        if (csv_) {
            if (a.text())
                append_csv_text(p.prefix, a.values[idx_[i]]);
            else
                append_number(p.prefix, a.number(idx_[i]));
            p.prefix += ',';
            continue;
        }
        p.prefix.append("\"").append(a.column).append("\":");
        if (a.text())
            p.prefix += nlohmann::json(a.values[idx_[i]]).dump();
        else
            append_json_number(p.prefix, a.number(idx_[i]));
        p.prefix += ',';
    }
    const double f_con = p.verdict.best_conservative.f, f_opt = p.verdict.best_optimistic.f;
    if (csv_) {
        append_number(p.fstar, f_con);
        p.fstar += ',';
        append_number(p.fstar, f_opt);
        p.fstar += ',';
    } else {
        p.fstar += "\"f_star_con\":";
        append_json_number(p.fstar, f_con);
        p.fstar += ",\"f_star_opt\":";
        append_json_number(p.fstar, f_opt);
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

void RowWorker::append_row(const CachedPoint& p, std::string& out) {
    const Verdict& v = p.verdict;
    const double f = f_axis_ >= 0 ? spec_.axes[static_cast<size_t>(f_axis_)].number(idx_[static_cast<size_t>(f_axis_)]) : v.f;
    const Band b = f_axis_ < 0 ? v.at_f : band_row(*p.prepared, f);  // the fields a row shows, equal to band()'s
    const ServingPoint& con = b.conservative;
    const ServingPoint& opt = b.optimistic;
    // A gain over a baseline that serves nothing is undefined: an empty cell, null in JSON.
    const auto gain_or_none = [](const ServingPoint& at, const ServingPoint& base) {
        return base.throughput > 0 ? gain(at, base) : std::numeric_limits<double>::quiet_NaN();
    };
    const double nums[] = {con.throughput,
                           opt.throughput,
                           gain_or_none(con, v.baseline.conservative),
                           gain_or_none(opt, v.baseline.optimistic),
                           con.batch,
                           con.tpot * 1e3,
                           con.ttft * 1e3};
    if (!csv_) out += '{';
    out += p.prefix;
    // The rest of the row has a bounded length: built in a buffer, appended once.
    char buf[1024];
    char* w = buf;
    const auto put = [&w](std::string_view t) {
        std::memcpy(w, t.data(), t.size());
        w += t.size();
    };
    const auto num = [&](double x) {
        if (std::isfinite(x))
            w = write_number6(w, x);
        else if (!csv_)
            put("null");
    };
    if (csv_) {
        num(f);
        *w++ = ',';
        put(p.fstar);
        for (double x : nums) {
            num(x);
            *w++ = ',';
        }
        put(name(con.headline));
        *w++ = ',';
        put(name(opt.headline));
        *w++ = ',';
        put(name(v.kind));
    } else {
        put("\"f\":");
        num(f);
        *w++ = ',';
        put(p.fstar);
        for (size_t i = 0; i < 7; ++i) {
            put(kJsonKeys[i]);
            num(nums[i]);
            *w++ = ',';
        }
        put("\"binding_con\":\"");
        put(name(con.headline));
        put("\",\"binding_opt\":\"");
        put(name(opt.headline));
        put("\",\"verdict\":\"");
        put(name(v.kind));
        *w++ = '"';
    }
    if (ov_axis_ >= 0) {
        const double ov = spec_.axes[static_cast<size_t>(ov_axis_)].number(idx_[static_cast<size_t>(ov_axis_)]);
        const ServingPoint at = evaluate(*p.prepared, f, ov);
        const double ov_nums[] = {ov, at.throughput, gain_or_none(at, v.baseline.conservative)};
        constexpr std::string_view keys[] = {",\"ov\":", ",\"tps_ov_tok_per_s\":", ",\"gain_ov\":"};
        for (size_t i = 0; i < 3; ++i) {
            if (csv_)
                *w++ = ',';
            else
                put(keys[i]);
            num(ov_nums[i]);
        }
    }
    if (!csv_) *w++ = '}';
    *w++ = '\n';
    out.append(buf, static_cast<size_t>(w - buf));
}

void RowWorker::rows(std::uint64_t begin, std::uint64_t end, std::string& out) {
    if (begin >= end) return;
    decompose(spec_, begin, idx_);
    for (std::uint64_t p = begin;;) {
        append_row(point(), out);
        if (++p == end) return;
        // The next point's indices: an odometer, the last axis fastest.
        for (size_t i = idx_.size(); i-- > 0;) {
            if (++idx_[i] < spec_.axes[i].size()) break;
            idx_[i] = 0;
        }
    }
}

}  // namespace kvroof::io::sweep_detail
