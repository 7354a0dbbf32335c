// SPDX-License-Identifier: MIT
#pragma once
// The simulator's link, one FIFO server per direction, and its timeline of
// HBM and link use in fixed windows (sim_engine.hpp says who queues what).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
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

// The link: one FIFO queue per direction on one shared link. A direction
// alone runs at the full per-direction rate (the seconds point_step.hpp and
// call_demand.hpp charge); while both carry a transfer they share the
// bidirectional cap of link_time (spec/hardware.hpp): 2·bidir of one
// direction's rate in all, each at most the full rate, split in proportion
// to what each head transfer has left, so two transfers queued together end
// when link_time says and two with as much left run at bidir each. The rates
// stay fixed until a head transfer ends, so the link moves from one end to
// the next. A transfer may wait for one on the other direction (a reload for
// its session's save). Ends are not fixed when a transfer is queued (one
// queued later on the other direction slows it): end_of projects one, as if
// nothing more were queued; advance moves the link to a time.
class LinkPair {
public:
    enum Dir : std::size_t { h2d = 0, d2h = 1 };
    static constexpr std::int64_t kNone = -1;

    struct Use {  // one direction's statistics over the window
        double busy = 0;  // s the direction carried transfers queued in the window (at whatever rate)
        double transfers = 0, wait_sum = 0;  // the calls' transfers queued in the window; Σ their waits (s)
        LogHistogram wait;  // s from queued to started, the calls' transfers
    };

    explicit LinkPair(double bidir) : cap_(2.0 * std::min(1.0, bidir)) {}

    // Queues on `d` at `at` (no earlier than the link's time) a transfer of
    // `seconds` at the full rate that starts no earlier than transfer `after`
    // of the other direction has ended; returns its number on `d`. `measure`:
    // counted in the window; `call`: a call's own (a reload or a save), whose wait is sampled.
    std::int64_t submit(Dir d, double at, double seconds, SimTimeline& tl, bool measure, bool call, std::int64_t after = kNone) {
        advance(at, tl);
        q_[d].push_back(Transfer{seconds, at, after, measure, call, false});
        return queued_[d]++;
    }

    // Moves the link to time t (no earlier than its time), adding each direction's busy time to the timeline.
    void advance(double t, SimTimeline& tl) {
        // In no time nothing moves but a head transfer with nothing left; a head
        // that becomes active is started at the link's time by the next move,
        // which is this same time: skipping the call changes nothing.
        if (t <= now_ && !head_done(q_[h2d]) && !head_done(q_[d2h])) return;
        while (move(q_, ended_, now_, t, &tl)) {
        }
    }

    // When transfer `n` of `d` ends if nothing more is queued (the link's time when it has).
    [[nodiscard]] double end_of(Dir d, std::int64_t n) {
        for (std::size_t k = 0; k < 2; ++k) scratch_[k].copy(q_[k]);
        std::array<std::int64_t, 2> ended = ended_;
        double t = now_;
        while (ended[d] <= n && move(scratch_, ended, t, std::numeric_limits<double>::infinity(), nullptr)) {
        }
        return t;
    }
    // Moves the link to when every transfer queued has ended.
    void drain(SimTimeline& tl) { advance(std::max(end_of(h2d, queued_[h2d] - 1), end_of(d2h, queued_[d2h] - 1)), tl); }
    [[nodiscard]] double time() const noexcept { return now_; }
    [[nodiscard]] std::int64_t ended(Dir d) const noexcept { return ended_[d]; }
    [[nodiscard]] bool busy() const noexcept { return !q_[h2d].empty() || !q_[d2h].empty(); }

    std::array<Use, 2> use;

private:
    struct Transfer {
        double left;  // s at the full rate
        double at;  // queued
        std::int64_t after;  // the transfer of the other direction it waits for (kNone: none)
        bool measure, call, started;
    };
    // A FIFO in a vector: pops move `head`; a push compacts it once half is
    // popped, so the memory is that of the longest queue, reused.
    struct Fifo {
        std::vector<Transfer> v;
        std::size_t head = 0;
        [[nodiscard]] bool empty() const noexcept { return head == v.size(); }
        [[nodiscard]] Transfer& front() noexcept { return v[head]; }
        void pop_front() noexcept { ++head; }
        void push_back(const Transfer& t) {
            if (head > 0 && 2 * head >= v.size()) {
                v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(head));
                head = 0;
            }
            v.push_back(t);
        }
        void copy(const Fifo& o) {
            v.assign(o.v.begin() + static_cast<std::ptrdiff_t>(o.head), o.v.end());
            head = 0;
        }
    };
    using Queues = std::array<Fifo, 2>;
    [[nodiscard]] static bool head_done(const Fifo& f) noexcept { return !f.empty() && f.v[f.head].left <= 0; }

    // Moves queues `q` at time `t` towards `until`: to the next end, or to
    // `until` when no transfer ends before it. False when nothing moved.
    bool move(Queues& q, std::array<std::int64_t, 2>& ended, double& t, double until, SimTimeline* tl) {
        std::array<bool, 2> on{};
        for (std::size_t k = 0; k < 2; ++k) {
            on[k] = !q[k].empty() && (q[k].front().after == kNone || ended[1 - k] > q[k].front().after);
            if (on[k] && tl && !q[k].front().started) start(k, q[k].front(), t);
        }
        if (!on[0] && !on[1]) {
            t = std::max(t, until == std::numeric_limits<double>::infinity() ? t : until);
            return false;
        }
        std::array<double, 2> rate{on[0] ? 1.0 : 0.0, on[1] ? 1.0 : 0.0};
        if (on[0] && on[1]) {
            const double x = q[0].front().left, y = q[1].front().left;
            const std::size_t big = x >= y ? 0 : 1;  // the larger share, capped at the full rate
            rate[big] = std::min(1.0, cap_ * q[big].front().left / (x + y));
            rate[1 - big] = std::min(1.0, cap_ - rate[big]);
        }
        double dt = std::numeric_limits<double>::infinity();
        for (std::size_t k = 0; k < 2; ++k)
            if (on[k] && rate[k] > 0) dt = std::min(dt, q[k].front().left / rate[k]);
        const bool ends = t + dt <= until;
        const double step = ends ? dt : until - t;
        for (std::size_t k = 0; k < 2; ++k) {
            if (!on[k]) continue;
            Transfer& f = q[k].front();
            if (tl) tl->add(k == h2d ? SimTimeline::h2d : SimTimeline::d2h, t, t + step, 1.0);
            if (tl && f.measure) use[k].busy += step;
            f.left = ends && f.left / rate[k] <= dt * (1.0 + 1e-12) ? 0.0 : f.left - step * rate[k];
        }
        t = ends ? t + dt : until;
        for (std::size_t k = 0; k < 2; ++k)
            if (on[k] && q[k].front().left == 0) q[k].pop_front(), ++ended[k];
        return ends;
    }

    void start(std::size_t k, Transfer& f, double t) {
        f.started = true;
        if (!f.measure || !f.call) return;
        use[k].wait.add(t - f.at, 1.0);
        use[k].wait_sum += t - f.at;
        use[k].transfers += 1;
    }

    double cap_;  // the two directions' rates at most, in one direction's
    double now_ = 0;  // s, the link's time
    Queues q_;
    std::array<std::int64_t, 2> queued_{}, ended_{};
    Queues scratch_;  // end_of's copy of the queues
};

}  // namespace kvroof
