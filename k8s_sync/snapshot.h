// SPDX-License-Identifier: GPL-2.0-or-later
// What the informers publish for core/: an immutable view of the
// ResourceSlices of the configured drivers and of all ResourceClaims.
// A new Snapshot is made for every change and swapped in atomically; holders
// of an older one keep a consistent view for as long as they hold it.
#pragma once

#include "core/dra_types.h"
#include "k8s_sync/compact_slice.h"
#include "k8s_client/cow_map.h"
#include "k8s_sync/holder_pod.h"
#include "k8s_sync/kube_node.h"
#include "k8s_sync/taint_rule.h"

#include <chrono>
#include <map>
#include <memory>
#include <functional>
#include <mutex>
#include <vector>
#include <string>

namespace k8s_cons_tres::k8s {

using SliceMap = CowMap<CompactSlice>;   // key: metadata.name
using ClaimMap = CowMap<ClaimHolding>;   // key: "namespace/name"
using NodeMap = CowMap<KubeNode>;        // NodeDiscovery=external; key: "/name"

struct Snapshot {
    uint64_t version = 0;                 // increases with every publication
    std::chrono::steady_clock::time_point updated{};
    std::map<std::string, SliceMap> slicesByDriver;  // one entry per configured driver
    std::map<std::string, bool> driverSynced;        // driver -> initial list done
    ClaimMap claims;
    bool claimsSynced = false;
    // Holder pods, when the plugin writes them; not part of synced(): pods
    // never change what Slurm may use.
    PodMap pods;
    bool podsSynced = false;
    // slurm-bridge's pods (labelled with a Slurm job id, any namespace),
    // with NodeDiscovery=external or ExternalJobClaims=bridge; not part of
    // synced(): a claim of a pod not seen yet stays the pod's.
    PodMap bridgePods;
    // Node objects, for node discovery only; not part of synced() either:
    // a node becomes a Slurm node only once its slices are in the view.
    NodeMap nodes;
    bool nodesSynced = false;
    // DeviceTaintRules, where the API server serves them: part of synced()
    // once an informer reads them (a rule not seen yet could free nothing).
    TaintRuleMap taintRules;
    bool taintRulesSynced = true;

    // True once every informer has completed its first list.
    bool synced() const;
    size_t sliceCount() const;
    size_t deviceCount() const;
    const CompactSlice *slice(const std::string &driver, const std::string &name) const;
    const ClaimHolding *claim(const std::string &ns, const std::string &name) const;
    // Every slice in compact form (cheap).
    template <class F>
    void forEachSlice(F &&f) const {
        for (const auto &[driver, m] : slicesByDriver)
            m.forEach([&](const std::string &, const CompactSlice &s) { f(s); });
    }
    // Every slice as core/dra_types.h's ResourceSlice, expanded one at a time.
    template <class F>
    void forEachExpandedSlice(F &&f) const {
        forEachSlice([&](const CompactSlice &s) { f(s.expand()); });
    }
    // The expanded slices of one node (all drivers).
    std::vector<ResourceSlice> slicesOfNode(const std::string &node) const;
    template <class F>
    void forEachClaim(F &&f) const {
        claims.forEach([&](const std::string &, const ClaimHolding &c) { f(c); });
    }
};

inline std::string claimKey(const std::string &ns, const std::string &name) {
    return ns + "/" + name;
}

// Holds the current snapshot. Informers change their part under the store's
// lock and publish; readers take the current pointer and never block writers
// for longer than a pointer copy.
class SnapshotStore {
public:
    explicit SnapshotStore(const std::vector<std::string> &drivers);
    std::shared_ptr<const Snapshot> current() const;

    void publishSlices(const std::string &driver, const SliceMap &slices, bool synced);
    void publishClaims(const ClaimMap &claims, bool synced);
    void publishPods(const PodMap &pods, bool synced);
    void publishBridgePods(const PodMap &pods, bool synced);
    void publishNodes(const NodeMap &nodes, bool synced);
    // An informer reads DeviceTaintRules: the view is synced only once it
    // has listed them (or found that the API server does not serve them).
    void expectTaintRules();
    void publishTaintRules(const TaintRuleMap &rules, bool synced);
    // Called with each new snapshot (from informer threads), e.g. to wake core.
    void onPublish(std::function<void(const std::shared_ptr<const Snapshot> &)> fn);

private:
    void publish(std::shared_ptr<Snapshot> next);  // mu_ held
    template <class F>
    void change(F &&apply);  // copy the current snapshot, apply, publish
    mutable std::mutex mu_;
    std::shared_ptr<const Snapshot> current_;
    std::function<void(const std::shared_ptr<const Snapshot> &)> onPublish_;
};

}  // namespace k8s_cons_tres::k8s
