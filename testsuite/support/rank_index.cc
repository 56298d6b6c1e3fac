// SPDX-License-Identifier: GPL-2.0-or-later
#include "testsuite/support/rank_index.h"

#include "core/placement_key.h"

#include <algorithm>
#include <bit>

namespace k8s_cons_tres {
namespace {

// rank_nodes()'s order: it stable-sorts by (fits, score), so ties keep
// input order, i.e. go by position.
bool ranks_before(const RankEntry &a, const RankEntry &b) {
    if (a.fits != b.fits)
        return a.fits;
    if (a.score != b.score)
        return a.score < b.score;
    return a.node < b.node;
}

}  // namespace

RankIndex::RankIndex(size_t max_shapes) : max_shapes_(std::max<size_t>(1, max_shapes)) {}

std::vector<RankEntry> RankIndex::rank(const std::vector<NodeView> &nodes, const Request &req,
                                       const SearchOptions &opts) {
    stats_ = {};
    notice(nodes);
    Shape &s = shape(req, opts);
    refresh(s, nodes, opts);
    return s.ranked;
}

// Gives every position whose stamp is new (or unknown) a new change number.
void RankIndex::notice(const std::vector<NodeView> &nodes) {
    const size_t n = nodes.size();
    if (seen_.size() > n)
        seen_.resize(n);
    for (size_t i = 0; i < seen_.size(); ++i) {
        const uint64_t stamp = nodes[i].stamp;
        if (stamp == 0 || stamp != seen_[i].stamp)
            seen_[i] = {stamp, ++changes_};
    }
    for (size_t i = seen_.size(); i < n; ++i)
        seen_.push_back({nodes[i].stamp, ++changes_});
}

RankIndex::Shape &RankIndex::shape(const Request &req, const SearchOptions &opts) {
    ++calls_;
    for (Shape &s : shapes_) {
        if (s.req == req && s.budget == opts.budget) {
            s.used = calls_;
            return s;
        }
    }
    if (shapes_.size() >= max_shapes_) {
        auto lru = std::min_element(shapes_.begin(), shapes_.end(),
                                    [](const Shape &a, const Shape &b) { return a.used < b.used; });
        *lru = Shape{};
        lru->req = req;
        lru->budget = opts.budget;
        lru->used = calls_;
        return *lru;
    }
    Shape &s = shapes_.emplace_back();
    s.req = req;
    s.budget = opts.budget;
    s.used = calls_;
    return s;
}

void RankIndex::refresh(Shape &s, const std::vector<NodeView> &nodes, const SearchOptions &opts) {
    const size_t n = nodes.size();
    s.change.resize(n, 0);
    changed_.clear();
    for (size_t i = 0; i < n; ++i)
        if (s.change[i] != seen_[i].change)
            changed_.push_back(static_cast<uint32_t>(i));
    stats_.kept = n - changed_.size();
    if (changed_.empty() && s.ranked.size() == n)
        return;

    // Search the changed nodes, once per distinct (topology, free state).
    fresh_.clear();
    searched_.assign(std::bit_ceil(2 * changed_.size()), Searched{});
    for (uint32_t i : changed_) {
        const NodeScore sc = search(nodes, i, s.req, opts);
        fresh_.push_back({i, sc.fits, sc.score});
        s.change[i] = seen_[i].change;
    }
    std::sort(fresh_.begin(), fresh_.end(), ranks_before);

    // Merge them into the kept entries, which stay in order.
    stale_.assign(n, 0);
    for (uint32_t i : changed_)
        stale_[i] = 1;
    merged_.clear();
    merged_.reserve(n);
    auto f = fresh_.begin();
    for (const RankEntry &e : s.ranked) {
        if (e.node >= n || stale_[e.node])
            continue;
        while (f != fresh_.end() && ranks_before(*f, e))
            merged_.push_back(*f++);
        merged_.push_back(e);
    }
    merged_.insert(merged_.end(), f, fresh_.end());
    s.ranked.swap(merged_);
    // A first (or mostly changed) ranking leaves large scratch: let it go,
    // the next calls change few nodes.
    if (searched_.size() > 4096) {
        std::vector<Searched>().swap(searched_);
        std::vector<RankEntry>().swap(fresh_);
    }
}

NodeScore RankIndex::search(const std::vector<NodeView> &nodes, uint32_t i, const Request &req,
                            const SearchOptions &opts) {
    words_.clear();
    placement_inputs(nodes[i], req, opts, [this](uint64_t w) { words_.push_back(w); });
    const uint64_t h = hash_words(words_);
    const size_t mask = searched_.size() - 1;  // a power of two, over twice the searches
    for (size_t at = h & mask;; at = (at + 1) & mask) {
        Searched &m = searched_[at];
        if (m.pos == UINT32_MAX) {
            m = {h, i, score_node(nodes[i], req, opts)};
            ++stats_.searched;
            return m.score;
        }
        if (m.hash != h)
            continue;
        other_.clear();
        placement_inputs(nodes[m.pos], req, opts, [this](uint64_t w) { other_.push_back(w); });
        if (other_ == words_) {
            ++stats_.shared;
            return m.score;
        }
    }
}

size_t RankIndex::heap_bytes() const {
    size_t b = seen_.capacity() * sizeof(Seen) + shapes_.capacity() * sizeof(Shape) +
               changed_.capacity() * sizeof(uint32_t) + stale_.capacity() +
               (fresh_.capacity() + merged_.capacity()) * sizeof(RankEntry) +
               searched_.capacity() * sizeof(Searched) +
               (words_.capacity() + other_.capacity()) * sizeof(uint64_t);
    for (const Shape &s : shapes_)
        b += s.change.capacity() * sizeof(uint64_t) + s.ranked.capacity() * sizeof(RankEntry);
    return b;
}

}  // namespace k8s_cons_tres
