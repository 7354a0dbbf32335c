// SPDX-License-Identifier: MIT
#pragma once
// Scenarios shared by the tests: the embedded default and a tiny hand-checkable model.

#include "kvroof/analysis/serving.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::test {

inline Scenario default_scenario() { return io::build_scenario(io::ScenarioInputs{}).scenario; }

inline Scenario scenario_with(void (*edit)(io::ScenarioInputs&)) {
    io::ScenarioInputs in;
    edit(in);
    return io::build_scenario(in).scenario;
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

}  // namespace kvroof::test
