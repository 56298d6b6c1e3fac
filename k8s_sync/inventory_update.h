// SPDX-License-Identifier: GPL-2.0-or-later
// Keeps an Inventory in step with the informers' snapshots. Each update
// rebuilds only the nodes whose slices or claims changed, every one of them
// in the same pass (the first complete view: all nodes at once), straight
// from the compact slices (NodeBuilder); every other node is the previous
// inventory's. Which nodes changed is read from a diff of the snapshot's
// maps against those of the last update (a few shards per watch event, not
// every slice and claim). The result equals Inventory::build on the
// expanded snapshot, slices in (driver, name) order and claims in key order:
// the same objects always make the same node, whatever order they came in.
#pragma once

#include "core/inventory.h"
#include "core/plugin_config.h"
#include "k8s_sync/node_builder.h"
#include "k8s_sync/snapshot.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace k8s_cons_tres::k8s {

// The inventory options the plugin's configuration implies.
InventoryOptions inventory_options(const PluginConfig &pc);

// Hashes std::string and std::string_view alike (lookups without a copy).
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class InventoryUpdater {
public:
    explicit InventoryUpdater(const PluginConfig &pc);

    struct Update {
        std::shared_ptr<const Inventory> inventory;  // null: no node changed
        std::vector<std::string> rebuilt;            // nodes rebuilt or removed
        size_t claims = 0;                           // claims in the snapshot
    };
    Update update(const Snapshot &snap);
    const std::shared_ptr<const Inventory> &current() const { return last_; }
    const NodeBuilder &builder() const { return builder_; }

private:
    PluginConfig config_;  // whose claims stand for Slurm jobs
    InventoryOptions io_;
    NodeBuilder builder_;
    std::shared_ptr<const Inventory> last_;
    // Per node: an order-free digest of its slices and claims, and which
    // they are (slices by driver and name, claims by key). The full digest
    // and the diff change it only through these, so the two cannot differ.
    struct NodeObjects {
        uint64_t sig = 0;
        std::set<std::pair<std::string, std::string>> slices;
        std::set<std::string> claims;
        bool empty() const { return slices.empty() && claims.empty(); }
        void slice(const std::string &driver, const std::string &key, const CompactSlice &sl, bool add);
        void claim(const std::string &key, uint64_t sig, bool add);
    };
    template <class K>
    using ByNode = std::unordered_map<std::string, K, StringHash, std::equal_to<>>;
    ByNode<NodeObjects> nodes_;
    // The maps the digests were made from. Held here, they are never changed
    // in place, so the next snapshot is diffed against them shard by shard.
    std::map<std::string, SliceMap> seen_slices_;
    ClaimMap seen_claims_;
    PodMap seen_bridge_;  // all three seen once last_ is set
    TaintRuleMap seen_rules_;  // a change rebuilds every node (rules are rare)

    ByNode<NodeObjects> digest_all(const Snapshot &snap) const;
    std::vector<std::string> changed_since_seen(const Snapshot &snap);
};

}  // namespace k8s_cons_tres::k8s
