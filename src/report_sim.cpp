// SPDX-License-Identifier: MIT
#include "report_sim.hpp"

#include <fmt/format.h>

#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::io {

std::vector<SimSweepPage> sim_sweep_pages(const nlohmann::json& cfg) {
    const nlohmann::json& sec = cfg.at("sim_vs_closed_form");
    std::vector<SimSweepPage> pages;
    for (const auto& s : sec.at("scenarios")) {
        SimSweepPage pg;
        pg.name = s.at("name").get<std::string>();
        pg.description = s.at("description").get<std::string>();
        const std::string where = "configs/report.json sim_vs_closed_form." + pg.name;
        ScenarioInputs in;
        for (const auto& [k, v] : s.at("flags").items()) {
            const std::string val = v.get<std::string>();
            set_scenario_flag(in, k, val, where);
            pg.command += fmt::format(" --{} {}", k, val.find_first_of(" ,:;=") == std::string::npos ? val : "\"" + val + "\"");
        }
        SimSweepSpec spec;
        spec.calls = s.value("calls", sec.at("calls").get<double>());  // a scenario may give its own
        spec.seed = sec.at("seed").get<std::uint64_t>();
        const std::string gaps = s.at("gap_dist").get<std::string>();
        bool known = false;
        for (const GapDist d : {GapDist::exponential, GapDist::deterministic, GapDist::lognormal})
            if (gaps == name(d)) spec.gaps = d, known = true;
        if (!known)
            throw InputError(fmt::format("{}.gap_dist: must be exponential, deterministic or lognormal, got '{}'", where, gaps));
        // The split, when a scenario gives one: f and ov read as numbers in [0, 1], the policy by name.
        for (auto [key, out] : {std::pair{"f", &spec.f}, std::pair{"ov", &spec.ov}}) {
            if (!s.contains(key)) continue;
            *out = s.at(key).get<double>();
            check::unit_interval(where + "." + key, *out);
            pg.command += fmt::format(" --{} {:g}", key, *out);
        }
        if (s.contains("f_policy")) {
            const std::string policy = s.at("f_policy").get<std::string>();
            if (policy != name(FPolicy::fixed) && policy != name(FPolicy::dynamic))
                throw InputError(fmt::format("{}.f_policy: must be static or dynamic, got '{}'", where, policy));
            spec.f_policy = policy == name(FPolicy::dynamic) ? FPolicy::dynamic : FPolicy::fixed;
            pg.command += " --f-policy " + policy;
        }
        spec.mode = s.contains("request_rate") ? LoadMode::request_rate : LoadMode::concurrency;
        spec.loads = s.at(spec.mode == LoadMode::request_rate ? "request_rate" : "concurrency").get<std::vector<double>>();
        pg.sweep = sim_sweep(build_scenario(in).scenario, spec);
        pages.push_back(std::move(pg));
    }
    return pages;
}

}  // namespace kvroof::io
