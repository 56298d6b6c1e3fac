// SPDX-License-Identifier: GPL-2.0-or-later
// Each placement rule on hand-made topologies.
#include "core/inventory.h"
#include "core/placement.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

#include <random>
#include <set>

using namespace k8sdra;
using namespace k8sdra::test;

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
    Placement place(const Request &r) const { return k8sdra::place(view(), r); }
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
