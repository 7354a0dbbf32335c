// SPDX-License-Identifier: MIT
// outputs/accuracy.md: each measured point beside kvroof's and the plain roofline's prediction.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "kvroof/io/accuracy.hpp"

namespace kvroof::io {
namespace {

// A prediction, with its error where there is a measurement: "36.0" or "36.0 (+12%)".
std::string with_err(std::optional<double> measured, double predicted, double scale, const char* spec) {
    std::string v = fmt::format(fmt::runtime(spec), predicted * scale);
    if (!measured || !(*measured > 0)) return v;
    return fmt::format("{} ({:+.0f}%)", v, 100.0 * (predicted - *measured) / *measured);
}
std::string val(std::optional<double> v, double scale, const char* spec) {
    return v ? fmt::format(fmt::runtime(spec), *v * scale) : std::string("—");
}
std::string load_text(const MeasuredPoint& m) {
    if (m.load == "batch") return fmt::format("batch {:g}", m.load_value);
    if (m.load == "concurrency") return fmt::format("conc. {:g}", m.load_value);
    if (m.load == "request_rate") return fmt::format("{:g} req/s", m.load_value);
    return "max";
}
std::string pct(double x) { return fmt::format("{:.1f}%", 100.0 * x); }

std::string summary(const AccuracyTable& t) {
    std::string s = "| metric | points | kvroof MAPE | plain roofline MAPE |\n|---|---|---|---|\n";
    const std::pair<const char*, const MetricError*> rows[] = {{"ITL (TPOT), single GPU", &t.itl_one_gpu},
                                                               {"output throughput, single GPU", &t.throughput_one_gpu},
                                                               {"ITL (TPOT), all", &t.itl},
                                                               {"output throughput, all", &t.throughput},
                                                               {"TTFT (closed and open loop only)", &t.ttft},
                                                               {"ITL (TPOT), dense models", &t.itl_dense},
                                                               {"output throughput, dense models", &t.throughput_dense},
                                                               {"TTFT, dense models", &t.ttft_dense},
                                                               {"ITL (TPOT), MoE models", &t.itl_moe},
                                                               {"output throughput, MoE models", &t.throughput_moe},
                                                               {"TTFT, MoE models", &t.ttft_moe}};
    for (const auto& [name, e] : rows)
        s += fmt::format("| {} | {} | {} | {} |\n", name, e->n, e->n ? pct(e->mape_kvroof) : "—",
                         e->n ? pct(e->mape_roofline) : "—");
    return s;
}

std::string by_source(const AccuracyTable& t) {
    std::string s = "| source | points | kvroof ITL MAPE | kvroof throughput MAPE |\n|---|---|---|---|\n";
    for (const auto& [key, e] : t.by_source)
        s += fmt::format("| [{}]({}) | {} | {} | {} |\n", key, e.url, e.points, e.itl.n ? pct(e.itl.mape_kvroof) : "—",
                         e.throughput.n ? pct(e.throughput.mape_kvroof) : "—");
    return s;
}

std::string points(const AccuracyTable& t) {
    std::string s =
        "| point | engine | GPU | model | weights/KV | ISL/OSL | load | ITL ms: measured | kvroof | roofline | throughput tok/s: "
        "measured | kvroof | roofline | TTFT ms: measured | kvroof "
        "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const AccuracyRow& r : t.rows) {
        const MeasuredPoint& m = r.measured;
        const double itl = r.kvroof_itl;
        const bool ttft = r.ttft_compared;
        const std::string engine =
            m.eta_moe_gemm ? fmt::format("{}, expert GEMMs {:g}", m.engine_version, *m.eta_moe_gemm) : m.engine_version;
        s += fmt::format("| {} | {} {} | {}×{} | {} | {}/{} | {:g}/{:g} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", m.id,
                         m.engine, engine, m.gpus, m.gpu, m.model, m.weight_dtype, m.kv_dtype.empty() ? "—" : m.kv_dtype, m.isl,
                         m.osl, load_text(m), val(m.itl, 1e3, "{:.1f}"), with_err(m.itl, itl, 1e3, "{:.1f}"),
                         with_err(m.itl, r.roofline.itl, 1e3, "{:.1f}"), val(m.throughput, 1.0, "{:.0f}"),
                         with_err(m.throughput, r.kvroof.throughput, 1.0, "{:.0f}"),
                         with_err(m.throughput, r.roofline.throughput, 1.0, "{:.0f}"), val(m.ttft, 1e3, "{:.0f}"),
                         ttft ? with_err(m.ttft, r.kvroof.ttft, 1e3, "{:.0f}") : std::string("not compared"));
    }
    return s;
}

std::string gain_uncertainty(const AccuracyTable& t, const AccuracyTable& holdout) {
    return fmt::format(
        "\n## How well a gain is predicted\n\nAn offload gain is a ratio of two throughputs on one machine. Its measured "
        "analogue here is the ratio of two points of one series (same source, engine, GPU and count, model and precisions; a "
        "different workload or load). Over the {} pairs of {} series, the median |ln(predicted ratio / measured ratio)| is "
        "{} as a relative error (plain roofline: {}); hold-out: {} over {} pairs (roofline {}). kvroof calls a gain within "
        "this median of 1× MARGINAL (`kGainUncertainty` in include/kvroof/analysis/verdict.hpp is this figure; a test keeps "
        "them equal).\n",
        t.gain.pairs, t.gain.series, pct(t.gain.median_kvroof), pct(t.gain.median_roofline), pct(holdout.gain.median_kvroof),
        holdout.gain.pairs, pct(holdout.gain.median_roofline));
}

std::string kernels_section(const AccuracyTable& t, const std::vector<EngineKernel>& kernels) {
    if (kernels.empty()) return "";
    std::string s =
        "\n## Engine MoE kernels\n\nA MoE point run by an engine whose expert-GEMM kernel has a public benchmark is "
        "predicted with that kernel's efficiency (`--eta-moe-gemm`: the middle of the range the benchmark spans, a condition "
        "of the point like its engine limits; data/measurements/README.md, \"Engine MoE kernels\"). Points of other "
        "engines, precisions or GPUs keep `--eta-compute`, and so does the plain roofline at every point.\n\n| rule | engine | "
        "weights | GPUs | kernel | "
        "`--eta-moe-gemm` (range) | points | source |\n|---|---|---|---|---|---|---|---|\n";
    for (const EngineKernel& k : kernels) {
        const auto n =
            std::count_if(t.rows.begin(), t.rows.end(), [&](const AccuracyRow& r) { return r.measured.moe_kernel == k.id; });
        s += fmt::format("| {} | {} | {} | {} | {} | {:g} ({:g}–{:g}) | {} | {} |\n", k.id, k.engine, k.weight_dtype,
                         fmt::join(k.gpus, ", "), k.kernel, k.eta_moe_gemm, k.lo, k.hi, n, k.source);
    }
    return s;
}

}  // namespace

std::string render_accuracy_markdown(const AccuracyTable& t, const AccuracyTable& holdout,
                                     const std::vector<EngineKernel>& kernels) {
    std::string s = "# Accuracy against measured serving points\n\n";
    s += fmt::format(
        "{} public measured points (data/measurements/serving_points.json; sources and conditions in "
        "data/measurements/README.md), each predicted by `kvroof verdict` at its defaults — no input was fitted to this table — "
        "and by a plain six-line roofline with the same peaks and efficiencies (docs/model.md, \"Accuracy\"). Error = (predicted "
        "− "
        "measured) / measured; MAPE = the mean of its absolute value. Llama-3.1/3.3-70B points are kept out of this table on "
        "purpose: "
        "they are the independent check of the defaults.\n\n",
        t.rows.size());
    s += "## Summary\n\n" + summary(t) + gain_uncertainty(t, holdout) + kernels_section(t, kernels) + "\n## By source\n\n" +
         by_source(t);
    s += fmt::format(
        "\n## Hold-out check: Llama-3.1/3.3-70B\n\n{} measured points of the model kept out of everything above "
        "(data/measurements/holdout_llama_3_1_70b.json), predicted the same way at the same defaults. No default was "
        "chosen while looking at them; one equation, chunked prefill in whole pieces, was found by tracing one of them, "
        "so its effect here is no independent check (docs/model.md, \"Accuracy\").\n\n",
        holdout.rows.size());
    s += summary(holdout) + "\n" + points(holdout) + "\n## Every point\n\n" + points(t);
    s += "\nHow each load is asked: `max` = `--concurrency max` (every request submitted at once; as many in flight as fit in "
         "memory, and no more than the engine limits the point states allow: `--requests` = the requests in the run, which run "
         "in one wave when they all fit at once, "
         "`--max-seqs` = the least of the engine's running-request cap and, where the engine reserves each request's ISL+OSL "
         "KV at admission (TensorRT-LLM's default GUARANTEED_NO_EVICT), the requests whose peak KV fits; `--prefill-chunk` = "
         "the engine's per-step token budget; data/measurements/README.md, \"Engine limits\"); `conc. C` = `--concurrency C`; "
         "`R req/s` = `--request-rate R --requests N` (the throughput over the source's run of N requests, its drain "
         "included); `batch B` = `--batch B --prefill separate` (LMDeploy's static benchmark runs its sessions in lockstep: "
         "its per-token latency, a median, is compared with the decode step alone and its TTFT is not compared; where the B "
         "sessions do not all fit in HBM at once, `--concurrency B --prefill separate`: the engine runs those that fit and "
         "queues the rest). Measured ITL is the "
         "source's mean ITL, else its TPOT; some sources give medians (see the README).\n";
    return s;
}

}  // namespace kvroof::io
