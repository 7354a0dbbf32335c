// SPDX-License-Identifier: MIT
// `kvroof sweep`: a grid over any scenario knob, streamed as CSV or JSON Lines.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "commands.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/parse.hpp"
#include "kvroof/io/plot.hpp"
#include "kvroof/io/shard.hpp"
#include "kvroof/io/sweep.hpp"
#include "scenario_flags.hpp"

namespace kvroof::cli {
namespace {

struct SweepOptions {
    io::ScenarioInputs fixed;
    std::vector<std::string> grid;
    std::string config, format = "csv", out, shard, plot, x, y;
    std::optional<std::string> threads;
    bool hardware_given = false, model_given = false;  // on the command line, whatever the value
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
                     std::string(static_cast<size_t>(width - fill), ' ').c_str(), 100 * frac, static_cast<unsigned long long>(done),
                     static_cast<unsigned long long>(total), static_cast<double>(done) / secs);
        shown_ = true;
    }
    ~Progress() {
        if (shown_) std::fputc('\n', stderr);
    }

private:
    std::chrono::steady_clock::time_point start_, last_{};
    bool tty_, shown_ = false;
};

// The rows of a finished sweep CSV, for plotting: x = the --x knob's column,
// one series per combination of the other grid knobs.
// --x must be the last, numeric --grid knob and --y a column of the CSV.
int check_plot_axes(const io::SweepSpec& spec, const std::string& x_knob, const std::string& y_col) {
    int x_axis = -1;
    for (size_t i = 0; i < spec.axes.size(); ++i)
        if (spec.axes[i].knob == x_knob) x_axis = static_cast<int>(i);
    if (x_axis < 0) throw InputError("--x: must be one of the --grid knobs, got '" + x_knob + "'");
    if (spec.axes[static_cast<size_t>(x_axis)].unit == io::KnobUnit::text) throw InputError("--x: must be a numeric knob, got '" + x_knob + "'");
    if (x_axis != static_cast<int>(spec.axes.size()) - 1) throw InputError("--x: must be the last --grid (the one that varies fastest), got '" + x_knob + "'");
    const std::string header = io::sweep_header(spec);
    const std::string cols = "," + header.substr(0, header.size() - 1) + ",";
    if (cols.find("," + y_col + ",") == std::string::npos)
        throw InputError("--y: unknown column '" + y_col + "'; allowed: " + header.substr(0, header.size() - 1));
    return x_axis;
}

io::PlotSpec plot_from_csv(const std::string& csv_path, const io::SweepSpec& spec, const std::string& x_knob, const std::string& y_col) {
    const int x_axis = check_plot_axes(spec, x_knob, y_col);
    std::ifstream in(csv_path);
    std::string header;
    std::getline(in, header);
    std::vector<std::string> cols;
    {
        size_t start = 0;
        while (true) {
            const size_t c = header.find(',', start);
            cols.push_back(header.substr(start, c == std::string::npos ? std::string::npos : c - start));
            if (c == std::string::npos) break;
            start = c + 1;
        }
    }
    int y_idx = -1;
    for (size_t i = 0; i < cols.size(); ++i)
        if (cols[i] == y_col) y_idx = static_cast<int>(i);
    if (y_idx < 0) {
        std::string allowed;
        for (const auto& c : cols) allowed += (allowed.empty() ? "" : ", ") + c;
        throw InputError("--y: unknown column '" + y_col + "'; allowed: " + allowed);
    }
    const std::string x_col = spec.axes[static_cast<size_t>(x_axis)].column;
    int x_idx = -1;
    for (size_t i = 0; i < cols.size(); ++i)
        if (cols[i] == x_col) x_idx = static_cast<int>(i);
    io::PlotSpec p;
    p.title = fmt::format("kvroof sweep: {} vs {}", y_col, x_col);
    p.xlabel = x_col;
    p.ylabel = y_col;
    const size_t per_series = static_cast<size_t>(spec.axes.back().size());
    std::string line;
    size_t row = 0;
    const std::string palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"};
    while (std::getline(in, line)) {
        // Text cells are quoted when they contain commas; split respecting quotes.
        std::vector<std::string> cells;
        std::string cell;
        bool q = false;
        for (char ch : line) {
            if (ch == '"') q = !q;
            else if (ch == ',' && !q) {
                cells.push_back(cell);
                cell.clear();
            } else cell += ch;
        }
        cells.push_back(cell);
        if (row % per_series == 0) {
            io::PlotSeries s;
            s.style = io::PlotSeries::Style::line;
            std::string title;
            for (size_t i = 0; i + 1 < spec.axes.size(); ++i)
                if (spec.axes[i].knob != "f" && spec.axes[i].knob != "ov") {
                    for (size_t c = 0; c < cols.size(); ++c)
                        if (cols[c] == spec.axes[i].column) title += (title.empty() ? "" : " ") + cols[c] + "=" + cells[c];
                }
            s.title = title.empty() ? y_col : title;
            s.color = palette[p.series.size() % 8];
            p.series.push_back(s);
        }
        const int xi = x_idx >= 0 ? x_idx : 0;
        try {
            p.series.back().x.push_back(std::stod(cells[static_cast<size_t>(xi)]));
            p.series.back().y.push_back(std::stod(cells[static_cast<size_t>(y_idx)]));
        } catch (const std::exception&) {
            throw InputError("--y: column '" + y_col + "' is not numeric");
        }
        ++row;
    }
    return p;
}

void run_sweep_cmd(const SweepOptions& o) {
    io::SweepSpec spec = o.config.empty() ? io::SweepSpec{} : io::load_sweep_file(o.config);
    spec.hardware_given = spec.hardware_given || o.hardware_given;
    spec.model_given = spec.model_given || o.model_given;
    if (o.config.empty()) spec.fixed = o.fixed;
    else {
        // Flags given on the command line override the file's fixed values.
        io::ScenarioInputs merged = spec.fixed;
        const io::ScenarioInputs& f = o.fixed;
        // Given, not "different from the default": --hardware gb200 must override a file's h200.
        if (o.hardware_given) merged.hardware = f.hardware;
        if (o.model_given) merged.model = f.model;
        for (auto field : {&io::ScenarioInputs::workload, &io::ScenarioInputs::mix, &io::ScenarioInputs::gpus,
                           &io::ScenarioInputs::gpu_flops, &io::ScenarioInputs::hbm_cap, &io::ScenarioInputs::hbm_bw,
                           &io::ScenarioInputs::nvlink_bw, &io::ScenarioInputs::c2c_bw, &io::ScenarioInputs::link,
                           &io::ScenarioInputs::cpu_dram_bw, &io::ScenarioInputs::cpu_flops, &io::ScenarioInputs::cpu_mem,
                           &io::ScenarioInputs::cpus_per_gpu, &io::ScenarioInputs::eta, &io::ScenarioInputs::eta_compute,
                           &io::ScenarioInputs::eta_mem, &io::ScenarioInputs::hbm_reserve, &io::ScenarioInputs::kv_dtype,
                           &io::ScenarioInputs::weight_dtype, &io::ScenarioInputs::sparse, &io::ScenarioInputs::r,
                           &io::ScenarioInputs::slo_tpot, &io::ScenarioInputs::slo_ttft, &io::ScenarioInputs::idle})
            if (f.*field) merged.*field = f.*field;
        spec.fixed = merged;
    }
    for (const auto& g : o.grid) spec.axes.push_back(io::parse_grid_entry(g));
    if (o.format == "csv") spec.format = io::SweepFormat::csv;
    else if (o.format == "jsonl") spec.format = io::SweepFormat::jsonl;
    else throw InputError("--format: must be csv or jsonl, got '" + o.format + "'");
    spec.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (o.threads) {
        const double t = io::parse_number("--threads", *o.threads);
        if (t < 1 || t > 1024 || t != std::floor(t)) throw InputError("--threads: must be a whole number in [1, 1024], got '" + *o.threads + "'");
        spec.threads = static_cast<int>(t);
    }
    if (!o.shard.empty()) {
        const io::Shard shard = io::parse_shard("--shard", o.shard);
        spec.shard_index = shard.index;
        spec.shard_count = shard.count;
    }
    const bool plotting = !o.plot.empty();
    if (plotting) {
        if (o.x.empty() || o.y.empty()) throw InputError("--plot: needs --x KNOB and --y COLUMN");
        if (spec.format != io::SweepFormat::csv) throw InputError("--plot: needs --format csv");
        if (spec.shard_count != 1) throw InputError("--plot: draws a whole sweep, not a shard");
    } else if (!o.x.empty() || !o.y.empty()) {
        throw InputError("--x/--y: only with --plot FILE.svg");
    }
    io::validate_sweep(spec);
    if (plotting) {
        (void)check_plot_axes(spec, o.x, o.y);
        (void)io::find_gnuplot();  // a missing gnuplot fails here, before the first byte
    }

    Progress progress;
    auto on_progress = [&](std::uint64_t d, std::uint64_t t) { progress(d, t); };
    // --out and --plot are committed only when everything has worked; the plot
    // reads the rows back, from --out's temporary file or, when --out is stdout
    // or a device, from a scratch copy. Every temporary goes when this returns.
    std::unique_ptr<io::AtomicFile> out, scratch, svg;
    if (!o.out.empty()) out = std::make_unique<io::AtomicFile>(o.out);
    if (plotting) {
        if (!out || !out->atomic())
            scratch = std::make_unique<io::AtomicFile>((std::filesystem::temp_directory_path() / "kvroof-sweep.csv").string());
        svg = std::make_unique<io::AtomicFile>(o.plot);
    }
    io::AtomicFile* data = scratch ? scratch.get() : out.get();
    auto write_stdout = [](std::string_view s) {
        if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size()) throw std::runtime_error("cannot write to stdout");
    };
    io::run_sweep(
        spec,
        [&](std::string_view s) {
            if (data) data->write(s);
            else write_stdout(s);
        },
        on_progress);
    if (plotting) {
        io::render_svg(plot_from_csv(data->temp_path(), spec, o.x, o.y), *svg);
        svg->commit();
        if (scratch) {
            std::ifstream in(scratch->temp_path(), std::ios::binary);
            std::string block(1 << 20, '\0');
            while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
                const std::string_view got(block.data(), static_cast<size_t>(in.gcount()));
                if (out) out->write(got);
                else write_stdout(got);
            }
            if (in.bad()) throw std::runtime_error("cannot read back the sweep rows for " + (out ? o.out : std::string("stdout")));
        }
    }
    if (out) out->commit();
    if (std::fflush(stdout) != 0) throw std::runtime_error("cannot write to stdout");
}

}  // namespace

Action setup_sweep(CLI::App& app) {
    auto o = std::make_shared<SweepOptions>();
    CLI::App* sub = app.add_subcommand("sweep", "a grid over any knob, streamed as CSV or JSON Lines (same functions as verdict)");
    std::string knobs;
    for (const auto& k : io::grid_knobs()) knobs += (knobs.empty() ? "" : " ") + k;
    sub->footer(
        "Grid: --grid \"knob=a:b:step\" (inclusive range, units allowed) or \"knob=v1,v2,...\" (workload and mix: separate with ';').\n"
        "The last --grid varies fastest. Knobs: " + knobs + "\n"
        "Without an f grid each row is the verdict (best f, band); with one, the band at that f.\n"
        "Examples:\n"
        "  kvroof sweep --grid \"sparse=0.05,0.1,1\" --grid \"f=0:1:0.05\"\n"
        "  kvroof sweep --grid \"c2c-bw=64GB/s,450GB/s\" --grid \"model=llama-3.1-70b,qwen3-235b-a22b\" --format jsonl\n"
        "  kvroof sweep --config configs/sweep_cpus_per_gpu.json --out sweep.csv\n"
        "  kvroof sweep --grid \"cpus-per-gpu=0.5,1,2,4\" --grid \"f=0:1:0.01\" --plot f.svg --x f --y tps_con_tok_per_s\n"
        "Cluster job arrays: each task runs one shard; `cat` the shards in order to get the whole sweep:\n"
        "  sbatch --array=1-16 --wrap 'kvroof sweep --config big.json --shard $SLURM_ARRAY_TASK_ID/16 --out part-$SLURM_ARRAY_TASK_ID.csv'\n"
        "  parallel kvroof sweep --config big.json --shard {}/8 --out part-{}.csv ::: 1 2 3 4 5 6 7 8");
    add_scenario_flags(*sub, o->fixed);
    sub->add_option("--grid", o->grid, "knob=values (repeatable)")->group("Sweep");
    sub->add_option("--config", o->config, "sweep file (JSON: fixed flags and grid), e.g. configs/sweep_cpus_per_gpu.json")->group("Sweep");
    sub->add_option("--format", o->format, "csv (header with units) or jsonl")->capture_default_str()->group("Sweep");
    sub->add_option("--out", o->out, "write to FILE instead of stdout: atomically, through a link to its target, directly to a device (/dev/stdout)")->type_name("FILE")->group("Sweep");
    sub->add_option_function<std::string>("--threads", [o](const std::string& v) { o->threads = v; }, "worker threads [default: all cores]")
        ->type_name("N")->group("Sweep");
    sub->add_option("--shard", o->shard, "run shard K of N (1-based): concatenated shards equal the whole sweep")->type_name("K/N")->group("Sweep");
    sub->add_option("--plot", o->plot, "also draw --y against --x as an SVG (gnuplot)")->type_name("FILE.svg")->group("Plot");
    sub->add_option("--x", o->x, "x axis: a numeric --grid knob, the last one")->type_name("KNOB")->group("Plot");
    sub->add_option("--y", o->y, "y axis: a CSV column, e.g. tps_con_tok_per_s, gain_opt")->type_name("COLUMN")->group("Plot");
    return [o, sub] {
        o->hardware_given = sub->get_option("--hardware")->count() > 0;
        o->model_given = sub->get_option("--model")->count() > 0;
        run_sweep_cmd(*o);
    };
}

}  // namespace kvroof::cli
