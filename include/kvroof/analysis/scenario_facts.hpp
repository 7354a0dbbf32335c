// SPDX-License-Identifier: MIT
#pragma once
// The derived inputs of a serving scenario that every serving report echoes
// (weights, KV per token, HBM left for KV, sessions that fit), computed once
// from the scenario, and the per-resource seconds of one serving point as a
// table. Renderers format these; they never rebuild the scenario.

#include <string>
#include <vector>

#include "kvroof/analysis/serving.hpp"

namespace kvroof {

// One call class against the memory it may live in.
struct ClassFit {
    std::string name;
    double weight = 0;  // p, the class's share of calls
    double context = 0;  // S = S_c + A, tokens
    Bytes session_kv;  // kv · S: one session's KV
    double hbm_sessions = 0;  // free HBM / session KV (0 when the weights leave none)
    double dram_sessions = 0;  // CPU DRAM / session KV
    double hbm_sessions_end = 0;  // the same at the end of its call, S + O (the operating points' and sim's peak)
};

struct ScenarioFacts {
    Scenario scenario;  // the inputs used, fully resolved
    ParamCounts params;
    Bytes weights;  // all weights at the weight dtype
    Bytes kv_per_token;  // at the KV dtype, one copy
    double kv_replication = 1;  // copies HBM holds across the tensor-parallel GPUs (ModelConstants)
    double kv_session_span = 1;  // one session fits when its KV times this fits the free HBM (ModelConstants)
    Bytes weights_replicated{0.0};  // data-parallel attention's extra weight copies, part of `weights`
    double expert_load = 1;  // the busiest GPU's routed experts over the mean (EP not dividing them; ModelConstants)
    Bytes weights_uneven{0.0};  // what holding that on every GPU adds, part of `weights`
    Bytes hbm_usable;  // GPUs × (HBM − reserve)
    Bytes hbm_free;  // hbm_usable − weights (negative when they do not fit)
    Bytes cpu_memory;  // CPU DRAM of every socket
    Bytes session_kv_max;  // one session of the longest class
    Seconds empty_step;  // the decode step of no sequence at f = 0: its weight read, fixed latencies, overhead, pipeline stretch
    std::vector<ClassFit> classes;
};

[[nodiscard]] inline ScenarioFacts scenario_facts(const PreparedScenario& ps) {
    const Scenario& sc = *ps.scenario;
    ScenarioFacts f;
    f.scenario = sc;
    f.params = param_counts(sc.model);
    f.weights = ps.mc.weights;
    f.kv_per_token = ps.mc.kv_per_token;
    f.kv_replication = ps.kv_replication;
    f.kv_session_span = ps.kv_session_span;
    f.weights_replicated = Bytes(ps.mc.weights_replicated);
    f.expert_load = ps.mc.expert_load;
    f.weights_uneven = Bytes(ps.mc.weights_uneven);
    f.hbm_usable = ps.sys.hbm_capacity;
    f.hbm_free = Bytes(ps.hbm_free_bytes());
    f.cpu_memory = ps.sys.cpu_memory;
    f.session_kv_max = Bytes(ps.session_kv_max);
    // What an SLO on the step (or the ITL: its prefill term vanishes with the batch) meets at B -> 0.
    const detail::BatchShape empty = detail::batch_shape(ps, mix_demand(ps, 0.0), 0.0);
    f.empty_step = Seconds(detail::shape_at(ps, empty.shape, 0.0).step(0.0));
    const double free = f.hbm_free.raw();
    for (const auto& e : sc.mix.entries) {
        const double session = kv_held(ps.mc, e.cls.context()).raw();
        const double end = kv_held(ps.mc, e.cls.context() + e.cls.o_output).raw();
        f.classes.push_back({e.cls.name, e.weight, e.cls.context(), Bytes(session),
                             free > 0 ? free / (session * ps.kv_replication) : 0.0, ps.sys.cpu_memory.raw() / session,
                             free > 0 ? free / (end * ps.kv_replication) : 0.0});
    }
    return f;
}

// Utilisation-seconds of one call on each rate resource, and the share of the
// GPU timeline each causes. The one place that reads a point's per-resource
// arrays: renderers and reports take this table.
struct ResourceSeconds {
    Resource resource = Resource::gpu_hbm;
    Seconds util_sec;  // resource-seconds per call
    Seconds timeline_share;  // of the GPU timeline per call
};

[[nodiscard]] inline std::vector<ResourceSeconds> per_resource_seconds(const ServingPoint& p) {
    std::vector<ResourceSeconds> out;
    out.reserve(kRateResources.size());
    for (const Resource r : kRateResources) out.push_back({r, Seconds(p.util_sec[r]), Seconds(p.timeline_share[r])});
    return out;
}

}  // namespace kvroof
