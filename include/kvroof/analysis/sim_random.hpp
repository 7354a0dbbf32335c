// SPDX-License-Identifier: MIT
#pragma once
// The simulator's random draws: a fixed generator (splitmix64) and our own
// distributions, because std's distributions differ between standard
// libraries and a run must be identical for a seed. Only <cmath>'s log, exp,
// sqrt and cos are used (correctly rounded or within an ulp on the platforms
// we build on).

#include <cmath>
#include <cstdint>
#include <string_view>

#include "kvroof/spec/workload.hpp"

namespace kvroof {

// How idle gaps (closed loop) and interarrival times (open loop) are drawn
// around their mean.
enum class GapDist {
    exponential,  // memoryless: Poisson arrivals, exponential idle gaps
    deterministic,  // every gap equals its mean
    lognormal,  // each class's σ where it has one (CallClass::idle_gap_sigma), else the codex shape's, scaled to the mean
};

[[nodiscard]] constexpr std::string_view name(GapDist d) noexcept {
    switch (d) {
        case GapDist::exponential: return "exponential";
        case GapDist::deterministic: return "deterministic";
        case GapDist::lognormal: return "lognormal";
    }
    return "?";
}

// σ of the codex idle gap: the lognormal through median 5.2 s and P99 81.4 s
// (data/workloads.json, the Inferact/codex_swebenchpro_traces figures).
[[nodiscard]] inline double codex_gap_sigma() noexcept { return lognormal_sigma_from_median_p99(5.2, 81.4); }

class SimRng {
public:
    explicit SimRng(std::uint64_t seed) noexcept : s_(seed) {}

    [[nodiscard]] std::uint64_t next() noexcept {  // splitmix64
        std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    // Uniform in the open interval (0, 1): 53 random bits, centred in their cell.
    [[nodiscard]] double uniform() noexcept { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
    // Standard normal by Box–Muller (one of the pair; the other is discarded).
    [[nodiscard]] double normal() noexcept {
        const double u = uniform(), v = uniform();
        return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
    }
    // A gap with the given mean under `d`; a lognormal one with ln-σ `sigma` (< 0: the codex shape's; 0: the mean).
    [[nodiscard]] double gap(double mean, GapDist d, double sigma = -1.0) noexcept {
        if (mean <= 0) return 0.0;
        switch (d) {
            case GapDist::deterministic: return mean;
            case GapDist::exponential: return -mean * std::log(uniform());
            case GapDist::lognormal: {
                const double s = sigma >= 0 ? sigma : codex_gap_sigma();  // mean = median·exp(σ²/2)
                return mean * std::exp(s * normal() - 0.5 * s * s);
            }
        }
        return mean;
    }

private:
    std::uint64_t s_;
};

}  // namespace kvroof
