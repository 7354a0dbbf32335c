// SPDX-License-Identifier: MIT
#include "kvroof/io/presets.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kvroof/analysis/layer_offload.hpp"
#include "kvroof/error.hpp"

namespace kvroof::io {
namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
}

// Every key of `j` must be in `allowed`.
void only_keys(std::string_view where, const json& j, const std::set<std::string>& allowed) {
    for (const auto& [k, _] : j.items()) {
        if (!allowed.count(k)) {
            std::vector<std::string> names(allowed.begin(), allowed.end());
            throw InputError(fmt::format("{}: unknown key '{}'; allowed: {}", where, k, join(names)));
        }
    }
}

const json& require(std::string_view where, const json& j, const char* key) {
    if (!j.contains(key)) throw InputError(fmt::format("{}: missing required key '{}'", where, key));
    return j.at(key);
}

double number(std::string_view where, const json& j, const char* key) {
    const json& v = require(where, j, key);
    if (!v.is_number()) throw InputError(fmt::format("{}: '{}' must be a number, got {}", where, key, v.dump()));
    const double d = v.get<double>();
    if (!std::isfinite(d)) throw InputError(fmt::format("{}: '{}' must be finite", where, key));
    return d;
}

double number_or(std::string_view where, const json& j, const char* key, double fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return number(where, j, key);
}

int integer(std::string_view where, const json& j, const char* key) {
    const double d = number(where, j, key);
    if (d != std::floor(d)) throw InputError(fmt::format("{}: '{}' must be an integer, got {}", where, key, d));
    return static_cast<int>(d);
}

int integer_or(std::string_view where, const json& j, const char* key, int fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return integer(where, j, key);
}

json parse_json_text(std::string_view where, std::string_view text) {
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw InputError(fmt::format("{}: invalid JSON: {}", where, e.what()));
    }
}

json read_json_file(std::string_view flag, std::string_view path) {
    std::ifstream in{std::string(path)};
    if (!in) throw InputError(fmt::format("{}: cannot open file '{}'", flag, path));
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_json_text(fmt::format("{} {}", flag, path), ss.str());
}

const std::set<std::string> kMeta = {"description", "source", "note"};
std::set<std::string> with_meta(std::set<std::string> s) {
    s.insert(kMeta.begin(), kMeta.end());
    return s;
}

// A file may hold one entry, or a {name: entry} object with exactly one entry.
std::pair<std::string, json> single_entry(std::string_view flag, std::string_view path, const json& j,
                                          std::string_view required_key) {
    if (!j.is_object()) throw InputError(fmt::format("{} {}: expected a JSON object", flag, path));
    if (j.contains(std::string(required_key))) {
        std::string stem(path);
        const auto slash = stem.find_last_of('/');
        if (slash != std::string::npos) stem = stem.substr(slash + 1);
        const auto dot = stem.rfind(".json");
        if (dot != std::string::npos) stem = stem.substr(0, dot);
        return {stem, j};
    }
    if (j.size() == 1 && j.begin().value().is_object()) return {j.begin().key(), j.begin().value()};
    throw InputError(fmt::format("{} {}: expected one preset entry (with '{}') or {{\"name\": entry}}", flag, path, required_key));
}

const json& find_preset(std::string_view flag, std::string_view kind, std::string_view name) {
    const json& all = presets(kind);
    const auto it = all.find(std::string(name));
    if (it == all.end())
        throw InputError(fmt::format("{}: unknown {} preset '{}'; valid: {} (or a path to a JSON file)", flag, kind, name,
                                     join(preset_names(kind))));
    return *it;
}

}  // namespace

const json& presets(std::string_view kind) {
    static const std::map<std::string, json, std::less<>> cache = [] {
        std::map<std::string, json, std::less<>> m;
        for (const char* k : {"hardware", "hosts", "links", "models", "workloads", "checkpoints"})
            m.emplace(k, json::parse(embedded_file(k)));
        return m;
    }();
    const auto it = cache.find(kind);
    if (it == cache.end()) throw InputError(fmt::format("unknown preset kind '{}'", kind));
    return it->second;
}

const json& embedded_config(std::string_view name) {
    static const std::map<std::string, json, std::less<>> cache = [] {
        std::map<std::string, json, std::less<>> m;
        for (const char* k : {"prefill_kappa", "layers_budget", "report"}) m.emplace(k, json::parse(embedded_file(k)));
        return m;
    }();
    const auto it = cache.find(name);
    if (it == cache.end()) throw InputError(fmt::format("unknown embedded config '{}'", name));
    return it->second;
}

std::vector<std::string> preset_names(std::string_view kind) {
    std::vector<std::string> out;
    for (const auto& [k, _] : presets(kind).items()) out.push_back(k);
    return out;
}

bool is_path(std::string_view text) noexcept {
    return text.find('/') != std::string_view::npos ||
           (text.size() > 5 && text.substr(text.size() - 5) == ".json");
}

BytesPerSecond load_link(std::string_view flag, std::string_view name) {
    const json& l = find_preset(flag, "links", name);
    return gigabytes_per_s(number(fmt::format("links.{}", name), l, "bandwidth_GBps"));
}

namespace {
HardwareSpec hardware_from_json(std::string_view where, const json& h, std::string name) {
    only_keys(where, h,
              with_meta({"gpu_flops_TFLOPS", "prefill_flops_TFLOPS", "hbm_capacity_GB", "hbm_bandwidth_TBps", "nvlink_bandwidth_GBps", "link",
                         "link_shared_by_gpus", "host", "cpus_per_gpu", "gpus", "eta_compute", "eta_mem", "hbm_reserve_GB"}));
    HardwareSpec hw;
    hw.name = std::move(name);
    hw.gpu_flops = teraflops(number(where, h, "gpu_flops_TFLOPS"));
    hw.prefill_flops = teraflops(number_or(where, h, "prefill_flops_TFLOPS", hw.gpu_flops.raw() / kTera));
    hw.hbm_capacity = gigabytes(number(where, h, "hbm_capacity_GB"));
    hw.hbm_bandwidth = terabytes_per_s(number(where, h, "hbm_bandwidth_TBps"));
    hw.nvlink_bandwidth = gigabytes_per_s(number_or(where, h, "nvlink_bandwidth_GBps", 0.0));
    const std::string link = require(where, h, "link").get<std::string>();
    const double shared = number_or(where, h, "link_shared_by_gpus", 1.0);
    check::positive(fmt::format("{}: link_shared_by_gpus", where), shared);
    hw.link_name = link;
    hw.link_bandwidth = load_link(fmt::format("{}: link", where), link) / shared;
    const std::string host = require(where, h, "host").get<std::string>();
    const json& c = find_preset(fmt::format("{}: host", where), "hosts", host);
    const std::string cw = fmt::format("hosts.{}", host);
    only_keys(cw, c, with_meta({"cpu_flops_TFLOPS", "cpu_dram_bandwidth_GBps", "cpu_memory_GB"}));
    hw.cpu_name = host;
    hw.cpu_flops = teraflops(number(cw, c, "cpu_flops_TFLOPS"));
    hw.cpu_dram_bandwidth = gigabytes_per_s(number(cw, c, "cpu_dram_bandwidth_GBps"));
    hw.cpu_memory = gigabytes(number(cw, c, "cpu_memory_GB"));
    hw.cpus_per_gpu = number(where, h, "cpus_per_gpu");
    hw.gpus = integer_or(where, h, "gpus", 1);
    hw.eta_compute = number_or(where, h, "eta_compute", 0.5);
    hw.eta_mem = number_or(where, h, "eta_mem", 0.5);
    hw.hbm_reserve = gigabytes(number_or(where, h, "hbm_reserve_GB", 2.0));
    return hw;
}
}  // namespace

HardwareSpec load_hardware(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        auto [name, entry] = single_entry(flag, name_or_path, j, "gpu_flops_TFLOPS");
        return hardware_from_json(fmt::format("{} {}", flag, name_or_path), entry, name);
    }
    return hardware_from_json(fmt::format("hardware.{}", name_or_path), find_preset(flag, "hardware", name_or_path),
                              std::string(name_or_path));
}

ModelSpec model_from_json(std::string_view where, const json& m, std::string name) {
    only_keys(where, m,
              with_meta({"attention", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
                         "tied_embeddings", "experts", "experts_active", "shared_experts", "moe_intermediate",
                         "first_dense_layers", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                         "v_head_dim", "published_params_B"}));
    ModelSpec s;
    s.name = std::move(name);
    const std::string att = require(where, m, "attention").get<std::string>();
    if (att == "gqa") s.attention = Attention::gqa;
    else if (att == "mla") s.attention = Attention::mla;
    else throw InputError(fmt::format("{}: 'attention' must be gqa or mla, got '{}'", where, att));
    s.layers = integer(where, m, "layers");
    s.hidden = integer(where, m, "hidden");
    s.heads = integer(where, m, "heads");
    s.vocab = integer(where, m, "vocab");
    s.intermediate = integer_or(where, m, "intermediate", 0);
    s.tied_embeddings = m.value("tied_embeddings", false);
    if (s.attention == Attention::gqa) {
        s.kv_heads = integer(where, m, "kv_heads");
        s.head_dim = integer(where, m, "head_dim");
    } else {
        s.q_lora_rank = integer_or(where, m, "q_lora_rank", 0);
        s.kv_lora_rank = integer(where, m, "kv_lora_rank");
        s.qk_rope_head_dim = integer(where, m, "qk_rope_head_dim");
        s.qk_nope_head_dim = integer(where, m, "qk_nope_head_dim");
        s.v_head_dim = integer(where, m, "v_head_dim");
    }
    s.experts = integer_or(where, m, "experts", 0);
    if (s.experts > 0) {
        s.experts_active = integer(where, m, "experts_active");
        s.shared_experts = integer_or(where, m, "shared_experts", 0);
        s.moe_intermediate = integer(where, m, "moe_intermediate");
        s.first_dense_layers = integer_or(where, m, "first_dense_layers", 0);
    }
    s.published_params = number_or(where, m, "published_params_B", 0.0) * 1e9;
    return s;
}

ModelSpec model_from_hf_config(std::string_view where, const json& in, std::string name) {
    const json& m = in.contains("text_config") && in.at("text_config").is_object() ? in.at("text_config") : in;
    ModelSpec s;
    s.name = std::move(name);
    s.layers = integer(where, m, "num_hidden_layers");
    s.hidden = integer(where, m, "hidden_size");
    s.heads = integer(where, m, "num_attention_heads");
    s.vocab = integer(where, m, "vocab_size");
    s.intermediate = integer_or(where, m, "intermediate_size", 0);
    s.tied_embeddings = m.contains("tie_word_embeddings") && m.at("tie_word_embeddings").is_boolean() &&
                        m.at("tie_word_embeddings").get<bool>();
    if (m.contains("kv_lora_rank") && !m.at("kv_lora_rank").is_null()) {
        s.attention = Attention::mla;
        s.q_lora_rank = integer_or(where, m, "q_lora_rank", 0);
        s.kv_lora_rank = integer(where, m, "kv_lora_rank");
        s.qk_rope_head_dim = integer(where, m, "qk_rope_head_dim");
        s.qk_nope_head_dim = integer(where, m, "qk_nope_head_dim");
        s.v_head_dim = integer(where, m, "v_head_dim");
    } else {
        s.attention = Attention::gqa;
        s.kv_heads = integer_or(where, m, "num_key_value_heads", s.heads);
        s.head_dim = integer_or(where, m, "head_dim", s.hidden / std::max(1, s.heads));
    }
    int experts = 0;
    for (const char* k : {"n_routed_experts", "num_experts", "num_local_experts"}) {
        if (m.contains(k) && !m.at(k).is_null()) {
            experts = integer(where, m, k);
            break;
        }
    }
    if (experts > 0) {
        s.experts = experts;
        s.experts_active = integer(where, m, "num_experts_per_tok");
        s.moe_intermediate = integer_or(where, m, "moe_intermediate_size", s.intermediate);
        s.shared_experts = integer_or(where, m, "n_shared_experts", 0);
        if (s.shared_experts == 0 && m.contains("shared_expert_intermediate_size") && s.moe_intermediate > 0) {
            const int shared = integer(where, m, "shared_expert_intermediate_size");
            s.shared_experts = (shared + s.moe_intermediate - 1) / s.moe_intermediate;
        }
        s.first_dense_layers = integer_or(where, m, "first_k_dense_replace", 0);
    }
    return s;
}

ModelSpec load_model(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        const std::string where = fmt::format("{} {}", flag, name_or_path);
        if (j.is_object() && (j.contains("num_hidden_layers") || j.contains("text_config"))) {
            std::string name(name_or_path);
            if (j.contains("_name_or_path") && j.at("_name_or_path").is_string()) name = j.at("_name_or_path").get<std::string>();
            ModelSpec s = model_from_hf_config(where, j, name);
            s.check_validity();
            return s;
        }
        auto [name, entry] = single_entry(flag, name_or_path, j, "attention");
        ModelSpec s = model_from_json(where, entry, name);
        s.check_validity();
        return s;
    }
    ModelSpec s = model_from_json(fmt::format("models.{}", name_or_path), find_preset(flag, "models", name_or_path),
                                  std::string(name_or_path));
    s.check_validity();
    return s;
}

double lognormal_mean_from_median_p99(double median, double p99) noexcept {
    constexpr double kZ99 = 2.3263478740408408;  // standard normal 0.99 quantile
    const double sigma = std::log(p99 / median) / kZ99;
    return median * std::exp(0.5 * sigma * sigma);
}

namespace {
CallClass workload_from_json(std::string_view where, const json& w, std::string name) {
    only_keys(where, w,
              with_meta({"s_cached_tokens", "a_append_tokens", "o_output_tokens", "calls_per_session", "idle_gap_s",
                         "idle_gap_median_s", "idle_gap_p99_s"}));
    CallClass c;
    c.name = std::move(name);
    c.s_cached = number(where, w, "s_cached_tokens");
    c.a_append = number(where, w, "a_append_tokens");
    c.o_output = number(where, w, "o_output_tokens");
    if (w.contains("idle_gap_s")) {
        c.idle_gap = Seconds(number(where, w, "idle_gap_s"));
    } else if (w.contains("idle_gap_median_s")) {
        const double med = number(where, w, "idle_gap_median_s");
        const double p99 = number(where, w, "idle_gap_p99_s");
        if (!(med > 0) || !(p99 >= med))
            throw InputError(fmt::format("{}: idle gap needs 0 < median <= p99, got {} and {}", where, med, p99));
        c.idle_gap = Seconds(lognormal_mean_from_median_p99(med, p99));
    }
    c.check_validity();
    return c;
}
}  // namespace

CallClass load_workload(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        auto [name, entry] = single_entry(flag, name_or_path, j, "s_cached_tokens");
        return workload_from_json(fmt::format("{} {}", flag, name_or_path), entry, name);
    }
    return workload_from_json(fmt::format("workloads.{}", name_or_path), find_preset(flag, "workloads", name_or_path),
                              std::string(name_or_path));
}

namespace {
Checkpoint checkpoint_from_json(std::string_view where, const json& c, std::string name) {
    only_keys(where, c,
              with_meta({"layers", "layer_GiB", "non_layer_GiB", "total_GiB", "experts", "experts_active", "routed_fraction",
                         "model", "weight_bits"}));
    Checkpoint k;
    k.name = std::move(name);
    k.non_layer_bytes = gibibytes(number_or(where, c, "non_layer_GiB", 0.0));
    k.total_bytes = gibibytes(number_or(where, c, "total_GiB", 0.0));
    if (c.contains("model")) {
        if (c.contains("layer_GiB") || c.contains("layers"))
            throw InputError(fmt::format("{}: give either 'model' + 'weight_bits' or 'layers' + 'layer_GiB', not both", where));
        const ModelSpec m = load_model(fmt::format("{}: model", where), require(where, c, "model").get<std::string>());
        const double bits = number(where, c, "weight_bits");
        check::positive(fmt::format("{}: weight_bits", where), bits);
        const Bytes non_layer = k.non_layer_bytes, total = k.total_bytes;
        k = checkpoint_from_model(m, bits, k.name);
        k.non_layer_bytes = non_layer;
        k.total_bytes = total;
    } else {
        k.layers = integer(where, c, "layers");
        k.layer_bytes = gibibytes(number(where, c, "layer_GiB"));
        k.experts = integer_or(where, c, "experts", 0);
        if (k.experts > 0) {
            k.experts_active = integer(where, c, "experts_active");
            k.routed_fraction = number(where, c, "routed_fraction");
        }
    }
    k.check_validity();
    return k;
}
}  // namespace

Checkpoint load_checkpoint(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        auto [name, entry] = single_entry(flag, name_or_path, j, "layer_GiB");
        return checkpoint_from_json(fmt::format("{} {}", flag, name_or_path), entry, name);
    }
    return checkpoint_from_json(fmt::format("checkpoints.{}", name_or_path), find_preset(flag, "checkpoints", name_or_path),
                                std::string(name_or_path));
}

}  // namespace kvroof::io
