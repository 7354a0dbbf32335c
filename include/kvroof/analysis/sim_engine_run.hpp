// SPDX-License-Identifier: MIT
#pragma once
// SimEngine's event loop (sim_engine.hpp states the model): arrivals, admission,
// reloads and steps, until the last call has left.

#include <cmath>
#include <stdexcept>

#include "kvroof/analysis/sim_engine.hpp"

namespace kvroof::detail {

inline void SimEngine::run(double first_cycle) {
    warmup_calls_ = static_cast<std::uint64_t>(std::floor(spec_.warmup * spec_.calls));
    if (warmup_calls_ == 0) start_window();
    const auto total = static_cast<std::uint64_t>(spec_.calls);
    if (spec_.load.mode == LoadMode::concurrency) {
        const auto clients = static_cast<std::size_t>(spec_.load.value);
        holds_.assign(clients, Hold{});
        saved_.assign(clients, LinkPair::kNone);
        // Clients start spread over one cycle of the closed form, near its steady state.
        for (std::size_t k = 0; k < clients && scheduled_ < total; ++k) {
            const double u =
                spec_.gaps == GapDist::deterministic ? static_cast<double>(k) / static_cast<double>(clients) : rng_.uniform();
            schedule(first_cycle * u, static_cast<std::int32_t>(k));
        }
    } else {
        schedule(rng_.gap(1.0 / spec_.load.value, spec_.gaps), -1);
    }
    while (true) {
        while (!arrivals_.empty() && arrivals_.top().time <= now) {
            const Arrival a = arrivals_.top();
            arrivals_.pop();
            arrive(a);
        }
        admit();
        loaded();
        if (active() > 0 && (spec_.preempt == Preempt::none || make_room())) {
            step();
            continue;
        }
        if (arrivals_.empty() && loading_.empty()) {
            if (active() > 0) throw std::logic_error("sim: a running call cannot grow and nothing will free HBM");
            if (!queue_.empty()) throw std::logic_error("sim: a queued call can never be admitted");
            break;
        }
        const double loaded_at = loading_.empty() ? 0.0 : link.end_of(LinkPair::h2d, loading_.front().first);
        const double t = loading_.empty()    ? arrivals_.top().time
                         : arrivals_.empty() ? loaded_at
                                             : std::min(arrivals_.top().time, loaded_at);
        if (!(t > now)) throw std::logic_error("sim: the link's next end is not ahead of the engine");
        account(t - now);
        now = t;
    }
    if (measuring_) tally.t_end = now;
    link.drain(timeline);  // the last saves: their waits and busy time count, as queued
}

}  // namespace kvroof::detail
