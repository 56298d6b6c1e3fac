// SPDX-License-Identifier: GPL-2.0-or-later
// Picks the ResourceSlices that count: per (driver, pool) only the highest
// generation, and only once all resourceSliceCount slices of it are present.
// One algorithm for every form of slice (core/dra_types.h's ResourceSlice,
// the client's compact slices): anything with name, driver, nodeName and pool.
#pragma once

#include "core/dra_types.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace k8s_cons_tres {

template <class Slice>
struct NodeSlicesOf {
    std::vector<const Slice *> complete;  // slices of complete pools
    std::vector<std::string> incomplete;  // one line per incomplete pool
};
using NodeSlices = NodeSlicesOf<ResourceSlice>;

// Node-local slices only (spec.nodeName set), grouped by node name. The
// returned pointers are those of `slices`.
template <class Slice>
std::map<std::string, NodeSlicesOf<Slice>> select_pools_of(const std::vector<const Slice *> &slices) {
    struct PoolState {
        int64_t generation = -1;
        int64_t want = 1;
        std::string node;
        std::set<std::string> names;  // distinct slices of that generation
        std::vector<const Slice *> members;
    };
    std::map<std::pair<std::string, std::string>, PoolState> pools;
    for (const Slice *s : slices) {
        if (s->nodeName.empty())
            continue;
        PoolState &p = pools[{s->driver, s->pool.name}];
        if (s->pool.generation < p.generation)
            continue;  // stale slice of an older generation
        if (s->pool.generation > p.generation) {
            p = PoolState{};
            p.generation = s->pool.generation;
        }
        p.want = s->pool.resourceSliceCount;
        p.node = s->nodeName;
        if (p.names.insert(s->name).second)
            p.members.push_back(s);
    }
    std::map<std::string, NodeSlicesOf<Slice>> out;
    for (auto &[key, p] : pools) {
        NodeSlicesOf<Slice> &n = out[p.node];
        const auto have = static_cast<int64_t>(p.members.size());
        if (have >= p.want && p.want > 0) {
            n.complete.insert(n.complete.end(), p.members.begin(), p.members.end());
        } else {
            n.incomplete.push_back("pool " + key.second + " of driver " + key.first +
                                   ": " + std::to_string(have) + " of " +
                                   std::to_string(p.want) + " slices of generation " +
                                   std::to_string(p.generation));
        }
    }
    return out;
}

// Pointers into `slices`.
std::map<std::string, NodeSlices> select_pools(const std::vector<ResourceSlice> &slices);

}  // namespace k8s_cons_tres
