// SPDX-License-Identifier: MIT
#pragma once
// When does reloading cached KV over the link beat recomputing on the GPU?
// Seed 001 (Understanding Bottlenecks for Efficiently Serving LLM Inference
// With KV Offloading): a prefill of T new tokens over K cached ones moves
// K·B_kv bytes and computes T·F_pf FLOP.
//
//   TTFT     = K·B_kv / BW + T·F_pf / C_eff            (Eq. 3, serial)
//   κ_M      = F_pf / B_kv     [FLOP/byte]             model factor
//   κ_HW     = BW / C_eff      [byte/FLOP]             hardware factor
//   κ_crit   = κ_M · κ_HW      (Eq. 6)                 dimensionless
//   κ_ratio  = K / T;  transfer-bound when κ_ratio > κ_crit
//   P_OH     = t_link / t_gpu = κ_ratio / κ_crit;  U = 1 / (1 + P_OH)
// F_pf is the linear FLOP per new token (2 per active non-embedding weight);
// docs/model.md records why this reading, and which C_eff, reproduce the seed.
//
// VRAM-constrained scheduling (Eq. 9–10): a request holds (K + T)·B_kv of VRAM
// while it prefills, so N_max = V_eff / ((K + T)·B_kv) requests fit and an
// iteration schedules T_sched = min(N_max·T, budget) tokens.

#include <algorithm>
#include <cmath>
#include <limits>

#include "kvroof/physics/combine.hpp"
#include "kvroof/physics/model_quantities.hpp"
#include "kvroof/spec/check.hpp"

namespace kvroof {

struct KappaInputs {
    Flop f_pf;  // prefill FLOP per new token
    Bytes b_kv;  // KV bytes per token
    BytesPerSecond link;  // bandwidth the cached KV is reloaded over
    FlopPerSecond c_eff;  // effective prefill FLOP/s
    double k_cached = 0;  // K, tokens
    double t_new = 1;  // T, tokens
    double ov = 0;  // overlap of reload and compute (0: Eq. 3's serial sum)

    void check_validity() const {
        check::positive("F_pf", f_pf.raw());
        check::positive("B_kv", b_kv.raw());
        check::positive("link-bw", link.raw());
        check::positive("prefill-flops", c_eff.raw());
        check::non_negative("K (s_cached)", k_cached);
        check::non_negative("T (a_append)", t_new);
        check::unit_interval("ov", ov);
        if (k_cached == 0 && t_new == 0) throw InputError("K and T: at least one must be > 0");
    }
};

enum class PrefillRegime { compute_bound, transfer_bound };

// The spelling in reports, JSON and sweep rows.
[[nodiscard]] constexpr const char* name(PrefillRegime r) noexcept {
    return r == PrefillRegime::transfer_bound ? "transfer-bound" : "compute-bound";
}

struct KappaResult {
    double kappa_m = 0;  // FLOP/byte
    double kappa_hw = 0;  // byte/FLOP
    double kappa_crit = 0;
    double kappa_ratio = 0;  // K/T (infinite when T = 0)
    PrefillRegime regime = PrefillRegime::compute_bound;
    double t_link = 0, t_gpu = 0;  // s
    double ttft_serial = 0;  // Eq. 3
    double ttft = 0;  // combine(t_gpu, t_link, ov)
    double p_oh = 0;  // t_link / t_gpu
    double utilisation = 1;  // 1 / (1 + P_OH)
    double link_share = 0;  // t_link / (t_link + t_gpu)
};

// F_pf: 2 FLOP per active parameter per new token (seed 001's 2·N convention).
[[nodiscard]] inline Flop prefill_flop_per_token(const ModelSpec& m) { return Flop(2.0 * param_counts(m).active); }

[[nodiscard]] inline double kappa_crit(Flop f_pf, Bytes b_kv, BytesPerSecond link, FlopPerSecond c_eff) noexcept {
    return (f_pf / b_kv).raw() * (link / c_eff).raw();
}

[[nodiscard]] inline KappaResult analyse_prefill(const KappaInputs& in) {
    in.check_validity();
    KappaResult r;
    r.kappa_m = (in.f_pf / in.b_kv).raw();
    r.kappa_hw = (in.link / in.c_eff).raw();
    r.kappa_crit = r.kappa_m * r.kappa_hw;
    r.kappa_ratio = in.t_new > 0 ? in.k_cached / in.t_new : std::numeric_limits<double>::infinity();
    r.regime = r.kappa_ratio > r.kappa_crit ? PrefillRegime::transfer_bound : PrefillRegime::compute_bound;
    r.t_link = time_for(in.b_kv * in.k_cached, in.link).raw();
    r.t_gpu = time_for(in.f_pf * in.t_new, in.c_eff).raw();
    r.ttft_serial = r.t_link + r.t_gpu;
    r.ttft = combine(Seconds(r.t_gpu), Seconds(r.t_link), in.ov).raw();
    r.p_oh = r.t_gpu > 0 ? r.t_link / r.t_gpu : std::numeric_limits<double>::infinity();
    r.utilisation = std::isfinite(r.p_oh) ? 1.0 / (1.0 + r.p_oh) : 0.0;
    r.link_share = r.t_link / r.ttft_serial;
    return r;
}

struct SchedulerResult {
    double n_max = 0;  // requests whose KV fits in V_eff (fluid)
    double t_sched = 0;  // tokens per iteration
    double budget_utilisation = 0;
    bool vram_bound = false;  // VRAM, not the token budget, limits the iteration
};

// Eq. 9–10 for a VRAM budget `v_eff`, a token budget and one request shape:
// T new tokens a request, each request holding `per_request` bytes of KV at its
// K + T tokens ((K + T)·B_kv with full attention; a window layer holds at most
// its window, a linear-attention or Mamba layer its fixed state:
// prefill_request_bytes).
[[nodiscard]] inline SchedulerResult schedule_prefill(Bytes v_eff, double token_budget, double t_new, Bytes per_request) {
    check::positive("vram budget", v_eff.raw());
    check::positive("token budget", token_budget);
    check::positive("T (a_append)", t_new);
    check::positive("KV one request holds", per_request.raw());
    SchedulerResult s;
    s.n_max = v_eff.raw() / per_request.raw();
    const double by_vram = s.n_max * t_new;
    s.vram_bound = by_vram < token_budget;
    s.t_sched = std::min(by_vram, token_budget);
    s.budget_utilisation = s.t_sched / token_budget;
    return s;
}

}  // namespace kvroof
