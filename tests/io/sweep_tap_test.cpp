// SPDX-License-Identifier: MIT
// A sweep's column tap (what `kvroof sweep --plot` draws): the numbers of one
// column taken as the rows are made, equal to what the rows print.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "kvroof/error.hpp"
#include "kvroof/io/sweep.hpp"

using namespace kvroof;
using namespace kvroof::io;

namespace {
SweepSpec spec_of(std::initializer_list<const char*> grid, int threads) {
    SweepSpec s;
    for (const char* g : grid) s.axes.push_back(parse_grid_entry(g));
    s.threads = threads;
    validate_sweep(s);
    return s;
}
std::vector<std::string> cells_of(const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line + ",");
    for (std::string c; std::getline(in, c, ',');) out.push_back(c);
    return out;
}
// The CSV rows (header first), and the tapped column's numbers.
std::vector<std::vector<std::string>> run_tapped(const SweepSpec& s, ColumnTap& tap) {
    std::string out;
    run_sweep(
        s, [&](std::string_view t) { out += t; }, {}, &tap);
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) rows.push_back(cells_of(l));
    return rows;
}
// Each number, written as the rows write theirs, is the row's cell; not finite where the cell is empty.
void check_tap_matches(const std::vector<std::vector<std::string>>& rows, const ColumnTap& tap) {
    REQUIRE(tap.values.size() + 1 == rows.size());
    const auto col = static_cast<size_t>(std::find(rows[0].begin(), rows[0].end(), tap.column) - rows[0].begin());
    REQUIRE(col < rows[0].size());
    for (size_t i = 0; i < tap.values.size(); ++i) {
        std::string shown;
        if (std::isfinite(tap.values[i])) append_number6(shown, tap.values[i]);
        CHECK(shown == rows[i + 1].at(col));
    }
}
}  // namespace

TEST_CASE("a tapped column is the rows' own numbers in row order, on any thread count", "[sweep][tap]") {
    // 2 x 3 x 4,097 rows: more than one 4,096-row chunk, so two threads interleave chunks.
    for (const char* column : {"tps_con_tok_per_s", "gain_opt", "f_star_con", "f", "hbm_bw_TBps", "ttft_con_ms"}) {
        ColumnTap one{column, {}}, two{column, {}};
        const auto rows = run_tapped(spec_of({"hbm-bw=4,8", "sparse=0.1,0.5,1", "f=0:1:0.000244140625"}, 1), one);
        (void)run_tapped(spec_of({"hbm-bw=4,8", "sparse=0.1,0.5,1", "f=0:1:0.000244140625"}, 2), two);
        CHECK(rows.size() == 1 + 2 * 3 * 4097);
        check_tap_matches(rows, one);
        CHECK(one.values.size() == two.values.size());
        CHECK(std::equal(one.values.begin(), one.values.end(), two.values.begin(),
                         [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }));
    }
}

TEST_CASE("a tap on verdict rows without f, with an ov axis, and on a load's rows", "[sweep][tap]") {
    ColumnTap fstar{"f_star_opt", {}};
    check_tap_matches(run_tapped(spec_of({"cpus-per-gpu=0.25,0.5,1,2"}, 1), fstar), fstar);
    ColumnTap gain_ov{"gain_ov", {}};
    check_tap_matches(run_tapped(spec_of({"ov=0,0.5,1", "f=0:1:0.25"}, 1), gain_ov), gain_ov);
    SweepSpec load;
    load.fixed.set("hardware", "h100-sxm");
    load.fixed.set("model", "llama-3.1-8b");
    load.axes.push_back(parse_grid_entry("concurrency=1,8,64"));
    validate_sweep(load);
    for (const char* column : {"itl_ms", "load_clients", "tps_per_gpu_tok_per_s", "hbm_used_GB"}) {
        ColumnTap t{column, {}};
        check_tap_matches(run_tapped(load, t), t);
    }
}

TEST_CASE("a text or unknown column cannot be tapped, before any row is made", "[sweep][tap]") {
    const SweepSpec s = spec_of({"model=llama-3.1-8b,llama-3.1-70b", "f=0,1"}, 1);
    for (const char* column : {"status", "binding_con", "verdict", "model"}) {
        ColumnTap t{column, {}};
        bool wrote = false;
        CHECK_THROWS_AS(run_sweep(
                            s, [&](std::string_view) { wrote = true; }, {}, &t),
                        InputError);
        CHECK_FALSE(wrote);
    }
    CHECK_THROWS_WITH(check_tap_column(s, "gain_ov"), Catch::Contains("unknown column 'gain_ov'"));
    const SweepSpec load = spec_of({"concurrency=1,8"}, 1);
    CHECK_THROWS_WITH(check_tap_column(load, "binding"), Catch::Contains("not numeric"));
    CHECK_THROWS_WITH(check_tap_column(load, "tps_con_tok_per_s"), Catch::Contains("unknown column"));
}
