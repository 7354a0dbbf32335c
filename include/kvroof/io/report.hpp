// SPDX-License-Identifier: MIT
#pragma once
// `kvroof report`: every committed report regenerated from the scenario files
// of configs/ (as built into the binary). Output carries the tool version and
// no dates, so a rerun is byte-identical.

#include <string>
#include <vector>

namespace kvroof::io {

// Writes every report and plot into `out_dir` (created if missing), each
// atomically; returns the file names written, in order.
std::vector<std::string> write_reports(const std::string& out_dir);

}  // namespace kvroof::io
