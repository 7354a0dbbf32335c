// SPDX-License-Identifier: MIT
#pragma once
// The pages of `kvroof report` formatted from their studies. src/report.cpp
// builds the scenarios from configs/report.json and computes; these only format.

#include <string>
#include <vector>

#include "kvroof/analysis/report_study.hpp"
#include "kvroof/io/plot.hpp"

namespace kvroof::io {

// A reference scenario of configs/report.json with its verdict and band table.
struct ReferenceScenario {
    std::string name, description, flags_text;  // flags_text: " --flag value" each, as a reader retypes them
    BandTable table;
};

// A step of the bottleneck ladder at f = 0, ov = 0; the last row offloads at
// the best f of each band end (then `step` is empty).
struct LadderRow {
    std::string step;
    ServingPoint conservative, optimistic;
};

struct CeilingLine {
    std::string hardware, model, workload;
    CeilingRow row;
};

// Best gains as one knob varies, dense and sparse 0.1.
struct GainCurve {
    std::vector<double> x;
    std::vector<BestGains> dense, sparse;
};

struct PlotData {
    Scenario scenario;
    std::vector<double> fs;
    std::vector<Band> bands;
    GainCurve cpus_per_gpu, link_gbps;
    double f_star_con = 0, f_star_opt = 0;  // the verdict's best f at each band end, for the scenario
    // The hardware preset's own figures, marked on the gain plots (GB200: 0.5 Grace per GPU).
    double preset_cpus_per_gpu = 1, preset_link_gbps = 0;
};

struct Plots {
    PlotSpec throughput_vs_f, bottleneck_vs_f, gain_vs_cpus, gain_vs_link;
};

// Indices into the reference scenarios of the ones SUMMARY.md quotes.
struct SummaryPicks {
    size_t default_, dense, sparse, example;
};

[[nodiscard]] std::string concurrent_mix_md(const std::vector<ReferenceScenario>& refs);
[[nodiscard]] std::string walkthrough_md(const Walkthrough& w, const std::string& ladder_description,
                                         const std::vector<LadderRow>& ladder);
[[nodiscard]] std::string ceiling_md(const std::vector<CeilingLine>& rows);
[[nodiscard]] std::string summary_md(const std::vector<ReferenceScenario>& refs, const SummaryPicks& picks,
                                     const std::vector<LadderRow>& ladder, const std::string& prefill_answer,
                                     const std::string& layers_answer);
[[nodiscard]] Plots report_plots(const PlotData& d);

}  // namespace kvroof::io
