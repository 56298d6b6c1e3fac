// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/topology_reserved.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace k8s_cons_tres {

size_t add_reserved_placeholders(std::vector<RawCpu> &cpus) {
    // (socket, core) -> its CPUs; and every core id any socket has
    std::map<std::pair<int32_t, int32_t>, std::vector<const RawCpu *>> cores;
    std::set<int32_t> sockets, core_ids;
    for (const RawCpu &c : cpus) {
        cores[{c.socket_id, c.core_id}].push_back(&c);
        sockets.insert(c.socket_id);
        core_ids.insert(c.core_id);
    }
    size_t threads = 0;
    for (const auto &[key, list] : cores) threads = std::max(threads, list.size());
    std::vector<RawCpu> added;
    int32_t next_id = -1;
    auto placeholder = [&](const RawCpu &like, int32_t socket, int32_t core) {
        RawCpu p = like;  // NUMA node and L3 group of its nearest neighbour
        p.cpu_id = next_id--;
        p.socket_id = socket;
        p.core_id = core;
        p.device.clear();
        p.pcie_root.clear();
        p.pcie_roots.clear();
        added.push_back(std::move(p));
    };
    for (int32_t s : sockets) {
        for (int32_t id : core_ids) {
            auto it = cores.find({s, id});
            size_t have = it == cores.end() ? 0 : it->second.size();
            const RawCpu *like = nullptr;
            if (it != cores.end()) {
                like = it->second.front();
            } else {  // the nearest core of the same socket stands for its place
                for (const auto &[key, list] : cores)
                    if (key.first == s && (!like || std::abs(key.second - id) < std::abs(like->core_id - id)))
                        like = list.front();
            }
            for (; like && have < threads; ++have) placeholder(*like, s, id);
        }
    }
    cpus.insert(cpus.end(), added.begin(), added.end());
    return added.size();
}

std::vector<uint32_t> reserved_cpu_indices(const CpuTopology &t) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < t.cpus.size(); ++i)
        if (t.cpus[i].cpu_id < 0) out.push_back(static_cast<uint32_t>(i));
    return out;
}

}  // namespace k8s_cons_tres
