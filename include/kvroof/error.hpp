// SPDX-License-Identifier: MIT
#pragma once
// The one error the core throws: an input that violates a stated rule. The CLI
// maps it to exit code 2. `what()` names the field, the rule and the value.

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvroof {

// A message as one line of text: a control character an input carried (a
// newline in a flag's value or a JSON key, a NUL) is written as an escape,
// so the message stays one line and nothing after a NUL is lost.
[[nodiscard]] inline std::string one_line(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\x%02x", u);
            out += esc;
        } else {
            out += c;
        }
    }
    return out;
}

class InputError : public std::runtime_error {
public:
    explicit InputError(const std::string& what) : std::runtime_error(one_line(what)) {}
    explicit InputError(const char* what) : std::runtime_error(one_line(what)) {}
};

}  // namespace kvroof
