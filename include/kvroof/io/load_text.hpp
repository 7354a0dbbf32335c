// SPDX-License-Identifier: MIT
#pragma once
// A benchmark's load as its flags give it (batch, concurrency, request rate,
// prefill mode, chunk and engine cap), parsed once for every subcommand that
// takes one, and carried as JSON in a sweep's provenance and sweep files.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "kvroof/analysis/point_step.hpp"

namespace kvroof::io {

struct LoadText {
    std::optional<std::string> batch, concurrency, rate, prefill, chunk, max_seqs, requests;

    [[nodiscard]] bool any_load() const noexcept { return batch || concurrency || rate; }
    [[nodiscard]] bool empty() const noexcept { return !any_load() && !prefill && !chunk && !max_seqs && !requests; }
    // Each value given in `o` replaces this one's (the command line over a sweep file).
    // The load itself is one choice: a --batch on the command line replaces a file's concurrency, not joins it.
    void override_with(const LoadText& o) {
        if (o.batch || o.concurrency || o.rate) batch.reset(), concurrency.reset(), rate.reset();
        for (auto field : {&LoadText::batch, &LoadText::concurrency, &LoadText::rate, &LoadText::prefill, &LoadText::chunk,
                           &LoadText::max_seqs, &LoadText::requests})
            if (o.*field) this->*field = o.*field;
    }
};

struct ParsedLoad {
    // None: no load and no engine physics asked (the solved mode of seed 000).
    // LoadMode::best: engine physics without a load (the solved mode with chunked prefill).
    std::optional<LoadSpec> load;
    std::string flag;  // the flag that names the load in errors, e.g. "--concurrency"
};

// Throws InputError naming the flag at fault: two loads at once, a value out of
// range, a prefill mode other than chunked or separate, a chunk without
// chunked prefill, an engine cap without a load, a run's requests without an
// open loop or clients.
[[nodiscard]] ParsedLoad parse_load(const LoadText& t);

// The chunk budget, the engine's running-request cap and the run's requests, each within its range.
[[nodiscard]] double prefill_chunk(const std::string& text);
[[nodiscard]] double max_seqs(const std::string& text);
[[nodiscard]] double requests(const std::string& text);

// {"concurrency": "32", "prefill": "chunked", ...}: the values as given, by flag
// name; the inverse reads such an object (a sweep file's "load"), naming
// `where` and the key on a fault.
[[nodiscard]] nlohmann::json load_text_json(const LoadText& t);
[[nodiscard]] LoadText load_text_from_json(std::string_view where, const nlohmann::json& j);

}  // namespace kvroof::io
