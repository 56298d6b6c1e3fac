// SPDX-License-Identifier: GPL-2.0-or-later
// What one node's placement for one request depends on, as words: the CPU
// topology (by address), the free CPUs, for GPU requests the free GPUs with
// their NUMA node, socket and PCIe root, the request and the budget. Equal
// words give equal placements (and scores), so nodes of one topology and
// one free state share one search. The topology is named by its address:
// the words mean something only while that topology lives, so whoever keeps
// them keeps the topology alive too, or drops them with the nodes.
#pragma once

#include "core/placement.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace k8s_cons_tres {

// Calls emit(uint64_t) with each word placement depends on, in order.
template <class Emit>
void placement_inputs(const NodeView &v, const Request &req, const SearchOptions &opts,
                      Emit &&emit) {
    const size_t words = v.cpu && v.free_cpus ? v.cpu->words : 0;
    const size_t ngpus = v.ngpus < 64 ? v.ngpus : 64;
    const uint64_t all = ngpus == 64 ? ~uint64_t{0} : (uint64_t{1} << ngpus) - 1;
    // Placement reads the GPUs only for GPU requests: CPU-only requests
    // share across nodes whatever their GPUs.
    const uint64_t gpus = req.gpus && v.gpus ? v.free_gpus & all : 0;
    emit(reinterpret_cast<uintptr_t>(v.cpu));
    emit(req.cpus | uint64_t{req.threads_per_core} << 32);
    emit(req.gpus | uint64_t{req.cpus_per_gpu} << 32);
    emit(uint64_t{req.whole_cores});
    emit(opts.budget);
    for (size_t i = 0; i < words; ++i)
        emit(v.free_cpus[i]);
    emit(gpus);
    for (uint64_t g = gpus; g; g &= g - 1) {
        const GpuInfo &x = v.gpus[std::countr_zero(g)];
        emit(static_cast<uint32_t>(x.numa) | uint64_t{static_cast<uint32_t>(x.socket)} << 32);
        // interned: one address per distinct root, for the process's life
        emit(reinterpret_cast<uintptr_t>(&x.pcie_root.str()));
    }
}

// A hash of such words.
uint64_t hash_words(const std::vector<uint64_t> &words);

// The words as a value, for maps that outlive one call.
class PlacementKey {
public:
    PlacementKey(const NodeView &node, const Request &req, const SearchOptions &opts = {});

    bool operator==(const PlacementKey &o) const {
        return hash_ == o.hash_ && words_ == o.words_;
    }
    size_t hash() const { return static_cast<size_t>(hash_); }

private:
    std::vector<uint64_t> words_;
    uint64_t hash_ = 0;
};

struct PlacementKeyHash {
    size_t operator()(const PlacementKey &k) const { return k.hash(); }
};

}  // namespace k8s_cons_tres
