// SPDX-License-Identifier: MIT
// The gnuplot script a PlotSpec becomes (io/plot.hpp): what gnuplot would
// otherwise read as syntax or as a format is escaped.
#include <catch2/catch.hpp>

#include "kvroof/io/plot.hpp"

using namespace kvroof::io;

TEST_CASE("plot script: a category label's percent sign is literal and quotes are escaped", "[plot]") {
    PlotSpec p;
    p.title = "a \"quoted\" title";
    p.y_categories = {"as given", "+ sparse attention (10 % of KV read)"};
    const std::string s = gnuplot_script(p, "/tmp/x.svg");
    // A tic label is a printf format for its value: "% o" alone would print the value in octal.
    CHECK(s.find("set ytics (\"as given\" 1, \"+ sparse attention (10 %% of KV read)\" 2)") != std::string::npos);
    CHECK(s.find("set yrange [0.5:2.5]") != std::string::npos);
    CHECK(s.find("set title \"a \\\"quoted\\\" title\"") != std::string::npos);
}
