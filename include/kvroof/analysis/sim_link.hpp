// SPDX-License-Identifier: MIT
#pragma once
// The simulator's link, one FIFO server per direction, and its timeline of
// HBM and link use in fixed windows (sim_engine.hpp says who queues what).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kvroof/analysis/sim_stats.hpp"

namespace kvroof {

// HBM used / capacity and each link direction's busy share over fixed time windows.
struct SimTimeline {
    enum Series : std::size_t { hbm = 0, h2d = 1, d2h = 2 };
    static constexpr std::size_t kMaxBins = 256;
    double width = 1e-3;  // s per window; doubles (pairs merged) when a run outgrows kMaxBins windows
    std::vector<std::array<double, 3>> bins;  // ∫ value dt per window: HBM bytes·s, busy s, busy s

    // Adds ∫ value dt over [t0, t1) to `series`, split across the windows it spans.
    void add(Series series, double t0, double t1, double value) {
        if (!(t1 > t0) || value == 0) return;
        if (t0 >= last_lo_ && t1 <= last_hi_) {  // the common case: inside the window the last add ended in
            bins[last_][series] += value * (t1 - t0);
            return;
        }
        while (t1 > width * static_cast<double>(kMaxBins)) merge();
        auto b = static_cast<std::size_t>(std::floor(t0 / width));
        const auto last = std::min(kMaxBins - 1, static_cast<std::size_t>(std::floor(t1 / width)));
        for (; b <= last; ++b) {
            const double lo = std::max(t0, static_cast<double>(b) * width);
            const double hi = std::min(t1, static_cast<double>(b + 1) * width);
            if (!(hi > lo)) continue;  // t1 on a window's edge: nothing in the next
            if (bins.size() <= b) bins.resize(b + 1, {0.0, 0.0, 0.0});
            bins[b][series] += value * (hi - lo);
            last_ = b, last_lo_ = static_cast<double>(b) * width, last_hi_ = static_cast<double>(b + 1) * width;
        }
    }

private:
    void merge() {
        for (std::size_t i = 0; i < bins.size(); i += 2)
            for (std::size_t k = 0; k < 3; ++k) bins[i / 2][k] = bins[i][k] + (i + 1 < bins.size() ? bins[i + 1][k] : 0.0);
        bins.resize((bins.size() + 1) / 2);
        width *= 2;
        last_hi_ = -1;  // no window cached
    }

    std::size_t last_ = 0;  // the window the last add ended in, and its edges (s)
    double last_lo_ = 0, last_hi_ = -1;
};

// One direction of the link: transfers served one at a time in the order
// they were queued, each taking its seconds at the link's per-direction rate
// (the same seconds point_step.hpp and call_demand.hpp charge).
class LinkServer {
public:
    explicit LinkServer(SimTimeline::Series series) : series_(series) {}

    // Queues at `at` a transfer of `seconds` that cannot start before `after`
    // (its data is not there yet); returns when it ends. `measure`: its wait
    // (from `at`) and busy time count in the window's statistics; `call`: a
    // call's own transfer (a reload or a save), whose wait is sampled.
    double submit(double at, double seconds, SimTimeline& timeline, bool measure, bool call, double after = 0) {
        const double start = std::max({at, after, free_at_});
        free_at_ = start + seconds;
        timeline.add(series_, start, free_at_, 1.0);
        if (measure) {
            busy += seconds;
            if (call) {
                wait.add(start - at, 1.0);
                wait_sum += start - at;
                transfers += 1;
            }
        }
        return free_at_;
    }

    [[nodiscard]] double free_at() const noexcept { return free_at_; }

    double busy = 0;  // s of transfers queued in the window
    double transfers = 0, wait_sum = 0;  // the calls' transfers queued in the window; Σ their waits (s)
    LogHistogram wait;  // s from ready to start, the calls' transfers

private:
    SimTimeline::Series series_;
    double free_at_ = 0;  // s, when the last transfer queued ends
};

}  // namespace kvroof
