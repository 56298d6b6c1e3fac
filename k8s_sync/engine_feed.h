// SPDX-License-Identifier: GPL-2.0-or-later
// The Kubernetes -> engine direction inside slurmctld: the informers' snapshots
// become Inventories on the feed's own thread and are published to the
// engine; the engine never waits on any of it.
#pragma once

#include "core/engine.h"
#include "core/feed.h"
#include "k8s_sync/claim_sync.h"
#include "k8s_client/config.h"
#include "k8s_sync/inventory_update.h"
#include "k8s_sync/inventory_watcher.h"
#include "k8s_sync/lease.h"
#include "k8s_client/log.h"

#include <condition_variable>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <thread>

namespace k8s_cons_tres::k8s {

// Where the API server is, from the plugin's configuration. Throws ConfigError.
Config api_config(const PluginConfig &pc);
WatcherOptions watcher_options(const PluginConfig &pc);
WriterOptions writer_options(const PluginConfig &pc);

// The feed k8s_cons_tres_start gives the engine (a FeedFactory): null and *error
// set when the configuration cannot be used.
std::unique_ptr<Feed> make_engine_feed(std::shared_ptr<Engine> engine, FeedLog log, std::string *error);

class EngineFeed final : public Feed {
public:
    EngineFeed(std::shared_ptr<Engine> engine, std::shared_ptr<const Config> api,
               WatcherOptions opts, Logger log);
    ~EngineFeed() override;
    EngineFeed(const EngineFeed &) = delete;
    EngineFeed &operator=(const EngineFeed &) = delete;

private:
    void run();
    void rebuild(const Snapshot &snap);
    void publish_nodes(const Snapshot &snap);
    void log_sync_change();
    void write_view(const Inventory &inv, uint64_t version);
    bool healthy();

    std::shared_ptr<Engine> engine_;
    Logger log_;
    std::shared_ptr<ClaimSync> claims_;
    LeaseKeeper lease_;
    std::chrono::steady_clock::time_point last_lease_{};
    InventoryWatcher watcher_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool dirty_ = false;
    bool stopping_ = false;
    std::map<std::string, KubeNodeState> last_nodes_;  // published to the engine last
    bool nodes_synced_ = false;
    std::optional<NodeMap> seen_nodes_;  // the Node objects last_nodes_ was made from
    uint64_t published_version_ = 0;
    InventoryUpdater updater_;                  // holds the inventory published last
    std::map<std::string, uint64_t> warned_;    // per node: digest of the warnings logged
    std::chrono::steady_clock::time_point last_reconcile_{};
    std::chrono::steady_clock::time_point last_event_pass_{};  // the last pass an event asked for
    std::chrono::steady_clock::time_point last_view_{};
    std::chrono::steady_clock::duration view_took_{};  // the last write of it
    bool view_pending_ = false;
    bool in_sync_ = false;  // as last logged
    bool stale_writes_ = false;  // the last stale reason logged was about writes
    std::thread thread_;
};

}  // namespace k8s_cons_tres::k8s
