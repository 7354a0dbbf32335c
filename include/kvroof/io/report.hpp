// SPDX-License-Identifier: MIT
#pragma once
// `kvroof report`: every committed report regenerated from the scenario files
// of configs/ (as built into the binary). Output carries the tool version and
// no dates, so a rerun is byte-identical.

#include <string>
#include <vector>

namespace kvroof::io {

// Writes every report and plot into `out_dir`, all or nothing: `out_dir` is
// replaced whole by a folder holding exactly the new files, or left as it was.
// Returns the file names written, in order. Throws InputError (naming --out)
// when `out_dir` is not a folder or holds files a report does not write, and
// std::runtime_error when gnuplot is missing, both before writing anything.
std::vector<std::string> write_reports(const std::string& out_dir);

}  // namespace kvroof::io
