// SPDX-License-Identifier: MIT
// The offload question at a fixed operating point: its JSON.
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "kvroof/io/point_render.hpp"
#include "kvroof/io/verdict_render.hpp"
#include "render_util.hpp"

namespace kvroof::io {

using nlohmann::json;
using render::finite_or_null;

json operating_point_json(const OperatingPoint& p) {
    // A figure of a run is null where the point does not fit (as a sweep leaves its cell empty); memory is always given.
    const auto run = [&p](double v) { return p.fits ? finite_or_null(v) : json(nullptr); };
    const auto decode = [&](double v) { return p.batch > 0 ? run(v) : json(nullptr); };  // nothing decodes: no ITL
    return json{{"f", p.f},
                {"ov", p.ov},
                {"fits", p.fits},
                {"weights_fit", p.weights_fit},
                {"session_fits", p.session_fits},
                {"prefill_bound", p.fits ? json(p.prefill_bound) : json(nullptr)},
                {"saturated", p.saturated},
                {"memory_queued", p.memory_queued},
                {"one_wave", p.one_wave},
                {"running", run(p.running)},
                {"within_slo_tpot", p.fits ? json(p.within_slo_tpot) : json(nullptr)},
                {"within_slo_ttft", p.fits ? json(p.within_slo_ttft) : json(nullptr)},
                {"batch", run(p.batch)},
                {"concurrency", run(p.concurrency)},
                {"prefill_tokens_per_step", run(p.prefill_tokens_per_step)},
                {"itl_s", decode(p.itl)},
                {"step_s", run(p.step)},
                {"step_bare_s", decode(p.step_bare)},
                {"step_allreduce_s", run(p.step_allreduce)},
                {"step_alltoall_s", run(p.step_alltoall)},
                {"ttft_s", run(p.ttft)},
                {"queue_wait_s", run(p.queue_wait)},
                {"e2e_s", run(p.e2e)},
                {"requests_per_s", run(p.requests_per_s)},
                {"throughput_tok_s", run(p.throughput)},
                {"steady_throughput_tok_s", run(p.steady_throughput)},
                {"throughput_per_gpu_tok_s", run(p.throughput_per_gpu)},
                {"throughput_per_user_tok_s", decode(p.throughput_per_user)},
                {"kv_tokens", p.kv_tokens},
                {"hbm_used_bytes", p.hbm_used},
                {"hbm_capacity_bytes", p.hbm_capacity},
                {"dram_used_bytes", p.dram_used},
                {"dram_capacity_bytes", p.dram_capacity},
                {"step_bound_by", p.fits ? json(name(p.binding)) : json(nullptr)}};
}

json point_report_json(const PointReport& r, const BuiltScenario& built) {
    const PointStudy& s = r.study;
    const std::vector<std::string> moved = efficiency_flags(built);
    auto band = [](const PointBand& b) {
        return json{{"conservative", operating_point_json(b.conservative)}, {"optimistic", operating_point_json(b.optimistic)}};
    };
    auto end = [](const OperatingPoint& p, int ov, double g) {
        return json{{"f", p.f},
                    {"ov", ov},
                    {"gain", finite_or_null(g)},
                    {"throughput_tok_per_s", p.fits ? json(p.throughput) : json(nullptr)}};
    };
    return json{
        {"inputs", inputs_json(built, r.facts)},
        {"load",
         {{"mode", name(s.load.mode)},
          {"value", s.load.mode == LoadMode::saturate || s.load.mode == LoadMode::best ? json(nullptr) : json(s.load.value)},
          {"prefill", name(s.load.prefill)},
          {"prefill_chunk_tokens", s.load.chunk},
          {"max_seqs", finite_or_null(s.load.max_seqs)},
          {"requests", finite_or_null(s.load.requests)}}},
        {"baseline", band(s.baseline)},
        {"at_f", band(s.at_f)},
        {"f", s.f},
        {"f_fixed", s.f_fixed},
        {"smallest_f_that_fits", s.smallest_f_that_fits ? json(*s.smallest_f_that_fits) : json(nullptr)},
        {"gain_conservative", finite_or_null(s.gain_conservative)},
        {"gain_optimistic", finite_or_null(s.gain_optimistic)},
        {"offload",
         {{"bankable", end(s.bankable, 0, s.gain_bankable)},
          {"pipelined", end(s.pipelined, 1, s.gain_pipelined)},
          {"marginal_below_gain", 1.0 + kGainUncertainty}}},
        {"stated_error",
         {{"family", s.stated_error.moe ? "moe" : "dense"},
          {"itl", s.stated_error.itl},
          {"throughput", s.stated_error.throughput},
          {"ttft", std::isnan(s.stated_error.ttft) ? json(nullptr) : json(s.stated_error.ttft)},
          {"basis", "mean absolute percentage error on the public measured points of outputs/accuracy.md"},
          {"applies", moved.empty()},
          {"moved_by", moved}}},
        {"slo_max_seqs",
         s.slo_cap ? json{{"max_seqs", s.slo_max_seqs}, {"point", operating_point_json(*s.slo_cap)}} : json(nullptr)},
        {"time_bound_by", s.baseline.conservative.fits ? json(name(s.baseline.conservative.binding)) : json(nullptr)},
        {"verdict", name(s.kind)},
        {"verdict_line", point_verdict_line(s).substr(0, point_verdict_line(s).size() - 1)}};
}

}  // namespace kvroof::io
