// SPDX-License-Identifier: MIT
#pragma once
// The physical roofline ceiling of serving throughput: an unbounded batch
// amortises the weight read to nothing, so each call costs only its own GPU
// FLOP and its own KV traffic (no offload, f = 0). No capacity or SLO limits
// it; every real configuration lies below.

#include <algorithm>

#include "kvroof/analysis/serving.hpp"

namespace kvroof {

struct Ceiling {
    double throughput = 0;  // output tokens/s
    Resource binding = Resource::gpu_compute;
    double gpu_compute_s = 0, gpu_hbm_s = 0;  // per call, p-weighted
};

[[nodiscard]] inline Ceiling throughput_ceiling(const PreparedScenario& ps) {
    const Scenario& sc = *ps.scenario;
    PolicySpec pol = sc.policy;
    pol.f = 0;
    Ceiling c;
    double sum_p_o = 0;
    for (const auto& e : sc.mix.entries) {
        const DecodeDemand d = decode_demand(ps.mc, ps.sys, pol, e.cls.context());
        const PrefillDemand q = prefill_demand(ps.mc, ps.sys, pol, e.cls);
        // Prefill keeps its weight read: it is one pass per call, not amortised over a batch.
        c.gpu_compute_s += e.weight * (q.gpu_compute + e.cls.o_output * d.gpu_compute);
        c.gpu_hbm_s += e.weight * (q.gpu_hbm + e.cls.o_output * d.gpu_hbm);
        sum_p_o += e.weight * e.cls.o_output;
    }
    c.binding = c.gpu_compute_s >= c.gpu_hbm_s ? Resource::gpu_compute : Resource::gpu_hbm;
    c.throughput = sum_p_o / std::max(c.gpu_compute_s, c.gpu_hbm_s);
    return c;
}

}  // namespace kvroof
