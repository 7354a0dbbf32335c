// SPDX-License-Identifier: MIT
#pragma once
// One scenario: the hardware (with its deployment), the model, the call mix
// and the serving policy. The input every analysis takes; checked as a whole.

#include <string>

#include "kvroof/error.hpp"
#include "kvroof/spec/hardware.hpp"
#include "kvroof/spec/model.hpp"
#include "kvroof/spec/policy.hpp"
#include "kvroof/spec/workload.hpp"

namespace kvroof {

// The most call classes one mix may hold (fixed-size per-class arrays downstream).
inline constexpr int kMaxClasses = 16;

struct Scenario {
    HardwareSpec hardware;
    ModelSpec model;
    Mix mix;
    PolicySpec policy;

    void check_validity() const {
        hardware.check_validity();
        model.check_validity();
        mix.check_validity();
        policy.check_validity();
        if (mix.entries.size() > static_cast<size_t>(kMaxClasses))
            throw InputError("mix: at most " + std::to_string(kMaxClasses) + " classes, got " +
                             std::to_string(mix.entries.size()));
    }
};

}  // namespace kvroof
