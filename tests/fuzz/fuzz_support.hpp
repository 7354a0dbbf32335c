// SPDX-License-Identifier: MIT
#pragma once
// Shared by the libFuzzer harnesses. A harness feeds bytes to one parser the
// way a user's text reaches it. Bad input must surface as kvroof::InputError
// (exit 2); any other exception, a crash, or a sanitizer report is a defect.
// A parse that succeeds is pushed through the model, and a nan, inf or
// negative figure aborts: no such number may reach the user.

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kvroof/analysis/verdict.hpp"
#include "kvroof/error.hpp"
#include "kvroof/io/scenario_builder.hpp"

namespace kvroof::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// One scratch file per process, rewritten for every input: the file loaders
// are exercised exactly as `--model FILE` reaches them. Removed at exit.
inline std::string& scratch_storage() {
    static std::string path;
    return path;
}
inline const std::string& scratch_path() {
    std::string& path = scratch_storage();
    if (path.empty()) {
        char tmpl[] = "/tmp/kvroof-fuzz-XXXXXX.json";
        const int fd = mkstemps(tmpl, 5);
        if (fd < 0) std::abort();
        close(fd);
        path = tmpl;
        std::atexit([] { std::remove(scratch_storage().c_str()); });
    }
    return path;
}

inline const std::string& write_scratch(std::string_view bytes) {
    const std::string& path = scratch_path();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
    std::fclose(f);
    return path;
}

inline void require_sane(double v, const char* what) {
    if (!std::isfinite(v) || v < 0) {
        std::fprintf(stderr, "kvroof fuzz: %s = %g reached the user\n", what, v);
        std::abort();
    }
}

inline void require_sane(const ServingPoint& p) {
    require_sane(p.throughput, "throughput");
    require_sane(p.batch, "batch");
    if (p.feasible) {
        require_sane(p.tpot, "tpot");
        require_sane(p.ttft, "ttft");
    }
}

// Text output holds no "nan" or "inf" token (CSV cell, JSON value, word).
inline void require_no_nonfinite_token(std::string_view out) {
    std::size_t start = 0;
    for (std::size_t i = 0; i <= out.size(); ++i) {
        if (i < out.size() && std::string_view(",\n :{}[]\"\t").find(out[i]) == std::string_view::npos) continue;
        std::string_view tok = out.substr(start, i - start);
        if (!tok.empty() && (tok[0] == '-' || tok[0] == '+')) tok.remove_prefix(1);
        if (tok == "nan" || tok == "inf" || tok == "-nan") {
            std::fprintf(stderr, "kvroof fuzz: '%.*s' in output\n", static_cast<int>(tok.size()), tok.data());
            std::abort();
        }
        start = i + 1;
    }
}

// The verdict for a scenario built from these inputs: every figure it reports is sane.
inline void run_verdict(const io::ScenarioInputs& in) {
    const Scenario s = io::build_scenario(in).scenario;
    const PreparedScenario ps(s);
    require_sane(ps.mc.kv_per_token.raw(), "KV bytes per token");
    require_sane(ps.mc.weights.raw(), "weight bytes");
    require_sane(ps.mc.linear_per_token.raw(), "linear FLOP per token");
    const Verdict v = make_verdict(s);
    for (const ServingPoint* p : {&v.baseline.conservative, &v.baseline.optimistic, &v.at_f.conservative, &v.at_f.optimistic,
                                  &v.best_conservative, &v.best_optimistic})
        require_sane(*p);
    require_sane(v.f, "f");
}

}  // namespace kvroof::fuzz
