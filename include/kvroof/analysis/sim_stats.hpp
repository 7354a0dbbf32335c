// SPDX-License-Identifier: MIT
#pragma once
// Distributions of the simulator's samples (TTFT per call, ITL per decode
// token) in fixed memory, whatever the length of the run.

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace kvroof {

struct Distribution {
    double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

// Weighted samples in log-spaced bins 0.1 % wide from 1 µs to 10⁶ s (values
// outside fall in the end bins): the mean is exact, each quantile is the
// geometric centre of its bin, within 0.05 % of the sample's value, clamped to
// the smallest and largest sample; in the first bin (up to 1 µs, a zero queue
// wait) the smallest sample. 27,632 bins, allocated on first use.
class LogHistogram {
public:
    void add(double x, double weight) { add(x, weight, index(x)); }
    // The same, with x's bin already known (index(x), e.g. kept with a step the run repeats).
    void add(double x, double weight, std::size_t bin) {
        assert(bin == index(x));
        if (bins_.empty()) bins_.assign(kBins, 0.0);
        bins_[bin] += weight;
        total_ += weight;
        sum_ += x * weight;
        lo_ = std::min(lo_, x);
        hi_ = std::max(hi_, x);
    }

    // x's bin: the first for x <= 1 µs, the last from 10⁶ s.
    [[nodiscard]] static std::size_t index(double x) noexcept {
        if (!(x > kMin)) return 0;
        const double i = std::floor(std::log(x / kMin) / std::log(kRatio));
        return i >= static_cast<double>(kBins - 1) ? kBins - 1 : static_cast<std::size_t>(i);
    }

    [[nodiscard]] double weight() const noexcept { return total_; }  // of every sample added
    [[nodiscard]] Distribution summary() const {
        Distribution d;
        if (!(total_ > 0)) return d;
        d.mean = sum_ / total_;
        const std::array<std::pair<double, double*>, 3> qs = {{{0.5, &d.p50}, {0.9, &d.p90}, {0.99, &d.p99}}};
        std::size_t i = 0;
        double cum = bins_[0];
        for (const auto& [q, out] : qs) {  // the first bin whose cumulative weight reaches q
            while (cum < q * total_ && i + 1 < kBins) cum += bins_[++i];
            *out = i == 0 ? lo_ : std::clamp(kMin * std::pow(kRatio, static_cast<double>(i) + 0.5), lo_, hi_);
        }
        return d;
    }

private:
    static constexpr double kMin = 1e-6, kRatio = 1.001;
    static constexpr std::size_t kBins = 27632;  // ln(10¹²) / ln(1.001)
    std::vector<double> bins_;
    double total_ = 0, sum_ = 0;
    double lo_ = std::numeric_limits<double>::infinity(), hi_ = -std::numeric_limits<double>::infinity();
};

// The spread of samples in [0, 1] (each step's offload fraction).
struct UnitSpread {
    double mean = 0, p10 = 0, p50 = 0, p90 = 0;
};

// Samples in [0, 1] in 1,000 bins of equal width, in fixed memory: the mean is
// exact, each quantile is its bin's centre clamped to the smallest and largest
// sample (so a run of one value reports that value).
class UnitHistogram {
public:
    void add(double x) noexcept {
        const double i = std::floor(std::clamp(x, 0.0, 1.0) * static_cast<double>(kBins));
        bins_[i >= static_cast<double>(kBins - 1) ? kBins - 1 : static_cast<std::size_t>(i)] += 1;
        total_ += 1;
        sum_ += x;
        lo_ = std::min(lo_, x);
        hi_ = std::max(hi_, x);
    }

    [[nodiscard]] UnitSpread summary() const noexcept {
        UnitSpread d;
        if (!(total_ > 0)) return d;
        d.mean = sum_ / total_;
        const std::array<std::pair<double, double*>, 3> qs = {{{0.1, &d.p10}, {0.5, &d.p50}, {0.9, &d.p90}}};
        std::size_t i = 0;
        double cum = bins_[0];
        for (const auto& [q, out] : qs) {  // the first bin whose cumulative count reaches q
            while (cum < q * total_ && i + 1 < kBins) cum += bins_[++i];
            *out = std::clamp((static_cast<double>(i) + 0.5) / static_cast<double>(kBins), lo_, hi_);
        }
        return d;
    }

private:
    static constexpr std::size_t kBins = 1000;
    std::array<double, kBins> bins_{};
    double total_ = 0, sum_ = 0;
    double lo_ = std::numeric_limits<double>::infinity(), hi_ = -std::numeric_limits<double>::infinity();
};

}  // namespace kvroof
