// SPDX-License-Identifier: MIT
// Runs a fuzz harness over saved inputs without libFuzzer: each argument is a
// file or a folder of files (flags beginning with '-' are ignored, so the same
// command line works for a libFuzzer build with -runs=0). Used by ctest to
// replay tests/fuzz/corpus/ in every build.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
void run_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}
}  // namespace

int main(int argc, char** argv) {
    int files = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (!arg.empty() && arg[0] == '-') continue;
        const std::filesystem::path p(arg);
        if (std::filesystem::is_directory(p)) {
            std::vector<std::filesystem::path> entries;
            for (const auto& e : std::filesystem::directory_iterator(p))
                if (e.is_regular_file()) entries.push_back(e.path());
            std::sort(entries.begin(), entries.end());
            for (const auto& e : entries) {
                run_file(e);
                ++files;
            }
        } else {
            run_file(p);
            ++files;
        }
    }
    std::printf("replayed %d inputs\n", files);
    return files > 0 ? 0 : 1;
}
