// SPDX-License-Identifier: GPL-2.0-or-later
// The inventory/placement C ABI: plain structs, error codes, no throws.
#include "testsuite/support/c_api_bridge.h"
#include "testsuite/support/k8s_cons_tres_test.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

namespace {

struct Inv {
    Inv(const char *synthetic, std::vector<const char *> nodes, uint32_t gpus) {
        char err[256] = "";
        rc = k8s_cons_tres_inventory_from_synthetic(synthetic, nodes.data(), nodes.size(), gpus, &inv,
                                             err, sizeof err);
        error = err;
    }
    ~Inv() { k8s_cons_tres_inventory_free(inv); }
    Inv(const Inv &) = delete;
    Inv &operator=(const Inv &) = delete;
    k8s_cons_tres_inventory *inv = nullptr;
    int rc = -1;
    std::string error;
};

}  // namespace

TEST_CASE("C ABI: node check, placement, job begin/end", "[capi]") {
    Inv h("pack:2 numa:2 core:4 pu:2", {"n1", "n2"}, 4);
    REQUIRE(h.rc == K8S_CONS_TRES_OK);
    char msg[256];
    int state = -1;
    const k8s_cons_tres_slurm_node good{2, 8, 2, 4}, bad{2, 8, 1, 4};
    REQUIRE(k8s_cons_tres_node_check(h.inv, "n1", &good, &state, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(state == K8S_CONS_TRES_NODE_OK);
    REQUIRE(k8s_cons_tres_node_check(h.inv, "n1", &bad, &state, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(state == K8S_CONS_TRES_NODE_MISMATCH);
    CHECK(std::string(msg) == "threads per core: slurm 1, slices 2");
    REQUIRE(k8s_cons_tres_node_check(h.inv, "zz", &good, &state, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(state == K8S_CONS_TRES_NODE_UNKNOWN);

    uint32_t cpu_ids[64], cores[64], gres[8];
    k8s_cons_tres_placement p{};
    p.cpu_ids = cpu_ids;
    p.cpu_cap = 64;
    p.cores = cores;
    p.core_cap = 64;
    p.gres = gres;
    p.gres_cap = 8;
    k8s_cons_tres_request req{4, 1, 0, 1, 0};
    REQUIRE(k8s_cons_tres_place(h.inv, "n1", &req, &p, msg, sizeof msg) == K8S_CONS_TRES_OK);
    REQUIRE(p.fits);
    CHECK(p.ncpus == 4);
    CHECK(p.ncores == 2);
    CHECK(p.ngres == 1);
    CHECK(p.score.numa_nodes == 1);

    REQUIRE(k8s_cons_tres_job_begin(h.inv, "n1", 42, cores, p.ncores, gres, p.ngres, msg, sizeof msg) ==
            K8S_CONS_TRES_OK);
    k8s_cons_tres_free_counts free{};
    REQUIRE(k8s_cons_tres_node_free(h.inv, "n1", &free, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(free.cpus == 28);
    CHECK(free.cores == 14);
    CHECK(free.gpus == 3);
    CHECK(k8s_cons_tres_job_begin(h.inv, "n1", 43, cores, 1, nullptr, 0, msg, sizeof msg) ==
          K8S_CONS_TRES_EINVAL);
    CHECK(std::string(msg).find("held by job 42") != std::string::npos);

    // n2 is empty: only it can give 30 CPUs now.
    const char *nodes[] = {"n1", "n2", "missing"};
    size_t order[3];
    int fits[3];
    k8s_cons_tres_score scores[3];
    k8s_cons_tres_request big{30, 0, 0, 0, 0};
    REQUIRE(k8s_cons_tres_place(h.inv, "n1", &big, &p, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(p.fits == 0);
    CHECK(std::string(p.reason) == "does not fit: needs 30 CPUs, 28 available");
    REQUIRE(k8s_cons_tres_rank(h.inv, nodes, 3, &big, order, fits, scores, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(order[0] == 1);
    CHECK(order[1] == 0);
    CHECK(order[2] == 2);
    CHECK(fits[0] == 1);
    CHECK(fits[1] == 0);
    CHECK(fits[2] == 0);
    CHECK(scores[0].numa_nodes == 4);
    REQUIRE(k8s_cons_tres_rank_coarse(h.inv, nodes, 3, &big, order, fits, scores, msg, sizeof msg) ==
            K8S_CONS_TRES_OK);
    CHECK(order[0] == 1);
    CHECK(fits[0] == 1);
    CHECK(fits[1] == 0);
    CHECK(scores[0].numa_nodes == 4);

    size_t n = 0;
    REQUIRE(k8s_cons_tres_job_end(h.inv, 42, &n) == K8S_CONS_TRES_OK);
    CHECK(n == 1);
    REQUIRE(k8s_cons_tres_node_free(h.inv, "n1", &free, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(free.cpus == 32);
}

TEST_CASE("C ABI: bad arguments and small buffers are errors, not crashes", "[capi]") {
    char msg[64];
    k8s_cons_tres_inventory *inv = nullptr;
    CHECK(k8s_cons_tres_inventory_from_synthetic("nonsense:3", nullptr, 0, 0, &inv, msg, sizeof msg) ==
          K8S_CONS_TRES_OK);  // no nodes: an empty inventory
    const char *one[] = {"n"};
    k8s_cons_tres_inventory *bad = nullptr;
    CHECK(k8s_cons_tres_inventory_from_synthetic("nonsense:3", one, 1, 0, &bad, msg, sizeof msg) ==
          K8S_CONS_TRES_EINVAL);
    CHECK(bad == nullptr);
    k8s_cons_tres_inventory_free(inv);
    k8s_cons_tres_inventory_free(nullptr);

    Inv h("pack:1 numa:1 core:4 pu:1", {"n"}, 0);
    REQUIRE(h.rc == K8S_CONS_TRES_OK);
    k8s_cons_tres_request req{3, 0, 0, 0, 0};
    uint32_t small[2];
    k8s_cons_tres_placement p{};
    p.cpu_ids = small;
    p.cpu_cap = 2;
    CHECK(k8s_cons_tres_place(h.inv, "n", &req, &p, msg, sizeof msg) == K8S_CONS_TRES_EINVAL);
    CHECK(p.ncpus == 3);
    CHECK(k8s_cons_tres_place(h.inv, "nope", &req, &p, msg, sizeof msg) == K8S_CONS_TRES_EINVAL);
    CHECK(std::string(msg) == "unknown node nope");
    CHECK(k8s_cons_tres_place(nullptr, "n", &req, &p, msg, sizeof msg) == K8S_CONS_TRES_EINVAL);
    size_t nc = 0, ng = 0;
    CHECK(k8s_cons_tres_k8s_held(h.inv, "n", nullptr, 0, &nc, nullptr, 0, &ng, msg, sizeof msg) ==
          K8S_CONS_TRES_OK);
    CHECK(nc == 0);
    // Tiny error buffers are still terminated.
    char tiny[4];
    CHECK(k8s_cons_tres_place(h.inv, "nope", &req, &p, tiny, sizeof tiny) == K8S_CONS_TRES_EINVAL);
    CHECK(std::strlen(tiny) == 3);
}

TEST_CASE("C ABI: cores held by Kubernetes claims", "[capi]") {
    k8s_cons_tres::Inventory built;
    {
        Inv h("pack:1 numa:1 core:4 pu:2", {"n"}, 2);
        REQUIRE(h.rc == K8S_CONS_TRES_OK);
        built = h.inv->inv;
    }
    std::string err;
    k8s_cons_tres::NodeEntry *e = built.node("n");
    REQUIRE(e);
    k8s_cons_tres::Words w(e->topology.cpu->words, 0);
    k8s_cons_tres::bit_set(w, 3);  // core 1, second thread
    REQUIRE(e->ledger.hold(k8s_cons_tres::Holder::of_claim("ns", "pod"), w, 0b10, &err));
    k8s_cons_tres_inventory *inv = k8s_cons_tres::wrap_inventory(std::move(built));
    uint32_t cores[4], gres[2];
    size_t nc = 0, ng = 0;
    char msg[64];
    REQUIRE(k8s_cons_tres_k8s_held(inv, "n", cores, 4, &nc, gres, 2, &ng, msg, sizeof msg) == K8S_CONS_TRES_OK);
    CHECK(nc == 1);
    CHECK(cores[0] == 1);
    CHECK(ng == 1);
    CHECK(gres[0] == 1);
    k8s_cons_tres_inventory_free(inv);
}
