// SPDX-License-Identifier: MIT
#include "kvroof/io/atomic_write.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "kvroof/error.hpp"

namespace kvroof::io {
namespace fs = std::filesystem;
namespace {

// The registry read by the signal handler: a fixed table, each slot's state
// an atomic int (0 free, 1 being filled, 2 live), so the handler neither
// allocates nor locks.
constexpr int kSlots = 64;
constexpr std::size_t kPathBytes = 4096;
struct Slot {
    std::atomic<int> state{0};
    bool folder = false;
    char path[kPathBytes] = {};
};
static_assert(std::atomic<int>::is_always_lock_free);
Slot g_slots[kSlots];

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

void remove_temps_and_die(int sig) {
    for (Slot& s : g_slots)
        if (s.state.load(std::memory_order_acquire) == 2 && !s.folder) ::unlink(s.path);
    // Folders after their files; nested ones in any slot order, since a pass
    // removes the innermost empty ones and the next pass their parents.
    for (bool removed = true; removed;) {
        removed = false;
        for (Slot& s : g_slots)
            if (s.state.load(std::memory_order_acquire) == 2 && s.folder && ::rmdir(s.path) == 0) removed = true;
    }
    // SA_RESETHAND restored the default action; the raised signal is delivered
    // when the handler returns and ends the process as if never caught.
    ::raise(sig);
}

// Holds the cleanup signals off the calling thread while a temporary is
// created and registered, so none lands between the two.
class SignalsHeld {
public:
    SignalsHeld() noexcept {
        sigset_t set;
        sigemptyset(&set);
        for (int s : kCleanupSignals) sigaddset(&set, s);
        pthread_sigmask(SIG_BLOCK, &set, &old_);
    }
    SignalsHeld(const SignalsHeld&) = delete;
    SignalsHeld& operator=(const SignalsHeld&) = delete;
    ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

private:
    sigset_t old_;
};

std::string errno_text() { return std::strerror(errno); }

bool under_proc(const fs::path& p) {
    const std::string s = p.string();
    return s.rfind("/proc/", 0) == 0;
}

// Where output for `path` really goes: "-" is standard output; symbolic links
// followed to the file they name (which may not exist yet). `direct` when that file cannot be
// replaced by a rename: not a regular file, or reached through /proc
// (/dev/stdout is a link to /proc/self/fd/1, whose target text is not a path
// to rename over).
struct OutputTarget {
    std::string path;
    bool direct = false;
    bool append = false;  // direct onto a regular file: /dev/stdout redirected with > or >>
};

OutputTarget resolve_output(const std::string& path) {
    if (path == "-") return {"/dev/stdout", true, true};  // the shell's convention: standard output
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("cannot write '{}': it is a folder", path));
        if (!S_ISREG(st.st_mode)) return {path, true, false};
    }
    std::error_code ec;
    const fs::path p = follow_links(path, ec);
    if (ec) throw std::runtime_error(fmt::format("cannot write '{}': {}", path, ec.message()));
    if (under_proc(p)) return {path, true, true};
    return {p.string(), false, false};
}

std::string temp_template_beside(const fs::path& target) {
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    return (dir / (".kvroof-" + target.filename().string() + ".XXXXXX")).string();
}

}  // namespace

std::filesystem::path follow_links(const std::filesystem::path& path, std::error_code& ec) {
    ec.clear();
    fs::path p = path;
    for (int hops = 0; hops < 40 && !under_proc(p); ++hops) {
        struct stat l {};
        if (::lstat(p.c_str(), &l) != 0 || !S_ISLNK(l.st_mode)) break;
        const fs::path to = fs::read_symlink(p, ec);
        if (ec) break;
        p = to.is_absolute() ? to : p.parent_path() / to;
    }
    return p;
}

void install_temp_cleanup_on_signals() {
    for (int sig : kCleanupSignals) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        struct sigaction sa {};
        sa.sa_handler = remove_temps_and_die;
        sigemptyset(&sa.sa_mask);
        for (int s : kCleanupSignals) sigaddset(&sa.sa_mask, s);  // one cleanup at a time
        sa.sa_flags = SA_RESETHAND;
        ::sigaction(sig, &sa, nullptr);
    }
}

TempRegistration::TempRegistration(const std::string& path, Kind kind) noexcept {
    if (path.size() >= kPathBytes) return;
    for (int i = 0; i < kSlots; ++i) {
        int expected = 0;
        if (!g_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
        std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
        g_slots[i].folder = kind == Kind::folder;
        g_slots[i].state.store(2, std::memory_order_release);
        slot_ = i;
        return;
    }
}

TempRegistration::TempRegistration(TempRegistration&& other) noexcept : slot_(std::exchange(other.slot_, -1)) {}

TempRegistration& TempRegistration::operator=(TempRegistration&& other) noexcept {
    if (this != &other) {
        release();
        slot_ = std::exchange(other.slot_, -1);
    }
    return *this;
}

TempRegistration::~TempRegistration() { release(); }

void TempRegistration::release() noexcept {
    if (slot_ >= 0) g_slots[slot_].state.store(0, std::memory_order_release);
    slot_ = -1;
}

namespace {
std::mutex& inputs_mutex() {
    static std::mutex m;
    return m;
}
std::vector<fs::path>& input_files() {
    static std::vector<fs::path> files;
    return files;
}
}  // namespace

void note_input_file(std::string_view path) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::path(path), ec)) return;
    const std::lock_guard<std::mutex> lock(inputs_mutex());
    input_files().emplace_back(path);
}

void write_file_atomic(const std::string& path, std::string_view content) {
    AtomicFile f(path);
    f.write(content);
    f.commit();
}

AtomicFile::AtomicFile(std::string path, InputOverwrite inputs) : path_(std::move(path)) {
    const OutputTarget t = resolve_output(path_);
    if (inputs == InputOverwrite::refuse && !t.direct) {
        const std::lock_guard<std::mutex> lock(inputs_mutex());
        for (const fs::path& in : input_files()) {
            std::error_code ec;
            if (fs::equivalent(fs::path(t.path), in, ec) && !ec)
                throw InputError(fmt::format("cannot write '{}': it is an input file of this run; give another file", path_));
        }
    }
    if (t.direct) {
        fd_ = ::open(t.path.c_str(), O_WRONLY | O_CLOEXEC | (t.append ? O_APPEND : 0));
        if (fd_ < 0) throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, errno_text()));
        return;
    }
    std::string tmp = temp_template_beside(fs::path(t.path));
    {
        const SignalsHeld held;
        fd_ = ::mkstemp(tmp.data());
        if (fd_ >= 0) reg_ = TempRegistration(tmp);
    }
    if (fd_ < 0) {
        // A folder that does not exist, or a file where a folder should be, is a wrong path: bad input (exit 2).
        const int err = errno;
        const std::string msg = fmt::format("cannot write '{}': {}", path_, errno_text());
        if (err == ENOENT || err == ENOTDIR) throw InputError(msg);
        throw std::runtime_error(msg);
    }
    tmp_ = std::move(tmp);
    target_ = t.path;
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) {
        ::close(fd_);
        if (!tmp_.empty()) ::unlink(tmp_.c_str());
    }
}

void AtomicFile::write(std::string_view data) {
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, errno_text()));
        }
        done += static_cast<size_t>(n);
    }
}

void AtomicFile::commit() {
    if (fd_ < 0) throw std::logic_error("AtomicFile::commit twice");
    if (tmp_.empty()) {  // written straight through
        const int fd = std::exchange(fd_, -1);
        if (::close(fd) != 0) throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, errno_text()));
        return;
    }
    if (::fchmod(fd_, 0644) != 0 || ::fsync(fd_) != 0)
        throw std::runtime_error(fmt::format("cannot write '{}': {}", path_, errno_text()));
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 || std::rename(tmp_.c_str(), target_.c_str()) != 0) {
        const std::string msg = fmt::format("cannot write '{}': {}", path_, errno_text());
        ::unlink(tmp_.c_str());
        reg_.release();
        throw std::runtime_error(msg);
    }
    reg_.release();
}

AtomicDir::AtomicDir(const std::string& path) {
    // An absolute path without a trailing '/', its final links followed, the
    // folders above it resolved: the sibling must sit beside the real folder.
    fs::path p = fs::absolute(fs::path(path)).lexically_normal();
    std::string s = p.string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    p = s;
    for (int hops = 0; hops < 40; ++hops) {
        struct stat l {};
        if (::lstat(p.c_str(), &l) != 0 || !S_ISLNK(l.st_mode)) break;
        std::error_code ec;
        const fs::path to = fs::read_symlink(p, ec);
        if (ec) throw std::runtime_error(fmt::format("cannot write into '{}': {}", path, ec.message()));
        p = (to.is_absolute() ? to : p.parent_path() / to).lexically_normal();
    }
    if (p == p.root_path()) throw std::runtime_error(fmt::format("cannot write into '{}': it is the root folder", path));
    std::error_code ec;
    const fs::path parent = fs::weakly_canonical(p.parent_path(), ec);
    if (ec) throw std::runtime_error(fmt::format("cannot write into '{}': {}", path, ec.message()));
    target_ = (parent / p.filename()).string();

    struct stat st {};
    const bool exists = ::stat(target_.c_str(), &st) == 0;
    if (exists && !S_ISDIR(st.st_mode)) throw std::runtime_error(fmt::format("cannot write into '{}': not a folder", path));
    // Parent folders that do not exist yet, created now and removed again on failure.
    std::vector<fs::path> missing;
    for (fs::path a = parent; !a.empty() && !fs::exists(a, ec); a = a.parent_path()) {
        missing.push_back(a);
        if (a == a.root_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), 0777) != 0 && errno != EEXIST) {
            const std::string msg = fmt::format("cannot write into '{}': {}", path, errno_text());
            discard();
            throw std::runtime_error(msg);
        }
        created_parents_.insert(created_parents_.begin(), it->string());
        parent_regs_.emplace_back(it->string(), TempRegistration::Kind::folder);
    }
    std::string tmpl = target_ + ".tmp-XXXXXX";
    bool made = false;
    {
        const SignalsHeld held;
        made = ::mkdtemp(tmpl.data()) != nullptr;
        if (made) dir_reg_ = TempRegistration(tmpl, TempRegistration::Kind::folder);
    }
    if (!made) {
        const std::string msg = fmt::format("cannot write into '{}': {}", path, errno_text());
        discard();
        throw std::runtime_error(msg);
    }
    scratch_ = tmpl;
    // The old folder's permissions, or what a fresh folder would get.
    mode_t mode = 0;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0777 & ~mask;
    }
    ::chmod(scratch_.c_str(), mode);
}

AtomicDir::~AtomicDir() {
    if (!committed_) discard();
}

std::string AtomicDir::file(const std::string& name) {
    std::string full = scratch_ + "/" + name;
    file_regs_.emplace_back(full);
    return full;
}

void AtomicDir::commit() {
    struct stat st {};
    if (::stat(target_.c_str(), &st) != 0) {
        if (std::rename(scratch_.c_str(), target_.c_str()) != 0)
            throw std::runtime_error(fmt::format("cannot write into '{}': {}", target_, errno_text()));
        committed_ = true;
        file_regs_.clear();
        parent_regs_.clear();
        dir_reg_.release();
        return;
    }
    // One atomic exchange: `target_` holds the new files, `scratch_` the old ones.
    std::string old = scratch_;
    if (::renameat2(AT_FDCWD, scratch_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
        if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            throw std::runtime_error(fmt::format("cannot replace '{}': {}", target_, errno_text()));
        // No exchange on this file system: move the old folder aside, the new one in.
        old = target_ + ".old-XXXXXX";
        if (::mkdtemp(old.data()) == nullptr || std::rename(target_.c_str(), old.c_str()) != 0) {
            const std::string msg = fmt::format("cannot replace '{}': {}", target_, errno_text());
            ::rmdir(old.c_str());
            throw std::runtime_error(msg);
        }
        if (std::rename(scratch_.c_str(), target_.c_str()) != 0) {
            const std::string msg = fmt::format("cannot replace '{}': {}", target_, errno_text());
            std::rename(old.c_str(), target_.c_str());
            throw std::runtime_error(msg);
        }
    }
    committed_ = true;
    std::error_code ec;
    fs::remove_all(old, ec);
    file_regs_.clear();
    parent_regs_.clear();
    dir_reg_.release();
    if (ec)
        throw std::runtime_error(
            fmt::format("replaced '{}' but could not remove its old files at '{}': {}", target_, old, ec.message()));
}

void AtomicDir::discard() noexcept {
    std::error_code ec;
    if (!scratch_.empty()) fs::remove_all(scratch_, ec);
    for (const auto& p : created_parents_) ::rmdir(p.c_str());  // deepest first; only if still empty
    file_regs_.clear();
    parent_regs_.clear();
    dir_reg_.release();
}

}  // namespace kvroof::io
