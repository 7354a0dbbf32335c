// SPDX-License-Identifier: MIT
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "kvroof/error.hpp"
#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/sweep.hpp"

using namespace kvroof;
using namespace kvroof::io;
namespace fs = std::filesystem;

namespace {
// A fresh folder, removed with everything in it at the end of the test.
struct TempFolder {
    fs::path path;
    TempFolder() {
        std::string t = (fs::temp_directory_path() / "kvroof-files-test-XXXXXX").string();
        if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
        path = t;
    }
    TempFolder(const TempFolder&) = delete;
    TempFolder& operator=(const TempFolder&) = delete;
    ~TempFolder() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    [[nodiscard]] size_t entries() const {
        return static_cast<size_t>(std::distance(fs::directory_iterator(path), fs::directory_iterator()));
    }
};
std::string read(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void validate(std::initializer_list<const char*> grid, int threads = 1) {
    SweepSpec s;
    for (const char* g : grid) s.axes.push_back(parse_grid_entry(g));
    s.threads = threads;
    validate_sweep(s);
}
}  // namespace

TEST_CASE("an atomic file appears only on commit and leaves nothing when dropped", "[files][atomic]") {
    TempFolder d;
    const fs::path target = d.path / "out.csv";
    {
        AtomicFile f(target.string());
        f.write("half");
        CHECK_FALSE(fs::exists(target));
        CHECK(d.entries() == 1);  // the temporary
    }
    CHECK(d.entries() == 0);
    AtomicFile f(target.string());
    f.write("whole");
    f.commit();
    CHECK(read(target) == "whole");
    CHECK(d.entries() == 1);
}

TEST_CASE("an atomic file through a symbolic link replaces the target and keeps the link", "[files][atomic]") {
    TempFolder d;
    fs::create_directory(d.path / "sub");
    fs::create_symlink("sub/target.txt", d.path / "link.txt");
    write_file_atomic((d.path / "link.txt").string(), "one");
    write_file_atomic((d.path / "link.txt").string(), "two");
    CHECK(fs::is_symlink(d.path / "link.txt"));
    CHECK(read(d.path / "sub" / "target.txt") == "two");
    CHECK(d.entries() == 2);
    CHECK(std::distance(fs::directory_iterator(d.path / "sub"), fs::directory_iterator()) == 1);
}

TEST_CASE("an atomic file onto a device writes straight through", "[files][atomic]") {
    AtomicFile f("/dev/null");
    CHECK_FALSE(f.atomic());
    f.write("gone");
    f.commit();
    CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("an atomic folder replaces the old one whole, or leaves it as it was", "[files][atomic]") {
    TempFolder d;
    const fs::path out = d.path / "reports";
    fs::create_directory(out);
    write_file_atomic((out / "old.md").string(), "old");
    {
        AtomicDir dir(out.string());
        write_file_atomic(dir.file("new.md"), "new");
    }  // dropped: nothing changes
    CHECK(read(out / "old.md") == "old");
    CHECK(d.entries() == 1);
    {
        AtomicDir dir(out.string());
        write_file_atomic(dir.file("new.md"), "new");
        dir.commit();
    }
    CHECK(read(out / "new.md") == "new");
    CHECK_FALSE(fs::exists(out / "old.md"));
    CHECK(d.entries() == 1);
    {
        AtomicDir dir((d.path / "a" / "b" / "fresh").string());
        write_file_atomic(dir.file("x.md"), "x");
    }  // dropped: the parents it made go too
    CHECK_FALSE(fs::exists(d.path / "a"));
}

TEST_CASE("sweep validation catches every bad value and every bad pair before output", "[files][sweep]") {
    CHECK_THROWS_WITH(parse_grid_entry("gpus=1:3:0.5"), Catch::Contains("gpus takes whole numbers"));
    CHECK_THROWS_WITH(parse_grid_entry("gpus=1,1.5"), Catch::Contains("got '1.5'"));
    CHECK_NOTHROW(parse_grid_entry("gpus=1:8:1"));
    for (int threads : {1, 3}) {
        // Neither value alone is bad; the pair (hbm-cap 10 GB, hbm-reserve 50 GB) is.
        CHECK_THROWS_WITH(validate({"hbm-cap=200,10", "hbm-reserve=2,50", "f=0:1:0.0001"}, threads),
                          Catch::Contains("--grid hbm-cap=10, hbm-reserve=50: --hbm-reserve: must be < hbm-cap"));
        // The first failure in order, whatever the thread count.
        CHECK_THROWS_WITH(validate({"hardware=gb200,h100-sxm", "hbm-reserve=0:150:0.01"}, threads),
                          Catch::Contains("--grid hardware=h100-sxm, hbm-reserve=80: --hbm-reserve: must be < hbm-cap"));
    }
    CHECK_NOTHROW(validate({"hbm-cap=200,100", "hbm-reserve=2,50", "f=0:1:0.5"}));
    SweepSpec fixed_bad;
    fixed_bad.fixed.set("eta-mem", "0");
    fixed_bad.axes.push_back(parse_grid_entry("sparse=0.5,1"));
    CHECK_THROWS_WITH(validate_sweep(fixed_bad), Catch::StartsWith("--eta-mem"));
}
