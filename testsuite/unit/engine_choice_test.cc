// SPDX-License-Identifier: GPL-2.0-or-later
// The engine keeps its choices (PlacementCache): across random pod changes,
// Slurm-busy cores and GPUs and requests, every answer must be the one an
// engine that never saw the cluster before gives.
#include "core/engine.h"
#include "testsuite/support/hwloc_fixture.h"

#include <catch2/catch.hpp>

#include <random>

using namespace k8s_cons_tres;

namespace {

PluginConfig config() {
    PluginConfig c;
    c.in_cluster = true;
    c.stale_after = std::chrono::seconds(300);
    c.cluster_label = "hpc1";
    return c;
}

int pick(std::mt19937 &rng, int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// A pod's claim on `node` holding some of its CPU devices and GPUs at random.
ClaimHolding random_pod(std::mt19937 &rng, const std::vector<ResourceSlice> &slices,
                        const std::string &node, int n) {
    ClaimHolding c;
    c.ns = "web";
    c.name = "pod-" + std::to_string(n);
    c.allocated = true;
    c.nodeName = node;
    for (const ResourceSlice &s : slices) {
        if (s.nodeName != node)
            continue;
        for (const Device &d : s.devices)
            if (pick(rng, 0, s.driver == "dra.cpu" ? 5 : 3) == 0)
                c.results.push_back({"r", s.driver, s.pool.name, d.name, "", {}});
    }
    return c;
}

void require_same(const NodeChoice &got, const NodeChoice &want) {
    REQUIRE(got.fits == want.fits);
    REQUIRE(got.reason == want.reason);
    REQUIRE(got.score == want.score);
    REQUIRE(got.cores == want.cores);
    REQUIRE(got.gres == want.gres);
}

}  // namespace

TEST_CASE("kept choices equal fresh ones across pod changes, busy devices and requests") {
    const std::vector<std::string> nodes = {"node1", "node2", "node3", "node4"};
    std::vector<ResourceSlice> slices;
    for (size_t i = 0; i < nodes.size(); ++i) {
        FixtureOptions o;
        o.node = nodes[i];
        o.gpus = 4;
        // two topologies: node1/node2 and node3/node4 alike
        auto f = fixture_from_synthetic(i < 2 ? "pack:2 numa:2 l3:1 core:4 pu:2"
                                              : "pack:1 numa:2 l3:2 core:2 pu:2",
                                        o);
        REQUIRE(f.ok);
        slices.insert(slices.end(), f.slices.begin(), f.slices.end());
    }
    struct Ask {
        Request req;
        std::vector<uint32_t> busy;
        uint64_t busy_gres = 0;
        std::string node;
    };
    for (unsigned seed = 1; seed <= 20; ++seed) {
        INFO("seed " << seed);
        std::mt19937 rng(seed);
        // Few questions asked many times: most answers come from the kept
        // choices, across the pod changes of each round.
        std::vector<Ask> asks(6);
        for (Ask &a : asks) {
            a.req.cpus = static_cast<uint32_t>(pick(rng, 1, 10));
            a.req.whole_cores = pick(rng, 0, 1);
            a.req.threads_per_core = static_cast<uint32_t>(pick(rng, 0, 1));
            a.req.gpus = static_cast<uint32_t>(pick(rng, 0, 2));
            if (pick(rng, 0, 1))
                a.busy = {static_cast<uint32_t>(pick(rng, 0, 7))};
            a.busy_gres = pick(rng, 0, 1) ? uint64_t{1} << pick(rng, 0, 3) : 0;
            a.node = nodes[static_cast<size_t>(pick(rng, 0, 3))];
        }
        Engine kept(config());
        int pods = 0;
        for (int round = 0; round < 8; ++round) {
            INFO("round " << round);
            std::vector<ClaimHolding> claims;
            for (const std::string &n : nodes)
                for (int p = pick(rng, 0, 1); p > 0; --p)
                    claims.push_back(random_pod(rng, slices, n, pods++));
            auto inv = std::make_shared<const Inventory>(Inventory::build(slices, claims));
            kept.publish(inv);
            for (int i = 0; i < 30; ++i) {
                const Ask &a = asks[static_cast<size_t>(pick(rng, 0, 5))];
                // another node of the same topology shares the choices
                std::string node = a.node;
                if (pick(rng, 0, 1))
                    node = node == "node1" ? "node2" : node == "node2" ? "node1"
                         : node == "node3" ? "node4" : "node3";
                INFO(node << " cpus " << a.req.cpus << " whole " << a.req.whole_cores << " gpus "
                          << a.req.gpus);
                Engine fresh(config());  // a new one each time: nothing kept
                fresh.publish(inv);
                require_same(kept.choose(node, a.req, a.busy, a.busy_gres),
                             fresh.choose(node, a.req, a.busy, a.busy_gres));
            }
        }
    }
}
