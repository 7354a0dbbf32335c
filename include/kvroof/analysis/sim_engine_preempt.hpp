// SPDX-License-Identifier: MIT
#pragma once
// SimEngine's preemption (sim_engine.hpp states the model, sim_preempt.hpp the policy).

#include <algorithm>
#include <cmath>

#include "kvroof/analysis/sim_engine.hpp"

namespace kvroof::detail {

// Decoding from this step: `produced` tokens out, the next reads S + produced keys.
inline void SimEngine::resume_decoding(std::uint32_t id) {
    SimCall& c = calls_[id];
    const SimClass& k = cls_[c.cls];
    c.state = CallState::decoding;
    c.decode_from = static_cast<std::int64_t>(steps);
    c.end_step = c.decode_from + k.o_output - c.produced;
    decoders_.push(Decoder{c.end_step, id});
    ++decoding_;
    const std::int64_t context = k.context + c.produced;
    sum_context_ += static_cast<double>(context);  // token j reads S + j keys
    for (std::size_t j = 0; j < thresholds_; ++j) {  // below K it reaches K after K − context steps
        const std::int64_t K = threshold_[j];
        if (j < lines_.knots) sum_min_[j] += static_cast<double>(std::min(context, K));
        if (context >= K) continue;
        ++below_[j];
        crossings_.push(Crossing{c.decode_from + K - context, c.decode_from, id, static_cast<std::uint32_t>(j)});
    }
}

inline void SimEngine::leave_knots(std::int64_t context) {
    for (std::size_t j = 0; j < thresholds_; ++j) {
        const std::int64_t K = threshold_[j];
        if (j < lines_.knots) sum_min_[j] -= static_cast<double>(std::min(context, K));
        if (context < K) --below_[j];
    }
}

// Each of the n decoding calls has read one key more: Σ context, the KV held, and at each knot the calls below it
// (those that reach it in this step leave the count).
inline double SimEngine::grow_contexts(double n) {
    sum_context_ += n;
    const double grew = growth_of(n);
    held_tokens_ += grew;
    for (std::size_t j = 0; j < lines_.knots; ++j) sum_min_[j] += static_cast<double>(below_[j]);
    while (!crossings_.empty() && crossings_.top().step == static_cast<std::int64_t>(steps)) {
        const Crossing x = crossings_.top();
        crossings_.pop();
        const SimCall& c = calls_[x.call];
        if (c.state == CallState::decoding && c.decode_from == x.decode_from) --below_[x.knot];  // else it left already
    }
    return grew;
}

// Tokens a queued call reserves in HBM when admitted: its prompt (S + A, or
// what it recomputes), or, swapped out while decoding, what it held.
inline std::int64_t SimEngine::reserve_tokens(const SimCall& c) const noexcept {
    return c.swapped > 0 && c.swapped_decoding ? c.swapped : c.prompt;
}

// The newest admitted call that is prefilling or decoding, when it is not the
// only one (−1: none). Entries of calls no longer in the engine are dropped.
inline std::int64_t SimEngine::newest_active() {
    if (active() < 2) return -1;
    const auto live = [&](const std::pair<std::uint64_t, std::uint32_t>& e) {
        const SimCall& c = calls_[e.second];
        return c.admitted == e.first && c.state != CallState::queued && c.state != CallState::done;
    };
    if (order_.size() > 64 + 4 * running())
        order_.erase(std::remove_if(order_.begin(), order_.end(), [&](const auto& e) { return !live(e); }), order_.end());
    for (auto i = order_.size(); i-- > 0;) {
        if (!live(order_[i])) {
            if (i + 1 == order_.size()) order_.pop_back();
            continue;
        }
        const CallState s = calls_[order_[i].second].state;
        if (s == CallState::prefilling || s == CallState::decoding) return order_[i].second;
    }
    return -1;
}

// Preempts the newest calls until the next step's decode tokens fit in HBM;
// false when they do not and no call can be preempted (the engine waits).
inline bool SimEngine::make_room() {
    constexpr double kSlack = 1.0 + 1e-12;  // reservations summed in floating point
    while (reserved_hbm_ + kv_gpu_ * growth_of(static_cast<double>(decoding_)) > free_hbm_ * kSlack) {
        const std::int64_t victim = newest_active();
        if (victim < 0) return false;
        preempt(static_cast<std::uint32_t>(victim));
    }
    return true;
}

inline void SimEngine::preempt(std::uint32_t id) {
    ++events;
    ++preemptions;
    SimCall& c = calls_[id];
    const SimClass& k = cls_[c.cls];
    const bool decoding = c.state == CallState::decoding;
    std::int64_t held = 0, reserved = 0;
    if (decoding) {  // it holds S + (tokens out) − 1, and the next token reads one key more
        const std::int64_t ran = static_cast<std::int64_t>(steps) - c.decode_from;
        held = k.context + c.produced - 1 + ran;
        reserved = held;
        sum_context_ -= static_cast<double>(held + 1);
        leave_knots(held + 1);
        --decoding_;
        c.produced += ran;
    } else {
        held = c.prompt - c.prefill_left;
        reserved = c.prompt;
        prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), id));
        leave_prefill(c);
    }
    reserved_hbm_ -= kv_gpu_ * held_at(static_cast<double>(reserved));
    reserved_dram_ -= k.dram;
    held_tokens_ -= held_at(static_cast<double>(held));
    const double bytes = kv_gpu_ * held_at(static_cast<double>(held));  // a swap moves the linear state too
    constexpr double kSlack = 1.0 + 1e-12;
    if (spec_.preempt == Preempt::swap && held > 0 && reserved_dram_ + bytes <= dram_cap_ * kSlack) {
        ++swaps;
        swapped_bytes += bytes;
        reserved_dram_ += bytes;
        c.swapped = held;
        c.swapped_decoding = decoding;
        c.swap_out = link.submit(LinkPair::d2h, now, bytes / link_bw_, timeline, measuring_, true);
    } else {  // everything it held is prefilled again; a decoding call's last output token too
        const std::int64_t redo = decoding ? held + 1 : held + c.prefill_left;
        recomputed_tokens += static_cast<double>(decoding ? held + 1 : held);
        c.recompute = true;
        c.prompt = redo;
        c.prefill_left = redo;
        if (recompute_.size() <= id) recompute_.resize(static_cast<std::size_t>(id) + 1);
        recompute_[id] = recompute_load(ps_, recompute_pol_, static_cast<double>(redo), spec_.load.chunk);
    }
    c.state = CallState::queued;
    queue_.push_front(id);
}

}  // namespace kvroof::detail
