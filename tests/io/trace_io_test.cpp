// SPDX-License-Identifier: MIT
// Trace files and the classes (mix) file: parsing, bad lines, the shipped
// sample's round trip and --mix FILE.json.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "kvroof/io/atomic_write.hpp"
#include "kvroof/io/mix_file.hpp"
#include "kvroof/io/scenario_builder.hpp"
#include "kvroof/io/trace_io.hpp"

using namespace kvroof;

namespace {
std::string data(const std::string& name) { return std::string(KVROOF_TEST_FIXTURES) + "/../data/trace/" + name; }

std::string error_of(std::string_view text, io::TraceFormat f) {
    try {
        (void)io::parse_trace_text("trace t", text, f);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE("trace JSON Lines and CSV read the same calls") {
    const auto j = io::parse_trace_text("t",
                                        "# a comment\n"
                                        "{\"session_id\":\"a\",\"timestamp_s\":1.5,\"end_s\":2,\"input_tokens\":100,"
                                        "\"cached_tokens\":60,\"output_tokens\":7,\"model\":\"x\"}\n\n"
                                        "{\"session_id\":42,\"timestamp_s\":3,\"input_tokens\":10,\"cached_tokens\":0,"
                                        "\"output_tokens\":1}\n",
                                        io::TraceFormat::jsonl);
    const auto c = io::parse_trace_text("t",
                                        "output_tokens, session_id,timestamp_s,end_s,input_tokens,cached_tokens\r\n"
                                        "7,a,1.5,2,100,60\r\n"
                                        "1,42,3,,10,0\n",
                                        io::TraceFormat::csv);
    REQUIRE(j.size() == 2);
    REQUIRE(c.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(j[i].session == c[i].session);
        CHECK(j[i].start_s == c[i].start_s);
        CHECK(j[i].end_s == c[i].end_s);
        CHECK(j[i].input == c[i].input);
        CHECK(j[i].cached == c[i].cached);
        CHECK(j[i].output == c[i].output);
    }
    CHECK(j[1].session == "42");
    CHECK(j[1].end_s < 0);
    CHECK(io::trace_format_of("x.csv") == io::TraceFormat::csv);
    CHECK(io::trace_format_of("x.jsonl") == io::TraceFormat::jsonl);
}

TEST_CASE("a CSV trace reads a subnormal number as JSON Lines does, and refuses only an overflow") {
    // strtod sets ERANGE on underflow too, and 5e-324 (the smallest double) was refused as "not a number".
    const char* head = "session_id,timestamp_s,input_tokens,cached_tokens,output_tokens\n";
    const auto c = io::parse_trace_text("t", std::string(head) + "a,0,100,50,10\na,5e-324,100,50,10\n", io::TraceFormat::csv);
    REQUIRE(c.size() == 2);
    CHECK(c[1].start_s == 5e-324);
    CHECK_THROWS_WITH(io::parse_trace_text("t", std::string(head) + "a,1e400,100,50,10\n", io::TraceFormat::csv),
                      Catch::Contains("'timestamp_s' must be a number, got '1e400'"));
}

TEST_CASE("a bad trace line is an error naming the line and the field") {
    using F = io::TraceFormat;
    const std::string ok =
        "{\"session_id\":\"a\",\"timestamp_s\":0,\"input_tokens\":10,\"cached_tokens\":0,\"output_tokens\":1}\n";
    CHECK(error_of(ok + "{\"session_id\":\"a\",\"timestamp_s\":1,\"input_tokens\":10,\"cached_tokens\":11,\"output_tokens\":1}",
                   F::jsonl) == "trace t: line 2: 'cached_tokens' (11) must be <= input_tokens (10)");
    CHECK(error_of(ok + ok + "{\"session_id\":\"a\",\"timestamp_s\":1,\"input_tokens\":10,\"cached_tokens\":0}", F::jsonl) ==
          "trace t: line 3: missing field 'output_tokens'");
    CHECK(error_of("{\"session_id\":\"a\",\"timestamp_s\":\"x\"}", F::jsonl) ==
          "trace t: line 1: 'timestamp_s' must be a number, got string \"x\"");
    CHECK(error_of(ok + "{\"session_id\":\"a\",\"timestamp_s\":1,\"input_tokens\":1.5,\"cached_tokens\":0,\"output_tokens\":1}",
                   F::jsonl)
              .rfind("trace t: line 2: 'input_tokens' must be a whole number in [1, 1000000000], got 1.5", 0) == 0);
    CHECK(error_of(
              "{\"session_id\":\"a\",\"timestamp_s\":5,\"end_s\":4,\"input_tokens\":1,\"cached_tokens\":0,\"output_tokens\":1}",
              F::jsonl) == "trace t: line 1: 'end_s' (4) must be >= timestamp_s (5)");
    CHECK(error_of("not json", F::jsonl).rfind("trace t: line 1: invalid JSON", 0) == 0);
    CHECK(error_of("session_id,timestamp_s,input_tokens,cached_tokens,output_tokens\na,0,10,0,zero\n", F::csv) ==
          "trace t: line 2: 'output_tokens' must be a number, got 'zero'");
    CHECK(error_of("session_id,timestamp_s,input_tokens,output_tokens\n", F::csv)
              .rfind("trace t: line 1: the header lacks column 'cached_tokens'", 0) == 0);
    CHECK(error_of("session_id,timestamp_s,input_tokens,cached_tokens,output_tokens\na,0,10,0\n", F::csv) ==
          "trace t: line 2: 4 fields, the header has 5 (quoted fields are not supported)");
    CHECK(error_of("\n# nothing\n", F::jsonl) == "trace t: no calls in the trace");
}

TEST_CASE("written traces read back to the same calls") {
    SynthSpec s = io::load_synth_spec("--synthesize", data("classes.json"));
    s.calls = 200;
    s.seed = 9;
    const auto calls = synthesize_trace(s);
    const auto back = io::parse_trace_text("t", io::trace_jsonl(calls), io::TraceFormat::jsonl);
    REQUIRE(back.size() == calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) {
        CHECK(back[i].session == calls[i].session);
        CHECK(back[i].start_s == Approx(calls[i].start_s).margin(5e-4));
        CHECK(back[i].input == calls[i].input);
        CHECK(back[i].output == calls[i].output);
    }
}

// The committed sample is `kvroof trace --synthesize classes.json --calls 300
// --seed 13`: the synthesis reproduces it byte for byte, and classifying it
// recovers classes.json within 4 standard errors of 300 calls (docs/trace.md).
TEST_CASE("the shipped sample trace: synthesize reproduces it and classify recovers its classes") {
    SynthSpec s = io::load_synth_spec("--synthesize", data("classes.json"));
    s.calls = 300;
    s.seed = 13;
    std::ifstream in(data("sample.jsonl"), std::ios::binary);
    const std::string sample((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(io::trace_jsonl(synthesize_trace(s)) == sample);
    const TraceClasses t = classify_trace(io::read_trace_file("trace", data("sample.jsonl")), 3, 1, BinMethod::kmeans);
    REQUIRE(t.classes.size() == 3);
    // classes.json's entries read in key order (long, mid, short): sort by context as the classes are.
    std::vector<SynthClass> want = s.classes;
    std::sort(want.begin(), want.end(), [](const SynthClass& a, const SynthClass& b) { return a.s_cached < b.s_cached; });
    for (std::size_t k = 0; k < 3; ++k) {
        INFO(want[k].name);
        const TraceClass& got = t.classes[k];
        const double n = static_cast<double>(got.calls), g = static_cast<double>(got.gaps.count);
        CHECK(std::fabs(got.share - want[k].share) < 4 * std::sqrt(want[k].share * (1 - want[k].share) / 300.0));
        CHECK(std::fabs(got.mean_cached - want[k].s_cached) < 4 * 0.2 * want[k].s_cached / std::sqrt(3.0 * n) + 0.5);
        CHECK(std::fabs(got.mean_output - want[k].o_output) < 4 * 0.2 * want[k].o_output / std::sqrt(3.0 * n) + 0.5);
        if (want[k].gap == GapFit::lognormal && got.gaps.fit == GapFit::lognormal)
            CHECK(std::fabs(std::log(got.gaps.median_s / want[k].gap_median_s)) < 4 * want[k].gap_sigma / std::sqrt(g));
        else
            CHECK(std::fabs(got.gaps.mean_s / (want[k].gap == GapFit::lognormal
                                                   ? want[k].gap_median_s * std::exp(0.5 * want[k].gap_sigma * want[k].gap_sigma)
                                                   : want[k].gap_mean_s) -
                            1) < 4 * (want[k].gap == GapFit::lognormal ? 2.0 : 1.0) / std::sqrt(g));
    }
}

TEST_CASE("the classes file is a mix file: --mix FILE.json loads it with the trace's shares") {
    const TraceClasses t = classify_trace(io::read_trace_file("trace", data("sample.jsonl")), 3, 1, BinMethod::kmeans);
    const std::string path = "trace_io_test_classes.json";
    io::write_file_atomic(path, io::classes_mix_json(t, "sample.jsonl").dump(2));
    CHECK(io::is_mix_file(path));
    CHECK_FALSE(io::is_mix_file("a.json:0.5,b.json:0.5"));
    CHECK_FALSE(io::is_mix_file("long:0.7,short:0.3"));
    CHECK(io::is_mix_file("/dev/fd/63"));  // a process substitution, as --model and --workload read one
    const Mix m = io::load_mix_file("--mix", path);
    REQUIRE(m.entries.size() == 3);
    double total = 0;
    for (std::size_t k = 0; k < 3; ++k) {
        CHECK(m.entries[k].cls.name == t.classes[k].name);
        CHECK(m.entries[k].weight == Approx(t.classes[k].share).epsilon(1e-5));
        CHECK(m.entries[k].cls.s_cached == Approx(t.classes[k].mean_cached).epsilon(1e-5));
        total += m.entries[k].weight;
    }
    CHECK(total == Approx(1.0));
    // A lognormal class's idle gap is its fit's mean, median·exp(σ²/2).
    if (t.classes[0].gaps.fit == GapFit::lognormal)
        CHECK(
            m.entries[0].cls.idle_gap.raw() ==
            Approx(t.classes[0].gaps.median_s * std::exp(0.5 * t.classes[0].gaps.sigma * t.classes[0].gaps.sigma)).epsilon(1e-4));
    io::ScenarioInputs in;
    in.set("mix", path);
    CHECK(io::build_scenario(in).scenario.mix.entries.size() == 3);
    std::remove(path.c_str());
}

TEST_CASE("a mix file whose shares do not sum to 1 is an error naming the file") {
    const std::string path = "trace_io_test_bad_mix.json";
    io::write_file_atomic(path,
                          R"({"a":{"share":0.5,"s_cached_tokens":1,"a_append_tokens":1,"o_output_tokens":1},
                              "b":{"share":0.2,"s_cached_tokens":1,"a_append_tokens":1,"o_output_tokens":1}})");
    try {
        (void)io::load_mix_file("--mix", path);
        FAIL("no error");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) == "--mix trace_io_test_bad_mix.json: the shares must sum to 1 (within 0.001), got 0.7");
    }
    std::remove(path.c_str());
}

TEST_CASE("a conversations file: a call per response, tokens as bytes / bytes-per-token, by hand") {
    // tests/data/trace/conversations.json: trial 1 has 8 prompt bytes, a 4-byte response, 12 + 4 prompt bytes (a
    // human and a tool message), an 8-byte response; trial 2 a 4-byte system and 4-byte human prompt, a 1-byte
    // response, and a last prompt no response follows (no call). Other keys (id, meta, weight) are skipped.
    const io::TraceFile f = io::read_trace("trace", data("conversations.json"));
    CHECK(f.format == io::TraceFormat::conversations);
    REQUIRE(f.calls.size() == 3);
    struct Want {
        const char* session;
        double input, cached, output;
    };
    // Input = round(all bytes before the response / 4), cached = round(the bytes before the new prompt / 4).
    const Want want[] = {{"trial-1", 2, 0, 1}, {"trial-1", 7, 3, 2}, {"trial-2", 2, 0, 1}};
    for (std::size_t i = 0; i < 3; ++i) {
        INFO("call " << i);
        CHECK(f.calls[i].session == want[i].session);
        CHECK(f.calls[i].input == want[i].input);
        CHECK(f.calls[i].cached == want[i].cached);
        CHECK(f.calls[i].output == want[i].output);  // trial 2's 1 byte rounds to 0 tokens: at least 1
        CHECK(f.calls[i].start_s < 0);  // no times
    }
    // At 3 bytes a token: round(8/3) = 3, round(28/3) = 9 with round(12/3) = 4 cached, round(8/3) = 3 out.
    const io::TraceFile g = io::read_trace("trace", data("conversations.json"), 3.0);
    CHECK(g.calls[0].input == 3);
    CHECK(g.calls[1].input == 9);
    CHECK(g.calls[1].cached == 4);
    CHECK(g.calls[1].output == 3);
    // The format is the text's: a JSON array is a conversations file whatever the extension.
    CHECK(io::trace_format_of("x.jsonl", " \n[{}]") == io::TraceFormat::conversations);
    CHECK(io::trace_format_of("x.csv", "session_id,") == io::TraceFormat::csv);
    CHECK(io::trace_format_of("x.jsonl", "{\"a\":1}") == io::TraceFormat::jsonl);
}

TEST_CASE("a conversations file's classes: no gap without times, the given lognormal with --idle-median/--idle-p99") {
    TraceClasses t = classify_trace(io::read_trace_file("trace", data("conversations.json")), 3, 1, BinMethod::quantile);
    CHECK(t.untimed);
    CHECK(t.gaps == 0);
    REQUIRE(t.classes.size() == 2);  // inputs 2, 2 and 7 tokens: two quantile bins
    CHECK(t.classes[0].untimed_gaps == 1);  // trial 1's first call; trial 2's only call ends its session
    CHECK(t.classes[1].untimed_gaps == 0);
    for (const auto& c : t.classes) CHECK(c.gaps.fit == GapFit::none);
    assign_untimed_gaps(t, 5.2, 81.4);
    CHECK(t.gaps == 1);
    CHECK(t.classes[0].gaps.fit == GapFit::lognormal);
    CHECK(t.classes[0].gaps.median_s == 5.2);
    CHECK(t.classes[0].gaps.p99_s == 81.4);
    CHECK(t.classes[0].gaps.mean_s == Approx(10.46).epsilon(1e-3));  // 5.2·exp(σ²/2), σ = ln(81.4/5.2)/2.3263
    CHECK(t.classes[1].gaps.fit == GapFit::none);
    const Mix m = io::classes_mix(t, "c.json");  // the classes file reads back as a mix
    CHECK(m.entries.size() == 2);
}

TEST_CASE("a malformed conversations file names the trial, the message and what is wrong") {
    const auto error = [](std::string_view text) {
        try {
            (void)io::parse_conversations_text("trace t", text, 4.0);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(error("[1]") == "trace t: trial 1: expected an object, got a number");
    CHECK(error("[{}]") == "trace t: trial 1: missing field 'conversations'");
    CHECK(error("[{\"conversations\": {}}]") == "trace t: trial 1: 'conversations' must be an array, got an object");
    CHECK(error("[{\"conversations\": [{\"from\": \"gpt\", \"value\": \"x\"}]}]") ==
          "trace t: trial 1, message 1: a response with no prompt before it (a call needs its input first)");
    CHECK(error("[{\"conversations\": [{\"from\": \"human\"}]}]") == "trace t: trial 1, message 1: missing field 'value'");
    CHECK(error("[{\"conversations\": [{\"from\": \"human\", \"value\": 3}]}]") ==
          "trace t: trial 1, message 1: 'value' must be a string, got a number");
    CHECK(error("[{\"conversations\": [{\"from\": \"robot\", \"value\": \"x\"}]}]").find("unknown role 'robot'") !=
          std::string::npos);
    CHECK(error("[{\"conversations\": [{\"from\": \"human\", \"value\": \"x\"}]}]") ==
          "trace t: no calls in the conversations (no response follows a prompt)");
    CHECK(error("[{\"conversations\": [").find("trace t: not valid JSON at byte") == 0);
    CHECK(error("{\"conversations\": []}") == "trace t: expected a JSON array of conversations, got an object");
    // A key given twice is refused, not joined; a role or text of another type is named as such.
    CHECK(error("[{\"conversations\": [], \"conversations\": []}]") == "trace t: trial 1: 'conversations' given twice");
    CHECK(error("[{\"conversations\": [{\"from\": \"human\", \"role\": \"user\", \"value\": \"x\"}]}]") ==
          "trace t: trial 1, message 1: the role given twice ('from' and 'role' name one field)");
    CHECK(error("[{\"conversations\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]}]") ==
          "trace t: trial 1, message 1: 'content' must be a string, got an array");
    // A file cut off inside a long text: the message keeps 200 characters of nlohmann's, not the whole text.
    const std::string cut = error("[{\"conversations\": [{\"from\": \"human\", \"value\": \"" + std::string(100000, 'a'));
    CHECK(cut.find("trace t: not valid JSON at byte") == 0);
    CHECK(cut.size() < 300);
    CHECK(error("[{\"x\": " + std::string(70, '[') + std::string(70, ']') + "}]") ==
          "trace t: JSON nested deeper than 64 levels");
}
