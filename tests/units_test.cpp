// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <type_traits>

#include "kvroof/units.hpp"

using namespace kvroof;

TEST_CASE("quantities combine into the right dimensions", "[units]") {
    static_assert(std::is_same_v<decltype(Bytes(1) / Seconds(1)), BytesPerSecond>);
    static_assert(std::is_same_v<decltype(Flop(1) / FlopPerSecond(1)), Seconds>);
    static_assert(std::is_same_v<decltype(Flop(1) / Flop(1)), double>);
    static_assert(std::is_same_v<decltype(Bytes(1) / BytesPerSecond(1)), Seconds>);
    static_assert(std::is_same_v<decltype(BytesPerSecond(1) * Seconds(1)), Bytes>);
    static_assert(!std::is_convertible_v<BytesPerSecond, FlopPerSecond>);
    static_assert(!std::is_convertible_v<double, Bytes>);
    CHECK(time_for(gigabytes(8), terabytes_per_s(4)).raw() == Approx(2e-3));
    CHECK(time_for(Flop(2.5e15), teraflops(2500)).raw() == Approx(1.0));
}

TEST_CASE("decimal and binary prefixes stay apart", "[units]") {
    CHECK(gigabytes(1).raw() == 1e9);
    CHECK(gibibytes(1).raw() == 1073741824.0);
    CHECK(in_gb(gibibytes(22)) == Approx(23.622320128));
}
