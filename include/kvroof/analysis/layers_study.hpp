// SPDX-License-Identifier: MIT
#pragma once
// `kvroof layers` as one computation: the layer-offload row of every
// checkpoint at every TP degree, the prefill-chunk case and the decode-target
// check where asked for, and the best offloaded ceiling. The caller resolves
// presets into the setup; this header only computes. TP splits each layer
// over the ranks, each with its own link (tensor_parallel.hpp).

#include <optional>
#include <string>
#include <vector>

#include "kvroof/analysis/layer_offload.hpp"
#include "kvroof/spec/scenario.hpp"

namespace kvroof {

struct LayersSetup {
    std::vector<Checkpoint> checkpoints;
    std::vector<int> tp;  // TP degrees, each checkpoint at each
    std::string hardware, link_name;  // for the record
    LayerHost host;
    // host.compute_per_layer as given (--compute-ms, or the seed's measured 1.18), ms; none: the decode roofline
    // per checkpoint and TP (host.roofline_read).
    std::optional<double> compute_ms;
    std::optional<int> offload_layers;  // replaces the budget's choice
    int rows = 512;  // tokens per prefill chunk
    std::optional<double> prefill_compute_ms;  // per layer per chunk, as given; adds the prefill case
    std::optional<double> target_tps;  // adds the decode-target check
};

struct LayersCell {
    size_t checkpoint = 0;  // index into setup.checkpoints
    LayerOffloadRow row;
    std::optional<PrefillChunk> prefill;  // with a prefill compute time and at least one layer offloaded
};

struct TargetCell {
    size_t checkpoint = 0;
    int tp = 1;
    DecodeTarget target;
};

struct LayersStudy {
    LayersSetup setup;
    std::vector<LayersCell> cells;  // checkpoint-major, then TP in the given order
    std::vector<TargetCell> targets;
    std::optional<size_t> best;  // the cell with the highest perfect-overlap ceiling among offloading ones
};

// The default compute per offloaded layer per decode token: the decode
// roofline at one sequence, the bytes a token reads of the layer's rank shard
// (offloaded_layer_compute) from HBM at η_mem. It once read one whole layer at
// every TP: DeepSeek-V3 on 8 H100s charged 3.85 ms per layer for 26 µs, and
// its expert-granular ceiling read 65 tok/s, compute-bound, for 194.
[[nodiscard]] inline BytesPerSecond layer_roofline_read(const HardwareSpec& hw) noexcept {
    return BytesPerSecond(hw.gpu.eta_mem * hw.gpu.hbm_bandwidth.raw());
}

// The layer-offload question of a scenario, as `kvroof layers --model M` asks
// it at the same figures: the model as a checkpoint at the scenario's weight
// precision (its bits per weight), the --gpus group as the TP degree, the
// GPU's HBM as the card budget, its own link (c2c-bw, per GPU), and the
// default compute per offloaded layer.
struct LayersQuestion {
    Checkpoint checkpoint;
    LayerHost host;
    int tp = 1;
};
[[nodiscard]] inline LayersQuestion layers_question(const Scenario& s) {
    LayersQuestion q;
    q.checkpoint = checkpoint_from_model(s.model, s.policy.weight_dtype, s.model.name);
    q.host.card_budget = s.hardware.gpu.hbm_capacity;
    q.host.link = s.hardware.link.bandwidth;
    q.host.roofline_read = layer_roofline_read(s.hardware);
    q.tp = s.hardware.deployment.gpus;
    return q;
}

// Errors name the knob ("tp", "offload-layers", "target-tps").
[[nodiscard]] inline LayersStudy layers_study(const LayersSetup& setup) {
    LayersStudy st;
    st.setup = setup;
    const int forced = setup.offload_layers.value_or(-1);
    double best_tps = 0;
    for (size_t c = 0; c < setup.checkpoints.size(); ++c) {
        for (int tp : setup.tp) {
            LayersCell cell{c, layer_offload(setup.checkpoints[c], setup.host, tp, forced), std::nullopt};
            const bool any = cell.row.has_ceiling();
            if (setup.prefill_compute_ms && any)
                cell.prefill = layer_offload_prefill(cell.row, setup.rows, milliseconds(*setup.prefill_compute_ms));
            if (any && cell.row.overlap_tps > best_tps) {
                best_tps = cell.row.overlap_tps;
                st.best = st.cells.size();
            }
            st.cells.push_back(cell);
        }
    }
    if (setup.target_tps)
        for (size_t c = 0; c < setup.checkpoints.size(); ++c)
            for (int tp : setup.tp)
                st.targets.push_back({c, tp, decode_target(setup.checkpoints[c], setup.host, tp, *setup.target_tps)});
    return st;
}

}  // namespace kvroof
