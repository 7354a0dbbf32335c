// SPDX-License-Identifier: MIT
#pragma once
#include <string>
#include <string_view>

namespace kvroof::io {

// Writes `content` to `path` atomically: a temporary file in the same folder,
// flushed, then renamed over `path`. On failure throws std::runtime_error and
// leaves `path` as it was.
void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace kvroof::io
