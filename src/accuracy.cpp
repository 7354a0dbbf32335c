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
using nlohmann::json;

std::optional<double> number(const json& m, const char* key) {
    if (!m.contains(key) || m.at(key).is_null()) return std::nullopt;
    return m.at(key).get<double>();
}
std::optional<double> ms(const json& m, const char* key) {
    const auto v = number(m, key);
    return v ? std::optional<double>(*v * 1e-3) : std::nullopt;
}

void decode_limits(const json& p, MeasuredPoint& m) {
    m.num_requests = number(p.at("load"), "num_requests");
    if (!p.contains("engine_limits") || p.at("engine_limits").is_null()) return;
    const json& e = p.at("engine_limits");
    m.max_seqs = number(e, "max_seqs");
    m.max_num_tokens = number(e, "max_num_tokens");
    m.peak_admission = e.value("admission", json()).is_string() && e.at("admission").get<std::string>() == "peak";
    if (!e.contains("kv_memory") || e.at("kv_memory").is_null()) return;
    const json& k = e.at("kv_memory");
    m.kv_mem_fraction = k.at("fraction").get<double>();
    const auto of = k.at("of").get<std::string>();
    if (of != "free" && of != "total")
        throw InputError(fmt::format("engine_limits.kv_memory.of: must be free or total, got '{}'", of));
    m.kv_mem_of_total = of == "total";
}

MeasuredPoint decode_point(const json& p) {
    MeasuredPoint m;
    m.id = p.at("id").get<std::string>();
    m.source_key = p.at("source").at("key").get<std::string>();
    m.source_url = p.at("source").at("url").get<std::string>();
    m.engine = p.at("engine").get<std::string>();
    m.engine_version = p.at("engine_version").is_null() ? "" : p.at("engine_version").get<std::string>();
    m.gpu = p.at("gpu").get<std::string>();
    m.gpus = p.at("gpus").get<int>();
    m.model = p.at("model").get<std::string>();
    m.weight_dtype = p.at("weight_dtype").get<std::string>();
    m.kv_dtype = p.at("kv_dtype").is_null() ? "" : p.at("kv_dtype").get<std::string>();
    m.isl = p.at("isl").get<double>();
    m.osl = p.at("osl").get<double>();
    m.prefix = p.at("prefix").get<double>();
    const json& l = p.at("load");
    m.load = l.at("mode").get<std::string>();
    if (m.load == "batch") m.load_value = l.at("batch").get<double>();
    if (m.load == "concurrency") m.load_value = l.at("concurrency").get<double>();
    if (m.load == "request_rate") m.load_value = l.at("rate").get<double>();
    const json& x = p.at("measured");
    m.itl = ms(x, "itl_ms");
    if (!m.itl) m.itl = ms(x, "tpot_ms");
    m.ttft = ms(x, "ttft_ms");
    if (x.contains("throughput_tok_s") && !x.at("throughput_tok_s").is_null())
        m.throughput = x.at("throughput_tok_s").get<double>();
    decode_limits(p, m);
    return m;
}

// The ranges a point's numbers must be in (names as in the file).
MeasuredPoint checked(MeasuredPoint m) {
    auto need = [](bool ok, const char* field, const char* rule) {
        if (!ok) throw InputError(fmt::format("{}: {}", field, rule));
    };
    need(m.gpus >= 1, "gpus", "must be >= 1");
    need(m.isl >= 1 && m.osl >= 1, "isl/osl", "must be >= 1");
    need(m.prefix >= 0 && m.prefix < m.isl, "prefix", "must be in [0, isl)");
    need(m.load == "batch" || m.load == "concurrency" || m.load == "request_rate" || m.load == "max_throughput", "load.mode",
         "must be batch, concurrency, request_rate or max_throughput");
    need(m.load == "max_throughput" || m.load_value > 0, "load", "batch, concurrency or rate must be > 0");
    for (const auto& [v, field] :
         {std::pair{m.itl, "measured.itl_ms"}, {m.ttft, "measured.ttft_ms"}, {m.throughput, "measured.throughput_tok_s"}})
        need(!v || *v > 0, field, "must be > 0 or null");
    need(m.itl || m.ttft || m.throughput, "measured", "needs at least one of itl_ms, tpot_ms, ttft_ms, throughput_tok_s");
    need(!m.kv_mem_fraction || (*m.kv_mem_fraction > 0 && *m.kv_mem_fraction <= 1), "engine_limits.kv_memory.fraction",
         "must be in (0, 1]");
    return m;
}
}  // namespace

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
    in.set("gpus", std::to_string(m.gpus));
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
// A point's or rule's id for an error message, whatever its type (a bad id must not throw here).
std::string point_id(const json& p) {
    if (!p.is_object() || !p.contains("id")) return "?";
    return p.at("id").is_string() ? p.at("id").get<std::string>() : p.at("id").dump();
}

EngineKernel decode_kernel(const json& k) {
    EngineKernel e;
    e.id = k.at("id").get<std::string>();
    e.engine = k.at("engine").get<std::string>();
    e.weight_dtype = k.at("weight_dtype").get<std::string>();
    e.gpus = k.at("gpus").get<std::vector<std::string>>();
    e.kernel = k.at("kernel").get<std::string>();
    e.source = k.at("source").get<std::string>();
    e.eta_moe_gemm = k.at("eta_moe_gemm").get<double>();
    const auto range = k.at("range").get<std::vector<double>>();
    if (range.size() != 2) throw InputError("range: must be [low, high]");
    e.lo = range[0];
    e.hi = range[1];
    if (!(e.eta_moe_gemm >= 0.001 && e.eta_moe_gemm <= 1)) throw InputError("eta_moe_gemm: must be in [0.001, 1]");
    if (!(e.lo >= 0.001 && e.hi <= 1)) throw InputError("range: both ends must be in [0.001, 1]");
    if (!(e.lo <= e.eta_moe_gemm && e.eta_moe_gemm <= e.hi)) throw InputError("range: must hold eta_moe_gemm");
    if (e.gpus.empty()) throw InputError("gpus: must name at least one GPU preset");
    (void)parse_dtype("weight_dtype", e.weight_dtype);  // a misspelt dtype would match nothing, silently
    const auto known = preset_names("hardware");
    for (const std::string& g : e.gpus)
        if (std::find(known.begin(), known.end(), g) == known.end())
            throw InputError(fmt::format("gpus: unknown hardware preset '{}'", g));
    return e;
}

bool covers(const EngineKernel& k, const MeasuredPoint& m) {
    return k.engine == m.engine && parse_dtype("weight_dtype", k.weight_dtype) == parse_dtype("weight_dtype", m.weight_dtype) &&
           std::find(k.gpus.begin(), k.gpus.end(), m.gpu) != k.gpus.end();
}
}  // namespace

std::vector<EngineKernel> engine_kernels_from(const std::string& where, const json& doc) {
    std::vector<EngineKernel> out;
    if (!doc.is_object() || !doc.contains("engine_kernels")) return out;
    if (!doc.at("engine_kernels").is_array())
        throw InputError(fmt::format("{}: engine_kernels: must be an array of engine MoE kernel rules", where));
    for (const json& k : doc.at("engine_kernels")) {
        try {
            out.push_back(decode_kernel(k));
            for (std::size_t i = 0; i + 1 < out.size(); ++i)
                if (out[i].id == out.back().id) throw InputError("id: used by an earlier rule");
        } catch (const json::exception& e) {
            throw InputError(fmt::format("{}: engine kernel {}: {}", where, point_id(k), e.what()));
        } catch (const InputError& e) {
            throw InputError(fmt::format("{}: engine kernel {}: {}", where, point_id(k), e.what()));
        }
    }
    return out;
}

std::vector<MeasuredPoint> measured_points_from(const std::string& where, const json& doc) {
    if (!doc.is_object() || !doc.contains("points") || !doc.at("points").is_array())
        throw InputError(fmt::format("{}: points: must be an array of measured points", where));
    const std::vector<EngineKernel> kernels = engine_kernels_from(where, doc);
    std::vector<MeasuredPoint> out;
    for (const json& p : doc.at("points")) {
        try {
            out.push_back(checked(decode_point(p)));
            for (const EngineKernel& k : kernels) {
                if (!covers(k, out.back()) || !load_model("model", out.back().model).is_moe()) continue;  // MoE only
                if (out.back().eta_moe_gemm)
                    throw InputError(fmt::format("engine kernels {} and {} both match", out.back().moe_kernel, k.id));
                out.back().eta_moe_gemm = k.eta_moe_gemm;
                out.back().moe_kernel = k.id;
            }
        } catch (const json::exception& e) {
            throw InputError(fmt::format("{}: point {}: {}", where, point_id(p), e.what()));
        } catch (const InputError& e) {
            throw InputError(fmt::format("{}: point {}: {}", where, point_id(p), e.what()));
        }
    }
    return out;
}

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
