// SPDX-License-Identifier: MIT
#pragma once
// The simulated engine: continuous batching with chunked prefill, HBM and
// DRAM admission with a FIFO queue, and the clients (closed loop) or the
// arrival process (open loop) that feed it. Every step's time is
// point_step.hpp's step_time of the step's actual content, so the simulator
// and the closed form charge the same physics. sim.hpp runs it and reports.
//
// A call of class c (whole tokens S_c, A, O) is admitted when its peak KV,
// S + O tokens, fits beside everything already reserved: (1 − f)·kv_gpu per
// token in the HBM left after the weights, f·kv per token in CPU DRAM, and at
// most max_seqs calls in the engine. Reserving the peak means no running call
// is ever preempted. Admitted, it prefills A tokens in chunks (FIFO, at most
// `chunk` tokens per step over all calls); the step that ends its prefill
// yields its first token; then it decodes O − 1 steps, token j reading S + j
// keys. Under --idle hold a session keeps its S + O tokens reserved through its
// idle gap; under park they move to CPU DRAM (whole).
//
// The link is a FIFO queue per direction (sim_link.hpp) at the per-direction
// rate the closed form reads, the two sharing the link's bidirectional cap
// while both are busy. Under park, each call's reload of its cached prefix's
// GPU share (prefill_demand's park part of link_h2d) is a transfer queued on
// H2D when the call is admitted, after the session's last save has ended; the
// call prefills only when it completes. Its save
// (link_park_save) is queued on D2H when its last token is out. These two stay
// out of the steps. A step's own link traffic (offload) stays in step_time and
// occupies both queues too: it queues behind the transfers already there, and
// a step that found the link busy ends no earlier than its traffic.
//
// Preemption (sim_preempt.hpp, as vLLM's scheduler): a call reserves, when
// admitted, the tokens its prefill ends holding (S + A), and each step the
// decode tokens it writes; a call is admitted only when its prompt and the
// next step's decode tokens fit. When a step's decode tokens do not fit, the
// newest admitted call that is prefilling or decoding is preempted (never the
// only one; a call alone that cannot grow waits for an idle session's KV to
// leave HBM): its KV leaves HBM and it goes back to the head of the queue.
// recompute: re-admitted, it prefills every token it held again (a decoding
// call also its last output token, and that prefill's step yields its next
// token). swap: its GPU share is queued on D2H; re-admitted, the same bytes
// are queued on H2D after it, and it resumes where it was (recompute when
// DRAM cannot hold them).

#include <array>
#include <cstdint>
#include <deque>
#include <queue>
#include <string>
#include <vector>

#include "kvroof/analysis/sim_link.hpp"
#include "kvroof/analysis/sim_preempt.hpp"
#include "kvroof/analysis/sim_random.hpp"
#include "kvroof/analysis/sim_split.hpp"
#include "kvroof/analysis/sim_stats.hpp"

namespace kvroof {

namespace limits {
inline constexpr int kMaxSimCalls = 100000000;
inline constexpr int kMaxSimClients = 1000000;
}  // namespace limits

struct SimSpec {
    LoadSpec load;  // concurrency C (whole clients) or request_rate R; chunk and max_seqs
    double f = 0, ov = 0;  // offload fraction (dynamic: the most a step offloads) and overlap
    FPolicy f_policy = FPolicy::fixed;
    double calls = 20000;  // calls issued; the run ends when all have completed
    double warmup = 0.1;  // share of the calls, first completed, left out of the statistics
    std::uint64_t seed = 1;
    GapDist gaps = GapDist::exponential;
    Preempt preempt = Preempt::none;

    void check_validity() const {
        if (load.mode != LoadMode::concurrency && load.mode != LoadMode::request_rate)
            throw InputError("load: the simulator takes concurrency or request-rate");
        if (load.prefill != PrefillMode::chunked) throw InputError("prefill: the simulator runs chunked prefill only");
        load.check_validity();
        if (load.mode == LoadMode::concurrency) (void)check::whole_in_range("concurrency", load.value, 1, limits::kMaxSimClients);
        (void)check::whole_in_range("calls", calls, 1, limits::kMaxSimCalls);
        check::in_range("warmup", warmup, 0.0, 0.9);
        check::unit_interval("f", f);
        check::unit_interval("ov", ov);
    }

    // The f of the HBM reservation and the prefill: f itself, or 0 under the
    // dynamic policy (the whole KV stays in HBM, so a step may split it anyhow).
    [[nodiscard]] double f_gpu() const noexcept { return f_policy == FPolicy::dynamic ? 0.0 : f; }
};

namespace detail {

enum class CallState : std::uint8_t { queued, loading, prefilling, decoding, done };

struct SimCall {  // a call from arrival to completion
    double arrival = 0, first_token = 0;  // s
    std::int64_t prefill_left = 0;  // tokens of A not prefilled yet
    bool chunked = false;  // prefilling, it has had a chunk since it joined the prefill FIFO (running, not waiting)
    std::int64_t decode_from = 0;  // the step that yielded its first token (or the last it resumed at)
    std::int64_t end_step = 0;  // decoding: the step that yields its last token
    std::int64_t produced = 0;  // output tokens before decode_from's (while decoding: including it)
    std::int64_t prompt = 0;  // tokens its prefill ends holding: S + A, or what it recomputes
    std::int64_t swapped = 0;  // tokens swapped out (swap: waiting to come back)
    std::int64_t swap_out = -1;  // its swap-out's number on D2H
    std::uint64_t admitted = 0;  // admission number (the newest is preempted first)
    std::int32_t client = -1;  // closed loop: whose call it is
    std::uint32_t cls = 0;
    CallState state = CallState::queued;
    bool recompute = false;  // its prefill is a recomputation (recompute_load)
    bool swapped_decoding = false;  // swapped out while decoding: resumes decoding when back
};

struct SimClass {  // a class in whole tokens, with its reservations in bytes
    std::int64_t s_cached = 0, a_append = 0, o_output = 1, context = 0;
    double idle = 0;  // s, mean idle gap
    double idle_sigma = -1;  // ln-σ of a lognormal idle gap (< 0: the codex shape's)
    double cum_p = 0;  // Σ p of the classes up to this one
    double hbm = 0, dram = 0;  // peak KV, S + O tokens and the state: GPU share in HBM, CPU share in DRAM
    double dram_parked = 0;  // the whole S + O and the state in DRAM (park, while idle)
    double reload = 0, save = 0;  // s on H2D before its prefill, on D2H after its last token (park)
    double copy = 0;  // s on D2H after its prefill (dynamic): the f share of its A new tokens' KV to DRAM
};

// Time integrals and counters of the measured window.
struct SimTally {
    double t_start = 0, t_end = 0;  // s, the window
    double in_system = 0, queued = 0, queue_busy = 0, batch = 0, running = 0, hbm_used = 0;  // ∫ dt
    double queue_max = 0, tokens_out = 0, completed = 0, sojourn = 0, steps = 0, step_time = 0;
    double loading = 0;  // ∫ calls admitted, waiting for their reload, dt
    double link_stall = 0;  // s the steps were lengthened waiting for the link's queue
    double cpu_busy = 0;  // s the CPU sockets spent on the steps' offloaded attention (compute or DRAM, the larger)
    LogHistogram ttft;  // s, of the calls completed in the window
    LogHistogram itl;  // s per decode token: each step's time, weighted by its decode tokens
    StepContent content;  // Σ over the window's steps of what each carried
    UnitHistogram f_split;  // the f of each step that decoded
};

// Every layer kind is simulated. Linear-attention layers keep a step's decode
// demand a line in Σ context: their state is a constant per call
// (held_at: kv_tokens_held), held in HBM and read and written each step (in the
// lines' demand at 0). Sliding-window and DSA layers bend it at W and at the
// top k (DecodeLines' knots): the engine keeps Σ min(context, K) over the
// decoding calls beside Σ context, each call crossing K at a step it knows.
// The dynamic policy splits those sums too (its memo keys a step by n, Σ
// context and the Σ min), and under --preempt a call's reservation grows as
// its KV does (growth_of: a window layer stops growing at W).

class SimEngine {
public:
    SimEngine(const PreparedScenario& ps, const SimSpec& spec);

    // Runs to the end: every call issued and completed.
    void run(double first_cycle);
    // Whether the window closed at the last arrival; false: it ran to the end, the drain in it.
    [[nodiscard]] bool window_closed() const noexcept { return window_closed_; }

    // HBM the calls in the engine reserve now, bytes (idle sessions' holds not counted): nothing once all are done.
    [[nodiscard]] double reserved_by_calls() const noexcept { return reserved_hbm_ - idle_hbm_; }

    SimTally tally;
    SimTimeline timeline;
    LinkPair link;
    std::uint64_t events = 0, steps = 0, max_running = 0;
    std::uint64_t preemptions = 0, swaps = 0;  // calls preempted; of them, swapped out
    double recomputed_tokens = 0, swapped_bytes = 0;  // prefilled again; bytes swapped out (D2H)
    double output_tokens = 0, prefill_tokens = 0, expected_output = 0, expected_prefill = 0, now = 0;

private:
    struct Arrival {
        double time;
        std::uint64_t order;  // ties in arrival order
        std::int32_t client;
        bool operator>(const Arrival& o) const noexcept { return time != o.time ? time > o.time : order > o.order; }
    };
    struct Decoder {
        std::int64_t end_step;
        std::uint32_t call;
        bool operator>(const Decoder& o) const noexcept { return end_step != o.end_step ? end_step > o.end_step : call > o.call; }
    };

    const PreparedScenario& ps_;
    SimSpec spec_;
    PointInputs in_;
    std::vector<SimClass> cls_;
    DecodeLines lines_;  // per decode token at f_gpu: demand at context 0, and its slope per key of context
    SplitLines split_;  // dynamic: the lines at f = 0, 1/2 and 1
    double link_bw_ = 0;  // bytes/s of one link direction (a pipeline's busiest stage: its share of each transfer)
    double offload_share_ = 1;  // the busiest pipeline stage's share of a step's link and CPU work (1 without one)
    SplitMemo memo_;  // dynamic: the decode-only steps' splits
    double lin_ = 0, free_hbm_ = 0, dram_cap_ = 0, hbm_cap_ = 0, weights_ = 0, kv_gpu_ = 0;
    SimRng rng_;
    std::vector<SimCall> calls_;
    std::vector<std::uint32_t> free_;
    struct Hold {
        double hbm = 0, dram = 0;  // bytes an idle session keeps reserved
    };
    std::vector<Hold> holds_;  // per client
    std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals_;
    std::priority_queue<Decoder, std::vector<Decoder>, std::greater<>> decoders_;
    std::deque<std::uint32_t> queue_, prefilling_;
    std::deque<std::pair<std::int64_t, std::uint32_t>> loading_;  // (reload's number on H2D, call), in FIFO order
    std::vector<std::int64_t> saved_;  // per client: its last save's number on D2H (LinkPair::kNone: none)
    std::vector<std::pair<std::uint32_t, std::int64_t>> chunks_;  // this step's (call, tokens)
    std::vector<std::pair<std::uint64_t, std::uint32_t>> order_;  // preempt: (admission number, call), oldest first
    std::vector<ClassLoad> recompute_;  // per call: the prefill of its recomputation
    PolicySpec recompute_pol_;  // the policy of that prefill (idle hold: nothing parked)
    std::uint64_t admissions_ = 0;
    std::size_t decoding_ = 0;  // calls decoding (decoders_ may keep preempted ones' entries)
    std::size_t chunked_ = 0;  // calls of the prefill FIFO that have had a chunk (SimCall::chunked)
    double reserved_hbm_ = 0, reserved_dram_ = 0;  // bytes: calls in the engine and idle sessions
    double idle_hbm_ = 0;  // bytes of that held by idle sessions
    double held_tokens_ = 0;  // KV the calls in the engine hold now, in tokens of kv (for utilisation)
    double sum_context_ = 0;  // Σ context over decoding calls
    // Knots (window, top k; DecodeLines): per knot K, Σ min(context, K) over the decoding calls, how many of them
    // are below K (each adds a key a step there), and when each will reach it.
    struct Crossing {
        std::int64_t step, decode_from;  // the step after which it reaches K; its decode_from then
        std::uint32_t call;
        std::uint32_t knot;
        bool operator>(const Crossing& o) const noexcept { return step != o.step ? step > o.step : call > o.call; }
    };
    // Thresholds: the demand knots, then W + 1 with window layers (a decode step adds a token to a window layer's KV
    // while its call holds fewer than W, i.e. reads at most W keys). Per threshold, the calls below it.
    std::array<double, 2> sum_min_{};
    std::array<std::int64_t, 3> threshold_{}, below_{};
    std::size_t thresholds_ = 0, hold_threshold_ = 0;
    std::priority_queue<Crossing, std::vector<Crossing>, std::greater<>> crossings_;
    std::uint64_t scheduled_ = 0, issued_ = 0, completed_ = 0, arrival_order_ = 0, warmup_calls_ = 0;
    bool measuring_ = false, window_closed_ = false;

    [[nodiscard]] std::uint32_t draw_class();
    void schedule(double time, std::int32_t client);
    void arrive(const Arrival& a);
    void admit();
    void loaded();
    [[nodiscard]] double step_link(double dt, const StepContent& s);
    void account(double dt);
    [[nodiscard]] double gather_prefill(StepContent& into);
    void step();
    void start_decoding(std::uint32_t id);
    void resume_decoding(std::uint32_t id);
    // KV a call holds at context S, in tokens of kv: S itself with full layers only (physics/attention_layers.hpp).
    [[nodiscard]] double held_at(double S) const noexcept { return kv_tokens_held(ps_.mc.layout, S); }
    void leave_knots(std::int64_t context);  // a decoding call at this context stops decoding
    // Tokens of kv the n decoding calls' next token adds to what they hold: n with full layers; with window
    // layers, which hold no more than W, a token of every layer below W and only the others' beyond it.
    [[nodiscard]] double growth_of(double n) const noexcept {
        const double w = ps_.mc.layout.window_share;
        return w > 0 ? (1.0 - w) * n + w * static_cast<double>(below_[hold_threshold_]) : n;
    }
    double grow_contexts(double n);  // returns growth_of(n), what the calls' KV grew by
    [[nodiscard]] std::int64_t reserve_tokens(const SimCall& c) const noexcept;
    [[nodiscard]] bool make_room();
    [[nodiscard]] std::int64_t newest_active();
    void preempt(std::uint32_t id);
    void complete(std::uint32_t id);
    void start_window();
    [[nodiscard]] std::size_t active() const noexcept { return prefilling_.size() + decoding_; }
    // Running as the closed form counts it: decoding, reloading, or prefilling from a call's first chunk on
    // (admitted calls still waiting for the chunk budget are, in the closed form, queued).
    [[nodiscard]] std::size_t started() const noexcept { return decoding_ + loading_.size() + chunked_; }
    void join_prefill(std::uint32_t id) {
        calls_[id].chunked = false;
        prefilling_.push_back(id);
    }
    // It leaves the prefill FIFO (prefill done, or preempted): no longer one of chunked_.
    void leave_prefill(SimCall& c) noexcept {
        if (c.chunked) --chunked_;
        c.chunked = false;
    }
    [[nodiscard]] std::size_t running() const noexcept { return active() + loading_.size(); }
};

}  // namespace detail
}  // namespace kvroof

#include "kvroof/analysis/sim_engine_impl.hpp"
#include "kvroof/analysis/sim_engine_preempt.hpp"
#include "kvroof/analysis/sim_engine_run.hpp"
