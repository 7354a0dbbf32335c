// SPDX-License-Identifier: MIT
#pragma once
// The one error the core throws: an input that violates a stated rule. The CLI
// maps it to exit code 2. `what()` names the field, the rule and the value.

#include <stdexcept>
#include <string>

namespace kvroof {

class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace kvroof
