// SPDX-License-Identifier: MIT
// Measured serving points and engine kernel rules read from their JSON schema (data/measurements/README.md):
// every field checked, every error naming the point and the field.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string_view>

#include "kvroof/analysis/mix_demand.hpp"
#include "kvroof/io/accuracy.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"

namespace kvroof::io {
namespace {
using nlohmann::json;

// A field of the point by name; a missing or mistyped one is an InputError naming it.
const json& field(const json& j, const char* key) {
    if (!j.is_object() || !j.contains(key)) throw InputError(fmt::format("{}: missing", key));
    return j.at(key);
}
std::string text(const json& j, const char* key) {
    const json& v = field(j, key);
    if (!v.is_string()) throw InputError(fmt::format("{}: must be a string, got {}", key, v.dump()));
    return v.get<std::string>();
}
double real(const json& j, const char* key) {
    const json& v = field(j, key);
    if (!v.is_number()) throw InputError(fmt::format("{}: must be a number, got {}", key, v.dump()));
    return v.get<double>();
}
std::optional<double> number(const json& m, const char* key) {
    if (!m.contains(key) || m.at(key).is_null()) return std::nullopt;
    return real(m, key);
}
// A whole number >= 1, or nothing when absent or null.
std::optional<int> count(const json& m, const char* key) {
    const auto v = number(m, key);
    if (!v) return std::nullopt;
    if (!(*v >= 1 && *v <= 1e9 && std::floor(*v) == *v))
        throw InputError(fmt::format("{}: must be a whole number >= 1 or null, got {}", key, m.at(key).dump()));
    return static_cast<int>(*v);
}
std::optional<double> ms(const json& m, const char* key) {
    const auto v = number(m, key);
    return v ? std::optional<double>(*v * 1e-3) : std::nullopt;
}

// The keys an object of a point may hold: a misspelt one (max_seq) would otherwise drop a limit without a word.
// `basis` and `notes` carry words for people.
void known_keys(const json& o, const char* name, std::initializer_list<std::string_view> allowed) {
    if (!o.is_object()) throw InputError(fmt::format("{}: must be an object, got {}", name, o.dump()));
    for (const auto& [key, value] : o.items())
        if (key != "basis" && key != "notes" && std::find(allowed.begin(), allowed.end(), key) == allowed.end())
            throw InputError(fmt::format("{}.{}: unknown key; allowed: {}, basis, notes", name, key, fmt::join(allowed, ", ")));
}

void decode_limits(const json& p, MeasuredPoint& m) {
    if (const auto n = count(field(p, "load"), "num_requests")) m.num_requests = *n;
    if (!p.contains("engine_limits") || p.at("engine_limits").is_null()) return;
    const json& e = p.at("engine_limits");
    known_keys(e, "engine_limits", {"max_seqs", "max_num_tokens", "admission", "kv_memory"});
    if (const auto n = count(e, "max_seqs")) m.max_seqs = *n;
    if (const auto n = count(e, "max_num_tokens")) m.max_num_tokens = *n;
    if (e.contains("admission") && !e.at("admission").is_null()) {
        const std::string a = text(e, "admission");
        if (a != "peak" && a != "current")
            throw InputError(fmt::format("engine_limits.admission: must be peak, current or null, got '{}'", a));
        m.peak_admission = a == "peak";
    }
    if (!e.contains("kv_memory") || e.at("kv_memory").is_null()) return;
    const json& k = e.at("kv_memory");
    known_keys(k, "engine_limits.kv_memory", {"fraction", "of"});
    m.kv_mem_fraction = real(k, "fraction");
    const auto of = text(k, "of");
    if (of != "free" && of != "total")
        throw InputError(fmt::format("engine_limits.kv_memory.of: must be free or total, got '{}'", of));
    m.kv_mem_of_total = of == "total";
}

MeasuredPoint decode_point(const json& p) {
    MeasuredPoint m;
    m.id = text(p, "id");
    m.source_key = text(field(p, "source"), "key");
    m.source_url = text(field(p, "source"), "url");
    m.engine = text(p, "engine");
    m.engine_version = field(p, "engine_version").is_null() ? "" : text(p, "engine_version");
    m.gpu = text(p, "gpu");
    m.gpus = count(p, "gpus").value_or(0);
    // The deployment: gpus = tp x pp (one replica); ep shards the experts within the tp group.
    m.pp = count(p, "pp").value_or(1);
    m.tp = count(p, "tp").value_or(m.gpus / m.pp);
    m.ep = count(p, "ep").value_or(1);
    // Data-parallel attention (SGLang's --enable-dp-attention; an MLA model's latent not replicated): true, false or absent.
    if (p.contains("attention_dp") && !p.at("attention_dp").is_null()) {
        if (!p.at("attention_dp").is_boolean())
            throw InputError(fmt::format("attention_dp: must be true, false or null, got {}", p.at("attention_dp").dump()));
        m.attention_dp = p.at("attention_dp").get<bool>();
    }
    m.model = text(p, "model");
    m.weight_dtype = text(p, "weight_dtype");
    m.kv_dtype = field(p, "kv_dtype").is_null() ? "" : text(p, "kv_dtype");
    m.isl = real(p, "isl");
    m.osl = real(p, "osl");
    m.prefix = real(p, "prefix");
    const json& l = field(p, "load");
    known_keys(l, "load", {"mode", "batch", "concurrency", "rate", "num_requests"});
    m.load = text(l, "mode");
    if (m.load == "batch") m.load_value = real(l, "batch");
    if (m.load == "concurrency") m.load_value = real(l, "concurrency");
    if (m.load == "request_rate") m.load_value = real(l, "rate");
    const json& x = field(p, "measured");
    known_keys(x, "measured", {"itl_ms", "tpot_ms", "ttft_ms", "throughput_tok_s", "e2e_ms", "throughput_basis"});
    m.itl = ms(x, "itl_ms");
    if (!m.itl) m.itl = ms(x, "tpot_ms");
    m.ttft = ms(x, "ttft_ms");
    m.throughput = number(x, "throughput_tok_s");
    decode_limits(p, m);
    return m;
}

// The ranges a point's numbers must be in (names as in the file).
MeasuredPoint checked(MeasuredPoint m) {
    auto need = [](bool ok, const char* field, const char* rule) {
        if (!ok) throw InputError(fmt::format("{}: {}", field, rule));
    };
    need(m.gpus >= 1, "gpus", "must be a whole number >= 1");
    need(m.tp * m.pp == m.gpus, "tp/pp", "tp x pp must be gpus (one replica's GPUs)");
    need(m.ep <= m.tp && m.tp % m.ep == 0, "ep", "must divide tp");
    need(m.isl >= 1 && m.osl >= 1, "isl/osl", "must be >= 1");
    need(m.prefix >= 0 && m.prefix < m.isl, "prefix", "must be in [0, isl)");
    need(m.load == "batch" || m.load == "concurrency" || m.load == "request_rate" || m.load == "max_throughput", "load.mode",
         "must be batch, concurrency, request_rate or max_throughput");
    need(m.load == "max_throughput" || m.load_value > 0, "load", "batch, concurrency or rate must be > 0");
    // A measured figure within what a serving benchmark can report (a value far outside is a unit or typing slip,
    // and would dominate the fit's log errors).
    need(!m.itl || (*m.itl >= 1e-6 && *m.itl <= 1e3), "measured.itl_ms", "must be in [0.001, 1000000] ms or null");
    need(!m.ttft || (*m.ttft >= 1e-6 && *m.ttft <= 1e4), "measured.ttft_ms", "must be in [0.001, 10000000] ms or null");
    need(!m.throughput || (*m.throughput >= 1e-3 && *m.throughput <= 1e9), "measured.throughput_tok_s",
         "must be in [0.001, 1000000000] tok/s or null");
    need(m.itl || m.ttft || m.throughput, "measured", "needs at least one of itl_ms, tpot_ms, ttft_ms, throughput_tok_s");
    need(!m.kv_mem_fraction || (*m.kv_mem_fraction > 0 && *m.kv_mem_fraction <= 1), "engine_limits.kv_memory.fraction",
         "must be in (0, 1]");
    return m;
}
}  // namespace

namespace {
// A point's or rule's id for an error message, whatever its type (a bad id must not throw here).
std::string point_id(const json& p) {
    if (!p.is_object() || !p.contains("id")) return "?";
    return p.at("id").is_string() ? p.at("id").get<std::string>() : p.at("id").dump();
}

// A list of strings under `key`, each element checked (a mistyped one names the key).
std::vector<std::string> texts(const json& j, const char* key) {
    const json& v = field(j, key);
    std::vector<std::string> out;
    if (v.is_array())
        for (const json& x : v)
            if (x.is_string()) out.push_back(x.get<std::string>());
    if (!v.is_array() || out.size() != v.size())
        throw InputError(fmt::format("{}: must be an array of strings, got {}", key, v.dump()));
    return out;
}

EngineKernel decode_kernel(const json& k) {
    if (!k.is_object()) throw InputError(fmt::format("must be an object, got {}", k.dump()));
    EngineKernel e;
    e.id = text(k, "id");
    e.engine = text(k, "engine");
    e.weight_dtype = text(k, "weight_dtype");
    e.gpus = texts(k, "gpus");
    e.kernel = text(k, "kernel");
    e.source = text(k, "source");
    e.eta_moe_gemm = real(k, "eta_moe_gemm");
    const json& range = field(k, "range");
    if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number())
        throw InputError(fmt::format("range: must be [low, high], two numbers, got {}", range.dump()));
    e.lo = range[0].get<double>();
    e.hi = range[1].get<double>();
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

namespace {
// A point whose weights and one request at its longest (ISL + OSL) do not fit its GPUs' HBM is one kvroof cannot
// place: it has no prediction to compare or fit (one used to be predicted as if its weights were resident, and
// its made-up residual skewed the fit). A data defect in the file (gpu, gpus, tp, pp or a precision), refused.
void check_it_fits(const MeasuredPoint& m) {
    const Scenario s = point_scenario(m);
    const PreparedScenario ps(s);
    if (ps.hbm_free_bytes() > 0 && ps.session_fits_hbm_peak(0.0)) return;
    throw InputError(fmt::format(
        "{} at {} and {} KV on {} x {} does not fit: {:.1f} GB of weights {} {:.1f} GB of HBM (the reserve taken off); "
        "kvroof cannot predict a run it cannot place: check gpu, gpus, tp, pp and the precisions",
        m.model, m.weight_dtype, m.kv_dtype.empty() ? std::string("bf16") : m.kv_dtype, replica_gpus(s.hardware), m.gpu,
        ps.mc.weights.raw() / 1e9, ps.hbm_free_bytes() > 0 ? "and one request at its longest in" : "against",
        ps.sys.hbm_capacity.raw() / 1e9));
}
}  // namespace

std::vector<MeasuredPoint> measured_points_from(const std::string& where, const json& doc) {
    if (!doc.is_object() || !doc.contains("points") || !doc.at("points").is_array())
        throw InputError(fmt::format("{}: points: must be an array of measured points", where));
    const std::vector<EngineKernel> kernels = engine_kernels_from(where, doc);
    std::vector<MeasuredPoint> out;
    for (const json& p : doc.at("points")) {
        try {
            out.push_back(checked(decode_point(p)));
            for (std::size_t i = 0; i + 1 < out.size(); ++i)
                if (out[i].id == out.back().id) throw InputError("id: used by an earlier point");
            check_it_fits(out.back());
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

}  // namespace kvroof::io
