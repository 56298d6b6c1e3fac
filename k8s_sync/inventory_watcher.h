// SPDX-License-Identifier: GPL-2.0-or-later
// The Kubernetes -> Slurm direction: one informer per configured driver's
// ResourceSlices (field selector spec.driver) and one for ResourceClaims in
// all namespaces, all feeding one SnapshotStore.
#pragma once

#include "k8s_client/informer.h"
#include "k8s_sync/snapshot.h"

#include <memory>
#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

struct WatcherOptions {
    std::vector<std::string> drivers{"dra.cpu", "gpu.nvidia.com"};
    ClientOptions client;
    int pageSize = 500;
    std::chrono::seconds watchTimeout{300};
    Backoff::Params backoff;
    std::string claimLabelSelector;  // "" = all claims
    // DeviceTaintRules, where the API server serves them (v1beta2, else
    // v1alpha3): part of watching(), dataAge() and synced() while served.
    bool deviceTaintRules = true;
    // Holder pods: watched in this namespace with this label selector when
    // set. Their informer is not part of watching(), dataAge() or synced():
    // pods never change what Slurm may use.
    std::string podNamespace, podLabelSelector;
    // Node discovery: Node objects matching this label selector are watched
    // when watchNodes; like pods, not part of watching(), dataAge(), synced().
    bool watchNodes = false;
    std::string nodeLabelSelector;
    // The labels and annotations of each Node kept for its network
    // position (TopologyFrom=); the rest is dropped when decoded.
    TopologyKeys nodeTopologyKeys;
    // slurm-bridge's pods, in all namespaces (label kLabelBridgeJob), when
    // set; not part of watching(), dataAge() or synced() either.
    bool watchBridgePods = false;
};

class InventoryWatcher {
public:
    InventoryWatcher(std::shared_ptr<const Config> cfg, WatcherOptions opts, Logger log);
    ~InventoryWatcher();
    InventoryWatcher(const InventoryWatcher &) = delete;
    InventoryWatcher &operator=(const InventoryWatcher &) = delete;

    void start();
    void stop();  // returns promptly: transfers are aborted, waits interrupted
    // The API server answered another request (the Lease): informers
    // waiting out a backoff retry now (see Informer::run).
    void answered() { stop_->answered(); }
    std::shared_ptr<const Snapshot> snapshot() const { return store_.current(); }
    SnapshotStore &store() { return store_; }
    // Every informer has a watch open (answered with HTTP 200).
    bool watching() const;
    // The age of the stalest informer's data (lists, events, bookmarks);
    // duration::max() while one has never had any.
    std::chrono::steady_clock::duration dataAge(
        std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) const;
    // Every informer has received data within bound. The API server sends a
    // bookmark on an idle watch about once a minute, so bound must exceed that.
    bool fresh(std::chrono::steady_clock::duration bound,
               std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) const {
        return dataAge(now) <= bound;
    }
    // Informers in order: one per driver, then claims, then DeviceTaintRules,
    // then holder pods, slurm-bridge's pods and Nodes if any.
    const std::vector<std::unique_ptr<Informer>> &informers() const { return informers_; }

private:
    SnapshotStore store_;
    std::shared_ptr<Stopper> stop_;
    std::vector<std::unique_ptr<InformerHandler>> handlers_;
    std::vector<std::unique_ptr<Informer>> informers_;
    size_t inventoryInformers_ = 0;  // the first ones: slices, claims, taint rules
};

}  // namespace k8s_cons_tres::k8s
