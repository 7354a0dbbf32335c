// SPDX-License-Identifier: MIT
// run_sweep: chunks of rows computed on worker threads, written in order.
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kvroof/io/sweep.hpp"
#include "sweep_rows.hpp"

namespace kvroof::io {
namespace {

using namespace sweep_detail;

constexpr std::uint64_t kChunk = 4096;

// A chunk of rows: their text, and the tapped column's numbers when a tap is asked for.
struct Chunk {
    std::string text;
    std::vector<double> tapped;
};

// A chunk's rows into `out`, whose buffers are reused from chunk to chunk
// instead of a fresh allocation per chunk. A CSV row of the verdict columns
// is 150 to 180 bytes: reserving 200 a row lets a new buffer take a chunk
// without growing (a copy, and pages touched twice).
void compute_chunk(RowSource& w, std::uint64_t begin, std::uint64_t end, Chunk& out, bool tap) {
    out.text.clear();
    out.text.reserve((end - begin) * 200);
    out.tapped.clear();
    w.rows(begin, end, out.text, tap ? &out.tapped : nullptr);
}

// Hands a computed chunk on: its text to `write`, its numbers to the tap.
void deliver(const Chunk& c, const std::function<void(std::string_view)>& write, ColumnTap* tap) {
    write(c.text);
    if (tap) tap->values.insert(tap->values.end(), c.tapped.begin(), c.tapped.end());
}

void run_threaded(const SweepSpec& spec, const TypedGrid& grid, std::uint64_t begin, std::uint64_t end,
                  const std::function<void(std::string_view)>& write,
                  const std::function<void(std::uint64_t, std::uint64_t)>& progress, ColumnTap* tap, int tap_column);

}  // namespace

void run_sweep(const SweepSpec& spec, const std::function<void(std::string_view)>& write,
               const std::function<void(std::uint64_t, std::uint64_t)>& progress, ColumnTap* tap) {
    int tap_column = -1;
    if (tap) {
        check_tap_column(spec, tap->column);
        tap_column = tap_index(spec, tap->column);
    }
    // Plain names, not a structured binding: clang 14 cannot capture one in a lambda.
    const auto range = shard_range(spec);
    const std::uint64_t begin = range.first, end = range.second;
    const TypedGrid grid(spec);
    if (spec.shard_index == 1 && spec.format == SweepFormat::csv) write(sweep_header(spec));
    const std::uint64_t total = end - begin;
    const std::uint64_t chunks = (total + kChunk - 1) / kChunk;
    auto chunk_begin = [&](std::uint64_t c) { return begin + c * kChunk; };
    auto chunk_end = [&](std::uint64_t c) { return std::min(end, begin + (c + 1) * kChunk); };

    if (spec.threads <= 1 || chunks <= 1) {
        const std::unique_ptr<RowSource> w = make_row_source(spec, grid, tap_column);
        Chunk chunk;
        for (std::uint64_t c = 0; c < chunks; ++c) {
            compute_chunk(*w, chunk_begin(c), chunk_end(c), chunk, tap != nullptr);
            deliver(chunk, write, tap);
            if (progress) progress(chunk_end(c) - begin, total);
        }
        return;
    }
    run_threaded(spec, grid, begin, end, write, progress, tap, tap_column);
}

namespace {

void run_threaded(const SweepSpec& spec, const TypedGrid& grid, std::uint64_t begin, std::uint64_t end,
                  const std::function<void(std::string_view)>& write,
                  const std::function<void(std::uint64_t, std::uint64_t)>& progress, ColumnTap* tap, int tap_column) {
    const std::uint64_t total = end - begin;
    const std::uint64_t chunks = (total + kChunk - 1) / kChunk;
    auto chunk_begin = [&](std::uint64_t c) { return begin + c * kChunk; };
    auto chunk_end = [&](std::uint64_t c) { return std::min(end, begin + (c + 1) * kChunk); };
    // Workers claim chunks in order. The one that finishes the next chunk to be
    // written writes it, and every chunk after it that is ready; the others
    // leave theirs in `ready` and go on. So no thread sits waiting to be woken
    // for each chunk (on a virtual machine each such wake-up is an interrupt
    // of the other core). At most `window` chunks are in flight, so memory
    // stays flat however large the grid; only a worker that far ahead waits.
    const std::uint64_t window = static_cast<std::uint64_t>(spec.threads) * 2;
    std::mutex m;
    std::condition_variable cv;
    std::uint64_t next_claim = 0, next_write = 0;
    std::map<std::uint64_t, Chunk> ready;
    std::vector<Chunk> spare;  // written chunks' buffers, for the workers to reuse
    std::exception_ptr failure;
    bool stop = false, writing = false;
    // Called with the lock held: write the chunks that are next in order, the
    // lock released while each is delivered (only one thread writes at a time).
    auto write_ready = [&](std::unique_lock<std::mutex>& lock) {
        writing = true;
        for (auto it = ready.find(next_write); !stop && it != ready.end(); it = ready.find(next_write)) {
            Chunk chunk = std::move(it->second);
            ready.erase(it);
            lock.unlock();
            std::exception_ptr e;
            try {
                deliver(chunk, write, tap);
                if (progress) progress(std::min(total, (next_write + 1) * kChunk), total);
            } catch (...) {
                e = std::current_exception();
            }
            lock.lock();
            spare.push_back(std::move(chunk));
            ++next_write;
            if (e && !failure) failure = e;
            if (e) stop = true;
            cv.notify_all();  // a worker held back by the window may go on
        }
        writing = false;
    };
    auto worker = [&] {
        const std::unique_ptr<RowSource> w = make_row_source(spec, grid, tap_column);
        Chunk chunk;
        std::unique_lock lock(m);
        while (true) {
            cv.wait(lock, [&] { return stop || next_claim >= chunks || next_claim < next_write + window; });
            if (stop || next_claim >= chunks) return;
            const std::uint64_t c = next_claim++;
            if (!spare.empty()) {
                chunk = std::move(spare.back());
                spare.pop_back();
            }
            lock.unlock();
            try {
                compute_chunk(*w, chunk_begin(c), chunk_end(c), chunk, tap != nullptr);
            } catch (...) {
                lock.lock();
                if (!failure) failure = std::current_exception();
                stop = true;
                cv.notify_all();
                return;
            }
            lock.lock();
            ready.emplace(c, std::move(chunk));
            if (!writing && c == next_write) write_ready(lock);
        }
    };
    std::vector<std::thread> pool;
    const int n = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(spec.threads), chunks));
    pool.reserve(static_cast<size_t>(n - 1));
    for (int i = 1; i < n; ++i) pool.emplace_back(worker);
    worker();  // the calling thread is one of the n
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace
}  // namespace kvroof::io
