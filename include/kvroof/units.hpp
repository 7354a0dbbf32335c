// SPDX-License-Identifier: MIT
#pragma once
// Strong quantity types: bytes, seconds and FLOP carry integer exponents in the
// type, so a bandwidth cannot be passed where a FLOP rate is expected. Values
// are stored in SI base units (bytes, seconds, FLOP). Decimal (GB = 1e9) and
// binary (GiB = 2^30) prefixes are separate named constants.

#include <cmath>

namespace kvroof {

template <int ByteExp, int SecondExp, int FlopExp>
struct Quantity {
    double value = 0.0;

    constexpr Quantity() = default;
    constexpr explicit Quantity(double v) : value(v) {}

    [[nodiscard]] constexpr double raw() const noexcept { return value; }

    constexpr Quantity& operator+=(Quantity o) noexcept {
        value += o.value;
        return *this;
    }
    constexpr Quantity& operator-=(Quantity o) noexcept {
        value -= o.value;
        return *this;
    }
    constexpr Quantity& operator*=(double k) noexcept {
        value *= k;
        return *this;
    }
    constexpr Quantity& operator/=(double k) noexcept {
        value /= k;
        return *this;
    }

    friend constexpr Quantity operator+(Quantity a, Quantity b) noexcept { return Quantity(a.value + b.value); }
    friend constexpr Quantity operator-(Quantity a, Quantity b) noexcept { return Quantity(a.value - b.value); }
    friend constexpr Quantity operator-(Quantity a) noexcept { return Quantity(-a.value); }
    friend constexpr Quantity operator*(Quantity a, double k) noexcept { return Quantity(a.value * k); }
    friend constexpr Quantity operator*(double k, Quantity a) noexcept { return Quantity(a.value * k); }
    friend constexpr Quantity operator/(Quantity a, double k) noexcept { return Quantity(a.value / k); }
    friend constexpr bool operator<(Quantity a, Quantity b) noexcept { return a.value < b.value; }
    friend constexpr bool operator>(Quantity a, Quantity b) noexcept { return a.value > b.value; }
    friend constexpr bool operator<=(Quantity a, Quantity b) noexcept { return a.value <= b.value; }
    friend constexpr bool operator>=(Quantity a, Quantity b) noexcept { return a.value >= b.value; }
    friend constexpr bool operator==(Quantity a, Quantity b) noexcept { return a.value == b.value; }
};

// A dimensionless quantity is a plain double.
template <>
struct Quantity<0, 0, 0>;

namespace detail {
template <int B, int S, int F>
struct QuantityOf {
    using type = Quantity<B, S, F>;
};
template <>
struct QuantityOf<0, 0, 0> {
    using type = double;
};
template <int B, int S, int F>
constexpr auto make(double v) noexcept {
    if constexpr (B == 0 && S == 0 && F == 0)
        return v;
    else
        return Quantity<B, S, F>(v);
}
}  // namespace detail

template <int B1, int S1, int F1, int B2, int S2, int F2>
constexpr auto operator*(Quantity<B1, S1, F1> a, Quantity<B2, S2, F2> b) noexcept {
    return detail::make<B1 + B2, S1 + S2, F1 + F2>(a.value * b.value);
}
template <int B1, int S1, int F1, int B2, int S2, int F2>
constexpr auto operator/(Quantity<B1, S1, F1> a, Quantity<B2, S2, F2> b) noexcept {
    return detail::make<B1 - B2, S1 - S2, F1 - F2>(a.value / b.value);
}
template <int B, int S, int F>
constexpr auto operator/(double k, Quantity<B, S, F> a) noexcept {
    return detail::make<-B, -S, -F>(k / a.value);
}

using Bytes = Quantity<1, 0, 0>;
using Seconds = Quantity<0, 1, 0>;
using Flop = Quantity<0, 0, 1>;
using BytesPerSecond = Quantity<1, -1, 0>;
using FlopPerSecond = Quantity<0, -1, 1>;

template <int B, int S, int F>
constexpr Quantity<B, S, F> max(Quantity<B, S, F> a, Quantity<B, S, F> b) noexcept {
    return a < b ? b : a;
}
template <int B, int S, int F>
constexpr Quantity<B, S, F> min(Quantity<B, S, F> a, Quantity<B, S, F> b) noexcept {
    return b < a ? b : a;
}

// Prefixes: decimal and binary kept apart.
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kGibi = 1073741824.0;  // 2^30

constexpr Bytes gigabytes(double v) noexcept { return Bytes(v * kGiga); }
constexpr Bytes gibibytes(double v) noexcept { return Bytes(v * kGibi); }
constexpr BytesPerSecond gigabytes_per_s(double v) noexcept { return BytesPerSecond(v * kGiga); }
constexpr BytesPerSecond terabytes_per_s(double v) noexcept { return BytesPerSecond(v * kTera); }
constexpr FlopPerSecond teraflops(double v) noexcept { return FlopPerSecond(v * kTera); }
constexpr Seconds milliseconds(double v) noexcept { return Seconds(v * 1e-3); }
constexpr Seconds seconds(double v) noexcept { return Seconds(v); }

constexpr double in_gb(Bytes b) noexcept { return b.value / kGiga; }
constexpr double in_ms(Seconds s) noexcept { return s.value * 1e3; }

// Seconds needed to move/compute `amount` at `rate`.
constexpr Seconds time_for(Bytes amount, BytesPerSecond rate) noexcept { return Seconds(amount.value / rate.value); }
constexpr Seconds time_for(Flop amount, FlopPerSecond rate) noexcept { return Seconds(amount.value / rate.value); }

}  // namespace kvroof
