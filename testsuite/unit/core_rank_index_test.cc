// SPDX-License-Identifier: GPL-2.0-or-later
// RankIndex against the full scan (rank_nodes) on random clusters: random
// topologies shared by several nodes, random free states, random requests
// and budgets, and random changes between calls (pods arriving and leaving,
// Slurm jobs, nodes replaced, the node list shrinking and growing). The
// index must answer exactly the full scan's order, fits and scores.
#include "core/inventory.h"
#include "core/placement.h"
#include "core/placement_cache.h"
#include "core/placement_key.h"
#include "testsuite/support/rank_index.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::test;

namespace {

int pick(std::mt19937 &rng, int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// A random node shape: 1-2 sockets, NUMA nodes with 1-2 L3 groups, SMT on
// or off (sometimes mixed), GPUs near some NUMA node, a root or nothing.
// One in eight has 12 NUMA nodes, where small budgets make the search fall
// back to its greedy choice. Nodes of one shape share their CPU topology
// but not always their GPUs: a second layout moves one GPU's NUMA node or
// PCIe root.
struct Shape {
    std::vector<NumaSpec> numas;
    std::vector<std::vector<GpuSpec>> gpus;  // layouts
};

Shape random_shape(std::mt19937 &rng) {
    static const char *roots[] = {"", "r0", "r1"};
    Shape s;
    const bool wide = pick(rng, 0, 7) == 0;
    const int sockets = pick(rng, 1, 2), threads = pick(rng, 1, 2);
    const bool mixed = threads == 2 && pick(rng, 0, 3) == 0;
    for (int so = 0; so < sockets; ++so) {
        for (int n = wide ? 6 : pick(rng, 1, 3); n > 0; --n) {
            std::vector<int> l3;
            for (int l = wide ? 1 : pick(rng, 1, 2); l > 0; --l)
                l3.push_back(pick(rng, 1, wide ? 2 : 4));
            s.numas.emplace_back(so, l3, mixed ? pick(rng, 1, 2) : threads,
                                 roots[pick(rng, 0, 2)]);
        }
    }
    const int numas = static_cast<int>(s.numas.size());
    std::vector<GpuSpec> gpus;
    for (int g = pick(rng, 0, 4); g > 0; --g)
        gpus.emplace_back(pick(rng, -1, numas - 1), roots[pick(rng, 0, 2)]);
    s.gpus.push_back(gpus);
    if (!gpus.empty()) {
        GpuSpec &moved = gpus[static_cast<size_t>(pick(rng, 0, static_cast<int>(gpus.size()) - 1))];
        if (pick(rng, 0, 1))
            moved.numa = pick(rng, -1, numas - 1);
        else
            moved.pcie_root = roots[pick(rng, 0, 2)];
        s.gpus.push_back(gpus);
    }
    return s;
}

Request random_request(std::mt19937 &rng) {
    Request r;
    r.cpus = static_cast<uint32_t>(pick(rng, 0, 12));
    r.whole_cores = pick(rng, 0, 3) == 0;
    r.threads_per_core = static_cast<uint32_t>(pick(rng, 0, 2));
    r.gpus = static_cast<uint32_t>(pick(rng, 0, 2));
    if (r.gpus && pick(rng, 0, 2) == 0)
        r.cpus_per_gpu = static_cast<uint32_t>(pick(rng, 1, 4));
    return r;
}

SearchOptions random_options(std::mt19937 &rng) {
    static const uint64_t budgets[] = {kSearchBudget, kSearchBudget, 0, 8, 64};
    return {budgets[pick(rng, 0, 4)]};
}

// The cluster under test: an inventory and the pods placed on it.
struct Cluster {
    Inventory inv;
    std::vector<Shape> shapes;
    int pods = 0;
    uint32_t jobs = 0;

    void add(std::mt19937 &rng, std::string name) {  // a copy: it may name the node replaced
        const Shape &s = shapes[static_cast<size_t>(pick(rng, 0, static_cast<int>(shapes.size()) - 1))];
        const auto &gpus = s.gpus[static_cast<size_t>(pick(rng, 0, static_cast<int>(s.gpus.size()) - 1))];
        NodeEntry &e = inv.add_node(make_node(name, s.numas, gpus));
        // a third stay idle, so that equal nodes are common
        if (pick(rng, 0, 2) != 0)
            for (int p = pick(rng, 1, 3); p > 0; --p)
                pod(rng, e);
    }

    // A pod holding random free CPUs (about a third) and maybe a GPU.
    void pod(std::mt19937 &rng, NodeEntry &e) {
        const CpuTopology &t = *e.topology.cpu;
        Words w(t.words, 0);
        for (uint32_t c = 0; c < t.cpus.size(); ++c)
            if (bit_test(e.ledger.free_cpus(), c) && pick(rng, 0, 2) == 0)
                bit_set(w, c);
        uint64_t g = 0;
        if (!e.topology.gpus.empty() && pick(rng, 0, 1)) {
            const int i = pick(rng, 0, static_cast<int>(e.topology.gpus.size()) - 1);
            if ((e.ledger.free_gpus() >> i) & 1U)
                g = uint64_t{1} << i;
        }
        std::string err;
        REQUIRE(e.ledger.hold(Holder::of_claim("ns", "pod" + std::to_string(pods++)), w, g, &err));
    }

    NodeEntry &any(std::mt19937 &rng) {
        const auto &nodes = inv.nodes();
        return *inv.node(nodes[static_cast<size_t>(pick(rng, 0, static_cast<int>(nodes.size()) - 1))].name);
    }

    // One random change, as the cluster sees them.
    void change(std::mt19937 &rng) {
        NodeEntry &e = any(rng);
        switch (pick(rng, 0, 4)) {
        case 0:  // a pod arrives
            pod(rng, e);
            break;
        case 1:  // a pod or job leaves
            if (!e.ledger.holdings().empty()) {
                const auto &h = e.ledger.holdings();
                const Holder who = h[static_cast<size_t>(pick(rng, 0, static_cast<int>(h.size()) - 1))].who;
                REQUIRE(e.ledger.release(who));
            }
            break;
        case 2: {  // a Slurm job starts on free whole cores
            const CpuTopology &t = *e.topology.cpu;
            std::vector<uint32_t> cpus;
            for (const CoreInfo &k : t.cores) {
                bool free = true;
                for (uint32_t i = 0; i < k.nthreads; ++i)
                    free = free && bit_test(e.ledger.free_cpus(), k.first_cpu + i);
                if (free && pick(rng, 0, 1))
                    for (uint32_t i = 0; i < k.nthreads; ++i)
                        cpus.push_back(k.first_cpu + i);
            }
            std::string err;
            REQUIRE(inv.job_begin(e.name, ++jobs, cpus, {}, &err));
            break;
        }
        case 3:  // a Slurm job ends everywhere
            if (jobs)
                inv.job_end(static_cast<uint32_t>(pick(rng, 1, static_cast<int>(jobs))));
            break;
        default:  // the node is rebuilt, maybe with another topology
            add(rng, e.name);
            break;
        }
    }
};

void require_same(const std::vector<RankEntry> &got, const std::vector<RankEntry> &want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        INFO("rank " << i);
        REQUIRE(got[i].node == want[i].node);
        REQUIRE(got[i].fits == want[i].fits);
        REQUIRE(got[i].score == want[i].score);
    }
}

std::vector<NodeView> views_of(const Inventory &inv) {
    std::vector<NodeView> v;
    for (const NodeEntry &e : inv.nodes())
        v.push_back(e.view());
    return v;
}

}  // namespace

TEST_CASE("rank index: the full scan's order and scores on random clusters, across changes",
          "[rank]") {
    size_t calls = 0, kept = 0, shared = 0;
    for (unsigned seed = 1; seed <= 300; ++seed) {
        INFO("seed " << seed);
        std::mt19937 rng(seed);
        Cluster c;
        for (int s = pick(rng, 1, 3); s > 0; --s)
            c.shapes.push_back(random_shape(rng));
        const int nnodes = pick(rng, 1, 40);
        for (int i = 0; i < nnodes; ++i)
            c.add(rng, "n" + std::to_string(i));
        std::vector<std::pair<Request, SearchOptions>> asks;
        for (int a = pick(rng, 1, 6); a > 0; --a)
            asks.emplace_back(random_request(rng), random_options(rng));
        // Few shapes kept in some runs: evicted shapes must come back right.
        RankIndex index(pick(rng, 0, 1) ? kRankShapes : 2);
        for (int round = 0; round < 16; ++round) {
            INFO("round " << round);
            const int changes = pick(rng, 0, 9) == 0 ? 2 * nnodes : pick(rng, 0, 3);
            for (int k = 0; k < changes; ++k)
                c.change(rng);
            std::vector<NodeView> views = views_of(c.inv);
            switch (pick(rng, 0, 5)) {
            case 0:  // a shorter list: the last nodes left out
                views.resize(static_cast<size_t>(pick(rng, 0, static_cast<int>(views.size()))));
                break;
            case 1:  // views without a stamp are searched every time
                for (NodeView &v : views)
                    if (pick(rng, 0, 3) == 0)
                        v.stamp = 0;
                break;
            case 2:  // a node listed twice, and two swapped
                if (!views.empty()) {
                    views.push_back(views[static_cast<size_t>(pick(rng, 0, static_cast<int>(views.size()) - 1))]);
                    std::swap(views.front(), views.back());
                }
                break;
            default:
                break;
            }
            const auto &[req, opts] = asks[static_cast<size_t>(pick(rng, 0, static_cast<int>(asks.size()) - 1))];
            INFO("request cpus " << req.cpus << " whole " << req.whole_cores << " tpc "
                                 << req.threads_per_core << " gpus " << req.gpus << " cpus/gpu "
                                 << req.cpus_per_gpu << " budget " << opts.budget);
            require_same(index.rank(views, req, opts), rank_nodes(views, req, opts));
            const RankIndex::Stats &st = index.last_call();
            REQUIRE(st.kept + st.searched + st.shared == views.size());
            ++calls;
            kept += st.kept;
            shared += st.shared;
        }
    }
    // The index did keep and share work (else it would prove nothing).
    CHECK(calls == 300 * 16);
    CHECK(kept > 0);
    CHECK(shared > 0);
}

TEST_CASE("rank index: unchanged nodes are not searched again, equal nodes once", "[rank]") {
    Inventory inv;
    for (int i = 0; i < 50; ++i)
        inv.add_node(make_node("n" + std::to_string(i), {{0, {4}, 2}, {1, {4}, 2}},
                               {GpuSpec(0), GpuSpec(1)}));
    Request r;
    r.cpus = 6;
    r.gpus = 1;
    RankIndex index;
    auto views = views_of(inv);
    require_same(index.rank(views, r), rank_nodes(views, r));
    CHECK(index.last_call().searched == 1);  // 50 idle nodes of one topology
    CHECK(index.last_call().shared == 49);

    require_same(index.rank(views, r), rank_nodes(views, r));
    CHECK(index.last_call().searched == 0);
    CHECK(index.last_call().kept == 50);

    // A pod takes 3 CPUs of each NUMA node of n7: only n7 is searched
    // again, and it falls behind the others (it must now span both).
    NodeEntry &n7 = *inv.node("n7");
    Words w(n7.topology.cpu->words, 0);
    for (uint32_t c : {0, 1, 2, 8, 9, 10})
        bit_set(w, c);
    std::string err;
    REQUIRE(n7.ledger.hold(Holder::of_claim("ns", "pod"), w, 1, &err));
    views = views_of(inv);
    const auto ranked = index.rank(views, r);
    require_same(ranked, rank_nodes(views, r));
    CHECK(index.last_call().searched == 1);
    CHECK(index.last_call().kept == 49);
    CHECK(ranked.back().node == 7);

    // Another request shape is an index of its own; the first one stays.
    Request r2;
    r2.cpus = 16;
    r2.whole_cores = true;
    require_same(index.rank(views, r2), rank_nodes(views, r2));
    CHECK(index.last_call().searched == 2);  // idle nodes, and n7
    require_same(index.rank(views, r), rank_nodes(views, r));
    CHECK(index.last_call().searched == 0);
    CHECK(index.heap_bytes() > 0);

    // The pod leaves: n7 is searched again and back in input order.
    REQUIRE(n7.ledger.release(Holder::of_claim("ns", "pod")));
    views = views_of(inv);
    require_same(index.rank(views, r), rank_nodes(views, r));
    CHECK(index.last_call().searched == 1);
}

TEST_CASE("ledger stamps: new at construction and at each change, kept by copies", "[rank]") {
    NodeTopology t = make_node("n", {{0, {2}, 2}});
    NodeLedger a(t.cpu.get(), 0), b(t.cpu.get(), 0);
    CHECK(a.stamp() != 0);
    CHECK(a.stamp() != b.stamp());
    const NodeLedger copy = a;
    CHECK(copy.stamp() == a.stamp());
    const uint64_t before = a.stamp();
    Words w(t.cpu->words, 0);
    bit_set(w, 1);
    std::string err;
    REQUIRE(a.hold(Holder::of_job(1), w, 0, &err));
    CHECK(a.stamp() != before);
    CHECK(copy.stamp() == before);
    const uint64_t held = a.stamp();
    CHECK_FALSE(a.hold(Holder::of_job(2), w, 0, &err));  // refused: nothing changed
    CHECK(a.stamp() == held);
    REQUIRE(a.release(Holder::of_job(1)));
    CHECK(a.stamp() != held);
    CHECK(a.stamp() != before);  // the same free sets, but never an old stamp
}

TEST_CASE("placement keys: equal keys give equal placements", "[rank]") {
    for (unsigned seed = 1; seed <= 100; ++seed) {
        INFO("seed " << seed);
        std::mt19937 rng(seed);
        Cluster c;
        c.shapes.push_back(random_shape(rng));
        c.shapes.push_back(random_shape(rng));
        for (int i = 0; i < 30; ++i)
            c.add(rng, "n" + std::to_string(i));
        const auto views = views_of(c.inv);
        for (int a = 0; a < 4; ++a) {
            const Request r = random_request(rng);
            for (size_t i = 0; i < views.size(); ++i) {
                for (size_t j = i + 1; j < views.size(); ++j) {
                    if (!(PlacementKey(views[i], r) == PlacementKey(views[j], r)))
                        continue;
                    const Placement p = place(views[i], r), q = place(views[j], r);
                    REQUIRE(p.fits == q.fits);
                    REQUIRE(p.score == q.score);
                    REQUIRE(p.cpus == q.cpus);
                    REQUIRE(p.gpus == q.gpus);
                    REQUIRE(p.reason == q.reason);
                }
            }
        }
    }
    // A CPU-only request does not look at the GPUs; a GPU request does.
    NodeTopology t = make_node("n", {{0, {2}}, {0, {2}}}, {GpuSpec(0), GpuSpec(1)});
    NodeLedger all(t.cpu.get(), 2), less(t.cpu.get(), 2);
    std::string err;
    REQUIRE(less.hold(Holder::of_claim("ns", "p"), Words(t.cpu->words, 0), 1, &err));
    NodeView va{t.cpu.get(), t.gpus.data(), t.gpus.size(), all.free_cpus().data(), all.free_gpus()};
    NodeView vb{t.cpu.get(), t.gpus.data(), t.gpus.size(), less.free_cpus().data(),
                less.free_gpus()};
    Request cpu_only;
    cpu_only.cpus = 2;
    Request gpu = cpu_only;
    gpu.gpus = 1;
    CHECK(PlacementKey(va, cpu_only) == PlacementKey(vb, cpu_only));
    CHECK_FALSE(PlacementKey(va, gpu) == PlacementKey(vb, gpu));
    CHECK_FALSE(PlacementKey(va, cpu_only) == PlacementKey(va, gpu));
    CHECK_FALSE(PlacementKey(va, cpu_only, {8}) == PlacementKey(va, cpu_only));
}

TEST_CASE("placement cache: two generations bound it, hits stay", "[rank]") {
    NodeTopology t = make_node("n", {{0, {4}}});
    std::vector<NodeLedger> ledgers;
    for (uint32_t i = 0; i < 4; ++i) {  // four free states: CPU i held
        ledgers.emplace_back(t.cpu.get(), 0);
        Words w(t.cpu->words, 0);
        bit_set(w, i);
        std::string err;
        REQUIRE(ledgers.back().hold(Holder::of_job(1), w, 0, &err));
    }
    Request r;
    r.cpus = 1;
    const auto key = [&](size_t i) {
        return PlacementKey({t.cpu.get(), nullptr, 0, ledgers[i].free_cpus().data(), 0}, r);
    };
    PlacementCache<int> cache(2);
    cache.put(key(0), t.cpu, 0);
    cache.put(key(1), t.cpu, 1);
    CHECK(cache.size() == 2);
    cache.put(key(2), t.cpu, 2);  // young {0, 1} becomes old
    CHECK(cache.size() == 3);
    CHECK(cache.find(key(0)) == 0);  // moves to the young generation
    cache.put(key(3), t.cpu, 3);     // young {2, 0} becomes old; {1} dropped
    CHECK_FALSE(cache.find(key(1)).has_value());
    CHECK(cache.find(key(2)) == 2);
    CHECK(cache.find(key(3)) == 3);
    CHECK(cache.size() <= 4);
}
