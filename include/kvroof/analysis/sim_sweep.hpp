// SPDX-License-Identifier: MIT
#pragma once
// The simulator beside the closed form over a sweep of load on one scenario
// (outputs/sim_vs_closed_form.md): one `simulate` per load, same calls, seed
// and gap distribution, and the facts the page's paragraph quotes. Scenarios
// are built by the caller; docs/model.md, "Discrete-event simulation".

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "kvroof/analysis/sim.hpp"

namespace kvroof {

struct SimSweepSpec {
    LoadMode mode = LoadMode::concurrency;  // concurrency (clients) or request_rate (calls/s)
    std::vector<double> loads;
    GapDist gaps = GapDist::exponential;
    double calls = 2000;
    std::uint64_t seed = 1;
    double f = 0, ov = 0;  // offload fraction (dynamic: the most a step offloads) and overlap
    FPolicy f_policy = FPolicy::fixed;
};

// What the paragraph under a sweep's table says, all from its rows.
struct SimSweepFacts {
    int agree = 0;  // rows within 10 % on throughput and ITL
    size_t worst = 0;  // row of the largest |throughput gap|
    size_t worst_itl = 0;  // row of the largest |ITL gap|
    std::map<SimGap, std::vector<double>> named;  // each mechanism named, with the loads where it is
};

struct SimSweep {
    SimSweepSpec spec;
    std::vector<SimResult> rows;  // one per load, in the order given
    SimSweepFacts facts;
};

[[nodiscard]] inline SimSweepFacts sim_sweep_facts(const std::vector<SimResult>& rows) {
    SimSweepFacts f;
    for (size_t i = 0; i < rows.size(); ++i) {
        const SimResult& r = rows[i];
        if (!r.feasible) continue;
        if (r.mechanism == SimGap::none)
            ++f.agree;
        else
            f.named[r.mechanism].push_back(r.spec.load.value);
        if (std::abs(r.gap_throughput) > std::abs(rows[f.worst].gap_throughput)) f.worst = i;
        if (std::abs(r.gap_itl) > std::abs(rows[f.worst_itl].gap_itl)) f.worst_itl = i;
    }
    return f;
}

[[nodiscard]] inline SimSweep sim_sweep(const Scenario& sc, const SimSweepSpec& spec) {
    if (spec.loads.empty()) throw InputError("loads: give at least one");
    SimSweep s;
    s.spec = spec;
    for (const double load : spec.loads) {
        SimSpec one;
        one.load.mode = spec.mode;
        one.load.value = load;
        one.gaps = spec.gaps;
        one.calls = spec.calls;
        one.seed = spec.seed;
        one.f = spec.f;
        one.ov = spec.ov;
        one.f_policy = spec.f_policy;
        s.rows.push_back(simulate(sc, one));
    }
    s.facts = sim_sweep_facts(s.rows);
    return s;
}

}  // namespace kvroof
