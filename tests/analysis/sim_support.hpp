// SPDX-License-Identifier: MIT
#pragma once
// The simulations the sim tests share.

#include <string>

#include "kvroof/analysis/sim.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::test {

// `clients` closed-loop clients making `calls` calls in all, idle gaps drawn from `gaps`.
inline SimSpec closed_loop(double clients, double calls, GapDist gaps = GapDist::exponential) {
    SimSpec s;
    s.load.mode = LoadMode::concurrency;
    s.load.value = clients;
    s.calls = calls;
    s.gaps = gaps;
    return s;
}

// One class in a benchmark's words on the given hardware and model, no idle gap;
// tp > 0 sets the tensor-parallel group, pp > 1 pipeline stages of it.
inline Scenario bench_scenario(const char* hardware, const char* model, double isl, double osl, int tp = 0, int pp = 1) {
    io::ScenarioInputs in;
    in.set("hardware", hardware);
    in.set("model", model);
    if (tp > 0) in.set("tp", std::to_string(tp));
    if (pp > 1) in.set("pp", std::to_string(pp));
    Scenario s = io::build_scenario(in).scenario;
    CallClass c;
    c.name = "bench";
    c.a_append = isl;
    c.o_output = osl;
    s.mix = Mix{{MixEntry{c, 1.0}}};
    return s;
}

}  // namespace kvroof::test
