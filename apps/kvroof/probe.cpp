// SPDX-License-Identifier: MIT
// `kvroof probe --cpu`: this host's DRAM bandwidth and decode-attention rate, as a host preset.
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/probe.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct ProbeOptionsText {
    OutputOptions output;
    bool cpu = false;
    std::string out;
    std::optional<std::string> threads, size, seconds;
};

void run_probe(const ProbeOptionsText& o) {
    if (!o.cpu) throw InputError("probe: give --cpu (the only probe; a GPU probe needs CUDA and is not built)");
    check_distinct_outputs({{"--out", o.out}, {"--report", o.output.report}});
    io::ProbeOptions p;
    if (const std::optional<int> t = parse_threads(o.threads, 4096)) p.threads = *t;
    if (o.size) p.size_mb = io::parse_number("--size", *o.size);
    if (o.seconds) p.seconds = io::parse_number("--seconds", *o.seconds);
    // The preset is committed only after --report is written: a failing --report leaves no preset behind.
    std::unique_ptr<io::AtomicFile> preset = o.out.empty() ? nullptr : std::make_unique<io::AtomicFile>(o.out);
    const io::ProbeResult r = io::probe_cpu(p);
    if (preset) preset->write(io::probe_host_preset(r).dump(2) + "\n");
    emit_lazy(
        o.output, [&] { return io::render_probe_text(r, o.out); }, [&] { return io::probe_json(r).dump(2) + "\n"; },
        [&] { return io::render_probe_markdown(r); });
    if (preset) preset->commit();
}
}  // namespace

Action setup_probe(CLI::App& app) {
    auto o = std::make_shared<ProbeOptionsText>();
    CLI::App* sub = app.add_subcommand(
        "probe", "measure this host: DRAM bandwidth (STREAM-style triad) and an FP32 decode-attention kernel, as a host preset");
    sub->footer(
        "The triad runs on all threads, and on each NUMA node's CPUs when /sys shows more than one node. The attention\n"
        "kernel is GQA (8 KV heads x 8 queries, head dim 128), FP32, at contexts 1k, 8k and 32k. The preset has\n"
        "data/hosts.json's entry schema: give the file to any scenario command as --host FILE.json (it replaces the\n"
        "hardware preset's host), or name it as a hardware file's \"host\". A GPU probe (HBM, host-to-device, GEMM)\n"
        "is out of scope: no CUDA compiler here.\n"
        "Examples:\n"
        "  kvroof probe --cpu\n"
        "  kvroof probe --cpu --threads 8 --size 1024 --seconds 2 --out host.json\n"
        "  kvroof verdict --hardware h200 --host host.json");
    sub->add_flag("--cpu", o->cpu, "probe the CPU host (required)");
    auto add = [&](const char* flag, std::optional<std::string>& t, const char* type, std::string_view help,
                   std::string_view absent) { add_text_option(*sub, flag, t, type, "Probe", help, absent); };
    const io::ProbeOptions def;
    add("--threads", o->threads, "N", "threads", "every CPU");
    add("--size", o->size, "MB", "the triad's three arrays together, in [1, 1000000] MB; use >= 4x the last-level cache",
        fmt::format("{:g}", def.size_mb));
    add("--seconds", o->seconds, "S", "time for each measurement (best of the repetitions), in [0.01, 600]",
        fmt::format("{:g}", def.seconds));
    sub->add_option("--out", o->out, with_default("write the host preset JSON to FILE (atomically)", "none"))
        ->type_name("FILE")
        ->group("Probe");
    add_output_flags(*sub, o->output);
    return [o] { run_probe(*o); };
}

}  // namespace kvroof::cli
