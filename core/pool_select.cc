// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/pool_select.h"

#include <set>

namespace k8sdra {

std::map<std::string, NodeSlices> select_pools(const std::vector<ResourceSlice> &slices) {
    struct PoolState {
        int64_t generation = -1;
        int64_t want = 1;
        std::string node;
        std::set<std::string> names;  // distinct slices of that generation
        std::vector<const ResourceSlice *> members;
    };
    std::map<std::pair<std::string, std::string>, PoolState> pools;
    for (const ResourceSlice &s : slices) {
        if (s.nodeName.empty())
            continue;
        PoolState &p = pools[{s.driver, s.pool.name}];
        if (s.pool.generation < p.generation)
            continue;  // stale slice of an older generation
        if (s.pool.generation > p.generation) {
            p = PoolState{};
            p.generation = s.pool.generation;
        }
        p.want = s.pool.resourceSliceCount;
        p.node = s.nodeName;
        if (p.names.insert(s.name).second)
            p.members.push_back(&s);
    }
    std::map<std::string, NodeSlices> out;
    for (auto &[key, p] : pools) {
        NodeSlices &n = out[p.node];
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

}  // namespace k8sdra
