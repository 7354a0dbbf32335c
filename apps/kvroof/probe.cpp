// SPDX-License-Identifier: MIT
// `kvroof probe --cpu`: this host's DRAM bandwidth and decode-attention rate, as a host preset.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "commands.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/gpu_probe.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/probe.hpp"
#include "lazy_emit.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {
struct ProbeOptionsText {
    OutputOptions output;
    bool cpu = false, gpu = false;
    std::string out;
    std::optional<std::string> threads, size, seconds, device, hardware;
};

// The GPU's figures measured, written into the --hardware preset's entry.
void run_gpu_probe(const ProbeOptionsText& o) {
    if (o.threads) throw InputError("--threads: only with --cpu (the GPU probe runs its copies and GEMMs from one thread)");
    if (!o.out.empty() && !o.hardware)
        throw InputError(
            "--out: with --gpu, name the preset whose link, host and interconnect the file keeps: --hardware PRESET");
    io::GpuProbeOptions p;
    if (o.device) {
        const double d = io::parse_number("--device", *o.device);
        if (!(d >= 0 && d <= 1023) || d != std::floor(d))
            throw InputError(fmt::format("--device: must be a whole number in [0, 1023], got '{}'", *o.device));
        p.device = static_cast<int>(d);
    }
    if (o.size) p.size_mb = io::parse_number("--size", *o.size);
    if (o.seconds) p.seconds = io::parse_number("--seconds", *o.seconds);
    // The base preset is looked up before anything is measured, so a misspelt name costs no probe.
    const nlohmann::json base = o.hardware ? io::hardware_preset_json("--hardware", *o.hardware) : nlohmann::json::object();
    std::unique_ptr<io::AtomicFile> preset = o.out.empty() ? nullptr : std::make_unique<io::AtomicFile>(o.out);
    const io::GpuProbeResult r = io::probe_gpu(p);
    if (preset) preset->write(io::probe_gpu_preset(r, base, *o.hardware).dump(2) + "\n");
    emit_lazy(
        o.output, [&] { return io::render_gpu_probe_text(r, o.out); }, [&] { return io::gpu_probe_json(r).dump(2) + "\n"; },
        [&] { return io::render_gpu_probe_markdown(r); });
    if (preset) preset->commit();
}

void run_probe(const ProbeOptionsText& o) {
    if (o.cpu == o.gpu) throw InputError("probe: give one of --cpu (this host) or --gpu (one CUDA GPU)");
    check_distinct_outputs({{"--out", o.out}, {"--report", o.output.report}});
    if (o.gpu) return run_gpu_probe(o);
    if (o.device || o.hardware) throw InputError(fmt::format("{}: only with --gpu", o.device ? "--device" : "--hardware"));
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
        "probe",
        "measure this host (DRAM triad, FP32 decode attention) as a host preset, or one CUDA GPU (HBM, link, GEMM) as a "
        "hardware preset");
    sub->footer(fmt::format(
        "--cpu: the triad runs on all threads, and on each NUMA node's CPUs when /sys shows more than one node. The\n"
        "attention kernel is GQA (8 KV heads x 8 queries, head dim 128), FP32, at contexts 1k, 8k and 32k. The preset\n"
        "has data/hosts.json's entry schema: give the file to any scenario command as --host FILE.json (it replaces the\n"
        "hardware preset's host), or name it as a hardware file's \"host\".\n"
        "--gpu: a device-to-device copy (HBM), pinned copies each way from 4 KiB to 256 MiB and both ways at once (the\n"
        "link), and cuBLASLt GEMMs in BF16, FP16, FP8 and TF32. --out writes the --hardware preset's entry with the GPU's\n"
        "figures measured (data/hardware.json's schema): give it to any scenario command as --hardware FILE.json.\n"
        "This kvroof {} the GPU probe (it needs the CUDA toolkit at build time, never to run anything else).\n"
        "Examples:\n"
        "  kvroof probe --cpu\n"
        "  kvroof probe --cpu --threads 8 --size 1024 --seconds 2 --out host.json\n"
        "  kvroof verdict --hardware h200 --host host.json\n"
        "  kvroof probe --gpu --hardware h100-sxm --out h100.json\n"
        "  kvroof verdict --hardware h100.json",
        io::gpu_probe_built() ? "has" : "was built without"));
    sub->add_flag("--cpu", o->cpu, "probe the CPU host");
    sub->add_flag("--gpu", o->gpu, "probe one CUDA GPU (--device)");
    auto add = [&](const char* flag, std::optional<std::string>& t, const char* type, std::string_view help,
                   std::string_view absent) { add_text_option(*sub, flag, t, type, "Probe", help, absent); };
    const io::ProbeOptions def;
    const io::GpuProbeOptions gpu_def;
    add("--threads", o->threads, "N", "threads (--cpu)", "every CPU");
    add("--size", o->size, "MB",
        "--cpu: the triad's three arrays together, in [1, 1000000] MB; use >= 4x the last-level cache. --gpu: each of the "
        "device copy's two buffers",
        fmt::format("{:g} (--cpu), {:g} (--gpu)", def.size_mb, gpu_def.size_mb));
    add("--seconds", o->seconds, "S", "time for each measurement (best of the repetitions), in [0.01, 600]",
        fmt::format("{:g}", def.seconds));
    add("--device", o->device, "N", "the CUDA device to probe (--gpu)", "0");
    add("--hardware", o->hardware, "PRESET",
        "the hardware preset whose link, host and interconnect --out keeps, its GPU figures replaced by the measured ones "
        "(--gpu)",
        "none; needed by --out");
    sub->add_option("--out", o->out,
                    with_default("write the host (--cpu) or hardware (--gpu) preset JSON to FILE (atomically)", "none"))
        ->type_name("FILE")
        ->group("Probe");
    add_output_flags(*sub, o->output);
    return [o] { run_probe(*o); };
}

}  // namespace kvroof::cli
