// SPDX-License-Identifier: MIT
#include "kvroof/io/plot.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace kvroof::io {
namespace {
std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}
}  // namespace

std::string gnuplot_script(const PlotSpec& spec, const std::string& svg_path) {
    std::string s;
    s += "set terminal svg size 900,560 dynamic noenhanced font \"Helvetica,13\" background rgb \"white\"\n";
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
            s += fmt::format("{}{} {}", i ? ", " : "", quote(spec.y_categories[i]), i + 1);
        s += ")\n";
    } else {
        s += "set yrange [0:*]\n";
    }
    for (size_t i = 0; i < spec.series.size(); ++i) {
        const PlotSeries& p = spec.series[i];
        s += fmt::format("$d{} << EOD\n", i);
        for (size_t k = 0; k < p.x.size(); ++k) {
            if (p.style == PlotSeries::Style::band) s += fmt::format("{:.9g} {:.9g} {:.9g}\n", p.x[k], p.y_low[k], p.y[k]);
            else s += fmt::format("{:.9g} {:.9g}\n", p.x[k], p.y[k]);
        }
        s += "EOD\n";
    }
    s += "plot ";
    for (size_t i = 0; i < spec.series.size(); ++i) {
        const PlotSeries& p = spec.series[i];
        const std::string color = p.color.empty() ? "" : " lc rgb " + quote(p.color);
        if (i) s += ", \\\n     ";
        switch (p.style) {
            case PlotSeries::Style::band:
                s += fmt::format("$d{} using 1:2:3 with filledcurves fs transparent solid 0.25 noborder{} title {}", i, color, quote(p.title));
                break;
            case PlotSeries::Style::points:
                s += fmt::format("$d{} using 1:2 with points pt 7 ps 0.6{} title {}", i, color, quote(p.title));
                break;
            case PlotSeries::Style::line:
                s += fmt::format("$d{} using 1:2 with lines lw 2{} title {}", i, color, quote(p.title));
                break;
        }
    }
    s += "\n";
    return s;
}

void render_svg(const PlotSpec& spec, const std::string& svg_path) {
    namespace fs = std::filesystem;
    const fs::path target(svg_path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string tmp = (dir / (".kvroof-" + target.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) throw std::runtime_error(fmt::format("cannot write '{}'", svg_path));
    ::fchmod(fd, 0644);
    ::close(fd);
    const std::string script = gnuplot_script(spec, tmp);
    FILE* pipe = ::popen("exec gnuplot 1>&2", "w");
    if (!pipe) {
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot start gnuplot");
    }
    std::fwrite(script.data(), 1, script.size(), pipe);
    const int status = ::pclose(pipe);
    if (status != 0) {
        ::unlink(tmp.c_str());
        const bool missing = WIFEXITED(status) && WEXITSTATUS(status) == 127;
        throw std::runtime_error(missing ? "gnuplot not found: install it (apt-get install gnuplot-nox) to draw plots"
                                         : fmt::format("gnuplot failed drawing '{}'", svg_path));
    }
    if (std::rename(tmp.c_str(), svg_path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        throw std::runtime_error(fmt::format("cannot write '{}'", svg_path));
    }
}

}  // namespace kvroof::io
