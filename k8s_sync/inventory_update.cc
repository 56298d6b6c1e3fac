// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/inventory_update.h"

#include <deque>

#include "k8s_sync/claim_json.h"
#include "k8s_sync/claim_owner.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace k8s_cons_tres::k8s {
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

// A claim's part of each of its nodes' digests. A pod of slurm-bridge's
// coming or going changes its claim's holder: the job it is bridged to is
// part of the digest.
uint64_t claim_sig(const ClaimHolding &c, const PodMap &bridgePods) {
    const uint64_t bridged = bridgePods.size() ? bridgeClaimJob(c, bridgePods) : 0;
    return sig_of('c', c.ns, c.name, c.resourceVersion) + bridged * 0x9e3779b97f4a7c15ULL;
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

void InventoryUpdater::NodeObjects::slice(const std::string &driver, const std::string &key,
                                          const CompactSlice &sl, bool add) {
    const uint64_t d = sig_of('s', sl.driver, sl.name, sl.resourceVersion);
    if (add) {
        sig += d;
        slices.emplace(driver, key);
    } else {
        sig -= d;
        slices.erase({driver, key});
    }
}

void InventoryUpdater::NodeObjects::claim(const std::string &key, uint64_t d, bool add) {
    if (add) {
        sig += d;
        claims.insert(key);
    } else {
        sig -= d;
        claims.erase(key);
    }
}

// Every node's objects, from the whole snapshot.
InventoryUpdater::ByNode<InventoryUpdater::NodeObjects> InventoryUpdater::digest_all(const Snapshot &snap) const {
    ByNode<NodeObjects> all;
    all.reserve(nodes_.size() + 16);
    for (const auto &[driver_, m] : snap.slicesByDriver) {
        const std::string &driver = driver_; // clang 14 cannot capture a structured binding
        m.forEach([&](const std::string &key, const CompactSlice &sl) {
            if (!sl.nodeName.empty())
                all[sl.nodeName].slice(driver, key, sl, true);
        });
    }
    snap.claims.forEach([&](const std::string &key, const ClaimHolding &c) {
        if (!c.allocated)
            return;
        const uint64_t sig = claim_sig(c, snap.bridgePods);
        forEachClaimNode(c, [&](const std::string &node) { all[node].claim(key, sig, true); });
    });
    return all;
}

// The nodes whose digest changed since the maps seen last, and nodes_ made
// current. Only what changed is read when the same drivers' slices and the
// same bridge pods are diffed; otherwise (the first time) the whole snapshot.
std::vector<std::string> InventoryUpdater::changed_since_seen(const Snapshot &snap) {
    std::vector<std::string> changed;
    bool incremental = last_ && snap.bridgePods.same(seen_bridge_) &&
                       snap.slicesByDriver.size() == seen_slices_.size();
    for (const auto &[driver, m] : snap.slicesByDriver)
        incremental = incremental && seen_slices_.count(driver);
    if (!incremental) {
        if (!last_)  // no inventory yet (or the first build threw): every node
            nodes_.clear();
        ByNode<NodeObjects> all = digest_all(snap);
        for (const auto &[name, n] : all)
            if (auto it = nodes_.find(name); it == nodes_.end() || it->second.sig != n.sig)
                changed.push_back(name);
        for (const auto &[name, n] : nodes_)
            if (!all.count(name))
                changed.push_back(name);
        nodes_ = std::move(all);
        return changed;
    }
    // Each node's digest before this update's first change to it.
    ByNode<std::pair<bool, uint64_t>> before;
    auto node = [&](const std::string &name) -> NodeObjects & {
        auto it = nodes_.find(name);
        before.try_emplace(name, it != nodes_.end(), it != nodes_.end() ? it->second.sig : 0);
        return it != nodes_.end() ? it->second : nodes_[name];
    };
    for (const auto &[driver_, m] : snap.slicesByDriver) {
        const std::string &driver = driver_; // clang 14 cannot capture a structured binding
        m.forEachChange(seen_slices_.at(driver),
                        [&](const std::string &key, const CompactSlice *was, const CompactSlice *now) {
                            if (was && !was->nodeName.empty())
                                node(was->nodeName).slice(driver, key, *was, false);
                            if (now && !now->nodeName.empty())
                                node(now->nodeName).slice(driver, key, *now, true);
                        });
    }
    snap.claims.forEachChange(seen_claims_, [&](const std::string &key, const ClaimHolding *was,
                                                const ClaimHolding *now) {
        for (const auto &[c, add_] : {std::pair{was, false}, std::pair{now, true}}) {
            const bool add = add_; // clang 14 cannot capture a structured binding
            if (!c || !c->allocated)
                continue;
            // the bridge pods are those seen: the claim's part as it was added
            const uint64_t sig = claim_sig(*c, snap.bridgePods);
            forEachClaimNode(*c, [&](const std::string &name) { node(name).claim(key, sig, add); });
        }
    });
    for (const auto &[name, was] : before) {
        auto it = nodes_.find(name);
        const bool now = !it->second.empty();
        if (was.first != now || (now && was.second != it->second.sig))
            changed.push_back(name);
        if (!now)
            nodes_.erase(it);
    }
    return changed;
}

InventoryUpdater::Update InventoryUpdater::update(const Snapshot &snap) {
    Update out;
    out.claims = snap.claims.size();
    out.rebuilt = changed_since_seen(snap);
    seen_slices_ = snap.slicesByDriver;
    seen_claims_ = snap.claims;
    seen_bridge_ = snap.bridgePods;
    if (last_ && !snap.taintRules.same(seen_rules_)) {
        // A DeviceTaintRule may name any device (an empty selector: all):
        // every node, and those the diff found gone (no longer in nodes_).
        std::set<std::string> all(out.rebuilt.begin(), out.rebuilt.end());
        for (const auto &[name, n] : nodes_)
            all.insert(name);
        out.rebuilt.assign(all.begin(), all.end());
    }
    seen_rules_ = snap.taintRules;
    if (last_ && out.rebuilt.empty())
        return out;
    std::sort(out.rebuilt.begin(), out.rebuilt.end());  // the order nodes are added in

    auto next = std::make_shared<Inventory>(last_ ? *last_ : Inventory());
    next->clear_claim_errors();
    std::vector<const CompactSlice *> slices;
    std::vector<ClaimHolding> claims;
    std::deque<CompactSlice> tainted;  // slices with DeviceTaintRules' taints, as kube-scheduler sees them
    for (const std::string &name : out.rebuilt) {
        slices.clear();
        claims.clear();
        tainted.clear();
        if (auto n = nodes_.find(name); n != nodes_.end()) {
            for (const auto &[driver, key] : n->second.slices)
                if (const CompactSlice *sl = snap.slicesByDriver.at(driver).find(key)) {
                    if (auto t = withRuleTaints(*sl, snap.taintRules)) {
                        tainted.push_back(std::move(*t));
                        sl = &tainted.back();
                    }
                    slices.push_back(sl);
                }
            for (const std::string &key : n->second.claims) {
                const ClaimHolding *c = snap.claims.find(key);
                if (!c)
                    continue;
                // Only our own claims stand for Slurm jobs (which Slurm tracks
                // itself); every other claim is a pod's, whatever its labels say.
                claims.push_back(asHeld(*c, config_, &snap.bridgePods));
            }
        }
        // A node without slices of its own leaves (its claims then name no node).
        next->put_node(name, slices.empty() ? std::nullopt : builder_.build(name, slices), claims, io_);
    }
    last_ = next;
    out.inventory = std::move(next);
    return out;
}

}  // namespace k8s_cons_tres::k8s
