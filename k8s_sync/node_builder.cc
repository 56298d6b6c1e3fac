// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/node_builder.h"

#include "core/pool_select.h"
#include "k8s_sync/compact_devices.h"

#include <algorithm>

namespace k8s_cons_tres::k8s {

NodeBuilder::NodeBuilder(BuildOptions opts, size_t max_layouts)
    : opts_(std::move(opts)), max_(std::max<size_t>(max_layouts, 1)) {}

bool NodeBuilder::same(const Kept &k, const std::vector<const CompactSlice *> &cpu) {
    if (k.slices.size() != cpu.size())
        return false;
    for (size_t i = 0; i < cpu.size(); ++i)
        if (!k.slices[i].sameDevices(*cpu[i]))
            return false;
    return true;
}

std::shared_ptr<const CpuPart> NodeBuilder::cpu_part(const std::vector<const CompactSlice *> &cpu,
                                                     const std::vector<const SliceDevices *> &all) {
    ++clock_;
    // Equal content, compared in full: a hash alone never decides.
    if (last_ && same(*last_, cpu)) {
        last_->used = clock_;
        return last_->part;
    }
    uint64_t h = cpu.size();
    for (const CompactSlice *s : cpu)
        h = h * 0x9e3779b97f4a7c15ULL + s->devicesHash();
    auto [first, end] = kept_.equal_range(h);
    for (auto it = first; it != end; ++it) {
        if (same(it->second, cpu)) {
            last_ = &it->second;
            last_->used = clock_;
            return last_->part;
        }
    }
    if (kept_.size() >= max_) {  // a cluster of many layouts: forget the stalest
        auto stalest = std::min_element(kept_.begin(), kept_.end(), [](const auto &a, const auto &b) {
            return a.second.used < b.second.used;
        });
        if (&stalest->second == last_)
            last_ = nullptr;
        kept_.erase(stalest);
    }
    Kept k;
    for (const CompactSlice *s : cpu)
        k.slices.push_back(*s);
    k.part = std::make_shared<const CpuPart>(build_cpu_part(all, opts_));
    k.used = clock_;
    ++built_;
    last_ = &kept_.emplace(h, std::move(k))->second;  // element addresses survive rehashing
    return last_->part;
}

std::optional<NodeBuild> NodeBuilder::build(const std::string &node,
                                            const std::vector<const CompactSlice *> &slices) {
    auto pools = select_pools_of(slices);
    auto mine = pools.find(node);
    if (mine == pools.end())
        return std::nullopt;
    const std::vector<const CompactSlice *> &complete = mine->second.complete;
    std::vector<CompactDevices> views;
    views.reserve(complete.size());
    std::vector<const SliceDevices *> all;
    std::vector<const CompactSlice *> cpu;
    for (const CompactSlice *s : complete) {
        all.push_back(&views.emplace_back(*s));
        if (s->driver == opts_.cpu_driver)
            cpu.push_back(s);
    }
    const std::shared_ptr<const CpuPart> part = cpu_part(cpu, all);
    return NodeBuild{build_node_topology(node, *part, all, opts_), std::move(mine->second.incomplete)};
}

}  // namespace k8s_cons_tres::k8s
