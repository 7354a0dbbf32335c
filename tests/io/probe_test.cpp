// SPDX-License-Identifier: MIT
// `kvroof probe`: the attention kernel against a naive reference, the byte and
// FLOP accounting, and the host preset's schema. No assertion on speed.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "kvroof/io/probe.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/spec/knobs.hpp"
#include "probe_support.hpp"

using namespace kvroof;

namespace {
// softmax(q·Kᵀ/√d)·V per query head, in double, the textbook way.
std::vector<double> naive_attention(const io::AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v) {
    const int d = s.head_dim, n = s.context;
    std::vector<double> out(static_cast<std::size_t>(s.q_heads() * d), 0.0);
    for (int h = 0; h < s.q_heads(); ++h) {
        const int g = h / s.group;
        std::vector<double> w(static_cast<std::size_t>(n));
        double mx = -1e300, sum = 0;
        for (int t = 0; t < n; ++t) {
            double dot = 0;
            for (int i = 0; i < d; ++i)
                dot += static_cast<double>(q[static_cast<std::size_t>(h * d + i)]) *
                       static_cast<double>(k[static_cast<std::size_t>((g * n + t) * d + i)]);
            w[static_cast<std::size_t>(t)] = dot / std::sqrt(static_cast<double>(d));
            mx = std::max(mx, w[static_cast<std::size_t>(t)]);
        }
        for (auto& x : w) sum += (x = std::exp(x - mx));
        for (int t = 0; t < n; ++t)
            for (int i = 0; i < d; ++i)
                out[static_cast<std::size_t>(h * d + i)] +=
                    w[static_cast<std::size_t>(t)] / sum * static_cast<double>(v[static_cast<std::size_t>((g * n + t) * d + i)]);
    }
    return out;
}
}  // namespace

TEST_CASE("decode attention matches a naive reference for any thread count") {
    io::AttentionShape s;
    s.kv_heads = 2, s.group = 2, s.head_dim = 4, s.context = 5;
    std::vector<float> q(16), k(40), v(40);
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(std::sin(1.0 + static_cast<double>(i)));
    for (std::size_t i = 0; i < k.size(); ++i) {
        k[i] = static_cast<float>(std::cos(0.3 * static_cast<double>(i)) * 2);
        v[i] = static_cast<float>(static_cast<double>(i % 7) - 3.0);
    }
    const std::vector<double> want = naive_attention(s, q, k, v);
    for (const int threads : {1, 2, 3, 8}) {
        std::vector<float> out(16, -99.0f);
        io::decode_attention(s, q.data(), k.data(), v.data(), out.data(), threads);
        INFO("threads " << threads);
        for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(want[i]).margin(1e-5));
    }
}

TEST_CASE("attention with one token returns its value row, and the accounting is hand-checkable") {
    io::AttentionShape s;
    s.kv_heads = 1, s.group = 3, s.head_dim = 2, s.context = 1;
    const std::vector<float> q = {1, 2, 3, 4, 5, 6}, k = {0.5f, -1}, v = {7, -8};
    std::vector<float> out(6);
    io::decode_attention(s, q.data(), k.data(), v.data(), out.data(), 4);
    for (int h = 0; h < 3; ++h)
        CHECK((out[static_cast<std::size_t>(2 * h)] == 7.0f && out[static_cast<std::size_t>(2 * h + 1)] == -8.0f));
    io::AttentionShape t;
    t.kv_heads = 2, t.group = 2, t.head_dim = 4, t.context = 5;
    CHECK(io::attention_flops(t) == 320.0);  // 4 · 4 query heads · 5 tokens · 4
    CHECK(io::attention_bytes(t) == 448.0);  // 4 B · (K and V: 2·2·5·4 + q and out: 2·4·4)
    CHECK(io::triad_bytes(1000) == 24000.0);  // b and c read, a written: 3 · 8 B
    io::TriadRun r;
    r.elements = 1'000'000;
    r.best_s = 0.01;
    CHECK(r.bandwidth() == Approx(2.4e9));
}

TEST_CASE("the probe's host preset has data/hosts.json's entry schema and values in the knobs' ranges") {
    const io::ProbeResult r = test::probe_box(1024, 0.002);  // 24 GB/s of triad
    const auto j = io::probe_host_preset(r);
    REQUIRE(j.size() == 1);
    REQUIRE(j.contains("probe-box"));
    const auto& e = j.at("probe-box");
    std::set<std::string> allowed = {"description", "source", "note"};
    for (const Knob& k : knobs()) {
        if (k.preset != PresetFile::host) continue;
        const std::string key(k.preset_key);
        allowed.insert(key);
        if (k.preset_required) REQUIRE(e.contains(key));
        if (!e.contains(key)) continue;
        const double si = e.at(key).get<double>() * io::bare_si(k);
        INFO(key);
        CHECK(si >= k.lo);
        CHECK(si <= k.hi);
    }
    for (const auto& [key, value] : e.items()) CHECK(allowed.count(key) == 1);
    CHECK(e.at("cpu_dram_bandwidth_GBps").get<double>() == Approx(24.0));
    CHECK(e.at("cpu_flops_TFLOPS").get<double>() ==
          Approx(io::attention_flops(r.attention.front().shape) / 0.002 / 1e12).epsilon(1e-3));
    CHECK(e.at("source").at(0).get<std::string>() == "measured by kvroof probe on box");
    CHECK(e.at("note").get<std::string>().find("2026-12-01") != std::string::npos);
}

TEST_CASE("on two NUMA nodes the host preset is one socket: the per-node triads' mean, half the memory and FLOP/s") {
    io::ProbeResult r = test::probe_box(1024, 0.002);  // all threads: 24 GB/s of triad
    r.numa_nodes = 2;
    io::TriadRun n0 = r.triad.front(), n1 = n0;
    n0.scope = "node 0", n0.best_s = 0.002;  // 12 GB/s
    n1.scope = "node 1", n1.best_s = 0.003;  // 8 GB/s
    r.triad.push_back(n0);
    r.triad.push_back(n1);
    const auto e = io::probe_host_preset(r).at("probe-box");
    CHECK(e.at("cpu_dram_bandwidth_GBps").get<double>() == Approx(10.0));
    CHECK(e.at("cpu_memory_GB").get<double>() == Approx(32.0));
    CHECK(e.at("cpu_flops_TFLOPS").get<double>() ==
          Approx(io::attention_flops(r.attention.front().shape) / 0.002 / 2 / 1e12).epsilon(1e-3));
}
