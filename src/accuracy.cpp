// SPDX-License-Identifier: MIT
// Measured serving points beside kvroof's predictions at its defaults and a plain roofline's.
#include "kvroof/io/accuracy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/physics/model_quantities.hpp"

namespace kvroof::io {
namespace {
// The engine's KV memory share, as the per-GPU reserve that leaves it:
//   of free  (TensorRT-LLM):  KV = φ·(M − r − W/g)  ⇒  r' = r + (1 − φ)·(M − r − W/g)
//   of total (vLLM):          KV = φ·M − W/g − r   ⇒  r' = r + (1 − φ)·M
// M: HBM per GPU, r: the preset's reserve (activations, workspace), W/g: the
// weights each GPU holds. Weights that do not fit are left for the model to report.
void apply_kv_memory(const MeasuredPoint& m, Scenario& s) {
    HardwareSpec& h = s.hardware;
    const double phi = *m.kv_mem_fraction;
    if (m.kv_mem_of_total) {
        h.gpu.hbm_reserve = h.gpu.hbm_reserve + h.gpu.hbm_capacity * (1.0 - phi);
        return;
    }
    const double free_per_gpu = PreparedScenario(s).hbm_free_bytes() / h.deployment.gpus;
    if (free_per_gpu > 0) h.gpu.hbm_reserve = h.gpu.hbm_reserve + Bytes((1.0 - phi) * free_per_gpu);
}
}  // namespace

Scenario point_scenario(const MeasuredPoint& m) {
    ScenarioInputs in;
    in.set("hardware", m.gpu);
    in.set("gpus", std::to_string(m.tp));
    in.set("pp", std::to_string(m.pp));
    in.set("ep", std::to_string(m.ep));
    if (m.attention_dp) in.set("attention-dp", "1");
    in.set("model", m.model);
    in.set("weight-dtype", m.weight_dtype);
    if (!m.kv_dtype.empty()) in.set("kv-dtype", m.kv_dtype);
    Scenario s = build_scenario(in).scenario;
    if (m.kv_mem_fraction) apply_kv_memory(m, s);
    if (m.eta_moe_gemm) s.hardware.gpu.eta_moe_gemm = *m.eta_moe_gemm;  // the engine's expert GEMMs, where benchmarked
    CallClass c;
    c.name = "measured";
    c.s_cached = m.prefix;
    c.a_append = m.isl - m.prefix;
    c.o_output = m.osl;
    s.mix = Mix{{MixEntry{c, 1.0}}};
    return s;
}

// The load kvroof is asked at (render_accuracy_markdown's footnote says how each maps).
LoadSpec point_load(const MeasuredPoint& m) {
    LoadSpec l;
    if (m.load == "batch") {  // lockstep sessions (LMDeploy's static benchmark): prefill, then decode together
        l.mode = LoadMode::batch;
        l.prefill = PrefillMode::separate;
    } else if (m.load == "concurrency") {
        l.mode = LoadMode::concurrency;
    } else if (m.load == "request_rate") {
        l.mode = LoadMode::request_rate;
    } else {
        l.mode = LoadMode::saturate;
    }
    l.value = m.load_value > 0 ? m.load_value : 1.0;
    return l;
}

namespace {

// The engine limits the point states (data/measurements/README.md, "Engine limits"):
// the per-step token budget caps the prefill tokens a step carries (an upper
// bound: the engine's budget also counts the decode tokens); at most
// max_seqs requests run, no more than the run holds (num_requests; an open
// loop's throughput is over the run, finite_run in operating_point.hpp), and
// under peak admission no more than the HBM left after the weights holds at
// each request's full ISL + OSL.
void apply_limits(const MeasuredPoint& m, const PreparedScenario& ps, LoadSpec& l) {
    if (l.mode == LoadMode::batch) {
        // A static batch runs in lockstep only when its B sessions all fit in HBM at once: in lockstep
        // they age together, so at the end each holds its ISL + OSL. Where they do not, the engine runs
        // those that fit and queues the rest: B closed-loop clients, each session's prefill still its own pass.
        if (l.value * ps.session_kv_peak * ps.kv_replication > ps.hbm_free_bytes()) l.mode = LoadMode::concurrency;
        return;
    }
    if (m.max_num_tokens) l.chunk = *m.max_num_tokens;
    if (m.max_seqs) l.max_seqs = std::min(l.max_seqs, *m.max_seqs);
    if (m.num_requests) l.requests = *m.num_requests;
    const double per_request = ps.session_kv_peak * ps.kv_replication;
    if (m.peak_admission && per_request > 0 && ps.hbm_free_bytes() > 0)
        l.max_seqs = std::min(l.max_seqs, std::max(1.0, std::floor(ps.hbm_free_bytes() / per_request)));
}

RooflinePrediction roofline(const Scenario& s, const MeasuredPoint& m) {
    // 1. weights, KV per token   2. peaks × the same efficiencies   3. the batch the load implies
    // 4. step = max(FLOP, bytes)  5. TTFT = one prefill pass          6. throughput = B·O / (TTFT + O·step)
    const HardwareSpec& h = s.hardware;
    const double W = weight_bytes(s.model, s.policy.weight_dtype).raw(),
                 kv = kv_bytes_per_token(s.model, s.policy.kv_dtype).raw();
    const double P = param_counts(s.model).active, S = m.isl, O = m.osl;
    const double F = h.deployment.gpus * gemm_peak(h, gemm_dtype(s.policy)).raw() * h.gpu.eta_compute,
                 BW = h.deployment.gpus * h.gpu.hbm_bandwidth.raw() * h.gpu.eta_mem;
    const double free = h.deployment.gpus * (h.gpu.hbm_capacity - h.gpu.hbm_reserve).raw() - W;
    double B = m.load == "max_throughput" ? free / (kv * (S + O)) : m.load_value;
    if (m.load == "request_rate") B = m.load_value * O * W / BW;  // λ·O·step at the weight-bound step
    B = std::max(B, 1.0);
    RooflinePrediction r;
    r.batch = B;
    r.itl = std::max(2 * P * B / F, (W + B * kv * S) / BW);
    r.ttft = std::max(2 * P * S / F, W / BW);
    r.throughput = B * O / (r.ttft + O * r.itl);
    return r;
}

void add(MetricError& e, std::optional<double> measured, double kvroof, double roof) {
    if (!measured || !(*measured > 0)) return;
    ++e.n;
    e.mape_kvroof += std::abs(kvroof - *measured) / *measured;
    e.mape_roofline += std::abs(roof - *measured) / *measured;
}
void finish(MetricError& e) {
    if (e.n == 0) return;
    e.mape_kvroof /= static_cast<double>(e.n);
    e.mape_roofline /= static_cast<double>(e.n);
}

// The median of |ln(predicted ratio / measured ratio)| over the pairs of each
// series, as exp(median) − 1.
RatioError ratio_error(const std::vector<AccuracyRow>& rows) {
    std::map<std::string, std::vector<const AccuracyRow*>> series;
    for (const AccuracyRow& r : rows) {
        const MeasuredPoint& m = r.measured;
        if (!m.throughput || !(*m.throughput > 0) || !(r.kvroof.throughput > 0) || !(r.roofline.throughput > 0)) continue;
        series[fmt::format("{}|{}|{}|{}|{}|{}|{}", m.source_key, m.engine, m.gpu, m.gpus, m.model, m.weight_dtype, m.kv_dtype)]
            .push_back(&r);
    }
    std::vector<double> k, roof;
    RatioError e;
    for (const auto& [key, pts] : series) {
        if (pts.size() < 2) continue;
        ++e.series;
        for (std::size_t i = 0; i < pts.size(); ++i)
            for (std::size_t j = i + 1; j < pts.size(); ++j) {
                const double measured = *pts[i]->measured.throughput / *pts[j]->measured.throughput;
                k.push_back(std::abs(std::log(pts[i]->kvroof.throughput / pts[j]->kvroof.throughput / measured)));
                roof.push_back(std::abs(std::log(pts[i]->roofline.throughput / pts[j]->roofline.throughput / measured)));
            }
    }
    e.pairs = k.size();
    auto median = [](std::vector<double>& v) {
        if (v.empty()) return 0.0;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    };
    e.median_kvroof = std::expm1(median(k));
    e.median_roofline = std::expm1(median(roof));
    return e;
}

}  // namespace

namespace {
std::vector<MeasuredPoint> points_of(const char* stem) {
    const std::string where = fmt::format("data/measurements/{}.json", stem);
    return measured_points_from(where, parse_json_text(where, embedded_file(stem)));
}
}  // namespace

std::vector<MeasuredPoint> measured_points() { return points_of("serving_points"); }
std::vector<EngineKernel> engine_kernels() {
    const std::string where = "data/measurements/serving_points.json";
    return engine_kernels_from(where, parse_json_text(where, embedded_file("serving_points")));
}
std::vector<MeasuredPoint> holdout_points() { return points_of("holdout_llama_3_1_70b"); }

AccuracyRow predict_row(const MeasuredPoint& m, const Scenario& s) {
    AccuracyRow row;
    row.measured = m;
    const PreparedScenario ps(s);
    LoadSpec load = point_load(m);
    apply_limits(m, ps, load);
    row.kvroof = operating_point(ps, load, 0.0, 0.0);
    row.roofline = roofline(s, m);
    // A static batch's per-token latency is compared with the decode step alone: its sessions decode
    // together, and the source's median leaves out the rare steps a queued session's prefill takes.
    const bool static_batch = m.load == "batch";
    row.kvroof_itl = static_batch ? row.kvroof.step_bare : row.kvroof.itl;
    // TTFT of a static batch or of every request submitted at once is mostly queueing: not compared.
    row.ttft_compared = !static_batch && (load.mode == LoadMode::concurrency || load.mode == LoadMode::request_rate);
    return row;
}

AccuracyTable accuracy_table(const std::vector<MeasuredPoint>& points) {
    AccuracyTable t;
    for (const MeasuredPoint& m : points) {
        const Scenario s = point_scenario(m);
        AccuracyRow row = predict_row(m, s);
        SourceError& src = t.by_source[m.source_key];
        src.url = m.source_url;
        ++src.points;
        const bool moe = s.model.is_moe();
        for (MetricError* e : {&t.itl, &src.itl, m.gpus == 1 ? &t.itl_one_gpu : nullptr, moe ? &t.itl_moe : &t.itl_dense})
            if (e) add(*e, m.itl, row.kvroof_itl, row.roofline.itl);
        for (MetricError* e : {&t.throughput, &src.throughput, m.gpus == 1 ? &t.throughput_one_gpu : nullptr,
                               moe ? &t.throughput_moe : &t.throughput_dense})
            if (e) add(*e, m.throughput, row.kvroof.throughput, row.roofline.throughput);
        if (row.ttft_compared)
            for (MetricError* e : {&t.ttft, moe ? &t.ttft_moe : &t.ttft_dense})
                add(*e, m.ttft, row.kvroof.ttft, row.roofline.ttft);
        t.rows.push_back(std::move(row));
    }
    for (MetricError* e : {&t.itl, &t.ttft, &t.throughput, &t.itl_one_gpu, &t.throughput_one_gpu, &t.itl_dense,
                           &t.throughput_dense, &t.ttft_dense, &t.itl_moe, &t.throughput_moe, &t.ttft_moe})
        finish(*e);
    t.gain = ratio_error(t.rows);
    for (auto& [key, src] : t.by_source) {
        finish(src.itl);
        finish(src.throughput);
    }
    return t;
}

}  // namespace kvroof::io
