// SPDX-License-Identifier: MIT
// `kvroof trace`: a request trace binned into workload classes (a mix file for
// --mix and kvroof sim), or a trace synthesized from class statistics.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "commands.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/trace_io.hpp"
#include "kvroof/io/trace_render.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
constexpr double kMaxSeed = 9007199254740992.0;  // 2^53: every whole number up to it reads back exactly
constexpr double kMaxBins = 1000;
constexpr double kMaxSynthCalls = 1e7;
constexpr int kDefaultClasses = 3;  // context bins
constexpr int kDefaultOutputBins = 1;  // output-token bins per context bin

struct TraceOptionsText {
    OutputOptions output;
    std::string trace, synthesize, out;
    std::optional<std::string> classes, output_bins, method, calls, seed, spread;
};

double whole(const char* flag, const std::string& text, double lo, double hi) {
    const double v = io::parse_number(flag, text);
    if (!(v >= lo && v <= hi) || v != std::floor(v))
        throw InputError(fmt::format("{}: must be a whole number in [{:.0f}, {:.0f}], got '{}'", flag, lo, hi, text));
    return v;
}

BinMethod bin_method(const std::optional<std::string>& text) {
    if (!text || *text == "quantile") return BinMethod::quantile;
    if (*text == "kmeans") return BinMethod::kmeans;
    throw InputError(fmt::format("--method: must be quantile or kmeans, got '{}'", *text));
}

void run_synthesize(const TraceOptionsText& o) {
    if (!o.trace.empty()) throw InputError("--synthesize: give a classes file or a trace to read, not both");
    if (o.output.json || !o.output.report.empty())
        throw InputError("--synthesize: writes a trace; --json and --report do not apply");
    if (o.classes || o.output_bins || o.method)
        throw InputError("--synthesize: --classes, --output-bins and --method do not apply");
    if (!o.calls) throw InputError("--synthesize: --calls N is required");
    SynthSpec spec = io::load_synth_spec("--synthesize", o.synthesize);
    spec.calls = static_cast<std::size_t>(whole("--calls", *o.calls, 1, kMaxSynthCalls));
    if (o.seed) spec.seed = static_cast<std::uint64_t>(whole("--seed", *o.seed, 0, kMaxSeed));
    if (o.spread) {
        spec.spread = io::parse_number("--spread", *o.spread);
        check::in_range("--spread", spec.spread, 0.0, 1.0);
    }
    check_outputs_spare_inputs({{"--out", o.out}}, {{"--synthesize", o.synthesize}});
    const std::vector<TraceCall> calls = synthesize_trace(spec);
    const std::string text = io::trace_jsonl(calls);
    if (o.out.empty()) {
        std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
        io::write_file_atomic(o.out, text);
        std::printf("wrote %zu calls to %s (seed %llu)\n", calls.size(), o.out.c_str(),
                    static_cast<unsigned long long>(spec.seed));
    }
    std::fflush(stdout);
}

void run_trace(const TraceOptionsText& o) {
    if (!o.synthesize.empty()) return run_synthesize(o);
    if (o.trace.empty()) throw InputError("trace: give a trace file to read (or --synthesize CLASSES.json)");
    if (o.calls || o.seed || o.spread) throw InputError("--calls, --seed and --spread go with --synthesize");
    check_distinct_outputs({{"--out", o.out}, {"--report", o.output.report}});
    check_outputs_spare_inputs({{"--out", o.out}, {"--report", o.output.report}}, {{"the trace", o.trace}});
    const int k = o.classes ? static_cast<int>(whole("--classes", *o.classes, 1, kMaxBins)) : kDefaultClasses;
    const int m = o.output_bins ? static_cast<int>(whole("--output-bins", *o.output_bins, 1, kMaxBins)) : kDefaultOutputBins;
    io::TraceReport r;
    r.trace = o.trace;
    r.out = o.out;
    // The mix file is committed only after --report is written: a failing --report leaves no mix file behind.
    std::unique_ptr<io::AtomicFile> mix = o.out.empty() ? nullptr : std::make_unique<io::AtomicFile>(o.out);
    r.classes = classify_trace(io::read_trace_file("trace", o.trace), k, m, bin_method(o.method));
    if (mix) mix->write(io::classes_mix_json(r.classes, o.trace).dump(2) + "\n");
    emit_lazy(
        o.output, [&] { return io::render_trace_text(r); }, [&] { return io::trace_report_json(r).dump(2) + "\n"; },
        [&] { return io::render_trace_markdown(r); });
    if (mix) mix->commit();
}
}  // namespace

Action setup_trace(CLI::App& app) {
    auto o = std::make_shared<TraceOptionsText>();
    CLI::App* sub = app.add_subcommand(
        "trace", "bin a request trace into workload classes (a mix file for --mix and kvroof sim), or synthesize a trace");
    sub->footer(
        "Trace schema (docs/trace.md): JSON Lines, or CSV with a header line (by the .csv extension); per call\n"
        "  session_id, timestamp_s (start, s), end_s (optional), input_tokens (cached included), cached_tokens,\n"
        "  output_tokens. Other JSON fields are ignored. The Inferact/codex_swebenchpro_traces field names could not be\n"
        "  verified offline: convert such a trace to this schema first (docs/trace.md).\n"
        "Examples:\n"
        "  kvroof trace calls.jsonl --out classes.json        # 3 quantile classes on input tokens\n"
        "  kvroof trace calls.csv --classes 4 --output-bins 2 --method kmeans --json\n"
        "  kvroof verdict --mix classes.json                  # the classes as a concurrent mix\n"
        "  kvroof trace --synthesize classes.json --calls 300 --seed 7 --out synth.jsonl");
    sub->add_option("trace", o->trace, "the trace file to read (JSON Lines, or CSV by its .csv extension)")->type_name("FILE");
    auto add = [&](const char* flag, std::optional<std::string>& t, const char* type, std::string_view help,
                   std::string_view absent) { add_text_option(*sub, flag, t, type, "Classes", help, absent); };
    add("--classes", o->classes, "K", "context (input-token) bins", fmt::format("{}", kDefaultClasses));
    add("--output-bins", o->output_bins, "M", "output-token quantile bins within each context bin",
        fmt::format("{}", kDefaultOutputBins));
    add("--method", o->method, "NAME",
        "context binning: quantile (equal call counts) or kmeans (1-D k-means on ln(1+input), from the widest gaps)", "quantile");
    sub->add_option("--out", o->out,
                    with_default("write the classes (a mix file), or with --synthesize the trace, to FILE (atomically)",
                                 "none: the classes are not written; --synthesize: stdout"))
        ->type_name("FILE")
        ->group("Classes");
    sub->add_option("--synthesize", o->synthesize,
                    with_default("write a trace (JSON Lines) drawn from the classes of a mix file", "none: read a trace"))
        ->type_name("CLASSES.json")
        ->group("Synthesis");
    auto add_s = [&](const char* flag, std::optional<std::string>& t, const char* type, std::string_view help,
                     std::string_view absent) { add_text_option(*sub, flag, t, type, "Synthesis", help, absent); };
    const SynthSpec def;
    add_s("--calls", o->calls, "N", "calls to synthesize", "none; --synthesize needs it");
    add_s("--seed", o->seed, "N", "seed of the draws (class, tokens, gaps, session lengths)", fmt::format("{}", def.seed));
    add_s("--spread", o->spread, "X",
          "token counts uniform in mean x (1 +- X), in [0, 1] (ASSUMED shape: a class file holds only means)",
          fmt::format("{:g}", def.spread));
    add_output_flags(*sub, o->output);
    return [o] { run_trace(*o); };
}

}  // namespace kvroof::cli
