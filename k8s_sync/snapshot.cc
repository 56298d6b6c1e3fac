// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/snapshot.h"

namespace k8s_cons_tres::k8s {

bool Snapshot::synced() const {
    if (!claimsSynced || !taintRulesSynced)
        return false;
    for (const auto &[driver, ok] : driverSynced)
        if (!ok)
            return false;
    return true;
}

size_t Snapshot::sliceCount() const {
    size_t n = 0;
    for (const auto &[driver, m] : slicesByDriver)
        n += m.size();
    return n;
}

size_t Snapshot::deviceCount() const {
    size_t n = 0;
    forEachSlice([&](const CompactSlice &s) { n += s.devices.size(); });
    return n;
}

std::vector<ResourceSlice> Snapshot::slicesOfNode(const std::string &node) const {
    std::vector<ResourceSlice> out;
    forEachSlice([&](const CompactSlice &s) {
        if (s.nodeName == node)
            out.push_back(s.expand());
    });
    return out;
}

const CompactSlice *Snapshot::slice(const std::string &driver, const std::string &name) const {
    auto it = slicesByDriver.find(driver);
    return it == slicesByDriver.end() ? nullptr : it->second.find(name);
}

const ClaimHolding *Snapshot::claim(const std::string &ns, const std::string &name) const {
    return claims.find(claimKey(ns, name));
}

SnapshotStore::SnapshotStore(const std::vector<std::string> &drivers) {
    auto s = std::make_shared<Snapshot>();
    for (const auto &d : drivers) {
        s->slicesByDriver[d];
        s->driverSynced[d] = false;
    }
    current_ = std::move(s);
}

std::shared_ptr<const Snapshot> SnapshotStore::current() const {
    std::lock_guard<std::mutex> lk(mu_);
    return current_;
}

void SnapshotStore::onPublish(std::function<void(const std::shared_ptr<const Snapshot> &)> fn) {
    std::lock_guard<std::mutex> lk(mu_);
    onPublish_ = std::move(fn);
}

void SnapshotStore::publish(std::shared_ptr<Snapshot> next) {
    next->version = current_->version + 1;
    next->updated = std::chrono::steady_clock::now();
    current_ = std::move(next);
}

template <class F>
void SnapshotStore::change(F &&apply) {
    std::function<void(const std::shared_ptr<const Snapshot> &)> cb;
    std::shared_ptr<const Snapshot> now;
    {
        std::lock_guard<std::mutex> lk(mu_);
        auto next = std::make_shared<Snapshot>(*current_);
        apply(*next);
        publish(std::move(next));
        cb = onPublish_;
        now = current_;
    }
    if (cb)
        cb(now);
}

void SnapshotStore::publishSlices(const std::string &driver, const SliceMap &slices,
                                  bool synced) {
    change([&](Snapshot &s) {
        s.slicesByDriver[driver] = slices;
        s.driverSynced[driver] = s.driverSynced[driver] || synced;
    });
}

void SnapshotStore::publishClaims(const ClaimMap &claims, bool synced) {
    change([&](Snapshot &s) {
        s.claims = claims;
        s.claimsSynced = s.claimsSynced || synced;
    });
}

void SnapshotStore::publishNodes(const NodeMap &nodes, bool synced) {
    change([&](Snapshot &s) {
        s.nodes = nodes;
        s.nodesSynced = s.nodesSynced || synced;
    });
}

void SnapshotStore::expectTaintRules() {
    change([&](Snapshot &s) { s.taintRulesSynced = false; });
}

void SnapshotStore::publishTaintRules(const TaintRuleMap &rules, bool synced) {
    change([&](Snapshot &s) {
        s.taintRules = rules;
        s.taintRulesSynced = s.taintRulesSynced || synced;
    });
}

void SnapshotStore::publishPods(const PodMap &pods, bool synced) {
    change([&](Snapshot &s) {
        s.pods = pods;
        s.podsSynced = s.podsSynced || synced;
    });
}

void SnapshotStore::publishBridgePods(const PodMap &pods, bool) {
    change([&](Snapshot &s) { s.bridgePods = pods; });
}

}  // namespace k8s_cons_tres::k8s
