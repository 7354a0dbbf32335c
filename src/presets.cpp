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

// "number 5", "array [1,2]": what a value is, for an error message (cut short).
std::string found(const json& v) {
    if (v.is_null()) return "null";
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return fmt::format("{} {}", v.type_name(), text);
}

double number(std::string_view where, const json& j, const char* key) {
    const json& v = require(where, j, key);
    if (!v.is_number()) throw InputError(fmt::format("{}: '{}' must be a number, got {}", where, key, found(v)));
    const double d = v.get<double>();
    if (!std::isfinite(d)) throw InputError(fmt::format("{}: '{}' must be finite", where, key));
    return d;
}

double number_or(std::string_view where, const json& j, const char* key, double fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return number(where, j, key);
}

// A whole number in [lo, hi], range-checked before the conversion to int.
int integer(std::string_view where, const json& j, const char* key, int lo, int hi) {
    const double d = number(where, j, key);
    if (d != std::floor(d) || d < lo || d > hi)
        throw InputError(fmt::format("{}: '{}' must be a whole number in [{}, {}], got {}", where, key, lo, hi, j.at(key).dump()));
    return static_cast<int>(d);
}
int integer_or(std::string_view where, const json& j, const char* key, int lo, int hi, int fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return integer(where, j, key, lo, hi);
}
// The same for a model field stored under `key`, with the range of data/models.json's `field`.
int field(std::string_view where, const json& j, const char* key, std::string_view field_name) {
    const ModelFieldRange& r = model_field_range(field_name);
    return integer(where, j, key, r.lo, r.hi);
}
int field_or(std::string_view where, const json& j, const char* key, std::string_view field_name, int fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return field(where, j, key, field_name);
}

std::string string(std::string_view where, const json& j, const char* key) {
    const json& v = require(where, j, key);
    if (!v.is_string()) throw InputError(fmt::format("{}: '{}' must be a string, got {}", where, key, found(v)));
    return v.get<std::string>();
}

bool boolean_or(std::string_view where, const json& j, const char* key, bool fallback) {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    const json& v = j.at(key);
    if (!v.is_boolean()) throw InputError(fmt::format("{}: '{}' must be true or false, got {}", where, key, found(v)));
    return v.get<bool>();
}

// nlohmann's what() without its "[json.exception.parse_error.101] " tag, on one line.
std::string json_message(const json::exception& e) {
    std::string m = e.what();
    if (!m.empty() && m.front() == '[') {
        const auto close = m.find("] ");
        if (close != std::string::npos) m = m.substr(close + 2);
    }
    for (char& c : m)
        if (c == '\n' || c == '\r') c = ' ';
    return m;
}

const std::set<std::string> kMeta = {"description", "source", "note"};
std::set<std::string> with_meta(std::set<std::string> s) {
    s.insert(kMeta.begin(), kMeta.end());
    return s;
}

// A file may hold one entry, or a {name: entry} object with exactly one entry.
// The entry is returned by reference into `j`, never copied.
struct Entry {
    std::string name;
    const json& value;
};
Entry single_entry(std::string_view flag, std::string_view path, const json& j, std::string_view required_key) {
    if (!j.is_object()) throw InputError(fmt::format("{} {}: expected a JSON object, got {}", flag, path, j.type_name()));
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

nlohmann::json parse_json_text(std::string_view where, std::string_view text) {
    std::string last_key;
    const json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
        if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= kMaxJsonDepth)
            throw InputError(fmt::format("{}: JSON nested deeper than {} levels", where, kMaxJsonDepth));
        if (event == json::parse_event_t::key && parsed.is_string()) last_key = parsed.get<std::string>();
        return true;
    };
    try {
        return json::parse(text, cb);
    } catch (const json::out_of_range& e) {  // 406: a number beyond double, e.g. 1e400
        if (last_key.empty()) throw InputError(fmt::format("{}: {} (numbers must be finite doubles)", where, json_message(e)));
        throw InputError(fmt::format("{}: '{}': {} (numbers must be finite doubles)", where, last_key, json_message(e)));
    } catch (const json::exception& e) {
        throw InputError(fmt::format("{}: invalid JSON: {}", where, json_message(e)));
    }
}

nlohmann::json read_json_file(std::string_view flag, std::string_view path) {
    std::ifstream in{std::string(path)};
    if (!in) throw InputError(fmt::format("{}: cannot open file '{}'", flag, path));
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw InputError(fmt::format("{}: cannot read file '{}'", flag, path));
    return parse_json_text(fmt::format("{} {}", flag, path), ss.str());
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
    const std::string link = string(where, h, "link");
    const double shared = number_or(where, h, "link_shared_by_gpus", 1.0);
    check::in_range(fmt::format("{}: link_shared_by_gpus", where), shared, 1.0, limits::kMaxGpus);
    hw.link_name = link;
    hw.link_bandwidth = load_link(fmt::format("{}: link", where), link) / shared;
    const std::string host = string(where, h, "host");
    const json& c = find_preset(fmt::format("{}: host", where), "hosts", host);
    const std::string cw = fmt::format("hosts.{}", host);
    only_keys(cw, c, with_meta({"cpu_flops_TFLOPS", "cpu_dram_bandwidth_GBps", "cpu_memory_GB"}));
    hw.cpu_name = host;
    hw.cpu_flops = teraflops(number(cw, c, "cpu_flops_TFLOPS"));
    hw.cpu_dram_bandwidth = gigabytes_per_s(number(cw, c, "cpu_dram_bandwidth_GBps"));
    hw.cpu_memory = gigabytes(number(cw, c, "cpu_memory_GB"));
    hw.cpus_per_gpu = number(where, h, "cpus_per_gpu");
    hw.gpus = integer_or(where, h, "gpus", 1, limits::kMaxGpus, 1);
    hw.eta_compute = number_or(where, h, "eta_compute", 0.5);
    hw.eta_mem = number_or(where, h, "eta_mem", 0.5);
    hw.hbm_reserve = gigabytes(number_or(where, h, "hbm_reserve_GB", 2.0));
    return hw;
}
}  // namespace

HardwareSpec load_hardware(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        const Entry e = single_entry(flag, name_or_path, j, "gpu_flops_TFLOPS");
        const std::string where = fmt::format("{} {}", flag, name_or_path);
        HardwareSpec hw = hardware_from_json(where, e.value, e.name);
        try {
            hw.check_validity();
        } catch (const InputError& err) {
            throw InputError(fmt::format("{}: {}", where, err.what()));
        }
        return hw;
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
    const std::string att = string(where, m, "attention");
    if (att == "gqa") s.attention = Attention::gqa;
    else if (att == "mla") s.attention = Attention::mla;
    else throw InputError(fmt::format("{}: 'attention' must be gqa or mla, got '{}'", where, att));
    auto int_field = [&](const char* key) { return field(where, m, key, key); };
    auto int_field_or = [&](const char* key, int fallback) { return field_or(where, m, key, key, fallback); };
    s.layers = int_field("layers");
    s.hidden = int_field("hidden");
    s.heads = int_field("heads");
    s.vocab = int_field("vocab");
    s.intermediate = int_field_or("intermediate", 0);
    s.tied_embeddings = boolean_or(where, m, "tied_embeddings", false);
    if (s.attention == Attention::gqa) {
        s.kv_heads = int_field("kv_heads");
        s.head_dim = int_field("head_dim");
    } else {
        s.q_lora_rank = int_field_or("q_lora_rank", 0);
        s.kv_lora_rank = int_field("kv_lora_rank");
        s.qk_rope_head_dim = int_field("qk_rope_head_dim");
        s.qk_nope_head_dim = int_field("qk_nope_head_dim");
        s.v_head_dim = int_field("v_head_dim");
    }
    s.experts = int_field_or("experts", 0);
    if (s.experts > 0) {
        s.experts_active = int_field("experts_active");
        s.shared_experts = int_field_or("shared_experts", 0);
        s.moe_intermediate = int_field("moe_intermediate");
        s.first_dense_layers = int_field_or("first_dense_layers", 0);
    }
    s.published_params = number_or(where, m, "published_params_B", 0.0) * 1e9;
    check::in_range(fmt::format("{}: published_params_B", where), s.published_params / 1e9, 0.0, 1e9);
    return s;
}

ModelSpec model_from_hf_config(std::string_view where, const json& in, std::string name) {
    if (!in.is_object()) throw InputError(fmt::format("{}: expected a JSON object, got {}", where, in.type_name()));
    const bool nested = in.contains("text_config") && !in.at("text_config").is_null();
    if (nested && !in.at("text_config").is_object())
        throw InputError(fmt::format("{}: 'text_config' must be an object, got {}", where, found(in.at("text_config"))));
    const json& m = nested ? in.at("text_config") : in;
    ModelSpec s;
    s.name = std::move(name);
    s.layers = field(where, m, "num_hidden_layers", "layers");
    s.hidden = field(where, m, "hidden_size", "hidden");
    s.heads = field(where, m, "num_attention_heads", "heads");
    s.vocab = field(where, m, "vocab_size", "vocab");
    s.intermediate = field_or(where, m, "intermediate_size", "intermediate", 0);
    s.tied_embeddings = boolean_or(where, m, "tie_word_embeddings", false);
    if (m.contains("kv_lora_rank") && !m.at("kv_lora_rank").is_null()) {
        s.attention = Attention::mla;
        s.q_lora_rank = field_or(where, m, "q_lora_rank", "q_lora_rank", 0);
        s.kv_lora_rank = field(where, m, "kv_lora_rank", "kv_lora_rank");
        s.qk_rope_head_dim = field(where, m, "qk_rope_head_dim", "qk_rope_head_dim");
        s.qk_nope_head_dim = field(where, m, "qk_nope_head_dim", "qk_nope_head_dim");
        s.v_head_dim = field(where, m, "v_head_dim", "v_head_dim");
    } else {
        s.attention = Attention::gqa;
        s.kv_heads = field_or(where, m, "num_key_value_heads", "kv_heads", s.heads);
        s.head_dim = field_or(where, m, "head_dim", "head_dim", std::max(1, s.hidden / s.heads));
    }
    int experts = 0;
    for (const char* k : {"n_routed_experts", "num_experts", "num_local_experts"}) {
        if (m.contains(k) && !m.at(k).is_null()) {
            experts = field(where, m, k, "experts");
            break;
        }
    }
    if (experts > 0) {
        s.experts = experts;
        s.experts_active = field(where, m, "num_experts_per_tok", "experts_active");
        s.moe_intermediate = field_or(where, m, "moe_intermediate_size", "moe_intermediate", s.intermediate);
        s.shared_experts = field_or(where, m, "n_shared_experts", "shared_experts", 0);
        if (s.shared_experts == 0 && m.contains("shared_expert_intermediate_size") && s.moe_intermediate > 0) {
            // Shared experts of moe_intermediate width that cover the shared width, rounded up (in double: no overflow).
            const int shared = integer(where, m, "shared_expert_intermediate_size", 0, model_field_range("moe_intermediate").hi);
            const double count = std::ceil(static_cast<double>(shared) / s.moe_intermediate);
            s.shared_experts = static_cast<int>(count);  // <= 1e7 / 1
        }
        s.first_dense_layers = field_or(where, m, "first_k_dense_replace", "first_dense_layers", 0);
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
            s.check_validity(where);
            return s;
        }
        const Entry e = single_entry(flag, name_or_path, j, "attention");
        ModelSpec s = model_from_json(where, e.value, e.name);
        s.check_validity(where);
        return s;
    }
    const std::string where = fmt::format("models.{}", name_or_path);
    ModelSpec s = model_from_json(where, find_preset(flag, "models", name_or_path), std::string(name_or_path));
    s.check_validity(where);
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
    c.check_validity(where);
    return c;
}
}  // namespace

CallClass load_workload(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        const Entry e = single_entry(flag, name_or_path, j, "s_cached_tokens");
        return workload_from_json(fmt::format("{} {}", flag, name_or_path), e.value, e.name);
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
        const ModelSpec m = load_model(fmt::format("{}: model", where), string(where, c, "model"));
        const double bits = number(where, c, "weight_bits");
        check::in_range(fmt::format("{}: weight_bits", where), bits, limits::kMinWeightBits, limits::kMaxWeightBits);
        const Bytes non_layer = k.non_layer_bytes, total = k.total_bytes;
        k = checkpoint_from_model(m, bits, k.name);
        k.non_layer_bytes = non_layer;
        k.total_bytes = total;
    } else {
        k.layers = field(where, c, "layers", "layers");
        k.layer_bytes = gibibytes(number(where, c, "layer_GiB"));
        k.experts = field_or(where, c, "experts", "experts", 0);
        if (k.experts > 0) {
            k.experts_active = field(where, c, "experts_active", "experts_active");
            k.routed_fraction = number(where, c, "routed_fraction");
        }
    }
    k.check_validity(where);
    return k;
}
}  // namespace

Checkpoint load_checkpoint(std::string_view flag, std::string_view name_or_path) {
    if (is_path(name_or_path)) {
        const json j = read_json_file(flag, name_or_path);
        const Entry e = single_entry(flag, name_or_path, j, "layer_GiB");
        return checkpoint_from_json(fmt::format("{} {}", flag, name_or_path), e.value, e.name);
    }
    return checkpoint_from_json(fmt::format("checkpoints.{}", name_or_path), find_preset(flag, "checkpoints", name_or_path),
                                std::string(name_or_path));
}

}  // namespace kvroof::io
