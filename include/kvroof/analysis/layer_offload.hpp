// SPDX-License-Identifier: MIT
#pragma once
// The ceiling of layer-granularity weight offload (seed 002, "CPU offload and
// prefetch: the measured ceiling"). A card holds as many whole layers as its
// budget allows after the tensors every rank keeps (embeddings, output head);
// every other layer is copied over the host link for every decode token.
//
//   layer_rank  = layer_bytes / TP                       (each rank its own link: tensor_parallel.hpp)
//   resident    = min(L, floor((budget − non_layer) / layer_rank))
//   transfer    = offloaded · layer_rank                  bytes per token per rank
//   copy        = transfer / BW,   compute = offloaded · t_layer
//   serial tok/s = 1 / (copy + compute),  perfect-overlap tok/s = 1 / max(copy, compute)
//   max hideable = min(1, compute / copy)
// Only the offloaded layers' time is charged, as in the seed: resident layers
// add time, so these are ceilings. Expert granularity moves only what a token
// needs: the non-expert weights and k of E routed experts per layer.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "kvroof/analysis/tensor_parallel.hpp"
#include "kvroof/physics/model_quantities.hpp"
#include "kvroof/spec/check.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

// Documented ranges of the layer-offload inputs (docs/model.md, "Input ranges").
namespace limits {
inline constexpr double kMinWeightBits = 0.1, kMaxWeightBits = 64;  // bits per weight
inline constexpr double kMinLayerBytes = 1.0;  // one layer, bytes
inline constexpr double kMaxCheckpointBytes = 1e18;  // bytes
inline constexpr double kMaxRows = 1e9;  // tokens per prefill chunk
inline constexpr double kMaxLayerMs = 1e9;  // ms of compute or copy per layer
inline constexpr double kMinCopyMs = 1e-9;  // ms; a measured copy is never free
inline constexpr double kMinTargetTps = 1e-6, kMaxTargetTps = 1e9;  // decode target, tokens/s
}  // namespace limits

struct Checkpoint {
    std::string name;
    int layers = 0;
    Bytes layer_bytes;  // one layer, whole (TP 1)
    Bytes non_layer_bytes;  // held by every rank besides its layers (sharded: all ranks together)
    bool non_layer_sharded = false;  // split over the TP ranks (a model's embedding and head, vocab-parallel)
    Bytes total_bytes;  // as published (a cross-check)
    int experts = 0;  // 0: dense
    int experts_active = 0;
    double routed_fraction = 0;  // share of a layer's bytes that are routed experts

    [[nodiscard]] bool is_moe() const noexcept { return experts > 0; }
    // The non-layer tensors one rank of a TP group holds.
    [[nodiscard]] Bytes non_layer_rank(int tp) const noexcept {
        return non_layer_sharded ? TensorParallel{tp}.shard(non_layer_bytes) : non_layer_bytes;
    }
    // Bytes of one layer that one token actually uses.
    [[nodiscard]] Bytes needed_per_token(int tp) const noexcept {
        const double rank = TensorParallel{tp}.shard(layer_bytes).raw();
        if (!is_moe()) return Bytes(rank);
        return Bytes(rank * ((1.0 - routed_fraction) + routed_fraction * experts_active / experts));
    }
    // move_amplification: bytes a layer moves ÷ bytes its token needs.
    [[nodiscard]] double move_amplification() const noexcept { return layer_bytes.raw() / needed_per_token(1).raw(); }

    // Errors are prefixed with `where` (the flag and file, or the preset).
    void check_validity(std::string_view where) const {
        const std::string at(where);
        const ModelFieldRange& lr = model_field_range("layers");
        const ModelFieldRange& er = model_field_range("experts");
        if (layers < lr.lo || layers > lr.hi)
            throw InputError(at + ": layers must be in [" + std::to_string(lr.lo) + ", " + std::to_string(lr.hi) + "], got " +
                             std::to_string(layers));
        check::positive(at + ": layer bytes", layer_bytes.raw());
        check::in_range(at + ": layer bytes", layer_bytes.raw(), limits::kMinLayerBytes, limits::kMaxCheckpointBytes);
        check::non_negative(at + ": non-layer bytes", non_layer_bytes.raw());
        check::in_range(at + ": non-layer bytes", non_layer_bytes.raw(), 0.0, limits::kMaxCheckpointBytes);
        check::in_range(at + ": total bytes", total_bytes.raw(), 0.0, limits::kMaxCheckpointBytes);
        if (experts < 0 || experts > er.hi)
            throw InputError(at + ": experts must be in [0, " + std::to_string(er.hi) + "], got " + std::to_string(experts));
        if (experts_active < 0 || experts_active > experts)
            throw InputError(at + ": experts_active must be in [0, experts], got " + std::to_string(experts_active));
        if (is_moe()) {
            if (experts_active == 0) throw InputError(at + ": experts_active must be > 0 for an MoE checkpoint");
            check::unit_interval(at + ": routed_fraction", routed_fraction);
        }
    }
    void check_validity() const { check_validity(name); }
};

namespace detail {
// A model's checkpoint from its bytes: in its layers (routed experts `routed` of them) and outside them (the
// embedding and output head: non-layer tensors every card holds, split over the TP ranks as engines split the
// vocabulary).
[[nodiscard]] inline Checkpoint model_checkpoint(const ModelSpec& m, std::string name, double in_layers, double outside,
                                                 double routed) {
    Checkpoint c;
    c.name = std::move(name);
    c.layers = m.layers;
    c.layer_bytes = Bytes(in_layers / m.layers);
    c.total_bytes = Bytes(in_layers);
    c.non_layer_bytes = Bytes(outside);
    c.non_layer_sharded = true;
    if (m.is_moe()) {
        c.experts = m.experts;
        c.experts_active = m.experts_active;
        c.routed_fraction = routed / in_layers;
    }
    return c;
}
}  // namespace detail

// A checkpoint of `m` stored at a flat `bits_per_weight` (scales included), its embedding and head too.
[[nodiscard]] inline Checkpoint checkpoint_from_model(const ModelSpec& m, double bits_per_weight, std::string name) {
    const ParamCounts p = param_counts(m);
    const double outside = p.embedding + p.lm_head, bytes = bits_per_weight / 8.0;
    return detail::model_checkpoint(m, std::move(name), (p.total - outside) * bytes, outside * bytes, p.routed * bytes);
}

// A checkpoint of `m` as verdict stores it at `weights` (weight_bytes_by_group: scales included, and a
// quantised checkpoint's own BF16 parts kept so). `kvroof layers --model M --weight-dtype D` asks this one; it had
// taken D's element size alone (4 bits for int4, mxfp4 and fp4 alike) and no embedding.
[[nodiscard]] inline Checkpoint checkpoint_from_model(const ModelSpec& m, DType weights, std::string name) {
    const ParamCounts p = param_counts(m);
    const WeightBytes wb = weight_bytes_by_group(m, weights);
    const DType outside_dtype = stored_as_checkpoint(m, weights) ? DType::bf16 : weights;
    const double outside = (p.embedding + p.lm_head) * weight_bytes_per_element(outside_dtype);
    return detail::model_checkpoint(m, std::move(name), wb.total - outside, outside, wb.routed);
}

struct LayerHost {
    Bytes card_budget;  // per card
    BytesPerSecond link;  // host->device, per card, sustained
    Seconds compute_per_layer;  // one layer at one row (decode), as given (measured): the same at every TP
    // A measured copy time of one whole layer over one card's link, instead of bytes / link: the link's
    // effective rate, so a rank at TP N copies its 1/N share of a layer in 1/N of it.
    std::optional<Seconds> copy_per_layer;
    // Instead of compute_per_layer, the decode roofline at one row (none given): a layer costs what one token reads of the rank's
    // shard, needed_per_token(tp) (an MoE layer: its k routed experts), at this rate (η_mem × HBM bandwidth).
    std::optional<BytesPerSecond> roofline_read;
};

// One offloaded layer's compute per decode token on one rank of a TP group.
[[nodiscard]] inline Seconds offloaded_layer_compute(const Checkpoint& c, const LayerHost& h, int tp) noexcept {
    return h.roofline_read ? Seconds(c.needed_per_token(tp).raw() / h.roofline_read->raw()) : h.compute_per_layer;
}

struct LayerOffloadRow {
    int tp = 1;
    Bytes layer_rank;
    int resident = 0, offloaded = 0;
    Bytes transfer_per_token;  // per rank
    double copy_s = 0, compute_s = 0;
    double compute_per_layer_s = 0;  // offloaded_layer_compute at this TP
    double serial_tps = 0, overlap_tps = 0;  // 0 offloaded: unbounded by transfer (reported as none)
    double compute_share = 0;  // compute / (copy + compute)
    double max_hideable = 1;  // min(1, compute / copy)
    // Expert granularity, same resident set: only what each token needs moves.
    Bytes expert_transfer_per_token;
    double expert_serial_tps = 0, expert_overlap_tps = 0;
    // The card holds the non-layer tensors (embeddings, output head) and one layer, the one it computes on (resident
    // or copied in); else nothing runs on it, and the figures above are no ceiling of anything (shown as none).
    bool runs_on_card = true;
    bool fits_without_offload() const noexcept { return runs_on_card && offloaded == 0; }
    // Offloaded layers set a transfer ceiling: some layers move and the card runs the rest.
    bool has_ceiling() const noexcept { return runs_on_card && offloaded > 0; }
};

// `forced_offloaded` (>= 0) replaces the budget's choice with a given split.
// Errors name the knob ("tp", "offload-layers").
[[nodiscard]] inline LayerOffloadRow layer_offload(const Checkpoint& c, const LayerHost& h, int tp, int forced_offloaded = -1) {
    const TensorParallel group{tp};
    group.check_validity("tp");
    if (forced_offloaded > c.layers)
        throw InputError("offload-layers: must be <= the checkpoint's " + std::to_string(c.layers) + " layers, got " +
                         std::to_string(forced_offloaded));
    LayerOffloadRow r;
    r.tp = tp;
    r.layer_rank = group.shard(c.layer_bytes);
    const double room = h.card_budget.raw() - c.non_layer_rank(tp).raw();
    const double fit = room <= 0 ? 0.0 : std::floor(room / r.layer_rank.raw() * (1 + 1e-12));
    const int most = static_cast<int>(std::min<double>(c.layers, fit));
    r.runs_on_card = most >= 1;
    if (forced_offloaded >= 0 && !r.runs_on_card)
        throw InputError("offload-layers: at TP" + std::to_string(tp) +
                         " the card cannot hold the non-layer tensors and one layer: no split runs");
    if (forced_offloaded >= 0 && c.layers - forced_offloaded > most)  // a split the card cannot hold is not an answer
        throw InputError("offload-layers: at TP" + std::to_string(tp) + " the card holds " + std::to_string(most) + " of the " +
                         std::to_string(c.layers) + " layers beside the non-layer tensors, so at least " +
                         std::to_string(c.layers - most) + " must be offloaded, got " + std::to_string(forced_offloaded));
    r.resident = forced_offloaded >= 0 ? c.layers - forced_offloaded : most;
    r.offloaded = c.layers - r.resident;
    r.transfer_per_token = r.layer_rank * static_cast<double>(r.offloaded);
    const double copy_scale = h.copy_per_layer ? h.copy_per_layer->raw() / c.layer_bytes.raw() : 1.0 / h.link.raw();
    r.copy_s = r.transfer_per_token.raw() * copy_scale;
    r.compute_per_layer_s = offloaded_layer_compute(c, h, tp).raw();
    r.compute_s = r.offloaded * r.compute_per_layer_s;
    if (r.offloaded > 0) {
        r.serial_tps = 1.0 / (r.copy_s + r.compute_s);
        r.overlap_tps = 1.0 / std::max(r.copy_s, r.compute_s);
        r.compute_share = r.compute_s / (r.copy_s + r.compute_s);
        r.max_hideable = std::min(1.0, r.compute_s / r.copy_s);
        r.expert_transfer_per_token = c.needed_per_token(tp) * static_cast<double>(r.offloaded);
        const double ecopy = r.expert_transfer_per_token.raw() * copy_scale;
        r.expert_serial_tps = 1.0 / (ecopy + r.compute_s);
        r.expert_overlap_tps = 1.0 / std::max(ecopy, r.compute_s);
    }
    return r;
}

// A prefill chunk of `rows` tokens moves the same offloaded layers once and
// spends `compute_per_layer_chunk` on each: tokens/s = rows / time.
struct PrefillChunk {
    int rows = 512;
    double serial_tps = 0, overlap_tps = 0, max_hideable = 1;
};
[[nodiscard]] inline PrefillChunk layer_offload_prefill(const LayerOffloadRow& row, int rows, Seconds compute_per_layer_chunk) {
    PrefillChunk p;
    p.rows = rows;
    const double compute = row.offloaded * compute_per_layer_chunk.raw();
    if (row.offloaded == 0) return p;
    p.serial_tps = rows / (row.copy_s + compute);
    p.overlap_tps = rows / std::max(row.copy_s, compute);
    p.max_hideable = std::min(1.0, compute / row.copy_s);
    return p;
}

// What a decode target allows: the bytes one token may move in 1/target
// seconds, the layers that is, and what must then stay resident.
struct DecodeTarget {
    double target_tps = 0;
    Bytes movable_per_token;
    int max_offloaded = 0;
    Bytes resident_needed;
    bool fits = false;  // resident_needed + non-layer within the card budget
};
[[nodiscard]] inline DecodeTarget decode_target(const Checkpoint& c, const LayerHost& h, int tp, double target_tps) {
    check::positive("target-tps", target_tps);
    const TensorParallel group{tp};
    group.check_validity("tp");
    DecodeTarget d;
    d.target_tps = target_tps;
    const Bytes rank = group.shard(c.layer_bytes);
    // A measured copy time of a whole layer is the link's effective rate, as in layer_offload.
    const double rate = h.copy_per_layer ? c.layer_bytes.raw() / h.copy_per_layer->raw() : h.link.raw();
    d.movable_per_token = Bytes(rate / target_tps);
    // Clamped in double before the conversion: a slow target moves more than every layer.
    d.max_offloaded = static_cast<int>(std::min<double>(c.layers, std::floor(d.movable_per_token.raw() / rank.raw())));
    d.resident_needed = rank * static_cast<double>(c.layers - d.max_offloaded);
    // The card also holds the layer it computes on when every layer moves.
    d.fits = std::max(d.resident_needed.raw(), rank.raw()) + c.non_layer_rank(tp).raw() <= h.card_budget.raw();
    return d;
}

}  // namespace kvroof
