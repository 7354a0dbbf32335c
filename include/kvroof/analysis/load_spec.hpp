// SPDX-License-Identifier: MIT
#pragma once
// The load a benchmark puts on an engine (a fixed batch, closed-loop clients,
// an open-loop request rate, everything at once, or the solved mode), with its
// prefill mode and engine limits: what an operating point is asked at
// (operating_point.hpp; docs/model.md, "Operating points").

#include <algorithm>
#include <limits>
#include <string_view>

#include "kvroof/spec/check.hpp"

namespace kvroof {

enum class PrefillMode { chunked, separate };
enum class LoadMode {
    batch,  // B sequences decoding together
    concurrency,  // C closed-loop clients
    request_rate,  // requests arriving at R per second (open loop, below saturation)
    saturate,  // every request submitted at once: as many running as fit in memory and the chunk budget starts
    best,  // the solved mode: the most clients whose point fits and meets the SLOs (the best batch)
};

[[nodiscard]] constexpr std::string_view name(PrefillMode m) noexcept {
    return m == PrefillMode::chunked ? "chunked" : "separate";
}
[[nodiscard]] constexpr std::string_view name(LoadMode m) noexcept {
    switch (m) {
        case LoadMode::batch: return "batch";
        case LoadMode::concurrency: return "concurrency";
        case LoadMode::request_rate: return "request_rate";
        case LoadMode::saturate: return "saturate";
        case LoadMode::best: return "best";
    }
    return "?";
}

namespace limits {
inline constexpr double kMaxLoad = 1e9;  // sequences or clients
inline constexpr double kMinChunk = 1, kMaxChunk = 1e9;  // prefill tokens per step
}  // namespace limits

struct LoadSpec {
    LoadMode mode = LoadMode::concurrency;
    double value = 1;  // B sequences (batch), C clients (concurrency), R requests/s (request_rate); unused (saturate)
    PrefillMode prefill = PrefillMode::chunked;
    double chunk = 2048;  // prefill tokens per step at most (chunked)
    // Most requests the engine runs at once, decoding or prefilling (vLLM's
    // max_num_seqs, TensorRT-LLM's max_batch_size); more wait in its queue.
    double max_seqs = std::numeric_limits<double>::infinity();
    // Requests in the benchmark's run (vLLM's --num-prompts); unbounded: the
    // steady state. Open loop: the throughput over the run counts the drain of
    // the last ones (finite_run, operating_point.hpp). Clients, and every
    // request at once: no more than this many run at once.
    double requests = std::numeric_limits<double>::infinity();
    // Set by the solvers, not asked: how far a closed loop's request shares the
    // starts of every client rather than the C − 1 others' (seen_sharing). 0:
    // the others'; 1: the chunk budget binds and the requests beyond it queue,
    // so every step carries another request's chunk; between: the budget binds
    // with no request queued, at the share that holds exactly the C clients.
    double backlog = 0;

    void check_validity() const {
        if (mode != LoadMode::saturate && mode != LoadMode::best) {
            check::above_up_to(name(mode), value, 0.0, limits::kMaxLoad);
        }
        check::in_range("prefill-chunk", chunk, limits::kMinChunk, limits::kMaxChunk);
        if (max_seqs != std::numeric_limits<double>::infinity()) check::in_range("max-seqs", max_seqs, 1.0, limits::kMaxLoad);
        if (requests != std::numeric_limits<double>::infinity()) check::in_range("requests", requests, 1.0, limits::kMaxLoad);
    }
    // The most requests that run at once: the engine's cap, and the run's size.
    [[nodiscard]] double running_cap() const noexcept { return std::min(max_seqs, requests); }
};

}  // namespace kvroof
