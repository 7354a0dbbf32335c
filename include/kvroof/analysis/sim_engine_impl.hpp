// SPDX-License-Identifier: MIT
#pragma once
// SimEngine's members (sim_engine.hpp states the model).

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kvroof/analysis/sim_engine.hpp"
#include "kvroof/spec/check.hpp"

namespace kvroof::detail {

inline SimEngine::SimEngine(const PreparedScenario& ps, const SimSpec& spec)
    : link(ps.sys.link_bidir), ps_(ps), spec_(spec), in_(point_inputs(ps, spec.f_gpu(), spec.load)), rng_(spec.seed) {
    const Scenario& sc = *ps.scenario;
    PolicySpec pol = sc.policy;
    pol.f = spec.f_gpu();
    pol.ov = 0;
    pol.idle = ps.idle;
    // A step's decode demand is n·d0 + Σ context·d1 (sim_split.hpp).
    lines_ = decode_lines(ps, pol);
    for (; thresholds_ < lines_.knots; ++thresholds_)
        threshold_[thresholds_] = static_cast<std::int64_t>(lines_.knot[thresholds_]);
    if (ps.mc.layout.window_share > 0)
        hold_threshold_ = thresholds_, threshold_[thresholds_++] = static_cast<std::int64_t>(ps.mc.layout.window) + 1;
    if (spec.f_policy == FPolicy::dynamic) split_ = split_lines(ps, pol, spec.f);
    lin_ = ps.mc.linear_per_token.raw() / ps.sys.gpu_flops.raw();
    free_hbm_ = ps.hbm_free_bytes();
    hbm_cap_ = ps.sys.hbm_capacity.raw();
    dram_cap_ = ps.sys.cpu_memory.raw();
    weights_ = ps.mc.weights.raw();
    kv_gpu_ = (1.0 - spec.f_gpu()) * ps.mc.kv_gpu_per_token.raw();
    // A pipeline's stages each move their own layers' KV over their own link: the busiest
    // stage carries ι/pp of a transfer (pipeline.hpp), so the queue runs that much faster.
    const double share = offload_share_ = ps.pipe.offload_share;
    link_bw_ = ps.sys.link_bandwidth.raw() / share;
    const double kv = ps.mc.kv_per_token.raw();
    PolicySpec hold = pol, copy = pol;
    hold.idle = IdlePolicy::hold;
    recompute_pol_ = hold;
    copy.f = spec.f, copy.r = 1.0;  // prefill_demand's D2H at f, none of it attended on the CPU: the KV written to DRAM
    double cum = 0;
    for (std::size_t i = 0; i < sc.mix.entries.size(); ++i) {
        const MixEntry& e = sc.mix.entries[i];
        // A simulated call makes whole tokens, at least one: a mean below that is the closed form's (a fluid) alone.
        if (e.cls.o_output < 1)
            throw InputError("workload: class '" + e.cls.name + "': the simulator needs o_output >= 1 token, got " +
                             check::show(e.cls.o_output));
        SimClass c;
        c.s_cached = std::llround(e.cls.s_cached);
        c.a_append = std::llround(e.cls.a_append);
        c.o_output = std::max<std::int64_t>(1, std::llround(e.cls.o_output));
        c.context = c.s_cached + c.a_append;
        c.idle = e.cls.idle_gap.raw();
        c.idle_sigma = e.cls.idle_gap_sigma.value_or(-1.0);
        cum += e.weight;
        c.cum_p = cum;
        const double peak = held_at(static_cast<double>(c.context + c.o_output));
        c.hbm = kv_gpu_ * peak;
        c.dram = spec.f * kv * peak;
        c.dram_parked = kv * peak;
        if (spec.f_policy == FPolicy::dynamic) c.copy = share * prefill_demand(ps.mc, ps.sys, copy, e.cls).link_d2h;
        if (ps.idle == IdlePolicy::park) {  // the park transfers leave the step for the link's queues
            PrefillDemand& pre = in_.cls[i].pre;
            const double unparked = prefill_demand(ps.mc, ps.sys, hold, e.cls).link_h2d;
            c.reload = share * (pre.link_h2d - unparked);
            c.save = share * pre.link_park_save;
            pre.link_h2d = unparked;
            pre.link_park_save = 0;
        }
        cls_.push_back(c);
    }
    cls_.back().cum_p = 2.0;  // every draw lands in some class, whatever the rounding of Σ p
}

inline std::uint32_t SimEngine::draw_class() {
    if (cls_.size() == 1) return 0;
    const double u = rng_.uniform();
    std::uint32_t i = 0;
    while (cls_[i].cum_p <= u) ++i;
    return i;
}

inline void SimEngine::schedule(double time, std::int32_t client) {
    ++scheduled_;
    arrivals_.push(Arrival{time, arrival_order_++, client});
}

inline void SimEngine::arrive(const Arrival& a) {
    ++events;
    if (a.client >= 0) {  // the session's idle KV is released: its call reserves its own
        auto& hold = holds_[static_cast<std::size_t>(a.client)];
        reserved_hbm_ -= hold.hbm;
        idle_hbm_ -= hold.hbm;
        reserved_dram_ -= hold.dram;
        hold = Hold{};
    }
    std::uint32_t id = 0;
    if (free_.empty()) {
        id = static_cast<std::uint32_t>(calls_.size());
        calls_.emplace_back();
    } else {
        id = free_.back();
        free_.pop_back();
    }
    SimCall& c = calls_[id];
    c = SimCall{};
    c.arrival = a.time;
    c.client = a.client;
    c.cls = draw_class();
    c.prefill_left = cls_[c.cls].a_append;
    c.prompt = cls_[c.cls].context;
    expected_output += static_cast<double>(cls_[c.cls].o_output);
    expected_prefill += static_cast<double>(cls_[c.cls].a_append);
    queue_.push_back(id);
    // In the system since its arrival, inside the step that just ended. Not yet queued: it waited for the
    // step to end, not for admission (the queue's statistics are the wait for HBM, DRAM or the running cap).
    if (measuring_) tally.in_system += now - std::max(a.time, tally.t_start);  // only the part inside the window
    // The last call: the window ends, unless no call has completed in it yet or no time has passed in it
    // (every call arriving at once): then it runs to the end, so no rate is over an empty window.
    if (++issued_ == static_cast<std::uint64_t>(spec_.calls) && measuring_ && tally.completed > 0 && now > tally.t_start) {
        tally.t_end = now;
        measuring_ = false;
        window_closed_ = true;
    }
    if (a.client < 0 && scheduled_ < static_cast<std::uint64_t>(spec_.calls))
        schedule(a.time + rng_.gap(1.0 / spec_.load.value, spec_.gaps), -1);
}

inline void SimEngine::admit() {
    constexpr double kSlack = 1.0 + 1e-12;  // reservations summed in floating point
    const bool optimistic = spec_.preempt != Preempt::none;
    while (!queue_.empty() && static_cast<double>(running()) < spec_.load.max_seqs) {
        const std::uint32_t id = queue_.front();
        SimCall& call = calls_[id];
        const SimClass& c = cls_[call.cls];
        // preempt: what it holds when its prefill ends (or when it is back), beside the next step's decode tokens
        const double hbm = optimistic ? kv_gpu_ * held_at(static_cast<double>(reserve_tokens(call))) : c.hbm;
        const double growth = optimistic ? kv_gpu_ * growth_of(static_cast<double>(decoding_)) : 0.0;
        if (reserved_hbm_ + hbm + growth > free_hbm_ * kSlack || reserved_dram_ + c.dram > dram_cap_ * kSlack) break;
        queue_.pop_front();
        reserved_hbm_ += hbm;
        reserved_dram_ += c.dram;
        call.admitted = ++admissions_;
        if (optimistic) order_.emplace_back(call.admitted, id);
        if (call.swapped > 0) {  // swapped out: the same bytes come back over H2D after they have left
            const double bytes = kv_gpu_ * held_at(static_cast<double>(call.swapped));
            reserved_dram_ -= bytes;
            held_tokens_ += held_at(static_cast<double>(call.swapped));
            call.state = CallState::loading;
            loading_.emplace_back(link.submit(LinkPair::h2d, now, bytes / link_bw_, timeline, measuring_, true, call.swap_out),
                                  id);
        } else if (call.recompute) {  // nothing held: the recomputation starts from an empty context
            held_tokens_ += held_at(0.0);  // its linear state, if any
            call.state = CallState::prefilling;
            join_prefill(id);
        } else {
            held_tokens_ += held_at(static_cast<double>(c.s_cached));
            if (c.reload > 0) {  // its cached prefix comes back first, once the session's last save is out
                const std::int32_t who = call.client;
                const std::int64_t saved = who >= 0 ? saved_[static_cast<std::size_t>(who)] : LinkPair::kNone;
                call.state = CallState::loading;
                loading_.emplace_back(link.submit(LinkPair::h2d, now, c.reload, timeline, measuring_, true, saved), id);
            } else {
                call.state = CallState::prefilling;
                join_prefill(id);
            }
        }
        ++events;
        max_running = std::max<std::uint64_t>(max_running, running());
    }
}

// The calls whose reload has ended join the prefill FIFO, in the order they end.
inline void SimEngine::loaded() {
    link.advance(now, timeline);
    while (!loading_.empty() && loading_.front().first < link.ended(LinkPair::h2d)) {
        const std::uint32_t id = loading_.front().second;
        loading_.pop_front();
        SimCall& c = calls_[id];
        const bool decoding = c.swapped > 0 && c.swapped_decoding;
        c.swapped = 0;
        if (decoding) {
            resume_decoding(id);
        } else {
            c.state = CallState::prefilling;
            join_prefill(id);
        }
    }
}

// A step's own link traffic on the two queues: a step that found the link
// busy (either direction) ends no earlier than its traffic does. In a pipeline
// each stage moves its own layers' share over its own link: the queue is the
// busiest stage's, so it carries that stage's share (ι/pp) of the step's traffic.
inline double SimEngine::step_link(double dt, const StepContent& s) {
    double end = dt;
    link.advance(now, timeline);
    const bool queued = link.busy();
    std::array<std::int64_t, 2> mine{LinkPair::kNone, LinkPair::kNone};
    for (auto [d, seconds] : {std::pair{LinkPair::h2d, offload_share_ * s.h2d}, std::pair{LinkPair::d2h, offload_share_ * s.d2h}})
        if (seconds > 0) mine[d] = link.submit(d, now, seconds, timeline, measuring_, false);
    if (queued)
        for (auto d : {LinkPair::h2d, LinkPair::d2h})
            if (mine[d] != LinkPair::kNone) end = std::max(end, link.end_of(d, mine[d]) - now);
    if (measuring_) tally.link_stall += end - dt;
    return end;
}

inline void SimEngine::account(double dt) {
    if (dt <= 0) return;
    timeline.add(SimTimeline::hbm, now, now + dt, weights_ + kv_gpu_ * held_tokens_ + idle_hbm_);
    if (!measuring_) return;
    const auto q = static_cast<double>(queue_.size()), r = static_cast<double>(running());
    tally.in_system += (q + r) * dt;
    tally.queued += q * dt;
    if (q > 0) tally.queue_busy += dt;
    tally.queue_max = std::max(tally.queue_max, q);
    tally.batch += static_cast<double>(decoding_) * dt;
    tally.running += static_cast<double>(started()) * dt;
    tally.loading += static_cast<double>(loading_.size()) * dt;
    tally.hbm_used += (weights_ + kv_gpu_ * held_tokens_ + idle_hbm_) * dt;
}

inline void SimEngine::start_window() {
    measuring_ = true;
    tally.t_start = now;
}

// The prefill chunks the budget allows this step, FIFO, added to `into`; the
// largest chunk (a call's piece of the step: piece_step_time). A pipeline's
// cycle has one budget per micro-batch (cycle_budget), a call at most one
// chunk of it.
inline double SimEngine::gather_prefill(StepContent& into) {
    chunks_.clear();
    const auto chunk = static_cast<std::int64_t>(std::min(spec_.load.chunk, 1e15));
    auto budget = static_cast<std::int64_t>(std::min(cycle_budget(ps_.pipe, spec_.load.chunk), 1e15));
    std::int64_t piece = 0;
    for (const std::uint32_t id : prefilling_) {
        SimCall& c = calls_[id];
        const std::int64_t take = std::min({c.prefill_left, budget, chunk});
        if (take == 0 && c.prefill_left > 0) break;
        if (!c.chunked) {
            c.chunked = true;
            ++chunked_;
        }
        const ClassLoad& load = c.recompute ? recompute_[id] : in_.cls[c.cls];
        const auto A = c.recompute ? load.A : static_cast<double>(cls_[c.cls].a_append);
        add_prefill(into, load, A > 0 ? static_cast<double>(take) / A : 1.0, lin_);
        piece = std::max(piece, take);
        chunks_.emplace_back(id, take);
        budget -= take;
        if (budget == 0) break;  // a call that goes on waits for the next step
        if (take < c.prefill_left) continue;  // a pipeline's call whose chunk is taken: the next call's, if budget is left
    }
    return static_cast<double>(piece);
}

// One step: every decoding call's next token and the prefill chunks the
// budget allows, FIFO; its time is step_time of that content (in a pipeline,
// piece_step_time: a call's chunk rides in one micro-batch).
inline void SimEngine::step() {
    ++steps;
    ++events;
    const auto n = static_cast<double>(decoding_);
    const bool dynamic = spec_.f_policy == FPolicy::dynamic, pieces = ps_.pipe.pp > 1;
    StepContent s, pre;  // a static pipeline's: the decode in s, the prefill in pre, until timed
    if (!dynamic) add_decode(s, lines_, n, sum_context_, lin_, sum_min_);  // dynamic: after the prefill, once f is chosen
    const double piece = gather_prefill(pieces && !dynamic ? pre : s);
    double f = spec_.f, t_step = 0;
    std::size_t time_bin = SplitMemo::kNoBin;  // t_step's ITL bin, when the memo kept it
    if (dynamic) {  // a step without prefill is one the memo may have solved already
        const SplitMemo::Kept& k = memo_.split(ps_, split_, s, n, sum_context_, sum_min_, lin_, spec_.ov, pieces ? piece : 0.0);
        f = k.split.f;
        s = k.split.content;
        t_step = k.split.time;
        time_bin = k.time_bin;
    } else if (pieces && pre.prefill_tokens > 0) {
        t_step = piece_step_time(ps_, s, pre, piece, f, spec_.ov, nullptr);
        s = s + pre;
    } else {
        t_step = step_time(ps_, s, f, spec_.ov);
    }
    const double dt = step_link(t_step, s);
    account(dt);
    if (measuring_) {
        if (n > 0) tally.f_split.add(f);
        tally.steps += 1;
        tally.step_time += dt;
        tally.tokens_out += n;
        if (n > 0) tally.itl.add(dt, n, time_bin != SplitMemo::kNoBin && dt == t_step ? time_bin : LogHistogram::index(dt));
        tally.cpu_busy += offload_share_ * std::max(s.cpu_c, s.cpu_d);  // the busiest stage's sockets
        add_content(tally.content, s);
    }
    now += dt;
    output_tokens += n;
    const double grew = grow_contexts(n);
    if (spec_.preempt != Preempt::none) reserved_hbm_ += kv_gpu_ * grew;  // the KV the step wrote
    while (!decoders_.empty() && decoders_.top().end_step == static_cast<std::int64_t>(steps)) {
        const Decoder d = decoders_.top();
        decoders_.pop();
        const SimCall& c = calls_[d.call];
        if (c.state != CallState::decoding || c.end_step != d.end_step) continue;  // preempted since
        --decoding_;
        const std::int64_t context = cls_[c.cls].context + c.produced + static_cast<std::int64_t>(steps) - c.decode_from;
        sum_context_ -= static_cast<double>(context);
        leave_knots(context);
        complete(d.call);
    }
    // The chunks came from the front of the FIFO in order: the calls that go on keep their places there, those
    // that finish leave it (listed again at the front of chunks_) before any of them starts decoding.
    std::size_t going_on = 0, done = 0;
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
        const auto [id, take] = chunks_[i];
        const auto at = static_cast<double>(calls_[id].prompt - calls_[id].prefill_left);  // tokens held before it
        calls_[id].prefill_left -= take;
        held_tokens_ += held_at(at + static_cast<double>(take)) - held_at(at);
        prefill_tokens += static_cast<double>(take);
        if (calls_[id].prefill_left > 0)
            prefilling_[going_on++] = id;
        else
            chunks_[done++].first = id;
    }
    prefilling_.erase(prefilling_.begin() + static_cast<std::ptrdiff_t>(going_on),
                      prefilling_.begin() + static_cast<std::ptrdiff_t>(chunks_.size()));
    for (std::size_t i = 0; i < done; ++i) {
        const std::uint32_t id = chunks_[i].first;
        leave_prefill(calls_[id]);
        output_tokens += 1;  // the first token (a recomputation's: its next)
        if (measuring_) tally.tokens_out += 1;
        if (calls_[id].produced == 0) calls_[id].first_token = now;
        start_decoding(id);
    }
}

inline void SimEngine::start_decoding(std::uint32_t id) {
    ++events;
    SimCall& c = calls_[id];
    const SimClass& k = cls_[c.cls];
    c.decode_from = static_cast<std::int64_t>(steps);
    if (k.copy > 0 && c.produced == 0) (void)link.submit(LinkPair::d2h, now, k.copy, timeline, measuring_, false);
    c.produced += 1;
    if (c.produced >= k.o_output) {
        complete(id);
        return;
    }
    resume_decoding(id);
}

inline void SimEngine::complete(std::uint32_t id) {
    ++events;
    ++completed_;
    SimCall& c = calls_[id];
    c.state = CallState::done;
    const SimClass& k = cls_[c.cls];
    const bool optimistic = spec_.preempt != Preempt::none;
    const double held_hbm = optimistic ? kv_gpu_ * held_at(static_cast<double>(k.context + k.o_output - 1)) : k.hbm;
    reserved_hbm_ -= held_hbm;
    reserved_dram_ -= k.dram;
    held_tokens_ -= held_at(static_cast<double>(k.context + k.o_output - 1));
    if (measuring_) {
        tally.completed += 1;
        tally.sojourn += now - c.arrival;
        tally.ttft.add(c.first_token - c.arrival, 1.0);
    }
    if (k.save > 0) {  // its cached prefix's GPU share goes back to DRAM
        const std::int64_t saved = link.submit(LinkPair::d2h, now, k.save, timeline, measuring_, true);
        if (c.client >= 0) saved_[static_cast<std::size_t>(c.client)] = saved;
    }
    if (c.client >= 0 && scheduled_ < static_cast<std::uint64_t>(spec_.calls)) {
        const double gap = rng_.gap(k.idle, spec_.gaps, k.idle_sigma);
        if (gap > 0) {  // idle: the session's KV stays reserved (hold) or moves to DRAM (park)
            Hold& h = holds_[static_cast<std::size_t>(c.client)];
            h = ps_.idle == IdlePolicy::park ? Hold{0.0, k.dram_parked} : Hold{held_hbm, k.dram};
            reserved_hbm_ += h.hbm;
            idle_hbm_ += h.hbm;
            reserved_dram_ += h.dram;
        }
        schedule(now + gap, c.client);
    }
    free_.push_back(id);
    if (!measuring_ && !window_closed_ && completed_ == warmup_calls_) start_window();
}

}  // namespace kvroof::detail
