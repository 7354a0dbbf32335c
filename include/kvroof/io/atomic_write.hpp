// SPDX-License-Identifier: MIT
#pragma once
#include <string>
#include <string_view>

namespace kvroof::io {

// Writes `content` to `path` atomically: a temporary file in the same folder,
// flushed, then renamed over `path`. On failure throws std::runtime_error and
// leaves `path` as it was.
void write_file_atomic(const std::string& path, std::string_view content);

// A file written in pieces that appears at `path` only on commit(): until
// then it is a temporary file beside it, removed if the object dies first.
class AtomicFile {
public:
    explicit AtomicFile(std::string path);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();
    void write(std::string_view data);
    void commit();

private:
    std::string path_, tmp_;
    int fd_ = -1;
};

}  // namespace kvroof::io
