// SPDX-License-Identifier: GPL-2.0-or-later
#include "testsuite/support/ranking.h"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstdint>

namespace k8s_cons_tres {
namespace {

// Which per-NUMA count gives a request's capacity, and with what factor.
struct CountPick {
    enum Field : uint8_t { Free, Whole, Any } field = Free;
    uint32_t factor = 1;
};

CountPick count_pick(const CpuTopology &t, const Request &req) {
    // threads per core the request may use; 0 in the request: all
    const uint32_t lim = req.threads_per_core ? req.threads_per_core : UINT32_MAX;
    if (t.uniform_threads == 1)
        return {CountPick::Free, 1};
    if (req.whole_cores)
        return {CountPick::Whole, std::min(lim, 2U)};
    return {lim >= 2 ? CountPick::Free : CountPick::Any, 1};
}

// Capacity and free CPUs of one NUMA node for the request.
std::pair<uint32_t, uint32_t> numa_capacity(const NodeView &v, const Request &req, size_t n,
                                            CountPick pick) {
    const CpuTopology &t = *v.cpu;
    if (v.numa_counts) {  // kept by the ledger: no bit counting
        const NumaCounts &c = v.numa_counts[n];
        const uint32_t count = pick.field == CountPick::Free    ? c.free_cpus
                               : pick.field == CountPick::Whole ? c.whole_cores
                                                                : c.any_cores;
        return {count * pick.factor, c.free_cpus};
    }
    const uint64_t *m = t.numas[n].mask.data();
    uint32_t free = 0, both = 0, any = 0;
    for (size_t i = 0; i < t.words; ++i) {
        const uint64_t w = v.free_cpus[i] & m[i];
        free += static_cast<uint32_t>(std::popcount(w));
        both += static_cast<uint32_t>(std::popcount(w & (w >> 1) & t.core_leads[i]));
        any += static_cast<uint32_t>(std::popcount((w | (w >> 1)) & t.core_leads[i]));
    }
    (void)req;
    const uint32_t count = pick.field == CountPick::Free    ? free
                           : pick.field == CountPick::Whole ? both
                                                            : any;
    return {count * pick.factor, free};
}

// Coarse score of one node; fits false when it cannot hold the request.
RankEntry coarse_entry(const NodeView &v, const Request &req, size_t index) {
    RankEntry e{index, false, {}};
    const uint32_t want = cpus_wanted(req);
    if (static_cast<uint32_t>(std::popcount(v.free_gpus & ((v.ngpus >= 64) ? ~uint64_t{0}
                                                  : (uint64_t{1} << v.ngpus) - 1))) < req.gpus)
        return e;
    if (!v.cpu)
        return {index, want == 0, {}};
    if (v.cpu->uniform_threads != 1 && v.cpu->uniform_threads != 2) {
        const NodeScore s = score_node(v, req);  // unusual core shapes: the exact score
        return {index, s.fits, s.score};
    }
    // key: capacity high, 0xffff - free low: the maximum is the largest
    // capacity and, among equal ones, the fuller NUMA node (best fit).
    uint32_t key[64];
    const size_t nn = v.cpu->numas.size();
    uint32_t best_single = UINT32_MAX;  // best fit among NUMA nodes that hold it alone
    const CountPick pick = count_pick(*v.cpu, req);
    for (size_t n = 0; n < nn; ++n) {
        const auto [c, f] = numa_capacity(v, req, n, pick);
        key[n] = std::min(c, 0xffffU) << 16 | (0xffffU - std::min(f, 0xffffU));
        if (c >= want)
            best_single = std::min(best_single, f);
    }
    if (best_single != UINT32_MAX) {  // the common case: one NUMA node
        e.fits = true;
        e.score.numa_nodes = want ? 1 : 0;
        e.score.free_in_numa = want ? best_single : 0;
        return e;
    }
    // Otherwise take maxima until the CPUs are reached; k is small.
    uint32_t cap = 0, free = 0, k = 0;
    while (cap < want && k < nn) {
        size_t best = 0;
        for (size_t n = 1; n < nn; ++n)
            if (key[n] > key[best])
                best = n;
        if ((key[best] >> 16) == 0)
            break;  // nothing left with capacity
        cap += key[best] >> 16;
        free += 0xffffU - (key[best] & 0xffffU);
        key[best] = 0;
        ++k;
    }
    if (cap < want)
        return e;
    e.fits = true;
    e.score.numa_nodes = k;
    e.score.free_in_numa = free;
    return e;
}

}  // namespace

std::vector<RankEntry> rank_nodes(const std::vector<NodeView> &nodes, const Request &req) {
    return rank_nodes(nodes, req, SearchOptions{});
}

std::vector<RankEntry> rank_nodes(const std::vector<NodeView> &nodes, const Request &req,
                                  const SearchOptions &opts) {
    std::vector<RankEntry> out(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const NodeScore s = score_node(nodes[i], req, opts);
        out[i] = {i, s.fits, s.score};
    }
    std::stable_sort(out.begin(), out.end(), [](const RankEntry &a, const RankEntry &b) {
        if (a.fits != b.fits)
            return a.fits;
        return a.score < b.score;
    });
    return out;
}

std::vector<RankEntry> rank_nodes_coarse(const std::vector<NodeView> &nodes, const Request &req) {
    // The whole coarse score fits a sort key: (misfit, NUMA nodes, free CPUs)
    // in the high word, the input position in the low word. A stable LSD
    // radix sort on the high word keeps equal nodes in input order.
    std::vector<uint64_t> keys(nodes.size()), tmp(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const RankEntry e = coarse_entry(nodes[i], req, i);
        const uint64_t key = (uint64_t{!e.fits} << 31) |
                             (uint64_t{std::min(e.score.numa_nodes, 127U)} << 24) |
                             std::min(e.score.free_in_numa, 0xffffffU);
        keys[i] = key << 32 | i;
    }
    for (unsigned shift = 32; shift < 64; shift += 8) {
        std::array<size_t, 257> count{};
        for (uint64_t k : keys)
            count[((k >> shift) & 0xff) + 1]++;
        for (size_t b = 1; b < count.size(); ++b)
            count[b] += count[b - 1];
        for (uint64_t k : keys)
            tmp[count[(k >> shift) & 0xff]++] = k;
        keys.swap(tmp);
    }
    std::vector<RankEntry> out(nodes.size());
    for (size_t i = 0; i < keys.size(); ++i) {
        const uint64_t k = keys[i];
        out[i].node = k & 0xffffffffU;
        out[i].fits = ((k >> 63) & 1U) == 0;
        out[i].score.numa_nodes = static_cast<uint32_t>((k >> 56) & 0x7f);
        out[i].score.free_in_numa = static_cast<uint32_t>((k >> 32) & 0xffffff);
    }
    return out;
}

}  // namespace k8s_cons_tres
