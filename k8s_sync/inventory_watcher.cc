// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/inventory_watcher.h"

#include "k8s_sync/claim_json.h"
#include "k8s_sync/inventory_handlers.h"

#include <algorithm>
#include <iterator>

namespace k8s_cons_tres::k8s {

namespace {
constexpr const char *kSlicesPath = "/apis/resource.k8s.io/v1/resourceslices";
constexpr const char *kClaimsPath = "/apis/resource.k8s.io/v1/resourceclaims";
}  // namespace

InventoryWatcher::InventoryWatcher(std::shared_ptr<const Config> cfg, WatcherOptions opts,
                                   Logger log)
    : store_(opts.drivers), stop_(std::make_shared<Stopper>()) {
    auto token = std::make_shared<TokenSource>(*cfg);
    auto make = [&](std::string name, std::string path, std::string field, std::string label,
                    std::unique_ptr<InformerHandler> h, std::vector<std::string> discover = {}) {
        InformerOptions io;
        io.discover = std::move(discover);
        io.name = std::move(name);
        io.path = std::move(path);
        io.fieldSelector = std::move(field);
        io.labelSelector = std::move(label);
        io.pageSize = opts.pageSize;
        io.watchTimeout = opts.watchTimeout;
        io.backoff = opts.backoff;
        informers_.push_back(std::make_unique<Informer>(cfg, token, opts.client, io, stop_, *h,
                                                        log));
        handlers_.push_back(std::move(h));
    };
    for (const auto &d : opts.drivers)
        make("resourceslices[" + d + "]", kSlicesPath, "spec.driver=" + d, "",
             std::make_unique<SliceHandler>(store_, d, log));
    make("resourceclaims", kClaimsPath, "", opts.claimLabelSelector,
         std::make_unique<ClaimHandler>(store_, log));
    if (opts.deviceTaintRules) {
        store_.expectTaintRules();
        make("devicetaintrules", kTaintRulePaths[0], "", "", std::make_unique<TaintRuleHandler>(store_, log),
             {std::begin(kTaintRulePaths), std::end(kTaintRulePaths)});
    }
    inventoryInformers_ = informers_.size();
    if (!opts.podNamespace.empty())
        make("pods", "/api/v1/namespaces/" + opts.podNamespace + "/pods", "", opts.podLabelSelector,
             std::make_unique<PodHandler>(store_, log));
    if (opts.watchBridgePods)
        make("pods[slurm-bridge]", "/api/v1/pods", "", kLabelBridgeJob,
             std::make_unique<BridgePodHandler>(store_, log));
    if (opts.watchNodes)
        make("nodes", "/api/v1/nodes", "", opts.nodeLabelSelector,
             std::make_unique<NodeHandler>(store_, log, opts.nodeTopologyKeys));
}

InventoryWatcher::~InventoryWatcher() { stop(); }

bool InventoryWatcher::watching() const {
    for (size_t i = 0; i < inventoryInformers_; ++i)
        if (informers_[i]->served() && !informers_[i]->watching())
            return false;
    return true;
}

std::chrono::steady_clock::duration InventoryWatcher::dataAge(
    std::chrono::steady_clock::time_point now) const {
    auto oldest = std::chrono::steady_clock::duration::zero();
    for (size_t i = 0; i < inventoryInformers_; ++i) {
        if (!informers_[i]->served())
            continue;  // nothing to read: no data to wait for
        const auto at = informers_[i]->lastData();
        if (at.time_since_epoch().count() == 0)
            return std::chrono::steady_clock::duration::max();
        oldest = std::max(oldest, now - at);
    }
    return oldest;
}

void InventoryWatcher::start() {
    for (auto &i : informers_)
        i->start();
}

void InventoryWatcher::stop() {
    stop_->stop();
    for (auto &i : informers_)
        i->join();
}

}  // namespace k8s_cons_tres::k8s
