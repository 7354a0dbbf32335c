// SPDX-License-Identifier: MIT
#include "report_trace.hpp"

#include <fmt/format.h>

#include "kvroof/analysis/verdict_report.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/io/sim_render.hpp"
#include "kvroof/io/trace_io.hpp"
#include "kvroof/io/trace_render.hpp"
#include "kvroof/io/verdict_render.hpp"

namespace kvroof::io {

namespace {
GapDist gap_dist(const std::string& where, const std::string& text) {
    for (const GapDist d : {GapDist::exponential, GapDist::deterministic, GapDist::lognormal})
        if (text == name(d)) return d;
    throw InputError(fmt::format("{}: must be exponential, deterministic or lognormal, got '{}'", where, text));
}

// The simulated run beside the closed form, as a table.
std::string sim_table(const SimResult& r) {
    std::string s = "| | simulated | closed form |\n|---|---:|---:|\n";
    s += fmt::format("| output tok/s | {:.0f} | {:.0f} |\n", r.throughput, r.closed.throughput);
    s += fmt::format("| calls decoding (mean) | {:.2f} | {:.2f} |\n", r.batch, r.closed.batch);
    s += fmt::format("| ITL, ms per token (mean) | {:.2f} | {:.2f} |\n", r.itl.mean * 1e3, r.closed.itl * 1e3);
    s += fmt::format("| TTFT, ms (mean) | {:.0f} | {:.0f} |\n", r.ttft.mean * 1e3, r.closed.ttft * 1e3);
    s += fmt::format("| TTFT, ms (P50 / P99) | {:.0f} / {:.0f} | |\n", r.ttft.p50 * 1e3, r.ttft.p99 * 1e3);
    return s;
}
}  // namespace

std::string trace_classes_page(const nlohmann::json& cfg) {
    const nlohmann::json& sec = cfg.at("trace_classes");
    const std::string where = "configs/report.json trace_classes";
    TraceReport tr;
    tr.trace = sec.at("trace").get<std::string>();
    const int k = sec.at("classes").get<int>(), m = sec.at("output_bins").get<int>();
    const std::string method = sec.at("method").get<std::string>();
    if (method != "quantile" && method != "kmeans")
        throw InputError(fmt::format("{}.method: must be quantile or kmeans, got '{}'", where, method));
    tr.classes = classify_trace(parse_trace_text(tr.trace, embedded_file("sample"), TraceFormat::jsonl), k, m,
                                method == "kmeans" ? BinMethod::kmeans : BinMethod::quantile);
    ScenarioInputs in;
    std::string flags;
    for (const auto& [key, v] : sec.at("flags").items()) {
        set_scenario_flag(in, key, v.get<std::string>(), where);
        flags += fmt::format(" --{} {}", key, v.get<std::string>());
    }
    BuiltScenario built = build_scenario(in);
    built.scenario.mix = classes_mix(tr.classes, tr.trace);
    built.scenario.check_validity();
    const nlohmann::json& sim = sec.at("sim");
    SimSpec spec;
    spec.load.mode = LoadMode::concurrency;
    spec.load.value = sim.at("concurrency").get<double>();
    spec.calls = sim.at("calls").get<double>();
    spec.seed = sim.at("seed").get<std::uint64_t>();
    spec.gaps = gap_dist(where + ".sim.gap_dist", sim.at("gap_dist").get<std::string>());
    const SimResult r = simulate(built.scenario, spec);

    const std::string cmd = fmt::format("kvroof trace {} --classes {} --output-bins {} --method {}", tr.trace, k, m, method);
    std::string s = render_trace_markdown(tr);
    if (const std::string plain = fmt::format("(`kvroof trace {}`)", tr.trace); s.find(plain) != std::string::npos)
        s.replace(s.find(plain), plain.size(), fmt::format("(`kvroof report`; the classes as `{}` finds them)", cmd));
    s += "\n" + sec.at("description").get<std::string>() + ".\n";
    s += fmt::format(
        "\n## The verdict on this mix\n\nThe classes as `{} --out classes.json` writes them, read back by "
        "`kvroof verdict --mix classes.json{}`:\n\n`{}`\n",
        cmd, flags, verdict_line(verdict_report(built.scenario)));
    s += fmt::format(
        "\n## The simulation on this mix\n\n`kvroof sim --mix classes.json{} --concurrency {:g} --calls {:g} --seed {} "
        "--gap-dist {}`:\n\n`{}`\n\n",
        flags, spec.load.value, spec.calls, spec.seed, name(spec.gaps),
        sim_summary_line(r).substr(0, sim_summary_line(r).size() - 1));
    if (!r.feasible) return s;
    return s + sim_table(r);
}

}  // namespace kvroof::io
