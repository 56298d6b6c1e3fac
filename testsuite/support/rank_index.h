// SPDX-License-Identifier: GPL-2.0-or-later
// Exact node ranking kept between calls. rank() answers exactly what
// rank_nodes() answers for the same nodes, request and options (order, fits
// and scores), but:
//   * a node is searched again only when its view's stamp changed since the
//     last call (NodeView::stamp; 0 is searched every time);
//   * the nodes searched in one call share the search of any node with the
//     same topology and free state (placement_inputs(), placement_key.h);
//   * the answer is kept sorted per request shape, and changed nodes are
//     merged into it.
// A call with k changed nodes out of n costs O(n) (reading the stamps,
// merging, copying the answer) plus k searches, each bounded by the
// search budget (placement.h). Positions are what the index keeps: it
// pays off when the same list of nodes is ranked again and again, as the
// nodes of one cluster are. Not thread-safe: one caller at a time.
#pragma once

#include "testsuite/support/ranking.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k8s_cons_tres {

// Request shapes (request and budget) an index keeps at once.
inline constexpr size_t kRankShapes = 16;

class RankIndex {
public:
    // Past max_shapes, the shape ranked least recently is dropped.
    explicit RankIndex(size_t max_shapes = kRankShapes);

    std::vector<RankEntry> rank(const std::vector<NodeView> &nodes, const Request &req,
                                const SearchOptions &opts = {});

    // What the last call did, for tests and benchmarks.
    struct Stats {
        size_t kept = 0;      // nodes whose entry was kept from an earlier call
        size_t searched = 0;  // placement searches run
        size_t shared = 0;    // nodes that took the result of an equal node's search
    };
    const Stats &last_call() const { return stats_; }
    // Heap the index holds (its answers, stamps and scratch).
    size_t heap_bytes() const;

private:
    // Per position: the stamp last seen there, and the change it was given.
    struct Seen {
        uint64_t stamp = 0;
        uint64_t change = 0;  // > 0, unique over the index's life
    };
    struct Shape {
        Request req;
        uint64_t budget = 0;
        uint64_t used = 0;              // call number of its last use
        std::vector<uint64_t> change;   // per position: the Seen::change it reflects
        std::vector<RankEntry> ranked;  // the answer, sorted
    };

    // One search of this call, by what placement depends on (placement_key.h).
    struct Searched {
        uint64_t hash = 0;
        uint32_t pos = UINT32_MAX;  // UINT32_MAX: a free slot
        NodeScore score;
    };

    void notice(const std::vector<NodeView> &nodes);
    Shape &shape(const Request &req, const SearchOptions &opts);
    void refresh(Shape &s, const std::vector<NodeView> &nodes, const SearchOptions &opts);
    NodeScore search(const std::vector<NodeView> &nodes, uint32_t i, const Request &req,
                     const SearchOptions &opts);

    size_t max_shapes_;
    std::vector<Seen> seen_;
    uint64_t changes_ = 0;
    uint64_t calls_ = 0;
    std::vector<Shape> shapes_;
    Stats stats_;
    // Scratch kept between calls (no allocation when little changes).
    std::vector<uint32_t> changed_;
    std::vector<RankEntry> fresh_, merged_;
    std::vector<uint8_t> stale_;
    // This call's searches (open addressing), and the words compared; kept
    // for this call only: the words name topologies by address, and only
    // while the call lasts are they known to be alive.
    std::vector<Searched> searched_;
    std::vector<uint64_t> words_, other_;
};

}  // namespace k8s_cons_tres
