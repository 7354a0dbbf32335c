// SPDX-License-Identifier: MIT
#pragma once
// What an operating point states (point_seen.hpp computes it, operating_point.hpp
// finds it for a load): its rates, latencies, memory and what sets its step.

#include "kvroof/analysis/resource.hpp"

namespace kvroof {

struct OperatingPoint {
    double f = 0, ov = 0;
    bool weights_fit = true;  // the weights fit in HBM
    bool session_fits = true;  // one session at its longest (S + O) fits where its KV lives
    bool fits = true;  // all of the above, and the fluid occupancy fits HBM and DRAM
    bool prefill_bound = false;  // the chunk budget, not the load asked, limits the requests started per step
    bool within_slo_tpot = true;  // ITL (or the bare step, --slo-tpot-bounds step) within --slo-tpot
    bool within_slo_ttft = true;  // TTFT within --slo-ttft
    // request_rate: more than the system serves; shown as full as memory allows (saturate)
    bool saturated = false;
    bool one_wave = false;  // a finite run sent at once runs in one wave (operating_point.hpp, one_wave)
    bool memory_queued = false;  // concurrency: not every request is admitted at once (memory or max_seqs); the rest wait
    double running = 0;  // requests in the engine, decoding or prefilling (not queued, not idle)
    double batch = 0;  // B, sequences decoding (time average)
    double concurrency = 0;  // C, requests in the system (decoding, prefilling, queued, idle)
    double starts_per_step = 0;  // x
    double prefill_tokens_per_step = 0;  // P (chunked), or prefill tokens per decode step (separate)
    double step = 0;  // s, the step with its interleaved prefill (chunked) = ITL; the bare step (separate)
    double step_bare = 0;  // s, the decode-only step a decoding request sees: itself beside the B_o others
    double step_allreduce = 0;  // s, the tensor-parallel all-reduces in `step` (0 at one GPU)
    double step_alltoall = 0;  // s, the expert-parallel all-to-alls in `step` (0 at EP 1)
    double itl = 0;  // s, mean time between a user's tokens after the first
    double ttft = 0;  // s, call-weighted mean
    double queue_wait = 0;  // s, in TTFT: waiting for the chunk budget (concurrency, prefill-bound)
    double e2e = 0;  // s, TTFT + D·ITL, call-weighted mean
    double requests_per_s = 0;
    double throughput = 0;  // output tokens/s, all GPUs (over the run when LoadSpec::requests is finite, finite_run)
    double steady_throughput = 0;  // output tokens/s, all GPUs, in the steady state (throughput without the run's drain)
    double throughput_per_gpu = 0;
    double throughput_per_user = 0;  // 1 / ITL, tokens/s one decoding user sees
    double kv_tokens = 0;  // KV tokens held (fluid occupancy; with window or linear layers, KV bytes held / kv per token)
    double hbm_used = 0, hbm_capacity = 0;  // bytes, weights + GPU share of the KV; capacity minus reserve
    double dram_used = 0, dram_capacity = 0;  // bytes
    Resource binding = Resource::gpu_hbm;  // what sets the step: gpu_compute, gpu_hbm, or the offloaded path's busiest

    // Requests decoding or prefilling (Little's law over a request's time in the engine).
    [[nodiscard]] double in_engine() const noexcept { return requests_per_s * (e2e - queue_wait); }
};

}  // namespace kvroof
