// SPDX-License-Identifier: MIT
// `kvroof trace`: a request trace binned into workload classes (a mix file for
// --mix and kvroof sim), or a trace synthesized from class statistics.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <utility>

#include "commands.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
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
    std::optional<std::string> classes, output_bins, method, calls, seed, spread, bytes_per_token, idle_median, idle_p99;
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
    if (o.classes || o.output_bins || o.method || o.bytes_per_token || o.idle_median || o.idle_p99)
        throw InputError(
            "--synthesize: --classes, --output-bins, --method, --bytes-per-token, --idle-median and --idle-p99 do not apply");
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

// --bytes-per-token, checked before the trace is read.
double bytes_per_token(const TraceOptionsText& o) {
    if (!o.bytes_per_token) return io::kDefaultBytesPerToken;
    const double v = io::parse_number("--bytes-per-token", *o.bytes_per_token);
    check::in_range("--bytes-per-token", v, 0.5, 100.0);
    return v;
}

// --idle-median and --idle-p99 (both or neither), checked before the trace is read; {0, 0} when not given.
std::pair<double, double> idle_gap(const TraceOptionsText& o) {
    if (!o.idle_median && !o.idle_p99) return {0.0, 0.0};
    if (!o.idle_median || !o.idle_p99) throw InputError("--idle-median and --idle-p99: give both (a lognormal's median and P99)");
    const double median = io::parse_number("--idle-median", *o.idle_median), p99 = io::parse_number("--idle-p99", *o.idle_p99);
    check::in_range("--idle-median", median, 1e-9, limits::kMaxIdleGapS);
    check::in_range("--idle-p99", p99, 1e-9, limits::kMaxIdleGapS);
    if (!(p99 > median))
        throw InputError(fmt::format("--idle-p99: must be above --idle-median ({}), got {}", *o.idle_median, *o.idle_p99));
    // The mean is what the model charges, and the mix loader bounds it as an idle gap.
    if (!(io::lognormal_mean_from_median_p99(median, p99) <= limits::kMaxIdleGapS))
        throw InputError(
            fmt::format("--idle-median {} and --idle-p99 {} give a mean idle gap over {:g} s (a lognormal "
                        "through them); give a narrower spread",
                        *o.idle_median, *o.idle_p99, limits::kMaxIdleGapS));
    return {median, p99};
}

// The trace's calls and their classes, with the options that apply only to a trace of one kind checked against it.
io::TraceReport classify(const TraceOptionsText& o, int k, int m) {
    const double bpt = bytes_per_token(o);
    const auto [median, p99] = idle_gap(o);
    const BinMethod method = bin_method(o.method);
    io::TraceFile f = io::read_trace("trace", o.trace, bpt);
    if (o.bytes_per_token && f.format != io::TraceFormat::conversations)
        throw InputError(fmt::format("--bytes-per-token: applies to a conversations file; {} is {} with its token counts",
                                     o.trace, io::name(f.format)));
    io::TraceReport r;
    r.classes = classify_trace(f.calls, k, m, method);
    if (median > 0 && !r.classes.untimed)
        throw InputError(
            fmt::format("--idle-median, --idle-p99: apply to a trace with no times; {} has times, its gaps are fitted", o.trace));
    if (median > 0) assign_untimed_gaps(r.classes, median, p99);
    r.format = f.format;
    r.bytes_per_token = f.format == io::TraceFormat::conversations ? bpt : 0.0;
    return r;
}

void run_trace(const TraceOptionsText& o) {
    if (!o.synthesize.empty()) return run_synthesize(o);
    if (o.trace.empty()) throw InputError("trace: give a trace file to read (or --synthesize CLASSES.json)");
    if (o.calls || o.seed || o.spread) throw InputError("--calls, --seed and --spread go with --synthesize");
    check_distinct_outputs({{"--out", o.out}, {"--report", o.output.report}});
    check_outputs_spare_inputs({{"--out", o.out}, {"--report", o.output.report}}, {{"the trace", o.trace}});
    const int k = o.classes ? static_cast<int>(whole("--classes", *o.classes, 1, kMaxBins)) : kDefaultClasses;
    const int m = o.output_bins ? static_cast<int>(whole("--output-bins", *o.output_bins, 1, kMaxBins)) : kDefaultOutputBins;
    io::TraceReport r = classify(o, k, m);
    r.trace = o.trace;
    r.out = o.out;
    // The mix file is committed only after --report is written: a failing --report leaves no mix file behind.
    std::unique_ptr<io::AtomicFile> mix = o.out.empty() ? nullptr : std::make_unique<io::AtomicFile>(o.out);
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
        "  output_tokens. Other JSON fields are ignored.\n"
        "  Or a conversations file (the first character '['): a JSON array of sessions, each {\"conversations\":\n"
        "  [{\"from\": \"human\", \"value\": TEXT}, {\"from\": \"gpt\", \"value\": TEXT}, ...]}, as Inferact/\n"
        "  codex_swebenchpro_traces ships it: a call per response, tokens counted as UTF-8 bytes / --bytes-per-token,\n"
        "  the earlier turns of the session cached; no times, so no idle gap unless --idle-median/--idle-p99 give one.\n"
        "Examples:\n"
        "  kvroof trace calls.jsonl --out classes.json        # 3 quantile classes on input tokens\n"
        "  kvroof trace calls.csv --classes 4 --output-bins 2 --method kmeans --json\n"
        "  kvroof trace codex_swebenchpro.json --idle-median 5.2 --idle-p99 81.4 --out codex.json  # the card's gaps\n"
        "  kvroof verdict --mix classes.json                  # the classes as a concurrent mix\n"
        "  kvroof trace --synthesize classes.json --calls 300 --seed 7 --out synth.jsonl");
    sub->add_option("trace", o->trace,
                    "the trace file to read (JSON Lines, CSV by its .csv extension, or a conversations file: a JSON array)")
        ->type_name("FILE");
    auto add = [&](const char* flag, std::optional<std::string>& t, const char* type, std::string_view help,
                   std::string_view absent) { add_text_option(*sub, flag, t, type, "Classes", help, absent); };
    add("--classes", o->classes, "K", "context (input-token) bins", fmt::format("{}", kDefaultClasses));
    add("--output-bins", o->output_bins, "M", "output-token quantile bins within each context bin",
        fmt::format("{}", kDefaultOutputBins));
    add("--method", o->method, "NAME",
        "context binning: quantile (equal call counts) or kmeans (1-D k-means on ln(1+input), from the widest gaps)", "quantile");
    add("--bytes-per-token", o->bytes_per_token, "X",
        "a conversations file's UTF-8 bytes per token, in [0.5, 100] (about 4 for English text)",
        fmt::format("{:g}", io::kDefaultBytesPerToken));
    add("--idle-median", o->idle_median, "S", "a trace with no times: the idle gap's median, seconds (with --idle-p99)",
        "none: no idle gap");
    add("--idle-p99", o->idle_p99, "S", "a trace with no times: the idle gap's P99, seconds, above the median (lognormal)",
        "none: no idle gap");
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
