// SPDX-License-Identifier: MIT
#pragma once
// The simulator's preemption policy (sim_engine.hpp states the model;
// docs/model.md, "Preemption", its source in vLLM's scheduler).

#include <algorithm>
#include <cmath>
#include <string_view>

#include "kvroof/analysis/point_step.hpp"

namespace kvroof {

// What the engine does when a step's new KV does not fit in HBM: `none`, it
// never happens (each call reserves its peak, S + O tokens, when admitted);
// otherwise a call reserves only what it holds, and the newest running call
// is preempted: `recompute` drops its KV and prefills it again, `swap` moves
// its GPU share to CPU DRAM over the link and back when it resumes.
enum class Preempt { none, recompute, swap };

[[nodiscard]] constexpr std::string_view name(Preempt p) noexcept {
    switch (p) {
        case Preempt::none: return "none";
        case Preempt::recompute: return "recompute";
        case Preempt::swap: return "swap";
    }
    return "?";
}

namespace detail {

// The prefill of a recomputed call: `tokens` new tokens from an empty context,
// its demand as point_inputs builds a class's (prefill_demand, chunked HBM).
[[nodiscard]] inline ClassLoad recompute_load(const PreparedScenario& ps, const PolicySpec& pol, double tokens, double chunk) {
    CallClass c;
    c.a_append = tokens;
    ClassLoad l;
    l.A = tokens;
    l.S = tokens;
    l.chunks = std::max(1.0, std::ceil(tokens / chunk));
    l.pre = prefill_demand(ps.mc, ps.sys, pol, c);
    l.pre_hbm_chunked = prefill_hbm_chunked(ps, pol, 0.0, tokens, l.chunks);
    return l;
}

}  // namespace detail
}  // namespace kvroof
