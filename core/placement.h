// SPDX-License-Identifier: GPL-2.0-or-later
// Topology-aware choice of the exact CPUs and GPUs for a job on one node.
// (Ranking many nodes by it is testsuite/support/ranking.h's, for tests.)
//
// Objective (lexicographic, smaller is better; see Score):
//   1. NUMA nodes touched by the chosen CPUs and GPUs
//   2. L3 groups touched by the chosen CPUs
//   3. sockets touched by the chosen CPUs and GPUs
//   4. cores touched (so whole free cores are used before loose siblings)
//   5. GPU distance: per GPU 0 on a NUMA node of the chosen CPUs, 1 on a
//      PCIe root of theirs, 2 on one of their sockets, 3 otherwise
//   6. best fit: free CPUs in the NUMA nodes used, then in the L3 groups
//      used (before the job), so larger free blocks stay free elsewhere
// Ties are broken deterministically: first NUMA/L3 set in enumeration
// order, then cores with more usable threads, then lowest indices.
// "cores touched" counts whole cores held when whole_cores is set.
//
// Work bound (the search runs under slurmctld's locks): the exact search
// enumerates candidate sets, i.e. the NUMA sets of each size it tries
// (C(n, k) for n NUMA nodes) and then the L3 sets inside the winning NUMA
// sets. It knows each level's count before enumerating it, and when the
// total would exceed SearchOptions::budget it stops there (never past the
// budget) and a greedy fallback decides instead: from the empty set
// (largest capacities first) and from each NUMA node (its socket first),
// add NUMA nodes until the request fits, drop those not needed, take the
// L3 groups largest first, and keep the best by the same score: n + 1
// sequences of O(n + L3 groups * log) steps, each one scored candidate.
// The fallback's choice is valid and its score is that of what it chooses;
// rule 1 stays optimal when no GPUs are asked for (largest first), the
// other rules may not. With the default budget every request is exact on
// nodes of up to 8 NUMA nodes with one L3 group each (at most 256 + 70
// sets); with 16, 24 or 32 such NUMA nodes, CPU-only jobs that need at
// most 4, 3 or 2 of them (or all but that many) are exact, others fall back.
#pragma once

#include "core/topology.h"

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace k8s_cons_tres {

// A new field must also go into placement_inputs() (placement_key.h).
struct Request {
    uint32_t cpus = 0;              // CPUs wanted
    bool whole_cores = false;       // the job holds whole free cores (Slurm cores)
    uint32_t threads_per_core = 0;  // at most this many threads used per core; 0: all
    uint32_t gpus = 0;
    uint32_t cpus_per_gpu = 0;      // CPUs wanted = max(cpus, gpus * cpus_per_gpu)
    bool operator==(const Request &) const = default;
};

struct Score {
    uint32_t numa_nodes = 0;
    uint32_t l3_groups = 0;
    uint32_t sockets = 0;
    uint32_t cores = 0;
    uint32_t gpu_distance = 0;
    uint32_t free_in_numa = 0;
    uint32_t free_in_l3 = 0;
    auto operator<=>(const Score &) const = default;
};

// Candidate sets the exact search may enumerate per node and call (about
// 10-30 ns each); beyond that the greedy fallback decides.
inline constexpr uint64_t kSearchBudget = 4096;

struct SearchOptions {
    uint64_t budget = kSearchBudget;  // 0: always the greedy fallback
};

// What one call's search did, for tests and benchmarks.
struct SearchStats {
    uint64_t candidates = 0;   // sets the exact search enumerated, <= budget
    uint32_t greedy_sets = 0;  // candidates the fallback scored (0 when exact)
    bool exact = true;         // false: the fallback chose (budget exceeded)
};

struct Placement {
    bool fits = false;
    std::string reason;          // why not, when !fits
    Score score;
    SearchStats stats;
    std::vector<uint32_t> cpus;  // CPU indices (Slurm order) the job holds
    std::vector<uint32_t> gpus;  // GRES indices
};

// Read-only view of one node: its topology plus the free masks of its ledger.
struct NodeView {
    const CpuTopology *cpu = nullptr;  // may be null: a node without dra.cpu
    const GpuInfo *gpus = nullptr;
    size_t ngpus = 0;
    const uint64_t *free_cpus = nullptr;  // cpu->words words
    uint64_t free_gpus = 0;               // bit i: GRES index i is free
    const NumaCounts *numa_counts = nullptr;  // optional, per cpu->numas
    // Names everything above for RankIndex: equal non-zero stamps stand for
    // equal topology, GPUs and free sets (NodeEntry::view() sets the
    // ledger's). 0: unknown, searched on every call. Whoever changes a
    // view's free sets must set it to 0.
    uint64_t stamp = 0;
};

// CPUs the request needs in total.
uint32_t cpus_wanted(const Request &r);

Placement place(const NodeView &node, const Request &req, const SearchOptions &opts = {});

struct NodeScore {
    bool fits = false;
    Score score;  // {} when !fits
};

// What place() would return as fits and score, without choosing devices.
NodeScore score_node(const NodeView &node, const Request &req, const SearchOptions &opts = {});
}  // namespace k8s_cons_tres
