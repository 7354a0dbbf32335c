// SPDX-License-Identifier: MIT
#include "kvroof/io/plot.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace kvroof::io {
namespace {
std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '\n') {  // a line break in a title: gnuplot's \n inside double quotes
            out += "\\n";
            continue;
        }
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}
// A tic's label is a format for its value: a literal '%' is written twice.
std::string tic_label(const std::string& text) {
    std::string out;
    for (char c : text) out += c == '%' ? std::string("%%") : std::string(1, c);
    return out;
}
}  // namespace

std::string gnuplot_script(const PlotSpec& spec, const std::string& svg_path) {
    std::string s;
    s += "set terminal svg size 1000,600 dynamic noenhanced font \"Helvetica,13\" background rgb \"white\"\n";
    s += "set output " + quote(svg_path) + "\n";
    s += "set encoding utf8\n";
    s += "set title " + quote(spec.title) + "\n";
    s += "set xlabel " + quote(spec.xlabel) + "\n";
    s += "set ylabel " + quote(spec.ylabel) + "\n";
    s += "set grid lc rgb \"#dddddd\"\n";
    s += "set key " + spec.key + " box opaque\n";
    s += "set border lc rgb \"#444444\"\n";
    if (spec.log_x) s += "set logscale x 2\n";
    if (!spec.y_categories.empty()) {
        s += fmt::format("set yrange [0.5:{}.5]\nset ytics (", spec.y_categories.size());
        for (size_t i = 0; i < spec.y_categories.size(); ++i)
            s += fmt::format("{}{} {}", i ? ", " : "", quote(tic_label(spec.y_categories[i])), i + 1);
        s += ")\n";
    }
    // A series without points is left out (gnuplot warns about an empty data block); with no point and no
    // line at all the graph says so instead of failing on an empty plot command (a scenario where nothing fits).
    const bool empty = spec.hlines.empty() &&
                       std::all_of(spec.series.begin(), spec.series.end(), [](const PlotSeries& p) { return p.x.empty(); });
    if (empty) {
        s += spec.log_x ? "set xrange [1:2]\n" : "set xrange [0:1]\n";
        s += "set label 1 \"nothing to plot: no point has a value here\" at graph 0.5, graph 0.5 center\nunset key\n";
    }
    if (spec.y_categories.empty()) s += empty ? "set yrange [0:1]\n" : "set yrange [0:*]\n";
    for (size_t i = 0; i < spec.series.size(); ++i) {
        const PlotSeries& p = spec.series[i];
        if (p.x.empty()) continue;
        s += fmt::format("$d{} << EOD\n", i);
        for (size_t k = 0; k < p.x.size(); ++k) {
            if (p.style == PlotSeries::Style::band)
                s += fmt::format("{:.9g} {:.9g} {:.9g}\n", p.x[k], p.y_low[k], p.y[k]);
            else
                s += fmt::format("{:.9g} {:.9g}\n", p.x[k], p.y[k]);
        }
        s += "EOD\n";
    }
    // Vertical markers: an arrow without a head from the bottom to the top of the
    // graph, labelled at its top; the label is the legend entry too (a dashed
    // sample line in the key, drawn off the graph).
    for (const PlotLine& v : spec.vlines)
        s += fmt::format("set arrow from {:.9g}, graph 0 to {:.9g}, graph 1 nohead dt 3 lw 2 lc rgb {} front\n", v.at, v.at,
                         quote(v.color));
    s += "plot ";
    bool first = true;
    for (const PlotLine& h : spec.hlines) {
        s += fmt::format("{}{:.9g} with lines dt 2 lw 1.5 lc rgb {} title {}", first ? "" : ", \\\n     ", h.at, quote(h.color),
                         quote(h.title));
        first = false;
    }
    for (const PlotLine& v : spec.vlines) {
        s += fmt::format("{}NaN with lines dt 3 lw 2 lc rgb {} title {}", first ? "" : ", \\\n     ", quote(v.color),
                         quote(v.title));
        first = false;
    }
    for (size_t i = 0; i < spec.series.size(); ++i) {
        const PlotSeries& p = spec.series[i];
        if (p.x.empty()) continue;
        const std::string color = p.color.empty() ? "" : " lc rgb " + quote(p.color);
        if (!first) s += ", \\\n     ";
        first = false;
        switch (p.style) {
            case PlotSeries::Style::band:
                s += fmt::format("$d{} using 1:2:3 with filledcurves fs transparent solid 0.25 noborder{} title {}", i, color,
                                 quote(p.title));
                break;
            case PlotSeries::Style::points:
                s += fmt::format("$d{} using 1:2 with points pt 7 ps 0.6{} title {}", i, color, quote(p.title));
                break;
            case PlotSeries::Style::line:
                s += fmt::format("$d{} using 1:2 with lines lw 2{} title {}", i, color, quote(p.title));
                break;
        }
    }
    if (first) s += "NaN notitle";
    s += "\n";
    return s;
}

std::string find_gnuplot() {
    const char* env = std::getenv("PATH");
    const std::string path = env ? env : "";
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find(':', start);
        if (end == std::string::npos) end = path.size();
        const std::string dir = end > start ? path.substr(start, end - start) : ".";  // an empty entry is the current folder
        std::string exe = dir + "/gnuplot";  // not const: returned by move
        struct stat st {};
        if (::stat(exe.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(exe.c_str(), X_OK) == 0) return exe;
        start = end + 1;
    }
    throw std::runtime_error("gnuplot not found on PATH: install it (apt-get install gnuplot-nox) to draw plots");
}

namespace {

// SIGPIPE ignored while feeding gnuplot: if it dies early, the write fails
// with EPIPE and its exit status says why, instead of the signal ending kvroof.
class SigpipeIgnored {
public:
    SigpipeIgnored() noexcept {
        struct sigaction ign {};
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        ::sigaction(SIGPIPE, &ign, &old_);
    }
    SigpipeIgnored(const SigpipeIgnored&) = delete;
    SigpipeIgnored& operator=(const SigpipeIgnored&) = delete;
    ~SigpipeIgnored() { ::sigaction(SIGPIPE, &old_, nullptr); }

private:
    struct sigaction old_ {};
};

// gnuplot's messages, kept in an unlinked scratch file: its warnings (an
// empty range widened, a series of one point) are not kvroof's to print, and
// when it fails, its last line goes into kvroof's one-line error.
class GnuplotLog {
public:
    GnuplotLog() {
        std::string name = (std::filesystem::temp_directory_path() / "kvroof-gnuplot-XXXXXX").string();
        fd_ = ::mkostemp(name.data(), O_CLOEXEC);
        if (fd_ < 0) throw std::runtime_error(fmt::format("cannot start gnuplot: {}", std::strerror(errno)));
        ::unlink(name.c_str());
    }
    GnuplotLog(const GnuplotLog&) = delete;
    GnuplotLog& operator=(const GnuplotLog&) = delete;
    ~GnuplotLog() { ::close(fd_); }
    [[nodiscard]] int fd() const noexcept { return fd_; }
    // The last line gnuplot wrote that says something, or "".
    [[nodiscard]] std::string last_line() const {
        std::string text, line;
        char buf[4096];
        ssize_t n = 0;
        for (off_t at = 0; (n = ::pread(fd_, buf, sizeof buf, at)) > 0 && text.size() < (1u << 20); at += n)
            text.append(buf, static_cast<size_t>(n));
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            const std::string l = text.substr(start, end - start);
            if (l.find_first_not_of(" \t^\r") != std::string::npos) line = l.substr(l.find_first_not_of(" \t"));
            start = end + 1;
        }
        return line;
    }

private:
    int fd_ = -1;
};

// Runs `gnuplot` with `script` on its standard input, its output and messages
// into `log`; throws unless it exits 0.
void run_gnuplot(const std::string& gnuplot, const std::string& script, const std::string& svg_path) {
    const GnuplotLog log;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("cannot start gnuplot: {}", std::strerror(errno)));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[0], 0);
    posix_spawn_file_actions_adddup2(&actions, log.fd(), 1);
    posix_spawn_file_actions_adddup2(&actions, log.fd(), 2);
    std::string arg0 = gnuplot;
    char* argv[] = {arg0.data(), nullptr};
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[0]);
    if (spawned != 0) {
        ::close(fds[1]);
        throw std::runtime_error(fmt::format("cannot start gnuplot '{}': {}", gnuplot, std::strerror(spawned)));
    }
    size_t done = 0;
    {
        const SigpipeIgnored ignored;
        while (done < script.size()) {
            const ssize_t n = ::write(fds[1], script.data() + done, script.size() - done);
            if (n < 0) {
                if (errno == EINTR) continue;
                break;  // EPIPE: gnuplot stopped reading
            }
            done += static_cast<size_t>(n);
        }
        ::close(fds[1]);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw std::runtime_error(fmt::format("gnuplot drawing '{}': {}", svg_path, std::strerror(errno)));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || done < script.size()) {
        const std::string why = log.last_line();
        throw std::runtime_error(fmt::format("gnuplot failed drawing '{}'{}{}", svg_path, why.empty() ? "" : ": ", why));
    }
}

// gnuplot may exit 0 without drawing (a stub, a script it did not finish).
void check_drawn(const std::string& file, const std::string& svg_path) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0 || st.st_size == 0)
        throw std::runtime_error(fmt::format("gnuplot drew nothing for '{}'", svg_path));
}

}  // namespace

void render_svg(const PlotSpec& spec, AtomicFile& out) {
    const std::string gnuplot = find_gnuplot();
    if (out.atomic()) {
        // gnuplot writes the temporary file; `out` renames it on commit.
        run_gnuplot(gnuplot, gnuplot_script(spec, out.temp_path()), out.path());
        check_drawn(out.temp_path(), out.path());
        return;
    }
    // A target that cannot be renamed over: draw into a scratch file, copy it.
    AtomicFile scratch((std::filesystem::temp_directory_path() / "kvroof-plot.svg").string());
    run_gnuplot(gnuplot, gnuplot_script(spec, scratch.temp_path()), out.path());
    check_drawn(scratch.temp_path(), out.path());
    std::ifstream in(scratch.temp_path(), std::ios::binary);
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error(fmt::format("cannot read the plot drawn for '{}'", out.path()));
    out.write(svg);
}

void render_svg(const PlotSpec& spec, const std::string& svg_path) {
    AtomicFile out(svg_path);
    render_svg(spec, out);
    out.commit();
}

}  // namespace kvroof::io
