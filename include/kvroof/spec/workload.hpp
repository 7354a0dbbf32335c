// SPDX-License-Identifier: MIT
#pragma once
// One call class: S_c cached-prefix tokens, A appended (uncached) tokens, O
// output tokens, and the idle gap a session spends between two calls. A mix is
// a set of classes with call probabilities.

#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvroof/spec/check.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

// Documented ranges of a call class (docs/model.md, "Input ranges").
namespace limits {
inline constexpr double kMaxTokens = 1e9;  // S_c, A and O each
inline constexpr double kMaxIdleGapS = 1e9;  // seconds (about 32 years)
}  // namespace limits

inline constexpr double kZ99 = 2.3263478740408408;  // standard normal 0.99 quantile

// σ of the lognormal whose median and 0.99 quantile are given (0 < median <= p99): ln(p99 / median) / z_0.99.
[[nodiscard]] inline double lognormal_sigma_from_median_p99(double median, double p99) noexcept {
    return std::log(p99 / median) / kZ99;
}

struct CallClass {
    std::string name;
    double s_cached = 0;  // S_c, tokens
    double a_append = 0;  // A, tokens
    double o_output = 1;  // O, tokens
    Seconds idle_gap{0.0};  // mean gap between this call and the session's next one
    // σ of ln(gap) where the class gave its gaps' median and P99 (a lognormal through them, as kvroof trace
    // writes them; 0 when the two are equal: every gap its mean); none where it gave only a mean. The closed
    // form uses the mean alone; the simulator's lognormal gaps take this shape, else the codex preset's.
    std::optional<double> idle_gap_sigma = std::nullopt;

    [[nodiscard]] double context() const noexcept { return s_cached + a_append; }  // S = S_c + A

    // Token counts in [0, kMaxTokens] (O > 0), the idle gap in [0, kMaxIdleGap];
    // errors are prefixed with `where` (the flag and file, or the class name).
    void check_validity(std::string_view where) const {
        const std::string at(where);
        check::in_range(at + ": s_cached", s_cached, 0.0, limits::kMaxTokens);
        check::in_range(at + ": a_append", a_append, 0.0, limits::kMaxTokens);
        check::above_up_to(at + ": o_output", o_output, 0.0, limits::kMaxTokens);
        check::in_range(at + ": idle_gap", idle_gap.raw(), 0.0, limits::kMaxIdleGapS);
        // A call attends over at least one token (with none, one session's KV is 0 B and the capacity infinite).
        if (!(context() > 0)) throw InputError(at + ": s_cached + a_append: a call needs a context of at least one token, got 0");
    }
    void check_validity() const { check_validity(name); }
};

struct MixEntry {
    CallClass cls;
    double weight = 1.0;  // probability that a call is of this class (normalised)
};

struct Mix {
    std::vector<MixEntry> entries;

    void check_validity() const {
        if (entries.empty()) throw InputError("mix: must name at least one class");
        double total = 0;
        for (const auto& e : entries) {
            e.cls.check_validity();
            check::positive("mix weight of " + e.cls.name, e.weight);
            total += e.weight;
        }
        if (std::abs(total - 1.0) > 1e-9) throw InputError("mix: weights must sum to 1, got " + check::show(total));
    }

    // Whether some class outputs more than one token: only then is there an
    // inter-token latency (a one-token request's token comes from its prefill).
    [[nodiscard]] bool second_token() const noexcept {
        for (const auto& e : entries)
            if (e.cls.o_output > 1) return true;
        return false;
    }
};

}  // namespace kvroof
