// SPDX-License-Identifier: MIT
#include "kvroof/io/load_text.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "kvroof/io/parse.hpp"

namespace kvroof::io {
namespace {
// Each field of LoadText with its flag name (without dashes), in flag order.
using Field = std::optional<std::string> LoadText::*;
constexpr std::array<std::pair<const char*, Field>, 7> kFields{{{"batch", &LoadText::batch},
                                                                {"concurrency", &LoadText::concurrency},
                                                                {"request-rate", &LoadText::rate},
                                                                {"prefill", &LoadText::prefill},
                                                                {"prefill-chunk", &LoadText::chunk},
                                                                {"max-seqs", &LoadText::max_seqs},
                                                                {"requests", &LoadText::requests}}};
}  // namespace

double prefill_chunk(const std::string& text) {
    const double c = parse_number("--prefill-chunk", text);
    check::in_range("--prefill-chunk", c, limits::kMinChunk, limits::kMaxChunk);
    if (c != std::floor(c)) throw InputError(fmt::format("--prefill-chunk: must be a whole number of tokens, got {}", text));
    return c;
}

double max_seqs(const std::string& text) {
    const double n = parse_number("--max-seqs", text);
    check::in_range("--max-seqs", n, 1.0, limits::kMaxLoad);
    if (n != std::floor(n)) throw InputError(fmt::format("--max-seqs: must be a whole number of requests, got {}", text));
    return n;
}

double requests(const std::string& text) {
    const double n = parse_number("--requests", text);
    check::in_range("--requests", n, 1.0, limits::kMaxLoad);
    if (n != std::floor(n)) throw InputError(fmt::format("--requests: must be a whole number of requests, got {}", text));
    return n;
}

ParsedLoad parse_load(const LoadText& t) {
    if ((t.batch ? 1 : 0) + (t.concurrency ? 1 : 0) + (t.rate ? 1 : 0) > 1)
        throw InputError(
            fmt::format("{}: give one of --batch, --concurrency, --request-rate", t.batch ? "--batch" : "--concurrency"));
    std::optional<PrefillMode> prefill;
    if (t.prefill) {
        if (*t.prefill != "chunked" && *t.prefill != "separate")
            throw InputError(fmt::format("--prefill: must be chunked or separate, got '{}'", *t.prefill));
        prefill = *t.prefill == "chunked" ? PrefillMode::chunked : PrefillMode::separate;
    }
    if (t.requests && !t.rate && !t.concurrency)
        throw InputError("--requests: the requests in a benchmark's run; needs --request-rate or --concurrency");
    ParsedLoad r;
    LoadSpec l;
    if (!t.any_load()) {
        // No load: the solved mode. --prefill separate (or nothing) is seed 000's; chunked solves with engine physics,
        // asked for by name: a chunk size alone (even the default) would switch the analysis silently.
        if (!prefill) {
            if (t.max_seqs) throw InputError("--max-seqs: needs a load (--concurrency, --request-rate) or --prefill chunked");
            if (t.chunk)
                throw InputError("--prefill-chunk: needs a load (--batch, --concurrency, --request-rate) or --prefill chunked");
            return r;
        }
        if (prefill == PrefillMode::separate) {
            if (t.chunk) throw InputError("--prefill-chunk: needs --prefill chunked");
            return r;
        }
        l.mode = LoadMode::best;
        r.flag = "--prefill chunked";
    } else {
        l.mode = t.batch ? LoadMode::batch : t.rate ? LoadMode::request_rate : LoadMode::concurrency;
        r.flag = t.batch ? "--batch" : t.rate ? "--request-rate" : "--concurrency";
        const std::string& text = t.batch ? *t.batch : t.rate ? *t.rate : *t.concurrency;
        if (t.batch && t.max_seqs)
            throw InputError(
                "--max-seqs: caps the requests running under --concurrency or --request-rate; --batch fixes the batch");
        if (t.concurrency && text == "max") {
            l.mode = LoadMode::saturate;
        } else if (t.concurrency) {
            char* end = nullptr;
            (void)std::strtod(text.c_str(), &end);
            if (end == text.c_str())  // not a number at all (a bad number gets parse_number's own message)
                throw InputError(fmt::format("--concurrency: expected a number of clients or 'max', got '{}'", text));
            l.value = parse_number(r.flag, text);
        } else {
            l.value = parse_number(r.flag, text);
        }
        if (l.mode != LoadMode::saturate) {
            check::above_up_to(r.flag, l.value, 0.0, limits::kMaxLoad);
        }
        // Closed-loop clients are whole: half a client sends no requests (a rate or a batch may be a mean).
        if (l.mode == LoadMode::concurrency && l.value != std::floor(l.value))
            throw InputError(fmt::format("--concurrency: must be a whole number of clients or 'max', got {}", text));
        if (prefill) l.prefill = *prefill;
        if (t.chunk && l.prefill == PrefillMode::separate) throw InputError("--prefill-chunk: needs --prefill chunked");
    }
    if (t.chunk) l.chunk = prefill_chunk(*t.chunk);
    if (t.max_seqs) l.max_seqs = max_seqs(*t.max_seqs);
    if (t.requests) l.requests = requests(*t.requests);
    r.load = l;
    return r;
}

nlohmann::json load_text_json(const LoadText& t) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, field] : kFields)
        if (t.*field) j[name] = *(t.*field);
    return j;
}

LoadText load_text_from_json(std::string_view where, const nlohmann::json& j) {
    if (!j.is_object()) throw InputError(fmt::format("{}: 'load' must be an object, got {}", where, j.type_name()));
    LoadText t;
    for (const auto& [key, value] : j.items()) {
        Field field = nullptr;
        for (const auto& [name, f] : kFields)
            if (key == name) field = f;
        if (!field)
            throw InputError(fmt::format(
                "{}: load: unknown key '{}'; allowed: batch, concurrency, request-rate, prefill, prefill-chunk, max-seqs, "
                "requests",
                where, key));
        if (value.is_string())
            t.*field = value.get<std::string>();
        else if (value.is_number())
            t.*field = value.dump();
        else
            throw InputError(fmt::format("{}: load: '{}' must be a string or a number, got {}", where, key, value.type_name()));
    }
    if ((t.batch ? 1 : 0) + (t.concurrency ? 1 : 0) + (t.rate ? 1 : 0) > 1)
        throw InputError(fmt::format("{}: load: give one of batch, concurrency, request-rate", where));
    return t;
}

}  // namespace kvroof::io
