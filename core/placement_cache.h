// SPDX-License-Identifier: GPL-2.0-or-later
// A bounded, thread-safe map from PlacementKey to what was computed for it
// (the engine's choice for a job on a node). Keys are content, so a node
// that changes needs no invalidation: its new state has a new key, and keys
// no longer asked for age out. Two generations bound it: when the young one
// is full it becomes the old one and the old one is dropped; a hit in the
// old one moves to the young one. Each entry keeps its topology alive, so
// the address its key names cannot be reused by another topology meanwhile.
#pragma once

#include "core/placement_key.h"
#include "core/topology.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

namespace k8s_cons_tres {

template <class V>
class PlacementCache {
public:
    // At most 2 x per_generation entries.
    explicit PlacementCache(size_t per_generation = 32768)
        : limit_(std::max<size_t>(1, per_generation)) {}

    std::optional<V> find(const PlacementKey &k) {
        std::lock_guard lock(mu_);
        if (auto it = young_.find(k); it != young_.end())
            return it->second.value;
        auto it = old_.find(k);
        if (it == old_.end())
            return std::nullopt;
        Entry e = std::move(it->second);
        old_.erase(it);
        V v = e.value;
        insert(k, std::move(e));
        return v;
    }

    void put(const PlacementKey &k, std::shared_ptr<const CpuTopology> topology, V value) {
        std::lock_guard lock(mu_);
        insert(k, Entry{std::move(topology), std::move(value)});
    }

    size_t size() const {
        std::lock_guard lock(mu_);
        return young_.size() + old_.size();
    }

private:
    struct Entry {
        std::shared_ptr<const CpuTopology> topology;
        V value;
    };

    void insert(const PlacementKey &k, Entry e) {  // mu_ held
        if (young_.size() >= limit_ && !young_.count(k)) {
            old_ = std::move(young_);
            young_.clear();
        }
        young_.insert_or_assign(k, std::move(e));
    }

    size_t limit_;
    mutable std::mutex mu_;
    std::unordered_map<PlacementKey, Entry, PlacementKeyHash> young_, old_;
};

}  // namespace k8s_cons_tres
