// SPDX-License-Identifier: GPL-2.0-or-later
// A string-keyed map with cheap copies, for snapshots: entries live in small
// shards under a two-level table (64 blocks x 64 shards), all shared between
// copies. A change copies only the path it touches (the top table, one block,
// one shard: about 130 pointers and a handful of entries), and nothing at all
// when this copy is the only owner. Published snapshots stay immutable while
// the informer keeps changing its own copy, and one watch event costs about
// the same at 30,000 slices as at 30.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

namespace k8s_cons_tres::k8s {

template <class T>
class CowMap {
public:
    using Ptr = std::shared_ptr<const T>;

    const T *find(const std::string &key) const {
        const Shard *sh = shardFor(key);
        if (!sh)
            return nullptr;
        auto it = sh->find(key);
        return it == sh->end() ? nullptr : it->second.get();
    }
    Ptr get(const std::string &key) const {
        const Shard *sh = shardFor(key);
        if (!sh)
            return nullptr;
        auto it = sh->find(key);
        return it == sh->end() ? nullptr : it->second;
    }
    size_t size() const { return size_; }

    template <class F>
    void forEach(F &&f) const {
        if (!top_)
            return;
        for (const auto &block : *top_)
            if (block)
                for (const auto &sh : *block)
                    if (sh)
                        for (const auto &[k, v] : *sh)
                            f(k, *v);
    }

    // True when this map and `old` share everything: while `old` is held,
    // no copy changes a level it shares, so equal levels hold equal entries.
    bool same(const CowMap &old) const { return top_ == old.top_; }

    // f(key, before, after) for every key whose entry differs from `old`'s
    // (null: absent there). Shared levels are skipped unread, so a diff of
    // two snapshots a few events apart costs a few shards, not the map.
    template <class F>
    void forEachChange(const CowMap &old, F &&f) const {
        if (same(old))
            return;
        for (size_t b = 0; b < kFan; ++b) {
            const Block *nb = top_ ? (*top_)[b].get() : nullptr;
            const Block *ob = old.top_ ? (*old.top_)[b].get() : nullptr;
            if (nb == ob)
                continue;
            for (size_t s = 0; s < kFan; ++s) {
                const Shard *ns = nb ? (*nb)[s].get() : nullptr;
                const Shard *os = ob ? (*ob)[s].get() : nullptr;
                if (ns == os)
                    continue;
                if (ns)
                    for (const auto &[k, v] : *ns) {
                        const T *before = nullptr;
                        if (os)
                            if (auto it = os->find(k); it != os->end()) {
                                if (it->second == v)
                                    continue;
                                before = it->second.get();
                            }
                        f(k, before, v.get());
                    }
                if (os)
                    for (const auto &[k, v] : *os)
                        if (!ns || !ns->count(k))
                            f(k, v.get(), nullptr);
            }
        }
    }

    void set(const std::string &key, Ptr value) {
        Shard &sh = writableShard(key);
        auto [it, inserted] = sh.try_emplace(key, value);
        if (!inserted)
            it->second = std::move(value);
        else
            ++size_;
    }
    bool erase(const std::string &key) {
        if (!find(key))
            return false;
        writableShard(key).erase(key);
        --size_;
        return true;
    }

private:
    static constexpr size_t kFan = 64;
    using Shard = std::unordered_map<std::string, Ptr>;
    using Block = std::array<std::shared_ptr<Shard>, kFan>;
    using Top = std::array<std::shared_ptr<Block>, kFan>;

    static std::pair<size_t, size_t> slot(const std::string &key) {
        size_t h = std::hash<std::string>{}(key);
        return {h % kFan, (h / kFan) % kFan};
    }
    const Shard *shardFor(const std::string &key) const {
        if (!top_)
            return nullptr;
        auto [b, s] = slot(key);
        const auto &block = (*top_)[b];
        return block ? (*block)[s].get() : nullptr;
    }
    // Copy-on-write: a level shared with a published copy is cloned before
    // it changes; one owned by this copy alone is changed in place.
    template <class Node>
    static Node &own(std::shared_ptr<Node> &p) {
        if (!p)
            p = std::make_shared<Node>();
        else if (p.use_count() > 1)
            p = std::make_shared<Node>(*p);
        return *p;
    }
    Shard &writableShard(const std::string &key) {
        auto [b, s] = slot(key);
        Shard &sh = own(own(own(top_)[b])[s]);
        // Pairs with the release of the last reader that dropped its copy.
        std::atomic_thread_fence(std::memory_order_acquire);
        return sh;
    }

    std::shared_ptr<Top> top_;
    size_t size_ = 0;
};

}  // namespace k8s_cons_tres::k8s
