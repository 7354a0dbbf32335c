// SPDX-License-Identifier: MIT
#include "kvroof/io/parse.hpp"

#include <catch2/catch.hpp>

#include "kvroof/error.hpp"

using namespace kvroof;
using namespace kvroof::io;

TEST_CASE("quantities parse with units and bare numbers", "[parse]") {
    CHECK(parse_quantity("--hbm-cap", "141GB", UnitKind::bytes, "GB") == 141e9);
    CHECK(parse_quantity("--hbm-cap", "80", UnitKind::bytes, "GB") == 80e9);
    CHECK(parse_quantity("--hbm-cap", "22GiB", UnitKind::bytes, "GB") == 22.0 * 1073741824.0);
    CHECK(parse_quantity("--hbm-bw", "4.8TB/s", UnitKind::bandwidth, "TB/s") == Approx(4.8e12));
    CHECK(parse_quantity("--c2c-bw", "900GB/s", UnitKind::bandwidth, "GB/s") == 900e9);
    CHECK(parse_quantity("--gpu-flops", "2.5PFLOPS", UnitKind::flop_rate, "TFLOPS") == 2.5e15);
    CHECK(parse_quantity("--gpu-flops", "989", UnitKind::flop_rate, "TFLOPS") == 989e12);
    CHECK(parse_quantity("--slo-tpot", "50ms", UnitKind::time, "ms") == Approx(0.05));
    CHECK(parse_quantity("--slo-tpot", "2 s", UnitKind::time, "ms") == 2.0);
}

TEST_CASE("bits per second are an eighth of bytes, and the case of b is never guessed", "[parse]") {
    // "400Gb/s" read as 400 GB/s (8x) through the case-insensitive fallback.
    CHECK(parse_quantity("--net-bw", "400Gb/s", UnitKind::bandwidth, "GB/s") == 50e9);
    CHECK(parse_quantity("--net-bw", "400Gbps", UnitKind::bandwidth, "GB/s") == 50e9);
    CHECK(parse_quantity("--net-bw", "400gbps", UnitKind::bandwidth, "GB/s") == 50e9);
    CHECK(parse_quantity("--net-bw", "0.8Tbit/s", UnitKind::bandwidth, "GB/s") == Approx(100e9));
    CHECK(parse_quantity("--c2c-bw", "64gB/s", UnitKind::bandwidth, "GB/s") == 64e9);
    CHECK(parse_quantity("--c2c-bw", "64GBPS", UnitKind::bandwidth, "GB/s") == 64e9);
    CHECK_THROWS_WITH(parse_quantity("--hbm-cap", "80gb", UnitKind::bytes, "GB"), Catch::Contains("unknown unit 'gb'"));
    CHECK_THROWS_WITH(parse_quantity("--hbm-cap", "80Gb", UnitKind::bytes, "GB"), Catch::Contains("unknown unit 'Gb'"));
}

TEST_CASE("bad quantities name the flag and the text", "[parse]") {
    CHECK_THROWS_WITH(parse_quantity("--hbm-bw", "fast", UnitKind::bandwidth, "TB/s"),
                      Catch::Contains("--hbm-bw") && Catch::Contains("fast"));
    CHECK_THROWS_WITH(parse_quantity("--hbm-bw", "4.8GB", UnitKind::bandwidth, "TB/s"), Catch::Contains("unknown unit 'GB'"));
    CHECK_THROWS_WITH(parse_quantity("--hbm-cap", "nan", UnitKind::bytes, "GB"), Catch::Contains("finite"));
    CHECK_THROWS_WITH(parse_quantity("--hbm-cap", "inf", UnitKind::bytes, "GB"), Catch::Contains("finite"));
    CHECK_THROWS_AS(parse_number("--f", "0.5x"), InputError);
}

TEST_CASE("workload strings need all three counts", "[parse][workload]") {
    const CallClass c = parse_workload_string("--workload", "s_cached=16000,a_append=2000,o_output=400");
    CHECK(c.s_cached == 16000);
    CHECK(c.a_append == 2000);
    CHECK(c.o_output == 400);
    CHECK(parse_workload_string("--workload", "s_cached=1,a_append=2,o_output=3,idle_gap=10.5s").idle_gap.raw() == 10.5);
    CHECK_THROWS_WITH(parse_workload_string("--workload", "s_cached=1,a_append=2"), Catch::Contains("required"));
    CHECK_THROWS_WITH(parse_workload_string("--workload", "s_cached=1,a_append=2,o_output=3,x=1"),
                      Catch::Contains("unknown key 'x'"));
    CHECK_THROWS_WITH(parse_workload_string("--workload", "s_cached=-1,a_append=2,o_output=3"), Catch::Contains(">= 0"));
    CHECK_THROWS_WITH(parse_workload_string("--workload", "s_cached=1,a_append=2,o_output=0"), Catch::Contains("> 0"));
    CHECK_THROWS_WITH(parse_workload_string("--workload", "s_cached=1,s_cached=2,a_append=2,o_output=3"),
                      Catch::Contains("twice"));
}

TEST_CASE("mix strings give positive weights", "[parse][mix]") {
    const auto m = parse_mix_string("--mix", "long:0.7,short:0.3");
    REQUIRE(m.size() == 2);
    CHECK(m[0].name == "long");
    CHECK(m[1].weight == 0.3);
    CHECK_THROWS_WITH(parse_mix_string("--mix", "long"), Catch::Contains("class:weight"));
    CHECK_THROWS_WITH(parse_mix_string("--mix", "long:-1"), Catch::Contains("> 0"));
    CHECK_THROWS_WITH(parse_mix_string("--mix", "long:1,long:2"), Catch::Contains("twice"));
}

TEST_CASE("dtypes and idle policies", "[parse]") {
    CHECK(parse_dtype("--kv-dtype", "fp8") == DType::fp8);
    CHECK(parse_dtype("--kv-dtype", "int4") == DType::int4);
    CHECK(parse_dtype("--kv-dtype", "INT8") == DType::int8);
    CHECK(parse_dtype("--weight-dtype", "nvfp4") == DType::fp4);
    CHECK(parse_dtype("--weight-dtype", "mxfp4") == DType::mxfp4);
    CHECK_THROWS_WITH(parse_dtype("--kv-dtype", "fp3"), Catch::Contains("bf16, fp16, fp8, int8, int4, fp4 (nvfp4), mxfp4"));
    CHECK(parse_idle_policy("--idle", "park") == IdlePolicy::park);
    CHECK_THROWS_WITH(parse_idle_policy("--idle", "sleep"), Catch::Contains("hold, park"));
}

TEST_CASE("valid_utf8: well-formed sequences only (no overlong forms, surrogates or code points past U+10FFFF)", "[parse]") {
    using io::valid_utf8;
    CHECK(valid_utf8(""));
    CHECK(valid_utf8("plain ascii"));
    CHECK(valid_utf8("\xC3\xA9"));  // é
    CHECK(valid_utf8("\xE2\x82\xAC"));  // €
    CHECK(valid_utf8("\xF0\x9F\x98\x80"));  // U+1F600
    CHECK(valid_utf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
    CHECK_FALSE(valid_utf8("\xFF"));
    CHECK_FALSE(valid_utf8("\xC3"));  // truncated
    CHECK_FALSE(valid_utf8("\xC0\xAF"));  // overlong '/'
    CHECK_FALSE(valid_utf8("\xE0\x80\xAF"));  // overlong, three bytes
    CHECK_FALSE(valid_utf8("\xED\xA0\x80"));  // a surrogate, U+D800
    CHECK_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // U+110000
    CHECK_FALSE(valid_utf8("a\x80z"));  // a lone continuation byte
}
