// SPDX-License-Identifier: MIT
// `kvroof probe --cpu`: the measurements (STREAM-style triad, decode attention).
#include "kvroof/io/probe.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <sstream>
#include <thread>

#include "kvroof/error.hpp"

namespace kvroof::io {
namespace {
void pin_to(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int c : cpus) CPU_SET(c, &set);
    (void)sched_setaffinity(0, sizeof(set), &set);  // best effort: an unpinned run still measures
}

// Threads started (and pinned) once and reused: a timed repetition is the work and two barriers,
// not creating and joining its threads (which, at a hundred threads, is most of a short kernel).
class Team {
public:
    Team(int n, const std::vector<int>& cpus) : n_(n), sync_(n + 1) {
        pool_.reserve(static_cast<std::size_t>(n));
        for (int t = 0; t < n; ++t)
            pool_.emplace_back([this, t, cpus] {
                pin_to(cpus);
                while (true) {
                    sync_.arrive_and_wait();  // a job is set, or none: stop
                    if (!job_) return;
                    (*job_)(t);
                    sync_.arrive_and_wait();  // every member done
                }
            });
    }
    Team(const Team&) = delete;
    Team& operator=(const Team&) = delete;
    ~Team() {
        job_ = nullptr;
        sync_.arrive_and_wait();
        for (auto& th : pool_) th.join();
    }
    [[nodiscard]] int size() const noexcept { return n_; }
    // job(t) on member t, for every member; returns when all are done.
    void run(const std::function<void(int)>& job) {
        job_ = &job;
        sync_.arrive_and_wait();
        sync_.arrive_and_wait();
    }

private:
    int n_;
    std::barrier<> sync_;
    const std::function<void(int)>* job_ = nullptr;
    std::vector<std::thread> pool_;
};

void attention_on(Team& team, const AttentionShape& s, const float* q, const float* k, const float* v, float* out) {
    const int hq = s.q_heads(), d = s.head_dim, n = s.context;
    const int parts = team.size();
    // Per part and query head: the running max, the sum of exp and the weighted sum of V.
    std::vector<float> m(static_cast<std::size_t>(parts * hq)), l(m.size()), acc(m.size() * static_cast<std::size_t>(d));
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    // Each K and V row is read once for the `group` query heads that share it.
    auto work = [&](int p) {
        const int t0 = static_cast<int>(static_cast<long long>(n) * p / parts);
        const int t1 = static_cast<int>(static_cast<long long>(n) * (p + 1) / parts);
        const auto gs = static_cast<std::size_t>(s.group);
        std::vector<float> score(static_cast<std::size_t>(t1 - t0) * gs), mx(gs), sum(gs);
        for (int g = 0; g < s.kv_heads; ++g) {
            const std::ptrdiff_t kv = static_cast<std::ptrdiff_t>(g) * n * d;
            std::fill(mx.begin(), mx.end(), -INFINITY);
            for (int t = t0; t < t1; ++t) {
                const float* kt = k + kv + static_cast<std::ptrdiff_t>(t) * d;
                for (std::size_t j = 0; j < gs; ++j) {
                    const float* qh = q + (static_cast<std::ptrdiff_t>(g) * s.group + static_cast<std::ptrdiff_t>(j)) * d;
                    float dot = 0;
                    for (int i = 0; i < d; ++i) dot += qh[i] * kt[i];
                    score[static_cast<std::size_t>(t - t0) * gs + j] = dot * scale;
                    mx[j] = std::max(mx[j], dot * scale);
                }
            }
            const std::size_t slot0 =
                static_cast<std::size_t>(p) * static_cast<std::size_t>(hq) + static_cast<std::size_t>(g) * gs;
            std::fill(acc.begin() + static_cast<std::ptrdiff_t>(slot0 * static_cast<std::size_t>(d)),
                      acc.begin() + static_cast<std::ptrdiff_t>((slot0 + gs) * static_cast<std::size_t>(d)), 0.0f);
            std::fill(sum.begin(), sum.end(), 0.0f);
            for (int t = t0; t < t1; ++t) {
                const float* vt = v + kv + static_cast<std::ptrdiff_t>(t) * d;
                for (std::size_t j = 0; j < gs; ++j) {
                    const float w = std::exp(score[static_cast<std::size_t>(t - t0) * gs + j] - mx[j]);
                    sum[j] += w;
                    float* a = acc.data() + (slot0 + j) * static_cast<std::size_t>(d);
                    for (int i = 0; i < d; ++i) a[i] += w * vt[i];
                }
            }
            for (std::size_t j = 0; j < gs; ++j) m[slot0 + j] = mx[j], l[slot0 + j] = sum[j];
        }
    };
    team.run(work);
    for (int h = 0; h < hq; ++h) {  // merge: rescale each part to the overall max
        float mx = -INFINITY, sum = 0;
        for (int p = 0; p < parts; ++p)
            mx = std::max(mx, m[static_cast<std::size_t>(p) * static_cast<std::size_t>(hq) + static_cast<std::size_t>(h)]);
        float* o = out + static_cast<std::ptrdiff_t>(h) * d;
        std::fill(o, o + d, 0.0f);
        for (int p = 0; p < parts; ++p) {
            const std::size_t slot = static_cast<std::size_t>(p) * static_cast<std::size_t>(hq) + static_cast<std::size_t>(h);
            const float c = std::exp(m[slot] - mx);
            sum += c * l[slot];
            for (int i = 0; i < d; ++i) o[i] += c * acc[slot * static_cast<std::size_t>(d) + static_cast<std::size_t>(i)];
        }
        for (int i = 0; i < d; ++i) o[i] /= sum;
    }
}
// The context split over at most `threads` parts, each at least one token.
int attention_parts(const AttentionShape& s, int threads) { return std::max(1, std::min(threads, s.context)); }
}  // namespace

void decode_attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out, int threads) {
    Team team(attention_parts(s, threads), {});
    attention_on(team, s, q, k, v, out);
}

namespace {
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// "0-3,8-11" -> {0, 1, 2, 3, 8, 9, 10, 11}
std::vector<int> parse_cpulist(const std::string& text) {
    std::vector<int> cpus;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, ',')) {
        if (part.empty()) continue;
        const auto dash = part.find('-');
        const int a = std::stoi(part.substr(0, dash));
        const int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
        for (int c = a; c <= b; ++c) cpus.push_back(c);
    }
    return cpus;
}

// The NUMA nodes with CPUs, each as its CPU list (one entry, empty, when /sys shows one node or none).
std::vector<std::vector<int>> numa_nodes() {
    std::vector<std::vector<int>> nodes;
    const std::filesystem::path root = "/sys/devices/system/node";
    std::error_code ec;
    for (int i = 0; i < 4096; ++i) {
        const auto dir = root / fmt::format("node{}", i);
        if (!std::filesystem::exists(dir, ec)) break;
        const auto cpus = parse_cpulist(read_first_line((dir / "cpulist").string()));
        if (!cpus.empty()) nodes.push_back(cpus);
    }
    return nodes;
}

// Triad over n doubles per array, each thread on its own slice (first touched by it).
TriadRun run_triad(const std::string& scope, int threads, std::size_t n, double seconds, const std::vector<int>& cpus) {
    std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
    Team team(threads, cpus);
    auto slices = [&](auto&& body) {
        team.run([&](int t) {
            body(n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads),
                 n * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads));
        });
    };
    slices([&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;
    });
    TriadRun r{scope, threads, n, 0, HUGE_VAL};
    const auto start = Clock::now();
    while (r.repetitions < 3 || (since(start) < seconds && r.repetitions < 1000)) {
        const auto t0 = Clock::now();
        slices([&](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) a[i] = b[i] + 3.0 * c[i];
        });
        r.best_s = std::min(r.best_s, since(t0));
        ++r.repetitions;
    }
    if (a[n / 2] != 7.0) throw std::runtime_error("probe: the triad computed a wrong value");
    return r;
}

AttentionRun run_attention(const AttentionShape& s, int threads, double seconds) {
    const std::size_t kv =
        static_cast<std::size_t>(s.kv_heads) * static_cast<std::size_t>(s.context) * static_cast<std::size_t>(s.head_dim);
    const std::size_t qn = static_cast<std::size_t>(s.q_heads()) * static_cast<std::size_t>(s.head_dim);
    std::vector<float> q(qn), k(kv), v(kv), out(qn);
    for (std::size_t i = 0; i < kv; ++i) k[i] = static_cast<float>(i % 7) * 0.01f, v[i] = static_cast<float>(i % 5) * 0.1f;
    for (std::size_t i = 0; i < qn; ++i) q[i] = static_cast<float>(i % 3) * 0.02f;
    AttentionRun r{s, 0, HUGE_VAL};
    Team team(attention_parts(s, threads), {});
    const auto start = Clock::now();
    while (r.repetitions < 3 || (since(start) < seconds && r.repetitions < 100000)) {
        const auto t0 = Clock::now();
        attention_on(team, s, q.data(), k.data(), v.data(), out.data());
        r.best_s = std::min(r.best_s, since(t0));
        ++r.repetitions;
    }
    return r;
}

double meminfo_total_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    double kb = 0;
    while (in >> key) {
        if (key == "MemTotal:") {
            in >> kb;
            return kb * 1024.0;
        }
        in.ignore(1 << 16, '\n');
    }
    return 0;
}

double llc_bytes() {
    double best = 0;
    for (int i = 0; i < 8; ++i) {
        const std::string s = read_first_line(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", i));
        if (s.empty()) continue;
        const double mult = s.back() == 'K' ? 1024.0 : s.back() == 'M' ? 1048576.0 : 1.0;
        best = std::max(best, std::atof(s.c_str()) * mult);
    }
    return best;
}

}  // namespace

double preset_figure(double x) { return std::strtod(fmt::format("{:.4g}", x).c_str(), nullptr); }

std::string today_utc() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
}

ProbeResult probe_cpu(const ProbeOptions& o) {
    if (!(o.size_mb >= 1 && o.size_mb <= 1e6))
        throw InputError(fmt::format("--size: must be in [1, 1000000] MB, got {}", o.size_mb));
    if (!(o.seconds >= 0.01 && o.seconds <= 600))
        throw InputError(fmt::format("--seconds: must be in [0.01, 600], got {}", o.seconds));
    ProbeResult r;
    char host[256] = {};
    r.hostname = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
    r.date = today_utc();
    r.threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    r.memory_bytes = meminfo_total_bytes();
    r.llc_bytes = llc_bytes();
    // The arrays must fit in memory with room to spare: at most half of it (an allocation near all of it fails,
    // or the kernel kills the process).
    if (r.memory_bytes > 0 && o.size_mb * 1e6 > 0.5 * r.memory_bytes)
        throw InputError(fmt::format("--size: {:g} MB is more than half of this host's memory ({:.0f} MB); at most {:.0f}",
                                     o.size_mb, r.memory_bytes / 1e6, std::floor(0.5 * r.memory_bytes / 1e6)));
    const auto nodes = numa_nodes();
    r.numa_nodes = std::max<int>(1, static_cast<int>(nodes.size()));
    const auto n = static_cast<std::size_t>(o.size_mb * 1e6 / 24.0);
    try {
        r.triad.push_back(run_triad("all", r.threads, n, o.seconds, {}));
    } catch (const std::bad_alloc&) {
        throw InputError(fmt::format("--size: cannot allocate {:g} MB on this host; give a smaller size", o.size_mb));
    }
    if (nodes.size() > 1)
        for (std::size_t i = 0; i < nodes.size(); ++i)
            r.triad.push_back(run_triad(fmt::format("node {}", i), std::min<int>(r.threads, static_cast<int>(nodes[i].size())), n,
                                        o.seconds, nodes[i]));
    for (const int ctx : {1024, 8192, 32768}) {
        AttentionShape s;
        s.context = ctx;
        r.attention.push_back(run_attention(s, r.threads, o.seconds / 3));
    }
    return r;
}

}  // namespace kvroof::io
