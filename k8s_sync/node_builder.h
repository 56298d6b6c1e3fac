// SPDX-License-Identifier: GPL-2.0-or-later
// Builds one node's topology straight from its compact slices, as
// Inventory::build does from expanded ones (the same pool selection and the
// same builder, read through CompactDevices), without expanding a device.
// Nodes publishing identical CPU devices (most of a cluster) share one CPU
// part: the CPU model is built once per distinct layout and only the GPUs
// are read per node.
#pragma once

#include "core/inventory.h"
#include "k8s_sync/compact_slice.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace k8s_cons_tres::k8s {

class NodeBuilder {
public:
    // At most max_layouts CPU parts are kept (the least recently used goes).
    explicit NodeBuilder(BuildOptions opts, size_t max_layouts = 256);

    // slices: the node's slices, any drivers, in snapshot order. nullopt
    // when none of them is node-local to `node` (the node has no slices).
    std::optional<NodeBuild> build(const std::string &node,
                                   const std::vector<const CompactSlice *> &slices);
    size_t layouts() const { return kept_.size(); }
    // CPU parts built, not found among those kept (for tests).
    size_t cpu_parts_built() const { return built_; }

private:
    struct Kept {
        std::vector<CompactSlice> slices;  // the CPU driver's slices it was built from
        std::shared_ptr<const CpuPart> part;
        uint64_t used = 0;
    };
    using Map = std::unordered_multimap<uint64_t, Kept>;
    static bool same(const Kept &k, const std::vector<const CompactSlice *> &cpu);
    std::shared_ptr<const CpuPart> cpu_part(const std::vector<const CompactSlice *> &cpu,
                                            const std::vector<const SliceDevices *> &all);

    BuildOptions opts_;
    size_t max_;
    Map kept_;  // by content hash of the CPU slices
    Kept *last_ = nullptr;  // the last one found: neighbours are usually alike
    uint64_t clock_ = 0;
    size_t built_ = 0;
};

}  // namespace k8s_cons_tres::k8s
