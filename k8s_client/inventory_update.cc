// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/inventory_update.h"

#include "k8s_client/claim_json.h"
#include "k8s_client/claim_owner.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace k8sdra::k8s {
namespace {

BuildOptions build_options(const InventoryOptions &io) {
    BuildOptions bo;
    bo.gres_order = io.gres_order;
    bo.cpu_driver = io.cpu_driver;
    bo.gpu_drivers = io.gpu_drivers;
    return bo;
}

// One object's part of its node's order-free digest: changes with its
// resourceVersion; no string is built for it.
uint64_t sig_of(char kind, const std::string &a, const std::string &b, const std::string &rv) {
    std::hash<std::string_view> h;
    uint64_t v = static_cast<uint64_t>(kind);
    for (const std::string *s : {&a, &b, &rv})
        v = (v ^ h(*s)) * 0x9e3779b97f4a7c15ULL + 1;
    return v;
}

// The nodes a claim's allocation is on (claimNodes), without a vector.
template <class F>
void forEachClaimNode(const ClaimHolding &c, F &&f) {
    if (!c.nodeName.empty()) {
        f(c.nodeName);
        return;
    }
    for (size_t i = 0; i < c.results.size(); ++i) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; ++j)
            seen = c.results[j].pool == c.results[i].pool;
        if (!seen)
            f(c.results[i].pool);
    }
}

struct NodeObjects {
    std::vector<const CompactSlice *> slices;  // in snapshot order
    std::vector<const ClaimHolding *> claims;  // allocated ones
};

}  // namespace

InventoryOptions inventory_options(const PluginConfig &pc) {
    InventoryOptions io;
    io.job_label = kLabelJob;
    io.gres_order = pc.gres_by_pci_bus ? GresOrder::PciBusId : GresOrder::Minor;
    io.cpu_driver = pc.cpu_driver;
    io.gpu_drivers = pc.gpu_drivers;
    return io;
}

InventoryUpdater::InventoryUpdater(const PluginConfig &pc)
    : config_(pc), io_(inventory_options(pc)), builder_(build_options(io_)) {}

InventoryUpdater::Update InventoryUpdater::update(const Snapshot &snap) {
    Update out;
    // Every node's digest, keyed by views into the snapshot (which outlives
    // this call): a watch event costs no allocation per node.
    std::unordered_map<std::string_view, uint64_t> sigs;
    sigs.reserve(node_sigs_.size() + 16);
    snap.forEachSlice([&](const CompactSlice &sl) {
        if (!sl.nodeName.empty())
            sigs[sl.nodeName] += sig_of('s', sl.driver, sl.name, sl.resourceVersion);
    });
    // A pod of slurm-bridge's coming or going changes its claim's holder:
    // the job it is bridged to is part of the claim's digest.
    const bool bridging = snap.bridgePods.size() != 0;
    snap.forEachClaim([&](const ClaimHolding &c) {
        ++out.claims;
        if (!c.allocated)
            return;
        const uint64_t bridged = bridging ? bridgeClaimJob(c, snap.bridgePods) : 0;
        forEachClaimNode(c, [&](const std::string &node) {
            sigs[node] += sig_of('c', c.ns, c.name, c.resourceVersion) + bridged * 0x9e3779b97f4a7c15ULL;
        });
    });
    for (const auto &[name, sig] : sigs) {
        auto it = node_sigs_.find(name);
        if (it == node_sigs_.end() || it->second != sig)
            out.rebuilt.emplace_back(name);
    }
    for (const auto &[name, sig] : node_sigs_)
        if (!sigs.count(name))
            out.rebuilt.push_back(name);
    if (last_ && out.rebuilt.empty())
        return out;
    std::sort(out.rebuilt.begin(), out.rebuilt.end());  // the order nodes are added in

    // The objects of the changed nodes only (all of them the first time).
    std::unordered_map<std::string_view, NodeObjects> objects;
    objects.reserve(out.rebuilt.size());
    for (const std::string &name : out.rebuilt)
        objects[name];
    snap.forEachSlice([&](const CompactSlice &sl) {
        if (auto it = objects.find(sl.nodeName); it != objects.end())
            it->second.slices.push_back(&sl);
    });
    snap.forEachClaim([&](const ClaimHolding &c) {
        if (!c.allocated)
            return;
        forEachClaimNode(c, [&](const std::string &node) {
            if (auto it = objects.find(node); it != objects.end())
                it->second.claims.push_back(&c);
        });
    });

    auto next = std::make_shared<Inventory>(last_ ? *last_ : Inventory());
    next->clear_claim_errors();
    std::vector<ClaimHolding> claims;
    for (const std::string &name : out.rebuilt) {
        const NodeObjects &n = objects.at(name);
        claims.clear();
        for (const ClaimHolding *c : n.claims) {
            // Only our own claims stand for Slurm jobs (which Slurm tracks
            // itself); every other claim is a pod's, whatever its labels say.
            ClaimHolding &copy = claims.emplace_back(*c);
            copy.labels.erase(kLabelJob);
            copy.bridgedJob = 0;
            if (const uint32_t job = ownClaimJob(*c, config_))
                copy.labels[kLabelJob] = std::to_string(job);
            else if (bridging)
                copy.bridgedJob = bridgeClaimJob(*c, snap.bridgePods);
        }
        // A node without slices of its own leaves (its claims then name no node).
        next->put_node(name, n.slices.empty() ? std::nullopt : builder_.build(name, n.slices), claims, io_);
        auto sig = sigs.find(name);
        if (sig == sigs.end())
            node_sigs_.erase(name);
        else
            node_sigs_[name] = sig->second;
    }
    last_ = next;
    out.inventory = std::move(next);
    return out;
}

}  // namespace k8sdra::k8s
