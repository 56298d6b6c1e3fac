// SPDX-License-Identifier: GPL-2.0-or-later
// Keeps an Inventory in step with the informers' snapshots. Each update
// rebuilds only the nodes whose slices or claims changed, every one of them
// in the same pass (the first complete view: all nodes at once), straight
// from the compact slices (NodeBuilder); every other node is the previous
// inventory's. The result equals Inventory::build on the expanded snapshot.
#pragma once

#include "core/inventory.h"
#include "core/plugin_config.h"
#include "k8s_client/node_builder.h"
#include "k8s_client/snapshot.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace k8sdra::k8s {

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
    // Per node: an order-free digest of its slices and claims.
    std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> node_sigs_;
};

}  // namespace k8sdra::k8s
