// SPDX-License-Identifier: MIT
// Bad input never becomes a silent wrong answer: every file value and flag has
// a range, every JSON file is read with a depth cap, and a wrong type names
// the file and the key.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "kvroof/analysis/layer_offload.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/physics/model_quantities.hpp"

using namespace kvroof;

namespace {
// A file in a fresh folder under the system temp dir, removed with the object.
struct TempFile {
    std::filesystem::path dir, path;
    TempFile(const std::string& name, const std::string& text) {
        // A random suffix: concurrent test processes (ctest -j, other checkouts) never share a folder.
        dir = std::filesystem::temp_directory_path() / ("kvroof_input_ranges_" + std::to_string(std::random_device{}()) + "_" +
                                                        std::to_string(std::hash<std::string>{}(name + text)));
        std::filesystem::create_directories(dir);
        path = dir / name;
        std::ofstream(path) << text;
    }
    ~TempFile() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
};

const char* kMlaTail =
    R"("layers":1,"hidden":1,"heads":1,"q_lora_rank":0,"qk_rope_head_dim":1,"qk_nope_head_dim":1,"v_head_dim":1,"intermediate":1,"vocab":1)";

std::string mla_model(const std::string& kv_lora_rank) {
    return std::string(R"({"m":{"attention":"mla","kv_lora_rank":)") + kv_lora_rank + "," + kMlaTail + "}}";
}
}  // namespace

TEST_CASE("an MLA rank beyond its range is an input error naming the file and key", "[ranges]") {
    const TempFile f("overflow.json", mla_model("2147483647"));
    CHECK_THROWS_WITH(io::load_model("--model", f.path.string()),
                      Catch::Contains("--model") && Catch::Contains("overflow.json") && Catch::Contains("kv_lora_rank") &&
                          Catch::Contains("1000000"));
}

TEST_CASE("an integer too large for int is rejected before any conversion", "[ranges]") {
    const TempFile heads(
        "heads.json",
        R"({"attention":"gqa","layers":1,"hidden":8,"heads":2147483648,"kv_heads":1,"head_dim":1,"intermediate":1,"vocab":1})");
    CHECK_THROWS_WITH(io::load_model("--model", heads.path.string()),
                      Catch::Contains("'heads'") && Catch::Contains("2147483648"));
    const TempFile hidden(
        "hidden.json",
        R"({"attention":"gqa","layers":1,"hidden":1e15,"heads":1,"kv_heads":1,"head_dim":1,"intermediate":1,"vocab":1})");
    CHECK_THROWS_WITH(io::load_model("--model", hidden.path.string()), Catch::Contains("'hidden'"));
}

TEST_CASE("every model field at the top of its range gives finite positive figures", "[ranges]") {
    ModelSpec m;
    m.name = "huge";
    m.attention = Attention::mla;
    for (const auto& r : kModelFieldRanges) m.*r.field = r.hi;
    m.first_dense_layers = m.layers / 2;
    m.window_layers = m.layers / 4;
    m.linear_layers = m.layers / 4;
    m.mlp_only_layers = m.mlp_free_layers = 0;  // dense models only: below
    REQUIRE_NOTHROW(m.check_validity());
    CHECK(std::isfinite(linear_state_bytes(m).raw()));
    CHECK(linear_state_bytes(m).raw() > 0);
    const ParamCounts p = param_counts(m);
    CHECK(std::isfinite(p.total));
    CHECK(p.total > 0);
    CHECK(std::isfinite(kv_bytes_per_token(m, DType::bf16).raw()));
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() > 0);
    CHECK(attention_flop_per_key(m, Phase::decode) > 0);
    CHECK(offload_link_bytes_per_token(m).d2h.raw() > 0);
    m.attention = Attention::gqa;
    CHECK(kv_bytes_per_token(m, DType::int4).raw() > 0);
    // A dense hybrid at the top of the ranges: Mamba-2, MLP-only and MLP-free layers, per-layer widths.
    m.experts = 0;
    m.index_topk = 0;
    m.linear_kind = LinearKind::mamba2;
    m.mlp_only_layers = m.layers / 4;
    m.mlp_free_layers = m.layers / 2;
    m.mlp_gated = false;
    m.mlp_widths.assign(static_cast<std::size_t>(m.layers - m.mlp_free_layers), 10'000'000);
    REQUIRE_NOTHROW(m.check_validity());
    CHECK(std::isfinite(param_counts(m).total));
    CHECK(param_counts(m).total > 0);
    CHECK(kv_bytes_per_token(m, DType::bf16).raw() > 0);
    CHECK(linear_state_flop_per_token(m) > 0);
}

TEST_CASE("model validity messages name the flag and file", "[ranges]") {
    const TempFile f(
        "my.json",
        R"({"attention":"gqa","layers":1,"hidden":8,"heads":40,"kv_heads":6,"head_dim":1,"intermediate":1,"vocab":1})");
    CHECK_THROWS_WITH(io::load_model("--model", f.path.string()),
                      Catch::Contains("--model") && Catch::Contains("my.json") &&
                          Catch::Contains("heads (40) must be a multiple of kv_heads (6)"));
}

TEST_CASE("a deeply nested JSON file is an input error, not a crash", "[ranges]") {
    const int depth = 100000;
    std::string text;
    for (int i = 0; i < depth; ++i) text += "{\"a\":";
    text += "1";
    text += std::string(depth, '}');
    const TempFile f("deep.json", text);
    for (auto load : {+[](const std::string& p) { (void)io::load_model("--model", p); },
                      +[](const std::string& p) { (void)io::load_hardware("--hardware", p); },
                      +[](const std::string& p) { (void)io::load_workload("--workload", p); },
                      +[](const std::string& p) { (void)io::load_checkpoint("--checkpoint", p); }})
        CHECK_THROWS_WITH(load(f.path.string()), Catch::Contains("deep.json") && Catch::Contains("nested deeper than 64"));
    CHECK_THROWS_AS(io::parse_json_text("x", std::string(65, '[') + "1" + std::string(65, ']')), InputError);
    CHECK_NOTHROW(io::parse_json_text("x", std::string(64, '[') + "1" + std::string(64, ']')));
}

TEST_CASE("wrong JSON types name the file, the key, the expected and the found type", "[ranges]") {
    const TempFile link(
        "link.json",
        R"({"gpu_flops_TFLOPS":1000,"hbm_capacity_GB":80,"hbm_bandwidth_TBps":3,"link":5,"host":"grace","cpus_per_gpu":1})");
    CHECK_THROWS_WITH(io::load_hardware("--hardware", link.path.string()),
                      Catch::Contains("link.json") && Catch::Contains("'link' must be a string, got number 5"));
    const TempFile host(
        "host.json",
        R"({"gpu_flops_TFLOPS":1000,"hbm_capacity_GB":80,"hbm_bandwidth_TBps":3,"link":"pcie-gen5","host":[],"cpus_per_gpu":1})");
    CHECK_THROWS_WITH(io::load_hardware("--hardware", host.path.string()), Catch::Contains("'host' must be a string, got array"));
    const TempFile att(
        "att.json",
        R"({"attention":false,"layers":1,"hidden":8,"heads":1,"kv_heads":1,"head_dim":1,"intermediate":1,"vocab":1})");
    CHECK_THROWS_WITH(io::load_model("--model", att.path.string()), Catch::Contains("'attention' must be a string, got boolean"));
    const TempFile tied(
        "tied.json",
        R"({"attention":"gqa","layers":1,"hidden":8,"heads":1,"kv_heads":1,"head_dim":1,"intermediate":1,"vocab":1,"tied_embeddings":1})");
    CHECK_THROWS_WITH(io::load_model("--model", tied.path.string()),
                      Catch::Contains("'tied_embeddings' must be true or false, got number 1"));
}

TEST_CASE("a number beyond double names the file and the key", "[ranges]") {
    const TempFile f(
        "big.json",
        R"({"attention":"gqa","layers":1,"hidden":8,"heads":1,"kv_heads":1,"head_dim":1,"intermediate":1,"vocab":1e400})");
    CHECK_THROWS_WITH(io::load_model("--model", f.path.string()), Catch::Contains("big.json") && Catch::Contains("'vocab'"));
}

TEST_CASE("flags outside their documented ranges are input errors", "[ranges]") {
    auto with = [](void (*edit)(io::ScenarioInputs&)) {
        io::ScenarioInputs in;
        edit(in);
        return io::build_scenario(in);
    };
    CHECK_THROWS_WITH(with([](io::ScenarioInputs& in) { in.set("eta-mem", "1e-320"); }),
                      Catch::Contains("--eta-mem") && Catch::Contains("0.001"));
    CHECK_THROWS_WITH(with([](io::ScenarioInputs& in) { in.set("gpus", "3e9"); }),
                      Catch::Contains("--gpus") && Catch::Contains("100000"));
    CHECK_THROWS_WITH(with([](io::ScenarioInputs& in) { in.set("workload", "s_cached=1e308,a_append=1,o_output=1"); }),
                      Catch::Contains("--workload") && Catch::Contains("s_cached"));
    CHECK_NOTHROW(with([](io::ScenarioInputs& in) { in.set("gpus", "100000"); }));
    CHECK_NOTHROW(with([](io::ScenarioInputs& in) { in.set("eta", "0.001"); }));
}

TEST_CASE("whole_in_range checks before converting", "[ranges]") {
    CHECK(check::whole_in_range("--n", 5.0, 1, 10) == 5);
    CHECK_THROWS_WITH(check::whole_in_range("--n", 1e10, 0, 10000), Catch::Contains("--n") && Catch::Contains("got 10000000000"));
    CHECK_THROWS_WITH(check::whole_in_range("--n", 2.5, 0, 10), Catch::Contains("whole"));
    CHECK_THROWS(check::whole_in_range("--n", std::nan(""), 0, 10));
}

TEST_CASE("a slow decode target lets every layer move, never a negative count", "[ranges]") {
    const Checkpoint c = io::load_checkpoint("--checkpoint", "llama-70b-fp4");
    LayerHost h{Bytes(22e9), BytesPerSecond(1e18), Seconds(1e-3), std::nullopt, std::nullopt};
    const DecodeTarget d = decode_target(c, h, 1, 1e-6);
    CHECK(d.max_offloaded == c.layers);
}
