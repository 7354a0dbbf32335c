// SPDX-License-Identifier: MIT
#pragma once
// The resources that can bind, spelled the same in code, JSON, CSV and reports.

#include <array>
#include <cstddef>
#include <string_view>

namespace kvroof {

enum class Resource {
    gpu_compute,
    gpu_hbm,
    hbm_capacity,
    cpu_compute,
    cpu_dram,
    dram_capacity,
    link,
    slo_tpot,
    slo_ttft,
    tp_allreduce,  // the tensor-parallel all-reduces over the GPU fabric
    ep_alltoall,  // the expert-parallel all-to-alls (dispatch, combine) over NVLink and the network
};

inline constexpr std::array<Resource, 11> kAllResources = {Resource::gpu_compute,  Resource::gpu_hbm,    Resource::hbm_capacity,
                                                           Resource::cpu_compute,  Resource::cpu_dram,   Resource::dram_capacity,
                                                           Resource::link,         Resource::slo_tpot,   Resource::slo_ttft,
                                                           Resource::tp_allreduce, Resource::ep_alltoall};

[[nodiscard]] constexpr std::string_view name(Resource r) noexcept {
    switch (r) {
        case Resource::gpu_compute: return "gpu_compute";
        case Resource::gpu_hbm: return "gpu_hbm";
        case Resource::hbm_capacity: return "hbm_capacity";
        case Resource::cpu_compute: return "cpu_compute";
        case Resource::cpu_dram: return "cpu_dram";
        case Resource::dram_capacity: return "dram_capacity";
        case Resource::link: return "link";
        case Resource::slo_tpot: return "slo_tpot";
        case Resource::slo_ttft: return "slo_ttft";
        case Resource::tp_allreduce: return "tp_allreduce";
        case Resource::ep_alltoall: return "ep_alltoall";
    }
    return "?";
}

// What it means for the offload question when this resource binds.
[[nodiscard]] constexpr std::string_view meaning(Resource r) noexcept {
    switch (r) {
        case Resource::gpu_compute: return "GPU-compute-bound -> only more GPUs help";
        case Resource::gpu_hbm: return "HBM-bandwidth-bound -> offload can help (moves KV reads to CPU DRAM)";
        case Resource::hbm_capacity: return "HBM capacity caps the batch -> offload, parking or KV quantisation can help";
        case Resource::cpu_compute: return "CPU attention FLOP/s bind -> more CPUs per GPU or more sparsity";
        case Resource::cpu_dram: return "CPU DRAM bandwidth binds -> more CPUs per GPU or more sparsity";
        case Resource::dram_capacity: return "CPU DRAM capacity caps the batch -> more CPU memory per GPU";
        case Resource::link: return "GPU<->CPU link binds -> a faster link or less KV traffic";
        case Resource::slo_tpot: return "the TPOT SLO caps the batch -> a faster decode step is needed";
        case Resource::slo_ttft: return "the TTFT SLO is violated -> less reload or faster prefill needed";
        case Resource::tp_allreduce:
            return "tensor-parallel all-reduces bind -> fewer GPUs per group (replicas instead) or a faster GPU fabric";
        case Resource::ep_alltoall:
            return "expert-parallel all-to-alls bind -> a smaller EP group (within the NVLink domain) or a faster fabric";
    }
    return "?";
}

// Two vocabularies, never mixed: what a step's TIME is bound by (a rate), and
// what LIMITS THE BATCH (a capacity or an SLO). A resource outside a
// vocabulary gets its meaning in the other's words.
[[nodiscard]] constexpr std::string_view time_words(Resource r) noexcept {
    switch (r) {
        case Resource::gpu_compute: return "GPU compute";
        case Resource::gpu_hbm: return "HBM bandwidth";
        case Resource::cpu_compute: return "CPU compute";
        case Resource::cpu_dram: return "CPU DRAM bandwidth";
        case Resource::link: return "the GPU-CPU link";
        case Resource::tp_allreduce: return "tensor-parallel all-reduces";
        case Resource::ep_alltoall: return "expert-parallel all-to-alls";
        case Resource::slo_ttft: return "prefill (the TTFT SLO is missed)";
        case Resource::hbm_capacity:
        case Resource::dram_capacity:
        case Resource::slo_tpot: return "nothing (no batch runs)";
    }
    return "?";
}
[[nodiscard]] constexpr std::string_view limit_words(Resource r) noexcept {
    switch (r) {
        case Resource::hbm_capacity: return "HBM capacity";
        case Resource::dram_capacity: return "CPU DRAM capacity";
        case Resource::slo_tpot: return "the TPOT SLO";
        case Resource::slo_ttft: return "the TTFT SLO";
        default: return "no capacity (time alone)";
    }
}

// The rate resources that carry utilisation-seconds per call.
inline constexpr std::array<Resource, 7> kRateResources = {Resource::gpu_compute, Resource::gpu_hbm, Resource::cpu_compute,
                                                           Resource::cpu_dram,    Resource::link,    Resource::tp_allreduce,
                                                           Resource::ep_alltoall};
// The rate resources off the GPU: the offloaded path.
inline constexpr std::array<Resource, 3> kOffloadResources = {Resource::cpu_compute, Resource::cpu_dram, Resource::link};

namespace detail {
[[nodiscard]] constexpr bool enum_order_is_list_order() noexcept {
    for (std::size_t i = 0; i < kAllResources.size(); ++i)
        if (static_cast<std::size_t>(kAllResources[i]) != i) return false;
    return true;
}
}  // namespace detail
static_assert(detail::enum_order_is_list_order(), "kAllResources lists every Resource in enum order");

// One value per resource, indexed by the resource itself: `util_sec[Resource::link]`.
// Every resource has a slot (value-initialised); sum, max and argmax range over
// a list of resources, by default the rate resources. Adding a resource is one
// enum value, its name and meaning, and its place in kAllResources (and in
// kRateResources when it carries utilisation-seconds).
template <class T>
struct PerResource {
    std::array<T, kAllResources.size()> v{};

    [[nodiscard]] constexpr T& operator[](Resource r) noexcept { return v[static_cast<std::size_t>(r)]; }
    [[nodiscard]] constexpr const T& operator[](Resource r) const noexcept { return v[static_cast<std::size_t>(r)]; }

    template <std::size_t N = kRateResources.size()>
    [[nodiscard]] constexpr T sum(const std::array<Resource, N>& over = kRateResources) const noexcept {
        T s{};
        for (Resource r : over) s += (*this)[r];
        return s;
    }
    // The resource with the largest value; the first in `over` among equals.
    template <std::size_t N = kRateResources.size()>
    [[nodiscard]] constexpr Resource argmax(const std::array<Resource, N>& over = kRateResources) const noexcept {
        static_assert(N > 0);
        Resource best = over[0];
        for (Resource r : over)
            if ((*this)[r] > (*this)[best]) best = r;
        return best;
    }
    template <std::size_t N = kRateResources.size()>
    [[nodiscard]] constexpr T max(const std::array<Resource, N>& over = kRateResources) const noexcept {
        return (*this)[argmax(over)];
    }
    constexpr PerResource& operator+=(const PerResource& o) noexcept {
        for (std::size_t i = 0; i < v.size(); ++i) v[i] += o.v[i];
        return *this;
    }
};

}  // namespace kvroof
