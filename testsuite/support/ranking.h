// SPDX-License-Identifier: GPL-2.0-or-later
// Ranking candidate nodes by the best placement each offers (place()'s
// score, core/placement.h): the reference the tests and benchmarks compare
// with. slurmctld does not rank nodes this way (Slurm chooses the nodes;
// the engine places inside each), so this is not in core/.
#pragma once

#include "core/placement.h"

#include <vector>

namespace k8s_cons_tres {

struct RankEntry {
    size_t node = 0;  // index into the input
    bool fits = false;
    Score score;
};

// Fitting nodes first, by score, then by input order. The score of each
// node is the one place() would return with the same options. This is the
// full scan: every node searched on every call; RankIndex (testsuite/support/rank_index.h)
// returns the same from a kept index.
std::vector<RankEntry> rank_nodes(const std::vector<NodeView> &nodes, const Request &req);
std::vector<RankEntry> rank_nodes(const std::vector<NodeView> &nodes, const Request &req,
                                  const SearchOptions &opts);

// Cheaper ranking for very many nodes, from per-NUMA counts only. Its score
// has numa_nodes = the fewest NUMA nodes whose capacities add up to the
// CPUs (exact rule 1 when no GPUs are asked for, a lower bound otherwise)
// and free_in_numa = the free CPUs of those NUMA nodes (best fit); the other
// fields are 0. Use place() on the nodes finally chosen.
std::vector<RankEntry> rank_nodes_coarse(const std::vector<NodeView> &nodes, const Request &req);

}  // namespace k8s_cons_tres
