// SPDX-License-Identifier: GPL-2.0-or-later
// Each placement rule on hand-made topologies.
#include "core/inventory.h"
#include "testsuite/support/ranking.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::test;

namespace {

// A node plus a ledger; hold() marks CPU indices / GPUs as held by a pod.
struct Fixture {
    explicit Fixture(NodeTopology t)
        : topo(std::move(t)), ledger(topo.cpu->cpus.size(), topo.gpus.size()) {}
    void hold(std::initializer_list<uint32_t> cpus, uint64_t gpus = 0) {
        Words w(topo.cpu->words, 0);
        for (uint32_t c : cpus)
            bit_set(w, c);
        std::string err;
        REQUIRE(ledger.hold(Holder::of_claim("k8s", "pod" + std::to_string(n++)), w, gpus, &err));
    }
    NodeView view() const {
        return {topo.cpu.get(), topo.gpus.data(), topo.gpus.size(), ledger.free_cpus().data(),
                ledger.free_gpus()};
    }
    Placement place(const Request &r) const { return k8s_cons_tres::place(view(), r); }
    std::set<uint32_t> numas(const Placement &p) const {
        std::set<uint32_t> s;
        for (uint32_t c : p.cpus)
            s.insert(topo.cpu->cores[topo.cpu->cpus[c].core].numa);
        return s;
    }
    NodeTopology topo;
    NodeLedger ledger;
    int n = 0;
};

Request cpus(uint32_t n, uint32_t tpc = 0, bool whole = false) {
    Request r;
    r.cpus = n;
    r.threads_per_core = tpc;
    r.whole_cores = whole;
    return r;
}

}  // namespace

TEST_CASE("fewest NUMA nodes first", "[placement]") {
    Fixture f(make_node("n", {{0, {4}}, {0, {4}}}));
    f.hold({0});  // NUMA 0 keeps 3 free, NUMA 1 has 4
    Placement p = f.place(cpus(4));
    REQUIRE(p.fits);
    CHECK(p.cpus == std::vector<uint32_t>{4, 5, 6, 7});
    CHECK(p.score.numa_nodes == 1);
    p = f.place(cpus(6));
    REQUIRE(p.fits);
    CHECK(p.score.numa_nodes == 2);
    CHECK(p.cpus.size() == 6);
}

TEST_CASE("best fit: the NUMA node with the least free space that fits", "[placement]") {
    Fixture f(make_node("n", {{0, {8}}, {0, {4}}, {0, {6}}}));
    Placement p = f.place(cpus(3));
    REQUIRE(p.fits);
    CHECK(f.numas(p) == std::set<uint32_t>{1});
    CHECK(p.score.free_in_numa == 4);
    p = f.place(cpus(5));
    CHECK(f.numas(p) == std::set<uint32_t>{2});
}

TEST_CASE("fewest L3 groups inside the NUMA set", "[placement]") {
    Fixture f(make_node("n", {{0, {4, 4}}}));
    f.hold({0, 1});  // L3 0 keeps 2 free, L3 1 has 4
    Placement p = f.place(cpus(3));
    REQUIRE(p.fits);
    CHECK(p.score.l3_groups == 1);
    CHECK(p.cpus == std::vector<uint32_t>{4, 5, 6});
    p = f.place(cpus(2));  // both fit: best fit takes the fuller L3
    CHECK(p.cpus == std::vector<uint32_t>{2, 3});
}

TEST_CASE("fewest sockets beats best fit across NUMA sets", "[placement]") {
    Fixture f(make_node("n", {{0, {3}}, {0, {3}}, {1, {2}}}));
    Placement p = f.place(cpus(5));
    REQUIRE(p.fits);
    CHECK(p.score.numa_nodes == 2);
    CHECK(p.score.sockets == 1);
    CHECK(f.numas(p) == std::set<uint32_t>{0, 1});
}

TEST_CASE("asymmetric NUMA nodes", "[placement]") {
    Fixture f(make_node("n", {{0, {1}}, {0, {5}}, {1, {2, 2}}}));
    CHECK(f.numas(f.place(cpus(5))) == std::set<uint32_t>{1});
    Placement p = f.place(cpus(4));  // NUMA 2 (4 free in 2 L3s) vs NUMA 1 (5 free, one L3)
    CHECK(p.score.numa_nodes == 1);
    CHECK(p.score.l3_groups == 1);
    CHECK(f.numas(p) == std::set<uint32_t>{1});
    p = f.place(cpus(2));
    CHECK(p.score.free_in_numa == 4);  // NUMA 2: first L3 with exactly 2 free
    CHECK(f.numas(p) == std::set<uint32_t>{2});
}

TEST_CASE("SMT: whole cores before loose siblings; threads per core", "[placement]") {
    Fixture f(make_node("n", {{0, {4}, 2}}));
    f.hold({0, 2});  // cores 0 and 1 each keep one free sibling
    Placement p = f.place(cpus(2));
    REQUIRE(p.fits);
    CHECK(p.score.cores == 1);
    CHECK(p.cpus == std::vector<uint32_t>{4, 5});
    p = f.place(cpus(2, 1));  // one thread per core
    REQUIRE(p.fits);
    CHECK(p.score.cores == 2);
    CHECK(p.cpus.size() == 2);
    CHECK(f.topo.cpu->cpus[p.cpus[0]].core != f.topo.cpu->cpus[p.cpus[1]].core);
    // Whole cores: the job holds all threads of fully free cores only.
    p = f.place(cpus(3, 0, true));
    REQUIRE(p.fits);
    CHECK(p.cpus == std::vector<uint32_t>{4, 5, 6, 7});
    CHECK(p.score.cores == 2);
    p = f.place(cpus(5, 0, true));
    CHECK_FALSE(p.fits);
    CHECK(p.reason == "does not fit: needs 5 CPUs in whole free cores, 4 available");
    p = f.place(cpus(2, 1, true));  // 1 thread used per core: 2 whole cores held
    REQUIRE(p.fits);
    CHECK(p.cpus == std::vector<uint32_t>{4, 5, 6, 7});
}

TEST_CASE("SMT off", "[placement]") {
    Fixture f(make_node("n", {{0, {4}, 1}, {1, {4}, 1}}));
    Placement p = f.place(cpus(3, 0, true));
    REQUIRE(p.fits);
    CHECK(p.cpus == std::vector<uint32_t>{0, 1, 2});
    CHECK(p.score.cores == 3);
}

TEST_CASE("GPUs on the NUMA node of the CPUs, CPUs near the GPUs", "[placement]") {
    // GPUs only on NUMA 1; NUMA 0 would be the best fit for CPUs alone.
    Fixture f(make_node("n", {{0, {2}}, {0, {6}}}, {{1}, {1}}));
    Request r = cpus(2);
    CHECK(f.numas(f.place(r)) == std::set<uint32_t>{0});
    r.gpus = 1;
    Placement p = f.place(r);
    REQUIRE(p.fits);
    CHECK(f.numas(p) == std::set<uint32_t>{1});
    CHECK(p.gpus == std::vector<uint32_t>{0});
    CHECK(p.score.gpu_distance == 0);
    f.hold({}, 0b01);
    p = f.place(r);
    CHECK(p.gpus == std::vector<uint32_t>{1});

    // GPUs per NUMA node: the job goes where its GPU is.
    Fixture g(make_node("n", {{0, {4}}, {1, {4}}}, {{0}, {1}, {1}}));
    Request two;
    two.gpus = 2;
    two.cpus_per_gpu = 2;
    p = g.place(two);
    REQUIRE(p.fits);
    CHECK(p.gpus == std::vector<uint32_t>{1, 2});
    CHECK(g.numas(p) == std::set<uint32_t>{1});
    CHECK(p.cpus.size() == 4);
}

TEST_CASE("GPU distance: PCIe root, then socket", "[placement]") {
    // GPUs publish no NUMA node; NUMA 1's CPUs publish PCIe root pci0000:80.
    Fixture f(make_node("n", {{0, {4}, 1, "pci0000:00"}, {1, {4}, 1, "pci0000:80"}},
                        {{kUnknown, "pci0000:00"}, {kUnknown, "pci0000:80"}}));
    Request r = cpus(2);
    r.gpus = 1;
    f.hold({0, 1, 2});  // NUMA 0 is the better fit but its GPU is taken
    f.hold({}, 0b01);
    Placement p = f.place(r);
    REQUIRE(p.fits);
    CHECK(p.gpus == std::vector<uint32_t>{1});
    CHECK(f.numas(p) == std::set<uint32_t>{1});
    CHECK(p.score.gpu_distance == 1);

    // No PCIe roots: the GPU on the CPUs' socket wins (distance 2 vs 3).
    Fixture s(make_node("n", {{0, {2}}, {0, {2}}, {1, {2, 2}}}, {{1}, {2}}));
    Request q = cpus(4);
    q.gpus = 1;
    s.hold({}, 0b10);  // the GPU on NUMA 2 is taken
    p = s.place(q);
    REQUIRE(p.fits);
    // NUMA {2} + GPU 0 on NUMA 1 would touch 2 NUMA nodes, 2 L3 groups and
    // 2 sockets; NUMA {0,1} + GPU 0 touches 2 NUMA nodes, 2 L3s, 1 socket.
    CHECK(p.score.numa_nodes == 2);
    CHECK(p.score.sockets == 1);
    CHECK(p.gpus == std::vector<uint32_t>{0});
}

TEST_CASE("devices held by Kubernetes are never chosen", "[placement]") {
    Fixture f(make_node("n", {{0, {4}, 2}, {1, {4}, 2}}, {{0}, {0}, {1}, {1}}));
    f.hold({1, 2, 3, 8, 9, 15}, 0b0101);
    for (uint32_t n = 1; n <= 10; ++n) {
        for (uint32_t g = 0; g <= 2; ++g) {
            Request r = cpus(n);
            r.gpus = g;
            Placement p = f.place(r);
            REQUIRE(p.fits);
            for (uint32_t c : p.cpus)
                CHECK(bit_test(f.ledger.free_cpus(), c));
            for (uint32_t i : p.gpus)
                CHECK(((f.ledger.free_gpus() >> i) & 1U) == 1U);
        }
    }
}

TEST_CASE("infeasible requests say why", "[placement]") {
    Fixture f(make_node("n", {{0, {2}, 2}}, {{0}}));
    f.hold({0});
    Placement p = f.place(cpus(4));
    CHECK_FALSE(p.fits);
    CHECK(p.reason == "does not fit: needs 4 CPUs, 3 available");
    p = f.place(cpus(3, 1));
    CHECK(p.reason == "does not fit: needs 3 CPUs at 1 thread(s) per core, 2 available");
    Request r = cpus(1);
    r.gpus = 2;
    p = f.place(r);
    CHECK(p.reason == "does not fit: needs 2 GPUs, 1 free");
    CHECK(p.cpus.empty());
    Request none;
    CHECK(f.place(none).fits);
}

TEST_CASE("placement is deterministic", "[placement]") {
    Fixture f(make_node("n", {{0, {3, 3}, 2}, {0, {3, 3}, 2}, {1, {6}, 2}}, {{0}, {1}, {2}}));
    f.hold({0, 7, 13, 30});
    Request r = cpus(5);
    r.gpus = 1;
    Placement a = f.place(r), b = f.place(r);
    CHECK(a.cpus == b.cpus);
    CHECK(a.gpus == b.gpus);
    CHECK(a.score == b.score);
}

TEST_CASE("ranking orders nodes by their best placement", "[placement]") {
    std::vector<Fixture> nodes;
    nodes.emplace_back(make_node("a", {{0, {4}}, {1, {4}}}));
    nodes.emplace_back(make_node("b", {{0, {4}}, {1, {4}}}));
    nodes.emplace_back(make_node("c", {{0, {4}}, {1, {4}}}));
    nodes.emplace_back(make_node("d", {{0, {2}}}));
    nodes[0].hold({0, 4});        // 3 + 3 free: needs 2 NUMA nodes for 4
    nodes[1].hold({0, 1, 2, 3});  // NUMA 1 fully free: fits in 1, 4 free
    nodes[2].hold({});            // fits in 1 but more free space
    std::vector<NodeView> views;
    for (auto &n : nodes)
        views.push_back(n.view());
    auto ranked = rank_nodes(views, cpus(4));
    REQUIRE(ranked.size() == 4);
    CHECK(ranked[0].node == 1);
    CHECK(ranked[1].node == 2);
    CHECK(ranked[2].node == 0);
    CHECK(ranked[3].node == 3);
    CHECK_FALSE(ranked[3].fits);
    CHECK(ranked[0].score == nodes[1].place(cpus(4)).score);
}

TEST_CASE("coarse ranking agrees with exact placement on fit and NUMA count", "[placement]") {
    std::mt19937 rng(7);
    Inventory inv;
    for (int i = 0; i < 60; ++i) {
        NodeTopology t = make_node("n" + std::to_string(i),
                                   {{0, {4}, 2}, {0, {2, 2}, 2}, {1, {3}, 2}, {1, {5}, 2}},
                                   {{0}, {1}, {2}, {3}});
        NodeEntry &e = inv.add_node(std::move(t));
        Words w(e.topology.cpu->words, 0);
        for (size_t c = 0; c < e.topology.cpu->cpus.size(); ++c)
            if (rng() % 3 == 0)
                bit_set(w, c);
        std::string err;
        REQUIRE(e.ledger.hold(Holder::of_claim("k8s", "p"), w, rng() % 16, &err));
    }
    std::vector<NodeView> views;
    for (const NodeEntry &e : inv.nodes())
        views.push_back(e.view());
    for (uint32_t n : {1U, 4U, 9U, 17U, 30U}) {
        for (bool whole : {false, true}) {
            for (uint32_t tpc : {0U, 1U}) {
                Request r = cpus(n, tpc, whole);
                const auto coarse = rank_nodes_coarse(views, r);
                const auto exact = rank_nodes(views, r);
                REQUIRE(coarse.size() == views.size());
                for (const RankEntry &c : coarse) {
                    const Placement p = place(views[c.node], r);
                    CHECK(c.fits == p.fits);
                    if (c.fits)
                        CHECK(c.score.numa_nodes == p.score.numa_nodes);
                }
                // Both orders are permutations with the fitting nodes first.
                size_t fit_c = 0, fit_e = 0;
                for (size_t i = 0; i < views.size(); ++i) {
                    fit_c += coarse[i].fits;
                    fit_e += exact[i].fits;
                    if (i > 0) {
                        CHECK((coarse[i - 1].fits || !coarse[i].fits));
                        CHECK((exact[i - 1].fits || !exact[i].fits));
                        if (exact[i - 1].fits && exact[i].fits)
                            CHECK_FALSE(exact[i].score < exact[i - 1].score);
                        if (coarse[i - 1].fits && coarse[i].fits)
                            CHECK_FALSE(coarse[i].score < coarse[i - 1].score);
                    }
                }
                CHECK(fit_c == fit_e);
                // The node ranked first by coarse ranking is as good on rule 1.
                if (fit_e)
                    CHECK(coarse[0].score.numa_nodes == exact[0].score.numa_nodes);
            }
        }
    }
}

// --- Search budget (placement.h, "Work bound") ---

namespace {

// What a placement really touches, counted from its CPUs and GPUs.
struct Touched {
    std::set<uint32_t> numas, cells, sockets;
};

Touched touched(const Fixture &f, const Placement &p) {
    const CpuTopology &t = *f.topo.cpu;
    Touched out;
    for (uint32_t c : p.cpus) {
        const CoreInfo &k = t.cores[t.cpus[c].core];
        out.numas.insert(k.numa);
        out.cells.insert(k.cell);
        out.sockets.insert(k.socket);
    }
    for (uint32_t g : p.gpus) {
        const GpuInfo &gpu = f.topo.gpus[g];
        if (gpu.numa != kUnknown) {
            out.numas.insert(static_cast<uint32_t>(gpu.numa));
            out.sockets.insert(static_cast<uint32_t>(gpu.socket));
        }
    }
    return out;
}

// Checks p is a valid choice for r on f: only free CPUs and GPUs, the right
// counts, and a score whose first rules are what it really touches.
void check_valid(const Fixture &f, const Request &r, const Placement &p) {
    REQUIRE(p.fits);
    const CpuTopology &t = *f.topo.cpu;
    for (uint32_t c : p.cpus)
        REQUIRE(bit_test(f.ledger.free_cpus(), c));
    for (uint32_t g : p.gpus)
        REQUIRE(((f.ledger.free_gpus() >> g) & 1U) == 1U);
    CHECK(p.gpus.size() == r.gpus);
    CHECK(std::set<uint32_t>(p.cpus.begin(), p.cpus.end()).size() == p.cpus.size());
    std::map<uint32_t, uint32_t> per_core;
    for (uint32_t c : p.cpus)
        per_core[t.cpus[c].core]++;
    uint32_t cap = 0;
    for (const auto &[core, used] : per_core) {
        if (r.whole_cores)
            REQUIRE(used == t.cores[core].nthreads);
        if (r.threads_per_core && !r.whole_cores)
            REQUIRE(used <= r.threads_per_core);
        cap += r.threads_per_core ? std::min(used, r.threads_per_core) : used;
    }
    if (r.whole_cores)
        CHECK(cap >= cpus_wanted(r));
    else
        CHECK(cap == cpus_wanted(r));
    const Touched tt = touched(f, p);
    CHECK(p.score.numa_nodes == tt.numas.size());
    CHECK(p.score.l3_groups == tt.cells.size());
    CHECK(p.score.sockets == tt.sockets.size());
    CHECK(p.score.cores == per_core.size());
}

// The simple bound the fallback must meet on rule 1: NUMA nodes taken
// largest capacity first until the CPUs are reached (for CPUs alone this
// is also the fewest possible).
uint32_t largest_first_numas(const Fixture &f, const Request &r) {
    const CpuTopology &t = *f.topo.cpu;
    std::vector<uint32_t> caps(t.numas.size(), 0);
    const uint32_t limit = r.threads_per_core ? r.threads_per_core : 64;
    for (const CoreInfo &k : t.cores) {
        uint32_t free = 0;
        for (uint32_t i = 0; i < k.nthreads; ++i)
            free += bit_test(f.ledger.free_cpus(), k.first_cpu + i);
        if (r.whole_cores)
            caps[k.numa] += free == k.nthreads ? std::min(limit, k.nthreads) : 0;
        else
            caps[k.numa] += std::min(limit, free);
    }
    std::sort(caps.begin(), caps.end(), std::greater<>());
    uint32_t sum = 0, n = 0;
    while (sum < cpus_wanted(r) && n < caps.size())
        sum += caps[n++];
    return n;
}

// 2 sockets x 16 NUMA nodes (one L3 each) x 4 cores x 2 threads: 256 CPUs,
// as EPYC with an L3 per NUMA node; a GPU on every fourth NUMA node.
NodeTopology numa32(bool gpus) {
    std::vector<NumaSpec> numas;
    for (int s = 0; s < 2; ++s)
        for (int n = 0; n < 16; ++n)
            numas.emplace_back(s, std::vector<int>{4}, 2);
    std::vector<GpuSpec> g;
    if (gpus)
        for (int n = 0; n < 32; n += 4)
            g.emplace_back(n);
    return make_node("n32", numas, g);
}

void hold_random(Fixture &f, std::mt19937 &rng, unsigned in_ten) {
    std::vector<uint32_t> held;
    for (uint32_t c = 0; c < f.topo.cpu->cpus.size(); ++c)
        if (rng() % 10 < in_ten)
            held.push_back(c);
    Words w(f.topo.cpu->words, 0);
    for (uint32_t c : held)
        bit_set(w, c);
    // About a quarter of the GPUs held too.
    uint64_t gpus = rng();
    gpus &= rng();
    gpus &= (uint64_t{1} << f.topo.gpus.size()) - 1;
    std::string err;
    REQUIRE(f.ledger.hold(Holder::of_claim("k8s", "rnd" + std::to_string(f.n++)), w, gpus,
                          &err));
}

}  // namespace

TEST_CASE("budget: 32 NUMA nodes and half the cores stay within the budget",
          "[placement][budget]") {
    // All free: the exact search would need C(32,16) = 601,080,390 NUMA sets.
    Fixture f(numa32(false));
    const Request half = cpus(128);
    Placement p = f.place(half);
    check_valid(f, half, p);
    CHECK_FALSE(p.stats.exact);
    CHECK(p.stats.candidates <= kSearchBudget);
    CHECK(p.stats.greedy_sets <= 33);
    // The optimum is one socket's 16 NUMA nodes; the fallback finds it.
    CHECK(p.score.numa_nodes == 16);
    CHECK(p.score.l3_groups == 16);
    CHECK(p.score.sockets == 1);
    CHECK(p.score.cores == 64);

    // Random holdings, several request shapes, with and without GPUs.
    std::mt19937 rng(32);
    int fallbacks = 0;
    for (int round = 0; round < 12; ++round) {
        Fixture g(numa32(round % 2 == 1));
        hold_random(g, rng, static_cast<unsigned>(round % 4));
        const uint32_t free_cores = [&] {
            uint32_t n = 0;
            for (const CoreInfo &k : g.topo.cpu->cores)
                n += bit_test(g.ledger.free_cpus(), k.first_cpu) &&
                     bit_test(g.ledger.free_cpus(), k.first_cpu + 1);
            return n;
        }();
        std::vector<Request> reqs = {cpus(128), cpus(free_cores, 1),
                                     cpus(free_cores, 0, true),
                                     cpus(std::max(free_cores / 2, 1U) * 2, 0, true)};
        if (round % 2 == 1) {
            Request r;
            r.gpus = 3;
            r.cpus_per_gpu = free_cores / 3 * 2;
            reqs.push_back(r);
        }
        for (const Request &r : reqs) {
            INFO("round " << round << " cpus " << r.cpus << " tpc " << r.threads_per_core
                          << " whole " << r.whole_cores << " gpus " << r.gpus);
            p = g.place(r);
            if (!p.fits)
                continue;  // holdings left too little (checked elsewhere)
            check_valid(g, r, p);
            CHECK(p.stats.candidates <= kSearchBudget);
            CHECK(p.stats.greedy_sets <= 33);
            fallbacks += !p.stats.exact;
            if (r.gpus == 0)
                CHECK(p.score.numa_nodes == largest_first_numas(g, r));
            else
                CHECK(p.score.numa_nodes <= largest_first_numas(g, r) + r.gpus);
        }
    }
    CHECK(fallbacks >= 30);
}

TEST_CASE("budget: the fallback only starts past the exact search's own count",
          "[placement][budget]") {
    std::mt19937 rng(8);
    const std::vector<std::vector<NumaSpec>> shapes = {
        // 2 sockets x 4 NUMA x 8 cores x 2 threads (the benchmark's node)
        {{0, {8}, 2}, {0, {8}, 2}, {0, {8}, 2}, {0, {8}, 2},
         {1, {8}, 2}, {1, {8}, 2}, {1, {8}, 2}, {1, {8}, 2}},
        // few NUMA nodes, many L3 groups (EPYC NPS1-like, scaled down)
        {{0, {2, 2, 2, 2, 2, 2}, 2}, {1, {2, 2, 2, 2, 2, 2}, 2}},
        {{0, {3}}, {0, {1, 2}}, {0, {4}}, {1, {2, 2}}, {1, {5}}, {1, {1, 1, 1}}},
    };
    int checked = 0, differs = 0;
    for (size_t s = 0; s < shapes.size(); ++s) {
        for (int round = 0; round < 6; ++round) {
            std::vector<GpuSpec> gpus;
            for (size_t n = 0; n < shapes[s].size(); n += 2)
                gpus.emplace_back(static_cast<int32_t>(n));
            Fixture f(make_node("s", shapes[s], gpus));
            hold_random(f, rng, static_cast<unsigned>(round));
            const auto ncpus = static_cast<uint32_t>(f.topo.cpu->cpus.size());
            for (uint32_t n : {1U, 3U, ncpus / 4, ncpus / 3, ncpus / 2}) {
                for (uint32_t g : {0U, 1U}) {
                    Request r = cpus(n, round % 3 == 2 ? 1 : 0, round % 3 == 1);
                    r.gpus = g;
                    INFO("shape " << s << " round " << round << " cpus " << n << " gpus " << g);
                    const Placement exact = k8s_cons_tres::place(f.view(), r, {UINT64_MAX});
                    const Placement dflt = f.place(r);
                    if (!exact.fits) {
                        CHECK_FALSE(dflt.fits);
                        continue;
                    }
                    REQUIRE(exact.stats.exact);
                    const uint64_t need = exact.stats.candidates;
                    // The default budget covers these nodes: still exact.
                    CHECK(need <= kSearchBudget);
                    CHECK(dflt.stats.exact);
                    CHECK(dflt.cpus == exact.cpus);
                    // Exactly at its count: the same answer, no fallback.
                    const Placement at = k8s_cons_tres::place(f.view(), r, {need});
                    CHECK(at.stats.exact);
                    CHECK(at.stats.greedy_sets == 0);
                    CHECK(at.stats.candidates == need);
                    CHECK(at.cpus == exact.cpus);
                    CHECK(at.gpus == exact.gpus);
                    CHECK(at.score == exact.score);
                    // One short: the fallback, valid and never better.
                    const Placement below = k8s_cons_tres::place(f.view(), r, {need - 1});
                    CHECK_FALSE(below.stats.exact);
                    CHECK(below.stats.candidates <= need - 1);
                    check_valid(f, r, below);
                    CHECK_FALSE(below.score < exact.score);
                    if (g == 0)
                        CHECK(below.score.numa_nodes == exact.score.numa_nodes);
                    differs += below.score != exact.score;
                    ++checked;
                }
            }
        }
    }
    CHECK(checked >= 100);
    INFO("fallback differs from the optimum in " << differs << " of " << checked);
    CHECK(differs < checked);
}

TEST_CASE("budget: rank_nodes uses the same budget as place", "[placement][budget]") {
    std::vector<Fixture> nodes;
    nodes.emplace_back(numa32(false));
    nodes.emplace_back(make_node("small", {{0, {4}, 2}, {1, {4}, 2}}));
    std::vector<NodeView> views;
    for (auto &n : nodes)
        views.push_back(n.view());
    const Request r = cpus(16);
    for (uint64_t budget : {uint64_t{0}, kSearchBudget}) {
        const auto ranked = rank_nodes(views, r, SearchOptions{budget});
        REQUIRE(ranked.size() == 2);
        for (const RankEntry &e : ranked) {
            const Placement p = k8s_cons_tres::place(views[e.node], r, SearchOptions{budget});
            CHECK(e.fits == p.fits);
            CHECK(e.score == p.score);
        }
    }
}
