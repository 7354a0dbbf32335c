// SPDX-License-Identifier: MIT
#pragma once
// Scenarios shared by the tests: the embedded default and a tiny hand-checkable model.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kvroof/analysis/load_spec.hpp"
#include "kvroof/analysis/prefill_study.hpp"
#include "kvroof/analysis/serving.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::test {

// The load of an operating point: mode and value (B, C or R), prefill mode and chunk.
inline LoadSpec point_load(LoadMode m, double v, PrefillMode p = PrefillMode::chunked, double chunk = 2048) {
    LoadSpec l;
    l.mode = m;
    l.value = v;
    l.prefill = p;
    l.chunk = chunk;
    return l;
}

inline Scenario default_scenario() { return io::build_scenario(io::ScenarioInputs{}).scenario; }

inline Scenario scenario_with(void (*edit)(io::ScenarioInputs&)) {
    io::ScenarioInputs in;
    edit(in);
    return io::build_scenario(in).scenario;
}

// Round system rates for hand checks: 1 MFLOP/s GPU, 1 kB/s HBM, 0.1 MFLOP/s CPU,
// 100 B/s DRAM, 10 B/s link, 1 GB of each memory.
inline SystemRates round_rates() {
    SystemRates s;
    s.gpu_flops = FlopPerSecond(1e6);
    s.hbm_bandwidth = BytesPerSecond(1e3);
    s.hbm_capacity = Bytes(1e9);
    s.cpu_flops = FlopPerSecond(1e5);
    s.cpu_dram_bandwidth = BytesPerSecond(1e2);
    s.cpu_memory = Bytes(1e9);
    s.link_bandwidth = BytesPerSecond(10);
    return s;
}

// 2 layers, hidden 4, 2 heads, 1 KV head of dim 2, MLP 8, vocab 10.
inline ModelSpec tiny_model() {
    ModelSpec m;
    m.name = "tiny";
    m.layers = 2;
    m.hidden = 4;
    m.heads = 2;
    m.kv_heads = 1;
    m.head_dim = 2;
    m.intermediate = 8;
    m.vocab = 10;
    return m;
}

// One tiny-model prefill on a hand-made GPU: 10 GB of HBM, 1 GB reserved, a
// 1 GB/s link, 1 TFLOP/s (GEMMs and attention), K = 4000 cached and T = 2 new tokens.
inline PrefillSetup tiny_prefill(int gpus, BytesPerSecond hbm_bandwidth) {
    PrefillSetup s;
    s.hardware.name = "hand";
    s.hardware.gpu.hbm_capacity = gigabytes(10);
    s.hardware.gpu.hbm_reserve = gigabytes(1);
    s.hardware.gpu.hbm_bandwidth = hbm_bandwidth;
    s.model = tiny_model();
    s.workload = CallClass{"w", 4000, 2, 1, Seconds(0)};
    s.link_name = "hand";
    s.link = gigabytes_per_s(1);
    s.c_eff = teraflops(1);
    s.attention_flops = teraflops(1);
    s.tp.gpus = gpus;
    return s;
}

// A new file kvroof_<stem>_<pid>_<n>.json in the temp folder holding `text`; its path.
inline std::string temp_json_file(const std::string& stem, const std::string& text) {
    static int n = 0;
    const auto path = std::filesystem::temp_directory_path() /
                      ("kvroof_" + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(++n) + ".json");
    std::ofstream(path) << text;
    return path.string();
}

// A Llama-3.1-8B-shaped Hugging Face config.json with `extra` keys added, in
// a file of its own (load_model caches by path).
inline std::string hf_config_file(const std::string& extra, const std::string& model_type = "llama") {
    return temp_json_file("hf", R"({"model_type": ")" + model_type +
                                    R"(", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
      "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072)" +
                                    (extra.empty() ? "" : ", " + extra) + "}");
}

}  // namespace kvroof::test
