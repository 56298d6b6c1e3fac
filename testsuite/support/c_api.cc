// SPDX-License-Identifier: GPL-2.0-or-later
// The inventory/placement part of the C ABI. Every entry point catches
// everything: no exception crosses into C.
#include "testsuite/support/c_api_bridge.h"
#include "testsuite/support/hwloc_fixture.h"
#include "core/slurm_map.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <set>
#include <string>

namespace k8s_cons_tres {

k8s_cons_tres_inventory *wrap_inventory(Inventory inv) {
    auto *h = new k8s_cons_tres_inventory;
    h->inv = std::move(inv);
    return h;
}

}  // namespace k8s_cons_tres

namespace {

using namespace k8s_cons_tres;

void put(char *buf, size_t len, const std::string &msg) {
    if (!buf || len == 0)
        return;
    const size_t n = std::min(len - 1, msg.size());
    std::memcpy(buf, msg.data(), n);
    buf[n] = '\0';
}

// Runs f, turning exceptions into K8S_CONS_TRES_EINTERNAL with a message.
template <class F>
int guarded(char *err, size_t errlen, F &&f) {
    try {
        return f();
    } catch (const std::exception &e) {
        put(err, errlen, std::string("internal error: ") + e.what());
    } catch (...) {
        put(err, errlen, "internal error");
    }
    return K8S_CONS_TRES_EINTERNAL;
}

int einval(char *err, size_t errlen, const std::string &msg) {
    put(err, errlen, msg);
    return K8S_CONS_TRES_EINVAL;
}

// The usable node, or nullptr with err set.
NodeEntry *usable_node(k8s_cons_tres_inventory *inv, const char *node, char *err, size_t errlen) {
    NodeEntry *e = node ? inv->inv.node(node) : nullptr;
    if (!e) {
        put(err, errlen, std::string("unknown node ") + (node ? node : "(null)"));
        return nullptr;
    }
    if (!e->usable()) {
        put(err, errlen, "node " + e->name + " is not usable: " + e->invalid);
        return nullptr;
    }
    return e;
}

Request to_request(const k8s_cons_tres_request &r) {
    Request q;
    q.cpus = r.cpus;
    q.whole_cores = r.whole_cores != 0;
    q.threads_per_core = r.threads_per_core;
    q.gpus = r.gpus;
    q.cpus_per_gpu = r.cpus_per_gpu;
    return q;
}

k8s_cons_tres_score to_c(const Score &s) {
    return {s.numa_nodes, s.l3_groups, s.sockets, s.cores, s.gpu_distance,
            s.free_in_numa, s.free_in_l3};
}

// Copies values into a caller array; false when it does not fit.
bool copy_out(const std::vector<uint32_t> &v, uint32_t *dst, size_t cap, size_t *n) {
    *n = v.size();
    if (v.size() > cap || (!dst && !v.empty()))
        return false;
    std::copy(v.begin(), v.end(), dst);
    return true;
}

}  // namespace

extern "C" {

int k8s_cons_tres_inventory_from_synthetic(const char *synthetic, const char *const *nodes,
                                    size_t nnodes, uint32_t gpus_per_node,
                                    k8s_cons_tres_inventory **out, char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        if (!synthetic || !out || (nnodes && !nodes))
            return einval(err, errlen, "synthetic, nodes and out are required");
        std::vector<ResourceSlice> slices;
        for (size_t i = 0; i < nnodes; ++i) {
            FixtureOptions o;
            o.node = nodes[i] ? nodes[i] : "";
            o.gpus = gpus_per_node;
            FixtureResult f = fixture_from_synthetic(synthetic, o);
            if (!f.ok)
                return einval(err, errlen, f.error);
            slices.insert(slices.end(), f.slices.begin(), f.slices.end());
        }
        *out = wrap_inventory(Inventory::build(slices, {}));
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

void k8s_cons_tres_inventory_free(k8s_cons_tres_inventory *inv) { delete inv; }

int k8s_cons_tres_node_check(k8s_cons_tres_inventory *inv, const char *node, const k8s_cons_tres_slurm_node *slurm,
                      int *state, char *reason, size_t reasonlen) {
    return guarded(reason, reasonlen, [&] {
        if (!inv || !node || !state)
            return einval(reason, reasonlen, "inv, node and state are required");
        std::lock_guard<std::mutex> lock(inv->mu);
        put(reason, reasonlen, "");
        const NodeEntry *e = inv->inv.node(node);
        if (!e) {
            *state = K8S_CONS_TRES_NODE_UNKNOWN;
            put(reason, reasonlen, std::string("no ResourceSlices for node ") + node);
        } else if (!e->usable()) {
            *state = K8S_CONS_TRES_NODE_INVALID;
            put(reason, reasonlen, e->invalid);
        } else if (std::string diff = slurm ? slurm_mismatch(e->topology,
                                                             {slurm->sockets,
                                                              slurm->cores_per_socket,
                                                              slurm->threads_per_core,
                                                              slurm->gpus})
                                            : std::string();
                   !diff.empty()) {
            *state = K8S_CONS_TRES_NODE_MISMATCH;
            put(reason, reasonlen, diff);
        } else {
            *state = K8S_CONS_TRES_NODE_OK;
        }
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

int k8s_cons_tres_node_free(k8s_cons_tres_inventory *inv, const char *node, k8s_cons_tres_free_counts *out,
                     char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        if (!inv || !out)
            return einval(err, errlen, "inv and out are required");
        std::lock_guard<std::mutex> lock(inv->mu);
        const NodeEntry *e = usable_node(inv, node, err, errlen);
        if (!e)
            return static_cast<int>(K8S_CONS_TRES_EINVAL);
        out->cpus = e->ledger.free_cpu_count();
        out->cores = e->ledger.free_core_count(*e->topology.cpu);
        out->gpus = e->ledger.free_gpu_count();
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

int k8s_cons_tres_k8s_held(k8s_cons_tres_inventory *inv, const char *node, uint32_t *cores, size_t core_cap,
                    size_t *ncores, uint32_t *gres, size_t gres_cap, size_t *ngres, char *err,
                    size_t errlen) {
    return guarded(err, errlen, [&] {
        if (!inv || !ncores || !ngres)
            return einval(err, errlen, "inv, ncores and ngres are required");
        std::lock_guard<std::mutex> lock(inv->mu);
        const NodeEntry *e = usable_node(inv, node, err, errlen);
        if (!e)
            return static_cast<int>(K8S_CONS_TRES_EINVAL);
        const CpuTopology &t = *e->topology.cpu;
        const Words held = e->ledger.held_cpus(Holder::Kind::Claim);
        std::set<uint32_t> core_set;
        for_each_bit(held.data(), held.size(),
                     [&](size_t cpu) { core_set.insert(t.cpus[cpu].core); });
        std::vector<uint32_t> gpus;
        const uint64_t g = e->ledger.held_gpus(Holder::Kind::Claim);
        for_each_bit(&g, 1, [&](size_t i) { gpus.push_back(static_cast<uint32_t>(i)); });
        const bool ok1 = copy_out({core_set.begin(), core_set.end()}, cores, core_cap, ncores);
        const bool ok2 = copy_out(gpus, gres, gres_cap, ngres);
        if (!ok1 || !ok2)
            return einval(err, errlen, "output array too small");
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

int k8s_cons_tres_place(k8s_cons_tres_inventory *inv, const char *node, const k8s_cons_tres_request *req,
                 k8s_cons_tres_placement *out, char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        if (!inv || !req || !out)
            return einval(err, errlen, "inv, req and out are required");
        std::lock_guard<std::mutex> lock(inv->mu);
        const NodeEntry *e = usable_node(inv, node, err, errlen);
        if (!e)
            return static_cast<int>(K8S_CONS_TRES_EINVAL);
        const Placement p = place(e->view(), to_request(*req));
        out->fits = p.fits;
        put(out->reason, sizeof out->reason, p.reason);
        out->score = to_c(p.score);
        const CpuTopology &t = *e->topology.cpu;
        std::vector<uint32_t> ids;
        std::set<uint32_t> core_set;
        for (uint32_t c : p.cpus) {
            ids.push_back(static_cast<uint32_t>(t.cpus[c].cpu_id));
            core_set.insert(t.cpus[c].core);
        }
        std::sort(ids.begin(), ids.end());
        // All three copies run (each sets its count) even when one overflows.
        const bool cpus_ok = copy_out(ids, out->cpu_ids, out->cpu_cap, &out->ncpus);
        const bool cores_ok = copy_out({core_set.begin(), core_set.end()}, out->cores,
                                       out->core_cap, &out->ncores);
        const bool gres_ok = copy_out(p.gpus, out->gres, out->gres_cap, &out->ngres);
        if (!(cpus_ok && cores_ok && gres_ok))
            return einval(err, errlen, "output array too small");
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

}  // extern "C"

namespace {

using Ranker = std::vector<RankEntry> (*)(k8s_cons_tres_inventory *, const std::vector<NodeView> &,
                                          const Request &);

int rank_with(Ranker ranker, k8s_cons_tres_inventory *inv, const char *const *nodes, size_t nnodes,
              const k8s_cons_tres_request *req, size_t *order, int *fits, k8s_cons_tres_score *scores,
              char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        if (!inv || !req || !order || !fits || (nnodes && !nodes))
            return einval(err, errlen, "inv, nodes, req, order and fits are required");
        std::lock_guard<std::mutex> lock(inv->mu);
        std::vector<NodeView> views(nnodes);
        std::vector<bool> known(nnodes, false);
        for (size_t i = 0; i < nnodes; ++i) {
            const NodeEntry *e = nodes[i] ? inv->inv.node(nodes[i]) : nullptr;
            if (e && e->usable()) {
                views[i] = e->view();
                known[i] = true;
            }
        }
        const auto ranked = ranker(inv, views, to_request(*req));
        for (size_t i = 0; i < ranked.size(); ++i) {
            order[i] = ranked[i].node;
            fits[i] = ranked[i].fits && known[ranked[i].node];
            if (scores)
                scores[i] = to_c(ranked[i].score);
        }
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

}  // namespace

extern "C" {

int k8s_cons_tres_rank(k8s_cons_tres_inventory *inv, const char *const *nodes, size_t nnodes,
                const k8s_cons_tres_request *req, size_t *order, int *fits, k8s_cons_tres_score *scores,
                char *err, size_t errlen) {
    const Ranker exact = [](k8s_cons_tres_inventory *h, const std::vector<NodeView> &views,
                            const Request &r) { return h->ranks.rank(views, r); };
    return rank_with(exact, inv, nodes, nnodes, req, order, fits, scores, err, errlen);
}

int k8s_cons_tres_rank_coarse(k8s_cons_tres_inventory *inv, const char *const *nodes, size_t nnodes,
                       const k8s_cons_tres_request *req, size_t *order, int *fits,
                       k8s_cons_tres_score *scores, char *err, size_t errlen) {
    const Ranker coarse = [](k8s_cons_tres_inventory *, const std::vector<NodeView> &views,
                             const Request &r) { return rank_nodes_coarse(views, r); };
    return rank_with(coarse, inv, nodes, nnodes, req, order, fits, scores, err, errlen);
}

int k8s_cons_tres_job_begin(k8s_cons_tres_inventory *inv, const char *node, uint32_t job_id,
                     const uint32_t *cores, size_t ncores, const uint32_t *gres, size_t ngres,
                     char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        if (!inv || (ncores && !cores) || (ngres && !gres))
            return einval(err, errlen, "inv, cores and gres are required");
        std::lock_guard<std::mutex> lock(inv->mu);
        const NodeEntry *e = usable_node(inv, node, err, errlen);
        if (!e)
            return static_cast<int>(K8S_CONS_TRES_EINVAL);
        const CpuTopology &t = *e->topology.cpu;
        std::vector<uint32_t> cpus;
        for (size_t i = 0; i < ncores; ++i) {
            if (cores[i] >= t.cores.size())
                return einval(err, errlen, "core index " + std::to_string(cores[i]) +
                                               " does not exist on " + e->name);
            for (uint32_t th = 0; th < t.cores[cores[i]].nthreads; ++th)
                cpus.push_back(t.cores[cores[i]].first_cpu + th);
        }
        std::string why;
        if (!inv->inv.job_begin(e->name, job_id, cpus, {gres, gres + ngres}, &why))
            return einval(err, errlen, why);
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

int k8s_cons_tres_job_end(k8s_cons_tres_inventory *inv, uint32_t job_id, size_t *nodes) {
    return guarded(nullptr, 0, [&] {
        if (!inv)
            return static_cast<int>(K8S_CONS_TRES_EINVAL);
        std::lock_guard<std::mutex> lock(inv->mu);
        const size_t n = inv->inv.job_end(job_id);
        if (nodes)
            *nodes = n;
        return static_cast<int>(K8S_CONS_TRES_OK);
    });
}

}  // extern "C"
