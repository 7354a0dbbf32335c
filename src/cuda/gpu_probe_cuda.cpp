// SPDX-License-Identifier: MIT
// The GPU probe's measurements: the CUDA runtime (linked statically: it opens
// the driver only when first called) and cuBLASLt, opened with dlopen when the
// GEMMs run, so the kvroof binary needs no CUDA library to start and runs on
// machines without one. Built only with the CUDA toolkit (CMakeLists.txt).
// Every time is the best of repetitions timed with CUDA events on one stream.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../gpu_probe_measure.hpp"
#include "kvroof/error.hpp"

namespace kvroof::io::detail {
namespace {

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        throw std::runtime_error(fmt::format("probe --gpu: {}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

// Owners that free on every path, exceptions included.
struct DeviceBuffer {
    void* p = nullptr;
    explicit DeviceBuffer(std::size_t n) { check(cudaMalloc(&p, n), "cudaMalloc"); }
    ~DeviceBuffer() { cudaFree(p); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};
struct PinnedBuffer {
    void* p = nullptr;
    explicit PinnedBuffer(std::size_t n) { check(cudaMallocHost(&p, n), "cudaMallocHost"); }
    ~PinnedBuffer() { cudaFreeHost(p); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
};
struct Stream {
    cudaStream_t s = nullptr;
    Stream() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
    ~Stream() { cudaStreamDestroy(s); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
};
struct Event {
    cudaEvent_t e = nullptr;
    Event() { check(cudaEventCreate(&e), "cudaEventCreate"); }
    ~Event() { cudaEventDestroy(e); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
};
template <class F>
struct Defer {
    F f;
    ~Defer() { f(); }
};
template <class F>
Defer(F) -> Defer<F>;

double elapsed_s(const Event& a, const Event& b) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a.e, b.e), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
}

struct Timing {
    double best_s = std::numeric_limits<double>::infinity();
    int repetitions = 0;
};

// The best time of one `op` (which enqueues its work on `s`). A first run, timed, warms up and sizes the batches
// to about a millisecond each (an event's resolution is about half a microsecond); batches run for about
// `seconds`, at least three.
template <class Op>
Timing best_time(cudaStream_t s, double seconds, Op op) {
    Event a, b;
    check(cudaEventRecord(a.e, s), "cudaEventRecord");
    op();
    check(cudaEventRecord(b.e, s), "cudaEventRecord");
    check(cudaEventSynchronize(b.e), "cudaEventSynchronize");
    const double first = std::max(elapsed_s(a, b), 1e-7);
    const int batch = static_cast<int>(std::clamp(std::ceil(1e-3 / first), 1.0, 1000.0));
    Timing t;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds; ++i) {
        check(cudaEventRecord(a.e, s), "cudaEventRecord");
        for (int j = 0; j < batch; ++j) op();
        check(cudaEventRecord(b.e, s), "cudaEventRecord");
        check(cudaEventSynchronize(b.e), "cudaEventSynchronize");
        t.best_s = std::min(t.best_s, elapsed_s(a, b) / batch);
        t.repetitions += batch;
    }
    return t;
}

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

void device_facts(const GpuProbeOptions& o, GpuProbeResult& r) {
    int count = 0;
    if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
        throw std::runtime_error(
            fmt::format("probe --gpu: no CUDA device usable: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e)));
    if (o.device >= count)
        throw InputError(fmt::format("--device: {}, but this machine has {} CUDA device{} (0..{})", o.device, count,
                                     count == 1 ? "" : "s", count - 1));
    check(cudaSetDevice(o.device), "cudaSetDevice");
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, o.device), "cudaGetDeviceProperties");
    r.gpu_name = p.name;
    r.cc_major = p.major;
    r.cc_minor = p.minor;
    r.sm_count = p.multiProcessorCount;
    r.memory_bytes = static_cast<double>(p.totalGlobalMem);
    int v = 0;
    check(cudaRuntimeGetVersion(&v), "cudaRuntimeGetVersion");
    r.runtime_version = version_text(v);
    check(cudaDriverGetVersion(&v), "cudaDriverGetVersion");
    r.driver_version = version_text(v);
}

// HBM: one device-to-device copy of size_mb MB, its bytes read and written.
void measure_copy(const GpuProbeOptions& o, GpuProbeResult& r) {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    const auto n = static_cast<std::size_t>(o.size_mb * 1e6);
    if (2.0 * static_cast<double>(n) > 0.8 * static_cast<double>(free))
        throw InputError(
            fmt::format("--size: two buffers of {:g} MB exceed 80 % of the GPU's free memory ({:.0f} MB); at most {:.0f}",
                        o.size_mb, static_cast<double>(free) / 1e6, std::floor(0.4 * static_cast<double>(free) / 1e6)));
    DeviceBuffer src(n), dst(n);
    check(cudaMemset(src.p, 0x3c, n), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the fill runs on the null stream, the copies on their own
    Stream s;
    const Timing t = best_time(
        s.s, o.seconds, [&] { check(cudaMemcpyAsync(dst.p, src.p, n, cudaMemcpyDeviceToDevice, s.s), "cudaMemcpyAsync"); });
    r.copy_bytes = static_cast<double>(n);
    r.copy_best_s = t.best_s;
}

// The link: pinned copies each way from 4 KiB to 256 MiB (x4 apart), then the largest both ways at once.
void measure_link(const GpuProbeOptions& o, GpuProbeResult& r) {
    constexpr std::size_t kLargest = std::size_t{256} << 20;
    PinnedBuffer host_a(kLargest), host_b(kLargest);
    DeviceBuffer dev_a(kLargest), dev_b(kLargest);
    check(cudaMemset(dev_a.p, 0x3c, kLargest), "cudaMemset");
    check(cudaMemset(dev_b.p, 0x3c, kLargest), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    Stream s1, s2;
    const double each = o.seconds / 8;
    for (std::size_t n = 4096; n <= kLargest; n *= 4) {
        LinkTransfer t;
        t.bytes = static_cast<double>(n);
        t.h2d_s = best_time(s1.s, each, [&] {
                      check(cudaMemcpyAsync(dev_a.p, host_a.p, n, cudaMemcpyHostToDevice, s1.s), "cudaMemcpyAsync");
                  }).best_s;
        t.d2h_s = best_time(s1.s, each, [&] {
                      check(cudaMemcpyAsync(host_b.p, dev_b.p, n, cudaMemcpyDeviceToHost, s1.s), "cudaMemcpyAsync");
                  }).best_s;
        r.link.push_back(t);
    }
    // Both directions at once: the second stream starts with the first (an event), and the pair's time runs from
    // that start to the later of the two ends.
    Event start, end1, end2;
    double best = std::numeric_limits<double>::infinity();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3 || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < o.seconds; ++i) {
        check(cudaEventRecord(start.e, s1.s), "cudaEventRecord");
        check(cudaStreamWaitEvent(s2.s, start.e, 0), "cudaStreamWaitEvent");
        check(cudaMemcpyAsync(dev_a.p, host_a.p, kLargest, cudaMemcpyHostToDevice, s1.s), "cudaMemcpyAsync");
        check(cudaMemcpyAsync(host_b.p, dev_b.p, kLargest, cudaMemcpyDeviceToHost, s2.s), "cudaMemcpyAsync");
        check(cudaEventRecord(end1.e, s1.s), "cudaEventRecord");
        check(cudaEventRecord(end2.e, s2.s), "cudaEventRecord");
        check(cudaEventSynchronize(end1.e), "cudaEventSynchronize");
        check(cudaEventSynchronize(end2.e), "cudaEventSynchronize");
        best = std::min(best, std::max(elapsed_s(start, end1), elapsed_s(start, end2)));
    }
    r.bidir_bytes = static_cast<double>(kLargest);
    r.bidir_s = best;
}

// cuBLASLt's entry points, looked up by name in the shared library.
struct CublasLt {
    std::unique_ptr<void, int (*)(void*)> lib{nullptr, dlclose};
    decltype(&cublasLtCreate) create = nullptr;
    decltype(&cublasLtDestroy) destroy = nullptr;
    decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
    decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
    decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
    decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
    decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
    decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
    decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
    decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
    decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
    decltype(&cublasLtMatmul) matmul = nullptr;

    CublasLt() {
        const std::string major = std::to_string(CUDART_VERSION / 1000);
        std::string first_error;
        for (const std::string& name :
             {"libcublasLt.so." + major, std::string(KVROOF_CUDA_LIBRARY_DIR) + "/libcublasLt.so." + major,
              std::string("libcublasLt.so")}) {
            lib.reset(dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL));
            if (lib) break;
            if (first_error.empty()) first_error = dlerror();
        }
        if (!lib) throw std::runtime_error(fmt::format("cannot open libcublasLt.so.{}: {}", major, first_error));
        find(create, "cublasLtCreate");
        find(destroy, "cublasLtDestroy");
        find(desc_create, "cublasLtMatmulDescCreate");
        find(desc_destroy, "cublasLtMatmulDescDestroy");
        find(desc_set, "cublasLtMatmulDescSetAttribute");
        find(layout_create, "cublasLtMatrixLayoutCreate");
        find(layout_destroy, "cublasLtMatrixLayoutDestroy");
        find(pref_create, "cublasLtMatmulPreferenceCreate");
        find(pref_destroy, "cublasLtMatmulPreferenceDestroy");
        find(pref_set, "cublasLtMatmulPreferenceSetAttribute");
        find(heuristic, "cublasLtMatmulAlgoGetHeuristic");
        find(matmul, "cublasLtMatmul");
    }

    template <class F>
    void find(F& f, const char* name) {
        void* p = dlsym(lib.get(), name);
        if (!p) throw std::runtime_error(fmt::format("libcublasLt has no {}", name));
        f = reinterpret_cast<F>(p);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast): dlsym's contract
    }
};

void check_lt(cublasStatus_t st, const char* what) {
    if (st != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(fmt::format("probe --gpu: {}: cuBLAS status {}", what, static_cast<int>(st)));
}

// Random finite values of either sign and magnitude in [2^-7, 1) (E4M3: [2^-6, 2)) as the bits of `type`. Tensor
// cores draw less power, so clock higher, on constant or zero data, which would flatter the GEMM.
void fill_random(void* device, std::size_t elems, cudaDataType_t type, std::uint64_t seed) {
    const std::size_t size = type == CUDA_R_8F_E4M3 ? 1 : type == CUDA_R_32F ? 4 : 2;
    std::vector<unsigned char> host(elems * size);
    std::uint64_t x = 0x9E3779B97F4A7C15ULL * seed;
    for (std::size_t i = 0; i < elems; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const auto sign = static_cast<std::uint32_t>(x >> 63), pick = static_cast<std::uint32_t>(x >> 32);
        const std::uint32_t e = pick % 7, m = pick >> 8;
        std::uint32_t bits = 0;
        if (type == CUDA_R_8F_E4M3) bits = sign << 7 | (1 + e) << 3 | (m & 0x7);  // bias 7; exponent 1..7, never the NaN 0x7F
        if (type == CUDA_R_16BF) bits = sign << 15 | (120 + e) << 7 | (m & 0x7F);  // bias 127
        if (type == CUDA_R_16F) bits = sign << 15 | (8 + e) << 10 | (m & 0x3FF);  // bias 15
        if (type == CUDA_R_32F) bits = sign << 31 | (120 + e) << 23 | (m & 0x7FFFFF);  // bias 127
        std::memcpy(host.data() + i * size, &bits, size);  // x86 is little-endian: the low `size` bytes
    }
    check(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
}

struct GemmType {
    const char* name;
    cudaDataType_t in, out;
    cublasComputeType_t compute;
    std::size_t in_size, out_size;
};

// One square GEMM D = A^T·B ("TN", the layout FP8 requires), timed.
GemmRun run_gemm(const CublasLt& lt, cublasLtHandle_t h, cudaStream_t s, const GemmType& type, int dim, double seconds,
                 void* workspace, std::size_t workspace_bytes) {
    GemmRun g;
    g.dtype = type.name;
    g.m = g.n = g.k = dim;
    const std::size_t elems = static_cast<std::size_t>(dim) * static_cast<std::size_t>(dim);
    DeviceBuffer a(elems * type.in_size), b(elems * type.in_size), d(elems * type.out_size);
    fill_random(a.p, elems, type.in, 1);
    fill_random(b.p, elems, type.in, 2);
    cublasLtMatmulDesc_t desc = nullptr;
    check_lt(lt.desc_create(&desc, type.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const Defer free_desc{[&] { lt.desc_destroy(desc); }};
    const cublasOperation_t trans = CUBLAS_OP_T, none = CUBLAS_OP_N;
    check_lt(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans), "cublasLtMatmulDescSetAttribute");
    check_lt(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none), "cublasLtMatmulDescSetAttribute");
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    const Defer free_layouts{[&] {
        lt.layout_destroy(la);
        lt.layout_destroy(lb);
        lt.layout_destroy(ld);
    }};
    check_lt(lt.layout_create(&la, type.in, static_cast<std::uint64_t>(dim), static_cast<std::uint64_t>(dim), dim),
             "cublasLtMatrixLayoutCreate");
    check_lt(lt.layout_create(&lb, type.in, static_cast<std::uint64_t>(dim), static_cast<std::uint64_t>(dim), dim),
             "cublasLtMatrixLayoutCreate");
    check_lt(lt.layout_create(&ld, type.out, static_cast<std::uint64_t>(dim), static_cast<std::uint64_t>(dim), dim),
             "cublasLtMatrixLayoutCreate");
    cublasLtMatmulPreference_t pref = nullptr;
    check_lt(lt.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
    const Defer free_pref{[&] { lt.pref_destroy(pref); }};
    const std::uint64_t ws = workspace_bytes;
    check_lt(lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t best{};
    int found = 0;
    const cublasStatus_t st = lt.heuristic(h, desc, la, lb, ld, ld, pref, 1, &best, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        g.why =
            fmt::format("cuBLASLt has no {} kernel for this GPU (status {}, {} found)", type.name, static_cast<int>(st), found);
        return g;
    }
    const float alpha = 1.0f, beta = 0.0f;
    const Timing t = best_time(s, seconds, [&] {
        check_lt(lt.matmul(h, desc, &alpha, a.p, la, b.p, lb, &beta, d.p, ld, d.p, ld, &best.algo, workspace, workspace_bytes, s),
                 "cublasLtMatmul");
    });
    g.ran = true;
    g.repetitions = t.repetitions;
    g.best_s = t.best_s;
    return g;
}

// Dense GEMMs at 8192³ (4096³ where three FP32 matrices would not fit in half the free memory).
void measure_gemm(const GpuProbeOptions& o, GpuProbeResult& r) {
    const GemmType types[] = {{"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2},
                              {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2},
                              {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2},
                              {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4}};
    std::unique_ptr<const CublasLt> opened;
    try {
        opened = std::make_unique<const CublasLt>();
    } catch (const std::runtime_error& e) {  // the copies and the link stand; each GEMM says why it did not run
        for (const GemmType& t : types) {
            GemmRun g;
            g.dtype = t.name;
            g.why = e.what();
            r.gemm.push_back(g);
        }
        return;
    }
    const CublasLt& lt = *opened;
    cublasLtHandle_t h = nullptr;
    check_lt(lt.create(&h), "cublasLtCreate");
    const Defer free_handle{[&] { lt.destroy(h); }};
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    const int dim = 3.0 * 8192 * 8192 * 4 < 0.5 * static_cast<double>(free) ? 8192 : 4096;
    constexpr std::size_t kWorkspace = std::size_t{32} << 20;
    DeviceBuffer workspace(kWorkspace);
    Stream s;

    for (const GemmType& t : types) r.gemm.push_back(run_gemm(lt, h, s.s, t, dim, o.seconds, workspace.p, kWorkspace));
}

}  // namespace

GpuProbeResult measure_gpu(const GpuProbeOptions& o, GpuProbeResult r) {
    device_facts(o, r);
    measure_copy(o, r);
    measure_link(o, r);
    measure_gemm(o, r);
    return r;
}

}  // namespace kvroof::io::detail
