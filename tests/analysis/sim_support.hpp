// SPDX-License-Identifier: MIT
#pragma once
// The simulations the sim tests share.

#include "kvroof/analysis/sim.hpp"

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

}  // namespace kvroof::test
