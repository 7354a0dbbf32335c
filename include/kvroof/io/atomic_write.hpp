// SPDX-License-Identifier: MIT
#pragma once
// Output files that appear whole or not at all, and temporaries that do not
// outlive the process, whether it returns, throws or is interrupted.

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace kvroof::io {

// Removes every registered temporary (files, then folders) when SIGINT,
// SIGTERM, SIGHUP or SIGPIPE ends the process, then dies of the same signal
// with its default action. Call once, early in main; a signal that is ignored
// at that point (nohup) stays ignored.
void install_temp_cleanup_on_signals();

// Registers `path` for removal by the signal handler above until destroyed or
// release()d; does not remove it itself. The table is fixed (async-signal-safe),
// so a path that does not fit is simply not registered.
class TempRegistration {
public:
    enum class Kind { file, folder };
    TempRegistration() noexcept = default;
    explicit TempRegistration(const std::string& path, Kind kind = Kind::file) noexcept;
    TempRegistration(TempRegistration&& other) noexcept;
    TempRegistration& operator=(TempRegistration&& other) noexcept;
    TempRegistration(const TempRegistration&) = delete;
    TempRegistration& operator=(const TempRegistration&) = delete;
    ~TempRegistration();
    void release() noexcept;

private:
    int slot_ = -1;
};

// The files this run reads (scenario, mix, trace, points, calibration and
// sweep files): an AtomicFile refuses to replace one (InputError), so no
// output of a run overwrites what it was given.
void note_input_file(std::string_view path);
// Whether an output may replace one of those: only a sweep sidecar, rewritten
// over the --config it was read from (the same provenance).
enum class InputOverwrite { refuse, allow };

// Where a write to `path` lands: symbolic links followed, one hop at a time,
// to a path that is not a link (it may not exist yet), at most 40 hops. Stops
// at the first path under /proc (/dev/stdout's /proc/self/fd/1), whose link
// text need not be a path. On a link that cannot be read, sets `ec` and
// returns the path reached so far.
std::filesystem::path follow_links(const std::filesystem::path& path, std::error_code& ec);

// Writes `content` to `path` as AtomicFile does. On failure throws
// std::runtime_error and leaves `path` as it was.
void write_file_atomic(const std::string& path, std::string_view content);

// A file written in pieces that appears at `path` only on commit(): until
// then it is a temporary file `.kvroof-NAME.XXXXXX` beside it, removed if the
// object dies first or a signal ends the process.
// A symbolic link at `path` is followed: the file it points to is replaced and
// the link kept. A target that is not a regular file (a terminal, a pipe,
// /dev/stdout, /dev/null) cannot be replaced, so it is written directly
// (appending when /dev/stdout is redirected to a file). A path of "-" is
// /dev/stdout.
class AtomicFile {
public:
    explicit AtomicFile(std::string path, InputOverwrite inputs = InputOverwrite::refuse);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();
    void write(std::string_view data);
    void commit();
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    // False when writing straight through to a non-regular target.
    [[nodiscard]] bool atomic() const noexcept { return !tmp_.empty(); }
    // Where the bytes written so far can be read back (atomic() only).
    [[nodiscard]] const std::string& temp_path() const noexcept { return tmp_; }

private:
    std::string path_;  // as given, for messages
    std::string target_;  // the file the rename replaces (links followed)
    std::string tmp_;  // empty when writing straight through
    int fd_ = -1;
    TempRegistration reg_;
};

// A folder that replaces `path` whole on commit(): its files are written into
// a fresh sibling `path.tmp-XXXXXX`, which commit() swaps with `path` (one
// atomic exchange where the file system offers it, else two renames) before
// removing the old contents. Dropped without commit(), the sibling and any
// parent folders it had to create are removed. A symbolic link at `path` is
// followed and kept.
class AtomicDir {
public:
    explicit AtomicDir(const std::string& path);
    AtomicDir(const AtomicDir&) = delete;
    AtomicDir& operator=(const AtomicDir&) = delete;
    ~AtomicDir();
    // The path to write `name` at inside the new folder; registered for removal.
    [[nodiscard]] std::string file(const std::string& name);
    void commit();

private:
    void discard() noexcept;
    std::string target_, scratch_;
    std::vector<std::string> created_parents_;  // deepest first
    std::vector<TempRegistration> parent_regs_;
    TempRegistration dir_reg_;
    std::vector<TempRegistration> file_regs_;
    bool committed_ = false;
};

}  // namespace kvroof::io
