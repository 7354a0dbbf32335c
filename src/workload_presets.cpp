// SPDX-License-Identifier: MIT
// Workload and checkpoint presets: data/workloads.json and data/checkpoints.json entries or files.
#include <fmt/format.h>

#include <cmath>

#include "kvroof/analysis/layer_offload.hpp"
#include "kvroof/io/mix_file.hpp"
#include "kvroof/io/presets.hpp"
#include "presets_json.hpp"

namespace kvroof::io {

using namespace json_read;

double lognormal_mean_from_median_p99(double median, double p99) noexcept {
    const double sigma = lognormal_sigma_from_median_p99(median, p99);
    return median * std::exp(0.5 * sigma * sigma);
}

namespace {
CallClass workload_from_json(std::string_view where, const json& w, std::string name) {
    only_keys(where, w,
              with_meta({"s_cached_tokens", "a_append_tokens", "o_output_tokens", "calls_per_session", "idle_gap_s",
                         "idle_gap_median_s", "idle_gap_p99_s", "share"}));
    CallClass c;
    c.name = std::move(name);
    c.s_cached = number(where, w, "s_cached_tokens");
    c.a_append = number(where, w, "a_append_tokens");
    c.o_output = number(where, w, "o_output_tokens");
    if (w.contains("idle_gap_s")) {
        c.idle_gap = Seconds(number(where, w, "idle_gap_s"));
    } else if (w.contains("idle_gap_median_s")) {
        const double med = number(where, w, "idle_gap_median_s");
        const double p99 = number(where, w, "idle_gap_p99_s");
        if (!(med > 0) || !(p99 >= med))
            throw InputError(fmt::format("{}: idle gap needs 0 < median <= p99, got {} and {}", where, med, p99));
        c.idle_gap = Seconds(lognormal_mean_from_median_p99(med, p99));
        c.idle_gap_sigma = lognormal_sigma_from_median_p99(med, p99);
        // The mean is what the model uses; name the two keys it came from, not a key the file does not have.
        if (!(c.idle_gap.raw() <= limits::kMaxIdleGapS))
            throw InputError(
                fmt::format("{}: idle_gap_median_s {:g} and idle_gap_p99_s {:g} give a mean idle gap over {:g} s "
                            "(a lognormal through them); give a narrower spread or idle_gap_s",
                            where, med, p99, limits::kMaxIdleGapS));
    }
    c.check_validity(where);
    return c;
}
}  // namespace

CallClass load_workload(std::string_view flag, std::string_view name_or_path) {
    return *cached<CallClass>(name_or_path, [&] {
        if (is_path(name_or_path)) {
            const json j = read_json_file(flag, name_or_path);
            const Entry e = single_entry(flag, name_or_path, j, "s_cached_tokens");
            return workload_from_json(fmt::format("{} {}", flag, name_or_path), e.value, e.name);
        }
        return workload_from_json(fmt::format("workloads.{}", name_or_path), find_preset(flag, "workloads", name_or_path),
                                  std::string(name_or_path));
    });
}

Mix load_mix_file(std::string_view flag, std::string_view path) {
    return mix_from_json(fmt::format("{} {}", flag, path), read_json_file(flag, path));
}

Mix mix_from_json(const std::string& file, const json& j) {
    if (!j.is_object() || j.empty())
        throw InputError(fmt::format("{}: expected a {{\"name\": class}} object of one or more classes", file));
    Mix m;
    double total = 0;
    for (const auto& [name, e] : j.items()) {
        const std::string where = fmt::format("{}: {}", file, name);
        if (name.find_first_not_of(" \t") == std::string::npos)
            throw InputError(fmt::format("{}: a class needs a name, got '{}'", file, name));
        if (!e.is_object()) throw InputError(fmt::format("{}: must be an object, got {}", where, found(e)));
        const double share = number(where, e, "share");
        if (!(share > 0 && share <= 1)) throw InputError(fmt::format("{}: 'share' must be in (0, 1], got {}", where, share));
        m.entries.push_back({workload_from_json(where, e, name), share});
        total += share;
    }
    if (std::abs(total - 1.0) > 1e-3)
        throw InputError(fmt::format("{}: the shares must sum to 1 (within 0.001), got {}", file, total));
    for (auto& e : m.entries) e.weight /= total;
    m.check_validity();
    return m;
}

namespace {
Checkpoint checkpoint_from_json(std::string_view where, const json& c, std::string name) {
    only_keys(where, c,
              with_meta({"layers", "layer_GiB", "non_layer_GiB", "total_GiB", "experts", "experts_active", "routed_fraction",
                         "model", "weight_bits"}));
    Checkpoint k;
    k.name = std::move(name);
    k.non_layer_bytes = gibibytes(number_or(where, c, "non_layer_GiB", 0.0));
    k.total_bytes = gibibytes(number_or(where, c, "total_GiB", 0.0));
    if (c.contains("model")) {
        if (c.contains("layer_GiB") || c.contains("layers"))
            throw InputError(fmt::format("{}: give either 'model' + 'weight_bits' or 'layers' + 'layer_GiB', not both", where));
        const ModelSpec m = load_model(fmt::format("{}: model", where), string(where, c, "model"));
        const double bits = number(where, c, "weight_bits");
        check::in_range(fmt::format("{}: weight_bits", where), bits, limits::kMinWeightBits, limits::kMaxWeightBits);
        const Bytes non_layer = k.non_layer_bytes, total = k.total_bytes;
        k = checkpoint_from_model(m, bits, k.name);
        k.non_layer_bytes = non_layer;  // the seed's measured per-rank figure, not the model's embedding and head
        k.non_layer_sharded = false;
        k.total_bytes = total;
    } else {
        k.layers = field(where, c, "layers", "layers");
        k.layer_bytes = gibibytes(number(where, c, "layer_GiB"));
        k.experts = field_or(where, c, "experts", "experts", 0);
        if (k.experts > 0) {
            k.experts_active = field(where, c, "experts_active", "experts_active");
            k.routed_fraction = number(where, c, "routed_fraction");
        }
    }
    k.check_validity(where);
    return k;
}
}  // namespace

Checkpoint load_checkpoint(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        const Entry e = single_entry(flag, name_or_path, j, "layer_GiB");
        return checkpoint_from_json(fmt::format("{} {}", flag, name_or_path), e.value, e.name);
    }
    return checkpoint_from_json(fmt::format("checkpoints.{}", name_or_path), find_preset(flag, "checkpoints", name_or_path),
                                std::string(name_or_path));
}

}  // namespace kvroof::io
