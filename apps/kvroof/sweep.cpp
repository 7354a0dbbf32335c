// SPDX-License-Identifier: MIT
// `kvroof sweep`: a grid over any scenario knob, streamed as CSV or JSON Lines.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "commands.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/plot.hpp"
#include "kvroof/io/shard.hpp"
#include "kvroof/io/sweep.hpp"
#include "scenario_flags.hpp"
#include "sweep_plot.hpp"

namespace kvroof::cli {
namespace {

struct SweepOptions {
    io::ScenarioInputs fixed;  // the scenario flags given on the command line
    io::LoadText load;  // a benchmark's load: operating-point rows
    BenchmarkWorkloadText bench;  // --isl/--osl/--prefix: one class, set as --workload
    std::vector<std::string> grid;
    std::string config, format, out, shard, plot, x, y, meta;
    std::optional<std::string> analysis;
    std::optional<std::string> threads;
    bool no_meta = false;
};

// A progress bar on stderr, only for a terminal and only after the first second.
class Progress {
public:
    Progress() : start_(std::chrono::steady_clock::now()), tty_(::isatty(2) == 1) {}
    void operator()(std::uint64_t done, std::uint64_t total) {
        if (!tty_) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
        const int width = 40, fill = static_cast<int>(frac * width);
        const double secs = std::chrono::duration<double>(now - start_).count();
        std::fprintf(stderr, "\r[%s%s] %5.1f%% %llu/%llu points, %.0f/s", std::string(static_cast<size_t>(fill), '#').c_str(),
                     std::string(static_cast<size_t>(width - fill), ' ').c_str(), 100 * frac,
                     static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                     static_cast<double>(done) / secs);
        shown_ = true;
    }
    ~Progress() {
        if (shown_) std::fputc('\n', stderr);
    }

private:
    std::chrono::steady_clock::time_point start_, last_{};
    bool tty_, shown_ = false;
};

// The spec from the flags: a --config file's fixed values, overridden by the
// same flags on the command line (marked so in the provenance), then the grid.
io::SweepSpec spec_from(const SweepOptions& o) {
    io::SweepSpec spec = o.config.empty() ? io::SweepSpec{} : io::load_sweep_file(o.config);
    spec.fixed.override_with(o.fixed);
    const nlohmann::json from_file = io::load_text_json(spec.load);
    spec.load.override_with(o.load);
    if (!o.config.empty()) {  // the file's load flags the command line kept, named where the load is at fault
        const nlohmann::json merged = io::load_text_json(spec.load), cli = io::load_text_json(o.load);
        spec.load_file = o.config;
        for (const auto& [k, v] : merged.items())
            if (!cli.contains(k)) spec.load_from_file.push_back(k);
        // The command line's load flags that replaced one of the file's: the same flag, or another load in place of its.
        for (const auto& [k, v] : cli.items()) {
            if (from_file.contains(k)) spec.load_overrides.push_back(k);
            const bool load = k == "batch" || k == "concurrency" || k == "request-rate";
            for (const char* mode : {"batch", "concurrency", "request-rate"})
                if (load && k != mode && from_file.contains(mode))
                    spec.load_overrides.push_back(fmt::format("{} (in place of the file's {})", k, mode));
        }
    }
    // A command-line axis replaces the file's axis of the same knob, in its place (the rows keep their order).
    const size_t file_axes = spec.axes.size();
    std::vector<std::string> given;  // a knob twice on the command line is an error even where the file has it
    for (const auto& g : o.grid) {
        io::GridAxis a = io::parse_grid_entry(g);
        if (std::find(given.begin(), given.end(), a.knob) != given.end())
            throw InputError(fmt::format("--grid {}: given twice", a.knob));
        given.push_back(a.knob);
        const auto same = std::find_if(spec.axes.begin(), spec.axes.begin() + static_cast<std::ptrdiff_t>(file_axes),
                                       [&a](const io::GridAxis& f) { return f.knob == a.knob; });
        if (same != spec.axes.begin() + static_cast<std::ptrdiff_t>(file_axes)) {
            spec.axes_replaced.push_back(a.knob);
            *same = std::move(a);
        } else
            spec.axes.push_back(std::move(a));
    }
    if (o.analysis) spec.analysis = io::parse_sweep_analysis("--analysis", *o.analysis);
    if (const std::optional<std::string> w = benchmark_workload(o.bench)) {
        for (const char* k : {"workload", "mix"})
            if (o.fixed.given(k) || std::any_of(spec.axes.begin(), spec.axes.end(), [k](const auto& a) { return a.knob == k; }))
                throw InputError(fmt::format("--isl: replaces --{}; give one of them", k));
        const bool over = spec.fixed.given("workload") || spec.fixed.given("mix");  // the file's, replaced
        spec.fixed.clear("mix");  // --isl's one class replaces a file's mix as it does its workload
        spec.fixed.set("workload", *w, over ? io::Origin::command_line_over_config : io::Origin::command_line);
    }
    if (o.format == "csv")  // given: over a --config provenance file's own format
        spec.format = io::SweepFormat::csv;
    else if (o.format == "jsonl")
        spec.format = io::SweepFormat::jsonl;
    else if (!o.format.empty())
        throw InputError("--format: must be csv or jsonl, got '" + o.format + "'");
    spec.threads = parse_threads(o.threads, 1024).value_or(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    if (!o.shard.empty()) {
        const io::Shard shard = io::parse_shard("--shard", o.shard);
        spec.shard_index = shard.index;
        spec.shard_count = shard.count;
    }
    return spec;
}

void check_plot_flags(const SweepOptions& o, const io::SweepSpec& spec) {
    if (o.plot.empty()) {
        if (!o.x.empty() || !o.y.empty()) throw InputError("--x/--y: only with --plot FILE.svg");
        return;
    }
    check_svg_path(o.plot);
    if (o.x.empty() || o.y.empty()) throw InputError("--plot: needs --x KNOB and --y COLUMN");
    if (spec.shard_count != 1) throw InputError("--plot: draws a whole sweep, not a shard");
}

void write_stdout(std::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size()) throw std::runtime_error("cannot write to stdout");
}

void run_sweep_cmd(const SweepOptions& o) {
    if (o.no_meta && !o.meta.empty()) throw InputError("--no-meta: not with --meta PATH; give one of them");
    check_distinct_outputs({{"--out", o.out}, {"--plot", o.plot}, {"--meta", o.meta}});
    // A sidecar may be rewritten over the --config it came from (the same provenance); the rows and plot may not.
    check_outputs_spare_inputs({{"--out", o.out}, {"--plot", o.plot}}, {{"--config", o.config}});
    const io::SweepSpec spec = spec_from(o);
    check_plot_flags(o, spec);
    io::validate_sweep(spec);
    const bool plotting = !o.plot.empty();
    if (plotting) {
        (void)check_plot_axes(spec, o.x, o.y);
        (void)io::find_gnuplot();  // a missing gnuplot fails here, before the first byte
    }

    Progress progress;
    auto on_progress = [&](std::uint64_t d, std::uint64_t t) { progress(d, t); };
    // --out, its provenance and --plot are committed only when everything has
    // worked; the plot takes its column's numbers as the rows are made (a tap),
    // never reading the text back. Every temporary goes when this returns.
    std::unique_ptr<io::AtomicFile> out, svg, meta;
    if (!o.out.empty()) out = std::make_unique<io::AtomicFile>(o.out);
    const std::string meta_path = !o.meta.empty() ? o.meta : (out && out->atomic() && !o.no_meta ? o.out + ".meta.json" : "");
    if (!meta_path.empty()) meta = std::make_unique<io::AtomicFile>(meta_path, io::InputOverwrite::allow);
    if (plotting) svg = std::make_unique<io::AtomicFile>(o.plot);
    io::ColumnTap tap{o.y, {}};
    io::run_sweep(
        spec,
        [&](std::string_view s) {
            if (out)
                out->write(s);
            else
                write_stdout(s);
        },
        on_progress, plotting ? &tap : nullptr);
    if (plotting) {
        io::render_svg(plot_from_rows(spec, o.x, tap), *svg);
        svg->commit();
    }
    if (meta) {
        meta->write(io::sweep_provenance(spec, meta_path).dump(2) + "\n");
        meta->commit();
    }
    if (out) out->commit();
    if (std::fflush(stdout) != 0) throw std::runtime_error("cannot write to stdout");
}

// --help's footer: the grid's syntax and knobs, what a row is, provenance, examples.
std::string sweep_footer() {
    std::string knobs;
    for (const auto& k : io::grid_knobs()) knobs += (knobs.empty() ? "" : " ") + k;
    return "Grid: --grid \"knob=a:b:step\" (inclusive range, units allowed) or \"knob=v1,v2,...\" "
           "(workload and mix: separate with ';').\n"
           "The last --grid varies fastest. Knobs: " +
           knobs +
           "\n"
           "Without an f grid each row is the verdict (best f, band); with one, the band at that f.\n"
           "With a load (--batch, --concurrency, --request-rate, or a --grid of one) each row is the operating point a\n"
           "benchmark measures (ITL, TTFT, throughput), at f = 0 or at each f of an f grid.\n"
           "With --analysis prefill each row is `kvroof prefill`'s answer for the row's scenario (κ_crit, reload and\n"
           "compute times, TTFT at ov): the cached KV reloaded over the GPU's own link (--c2c-bw per GPU), C_eff =\n"
           "--eta-compute x the GPU's dense peak in the GEMM precision, the --gpus group as the tensor-parallel group.\n"
           "With --analysis layers each row is `kvroof layers --model`'s row for the row's scenario: its weights at\n"
           "--weight-dtype, --gpus as TP, --hbm-cap as the card budget, --c2c-bw as the link, the default compute per layer.\n"
           "A flag given on the command line overrides the same key of a --config file: a --grid of a knob the file\n"
           "also sweeps replaces that axis in its place, a load flag replaces the file's load, --isl/--osl its\n"
           "workload or mix.\n"
           "Provenance: with --out FILE (or --meta FILE) the tool version, the fixed inputs (and where each came from),\n"
           "the defaults in force and the grid go to FILE.meta.json, itself a sweep file: `kvroof sweep --config "
           "FILE.meta.json`\n"
           "reproduces FILE. The rows stay plain CSV / JSON Lines, so shards still concatenate to the whole.\n"
           "Examples:\n"
           "  kvroof sweep --grid \"sparse=0.05,0.1,1\" --grid \"f=0:1:0.05\"\n"
           "  kvroof sweep --grid \"c2c-bw=64GB/s,450GB/s\" --grid \"model=llama-3.1-70b,qwen3-235b-a22b\" --format jsonl\n"
           "  kvroof sweep --config configs/sweep_cpus_per_gpu.json --out sweep.csv\n"
           "  kvroof sweep --hardware h100-sxm --model llama-3.1-8b --weight-dtype fp8 --isl 2000 --osl 500 "
           "--grid \"concurrency=1,2,4,8,16,32,64,128,max\"\n"
           "  kvroof sweep --grid \"cpus-per-gpu=0.5,1,2,4\" --grid \"f=0:1:0.01\" --plot f.svg --x f --y tps_con_tok_per_s\n"
           "  kvroof sweep --analysis prefill --grid \"c2c-bw=16:900:4\" --grid \"model=llama-3.1-70b,deepseek-v3\" --plot k.svg "
           "--x c2c-bw --y kappa_crit\n"
           "Cluster job arrays: each task runs one shard; `cat` the shards in order to get the whole sweep:\n"
           "  sbatch --array=1-16 --wrap 'kvroof sweep --config big.json --shard $SLURM_ARRAY_TASK_ID/16 --out "
           "part-$SLURM_ARRAY_TASK_ID.csv'\n"
           "  parallel kvroof sweep --config big.json --shard {}/8 --out part-{}.csv ::: 1 2 3 4 5 6 7 8";
}

}  // namespace

Action setup_sweep(CLI::App& app) {
    auto o = std::make_shared<SweepOptions>();
    CLI::App* sub =
        app.add_subcommand("sweep", "a grid over any knob, streamed as CSV or JSON Lines (same functions as verdict)");
    sub->footer(sweep_footer());
    add_scenario_flags(*sub, o->fixed);
    const std::string point = "Operating point (a benchmark's load)";
    add_load_flags(*sub, o->load, point, "none: verdict rows", "chunked, with a load");
    add_benchmark_workload_flags(*sub, o->bench, point);
    sub->add_option("--grid", o->grid, with_default("knob=values (repeatable)", "none; a sweep needs one here or in --config"))
        ->group("Sweep");
    sub->add_option(
           "--config", o->config,
           with_default("sweep file (JSON: fixed flags and grid), e.g. configs/sweep_cpus_per_gpu.json", "none: the flags alone"))
        ->group("Sweep");
    add_text_option(*sub, "--analysis", o->analysis, "NAME", "Sweep",
                    "what each row answers: verdict (the best f and band; an operating point under a load), prefill "
                    "(κ_crit of a cached-KV reload) or layers (the layer-offload ceiling of the weights)",
                    "verdict");
    sub->add_option("--format", o->format,
                    with_default("csv (header with units) or jsonl", "csv, or the format a --config OUT.meta.json records"))
        ->group("Sweep");
    sub->add_option("--out", o->out,
                    with_default("write to FILE instead of stdout (- is stdout): atomically, through a link to its target, "
                                 "directly to a device (/dev/stdout)",
                                 "stdout"))
        ->type_name("FILE")
        ->group("Sweep");
    add_text_option(*sub, "--threads", o->threads, "N", "Sweep", "worker threads", "all cores");
    sub->add_option("--shard", o->shard,
                    with_default("run shard K of N (1-based): concatenated shards equal the whole sweep",
                                 "1/1, the whole sweep, or the shard a --config OUT.meta.json records"))
        ->type_name("K/N")
        ->group("Sweep");
    sub->add_option("--plot", o->plot, with_default("also draw --y against --x as an SVG (gnuplot)", "none"))
        ->type_name("FILE.svg")
        ->group("Plot");
    sub->add_option("--x", o->x, with_default("x axis: a numeric --grid knob, the last one", "none; --plot needs it"))
        ->type_name("KNOB")
        ->group("Plot");
    sub->add_option(
           "--y", o->y,
           with_default("y axis: a numeric column of the rows, e.g. tps_con_tok_per_s, gain_opt", "none; --plot needs it"))
        ->type_name("COLUMN")
        ->group("Plot");
    sub->add_option("--meta", o->meta,
                    with_default("write the provenance (version, fixed inputs and where each came from, grid) to FILE",
                                 "OUT.meta.json next to --out"))
        ->type_name("FILE.json")
        ->group("Sweep");
    sub->add_flag("--no-meta", o->no_meta, "do not write OUT.meta.json next to --out")->group("Sweep");
    return [o] { run_sweep_cmd(*o); };
}

}  // namespace kvroof::cli
