// SPDX-License-Identifier: MIT
#include "kvroof/io/atomic_write.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace kvroof::io {

void write_file_atomic(const std::string& path, std::string_view content) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string tmpl = (dir / (".kvroof-" + target.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    auto fail = [&](const char* what) {
        const std::string msg = fmt::format("cannot write '{}' ({}): {}", path, what, std::strerror(errno));
        ::close(fd);
        ::unlink(tmpl.c_str());
        throw std::runtime_error(msg);
    };
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("write");
        }
        done += static_cast<size_t>(n);
    }
    if (::fchmod(fd, 0644) != 0) fail("chmod");
    if (::fsync(fd) != 0) fail("fsync");
    if (::close(fd) != 0) {
        ::unlink(tmpl.c_str());
        throw std::runtime_error(fmt::format("cannot write '{}' (close): {}", path, std::strerror(errno)));
    }
    if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
        const std::string msg = fmt::format("cannot write '{}' (rename): {}", path, std::strerror(errno));
        ::unlink(tmpl.c_str());
        throw std::runtime_error(msg);
    }
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
    namespace fs = std::filesystem;
    const fs::path target(path_);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    tmp_ = (dir / (".kvroof-" + target.filename().string() + ".XXXXXX")).string();
    fd_ = ::mkstemp(tmp_.data());
    if (fd_ < 0) throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(tmp_.c_str());
    }
}

void AtomicFile::write(std::string_view data) {
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
        }
        done += static_cast<size_t>(n);
    }
}

void AtomicFile::commit() {
    if (::fchmod(fd_, 0644) != 0 || ::fsync(fd_) != 0)
        throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const std::string msg = fmt::format("cannot write '{}': {}", path_, std::strerror(errno));
        ::unlink(tmp_.c_str());
        throw std::runtime_error(msg);
    }
}

}  // namespace kvroof::io
