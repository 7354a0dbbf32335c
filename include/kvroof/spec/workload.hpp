// SPDX-License-Identifier: MIT
#pragma once
// One call class: S_c cached-prefix tokens, A appended (uncached) tokens, O
// output tokens, and the idle gap a session spends between two calls. A mix is
// a set of classes with call probabilities.

#include <string>
#include <vector>

#include "kvroof/spec/check.hpp"
#include "kvroof/units.hpp"

namespace kvroof {

struct CallClass {
    std::string name;
    double s_cached = 0;   // S_c, tokens
    double a_append = 0;   // A, tokens
    double o_output = 1;   // O, tokens
    Seconds idle_gap{0.0};  // mean gap between this call and the session's next one

    [[nodiscard]] double context() const noexcept { return s_cached + a_append; }  // S = S_c + A

    void check_validity() const {
        check::non_negative(name + ": s_cached", s_cached);
        check::non_negative(name + ": a_append", a_append);
        check::positive(name + ": o_output", o_output);
        check::non_negative(name + ": idle_gap", idle_gap.raw());
    }
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
};

}  // namespace kvroof
