// SPDX-License-Identifier: GPL-2.0-or-later
// The feed's build path (InventoryUpdater: NodeBuilder reading the compact
// slices in place, CPU parts shared between nodes, only changed nodes
// rebuilt, all in one pass) against the plain one (Inventory::build on the
// expanded snapshot, as the feed did before), on random clusters and across
// random changes: the same nodes, topologies, warnings, reasons and ledgers.
#include "k8s_sync/claim_json.h"
#include "k8s_sync/claim_owner.h"
#include "k8s_sync/inventory_update.h"
#include "testsuite/unit/core_test_util.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <random>
#include <set>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using k8s_cons_tres::test::slice;

namespace {

using Rng = std::mt19937;

bool chance(Rng &rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
int pick(Rng &rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

std::string fmt(const char *f, int a) {
    char b[64];
    std::snprintf(b, sizeof b, f, a);
    return b;
}

PluginConfig config() {
    PluginConfig pc;
    pc.cluster_label = "test";
    pc.gpu_drivers = {"gpu.nvidia.com"};
    return pc;
}

struct Layout {
    int sockets, cores, threads, numa_per_socket;
    bool grouped, roots;
};
// A few layouts, so that many nodes share one (as in a real cluster).
const std::vector<Layout> kLayouts = {
    {2, 4, 2, 1, false, false}, {2, 4, 2, 2, false, true}, {1, 4, 1, 1, false, false},
    {2, 2, 2, 1, false, true},  {1, 4, 2, 1, true, false}, {2, 4, 2, 2, true, true},
};

// What varies a node beyond its layout; most nodes have none of it.
struct Quirks {
    bool drop_cpu = false, taint_cpu = false, bad_type = false, missing_id = false,
         duplicate_id = false, reserved_group = false, numa_disagrees = false;
};

Quirks quirks(Rng &rng) {
    Quirks q;
    if (!chance(rng, 0.35))
        return q;
    q.drop_cpu = chance(rng, 0.3);
    q.taint_cpu = chance(rng, 0.3);
    q.bad_type = chance(rng, 0.15);
    q.missing_id = chance(rng, 0.08);
    q.duplicate_id = chance(rng, 0.08);
    q.reserved_group = chance(rng, 0.3);
    q.numa_disagrees = chance(rng, 0.15);
    return q;
}

std::vector<Device> cpu_devices(const Layout &l, const Quirks &q) {
    std::vector<Device> out;
    const int per_thread = l.sockets * l.cores;
    const int numas = l.sockets * l.numa_per_socket;
    auto numa_of = [&](int socket, int core) {
        return socket * l.numa_per_socket + core * l.numa_per_socket / l.cores;
    };
    if (l.grouped) {
        for (int n = 0; n < numas; ++n) {
            const int ncpus = l.cores * l.threads / l.numa_per_socket;
            Device d;
            d.name = fmt("cpu-numa%d", n);
            d.attributes["dra.cpu/numCPUs"] = int64_t(ncpus);
            d.attributes["dra.cpu/socketID"] = int64_t(n / l.numa_per_socket);
            d.attributes["resource.kubernetes.io/numaNode"] = int64_t(n);
            d.attributes["dra.cpu/smtEnabled"] = l.threads == 2;
            if (l.roots)
                d.attributes["resource.kubernetes.io/pcieRoot"] = fmt("pci0000:%02x", 0x10 * n);
            d.capacity["dra.cpu/cpu"] = std::to_string(ncpus - (q.reserved_group && n == 0 ? 2 : 0));
            if (q.taint_cpu && n == numas - 1)
                d.taints.push_back({"dra.cpu/offline", "", "NoSchedule"});
            out.push_back(std::move(d));
        }
        return out;
    }
    for (int s = 0; s < l.sockets; ++s)
        for (int c = 0; c < l.cores; ++c)
            for (int t = 0; t < l.threads; ++t) {
                const int cpu = t * per_thread + s * l.cores + c;
                const int numa = numa_of(s, c);
                Device d;
                d.name = fmt("cpudev%03d", static_cast<int>(out.size()));
                d.attributes["dra.cpu/cpuID"] = int64_t(q.duplicate_id && cpu == 1 ? 0 : cpu);
                d.attributes["dra.cpu/coreID"] = int64_t(c);
                d.attributes["dra.cpu/socketID"] = int64_t(s);
                d.attributes["dra.cpu/cacheL3ID"] = int64_t(numa);
                d.attributes["dra.cpu/coreType"] = std::string("standard");
                d.attributes["dra.cpu/smtEnabled"] = l.threads == 2;
                d.attributes["resource.kubernetes.io/numaNode"] = int64_t(numa);
                d.attributes["dra.cpu/numaNodeID"] = int64_t(q.numa_disagrees && cpu == 0 ? numa + 1 : numa);
                if (l.roots)
                    d.attributes["resource.kubernetes.io/pcieRoot"] =
                        AttrStrings{fmt("pci0000:%02x", 0x10 * numa), "pci0000:ff"};
                if (q.bad_type && cpu == 2)
                    d.attributes["dra.cpu/coreType"] = int64_t(7);
                if (q.missing_id && cpu == 3)
                    d.attributes.erase("dra.cpu/cpuID");
                if (q.taint_cpu && cpu == per_thread - 1)
                    d.taints.push_back({"dra.cpu/offline", "", "NoExecute"});
                out.push_back(std::move(d));
            }
    if (q.drop_cpu && out.size() > 2)
        out.erase(out.begin() + 1);  // a reserved CPU: the model keeps a placeholder
    return out;
}

std::vector<Device> gpu_devices(Rng &rng, int node, int numas, bool roots) {
    std::vector<Device> out;
    const int n = chance(rng, 0.15) ? 0 : pick(rng, 2, 4);
    for (int g = 0; g < n; ++g) {
        Device d;
        d.name = fmt("gpu-%d", g);
        d.attributes["gpu.nvidia.com/type"] = std::string("gpu");
        d.attributes["gpu.nvidia.com/uuid"] = "GPU-" + std::to_string(node) + "-" + std::to_string(g);
        d.attributes["gpu.nvidia.com/productName"] = std::string(chance(rng, 0.5) ? "A100" : "H100");
        d.attributes["resource.kubernetes.io/pciBusID"] = fmt("0000:%02x:00.0", 0x10 + 0x10 * g);
        if (roots)
            d.attributes["resource.kubernetes.io/pcieRoot"] = fmt("pci0000:%02x", 0x10 * (g % numas));
        if (!roots || chance(rng, 0.7))
            d.attributes["resource.kubernetes.io/numaNode"] = int64_t(chance(rng, 0.05) ? 9 : g % numas);
        d.capacity["gpu.nvidia.com/memory"] = "80Gi";
        if (chance(rng, 0.1))
            d.taints.push_back({"gpu.nvidia.com/xid", "79", "NoSchedule"});
        if (chance(rng, 0.1)) {
            d.allowMultipleAllocations = true;
            d.capacity["gpu.nvidia.com/cores"] = "100";
        }
        out.push_back(d);
        if (chance(rng, 0.15)) {
            Device mig;
            mig.name = fmt("gpu-%d-mig-1g", g);
            mig.attributes["gpu.nvidia.com/type"] = std::string("mig");
            mig.attributes["gpu.nvidia.com/parentUUID"] = d.attributes["gpu.nvidia.com/uuid"];
            CounterConsumption cc;
            cc.counterSet = fmt("gpu-%d-counter-set", g);
            cc.counters["memory"] = "10Gi";
            mig.consumesCounters.push_back(cc);
            out.push_back(std::move(mig));
        }
    }
    if (chance(rng, 0.03)) {
        Device odd;
        odd.name = "nvswitch-0";
        out.push_back(std::move(odd));
    }
    return out;
}


// A random cluster in the informers' form, changed at random.
class Cluster {
public:
    explicit Cluster(uint32_t seed) : rng_(seed) {
        snap_.driverSynced = {{"dra.cpu", true}, {"gpu.nvidia.com", true}};
        snap_.slicesByDriver["dra.cpu"];
        snap_.slicesByDriver["gpu.nvidia.com"];
        snap_.claimsSynced = true;
    }

    void add_node() {
        const int id = next_node_++;
        const std::string node = fmt("node%03d", id);
        nodes_.push_back(node);
        put_slices(node, id);
    }

    // The node's slices, new (a new resourceVersion for each).
    void put_slices(const std::string &node, int id) {
        remove_slices(node);
        const Layout &l = kLayouts[size_t(pick(rng_, 0, int(kLayouts.size()) - 1))];
        layouts_[node] = l;
        const Quirks q = quirks(rng_);
        std::vector<ResourceSlice> out;
        if (!chance(rng_, 0.05)) {  // else no CPU pool at all
            std::vector<Device> cpus = cpu_devices(l, q);
            if (chance(rng_, 0.1) && cpus.size() > 1) {  // one pool in two slices
                std::vector<Device> rest(cpus.begin() + long(cpus.size() / 2), cpus.end());
                cpus.resize(cpus.size() / 2);
                out.push_back(slice(node, "dra.cpu", cpus, 2, 2, "a"));
                if (!chance(rng_, 0.3))  // else incomplete
                    out.push_back(slice(node, "dra.cpu", rest, 2, 2, "b"));
                if (chance(rng_, 0.3))  // a stale slice of an older generation
                    out.push_back(slice(node, "dra.cpu", cpu_devices(kLayouts[2], {}), 1, 1, "old"));
            } else {
                out.push_back(slice(node, "dra.cpu", cpus, 1, 1, "0"));
            }
        }
        std::vector<Device> gpus = gpu_devices(rng_, id, l.sockets * l.numa_per_socket, l.roots);
        if (!gpus.empty()) {
            if (chance(rng_, 0.05)) {  // the same GPU in two slices of one pool
                out.push_back(slice(node, "gpu.nvidia.com", gpus, 1, 2, "a"));
                out.push_back(slice(node, "gpu.nvidia.com", {gpus.front()}, 1, 2, "b"));
            } else {
                out.push_back(slice(node, "gpu.nvidia.com", gpus, 1, 1, "0"));
            }
        }
        for (ResourceSlice &s : out) {
            s.resourceVersion = std::to_string(++rv_);
            slice_names_[node].push_back({s.driver, s.name});
            snap_.slicesByDriver[s.driver].set(s.name, std::make_shared<const CompactSlice>(compactSlice(s)));
        }
    }

    void remove_slices(const std::string &node) {
        for (const auto &[driver, name] : slice_names_[node])
            snap_.slicesByDriver[driver].erase(name);
        slice_names_.erase(node);
    }

    void add_claim() {
        const std::string node = nodes_[size_t(pick(rng_, 0, int(nodes_.size()) - 1))];
        ClaimHolding c;
        c.ns = "default";
        c.name = "claim-" + std::to_string(next_claim_++);
        c.uid = "uid-" + c.name;
        c.allocated = !chance(rng_, 0.1);
        c.nodeName = node;
        const Layout &l = layouts_[node];
        const int ncpus = l.sockets * l.cores * l.threads;
        auto result = [&](const std::string &driver, const std::string &device, const std::string &pool) {
            AllocationResult r;
            r.request = "r";
            r.driver = driver;
            r.pool = pool;
            r.device = device;
            return r;
        };
        const int kind = pick(rng_, 0, 9);
        if (kind == 0 && !previous_.empty()) {  // the devices of an earlier claim again
            ClaimHolding prev = previous_[size_t(pick(rng_, 0, int(previous_.size()) - 1))];
            c.results = prev.results;
            c.nodeName = prev.nodeName;
            c.opaqueCpuset = prev.opaqueCpuset;
        } else if (kind == 1) {  // a device the node does not have
            c.results.push_back(result(chance(rng_, 0.5) ? "dra.cpu" : "gpu.nvidia.com",
                                       chance(rng_, 0.5) ? "cpudev999" : "gpu-9", node));
        } else if (kind == 2) {  // on two nodes, no node selector
            c.nodeName.clear();
            const std::string other = nodes_[size_t(pick(rng_, 0, int(nodes_.size()) - 1))];
            c.results.push_back(result("gpu.nvidia.com", "gpu-0", node));
            c.results.push_back(result("dra.cpu", l.grouped ? "cpu-numa0" : "cpudev000", other));
        } else if (kind == 3) {  // on a node that is not there
            c.nodeName = "ghost";
            c.results.push_back(result("dra.cpu", "cpudev000", "ghost"));
        } else {
            const int n = pick(rng_, 1, 3);
            for (int i = 0; i < n; ++i) {
                if (l.grouped)
                    c.results.push_back(result("dra.cpu", fmt("cpu-numa%d", pick(rng_, 0, l.sockets * l.numa_per_socket - 1)), node));
                else
                    c.results.push_back(result("dra.cpu", fmt("cpudev%03d", pick(rng_, 0, ncpus - 1)), node));
            }
            if (l.grouped) {
                if (chance(rng_, 0.5))
                    c.opaqueCpuset = std::to_string(pick(rng_, 0, 2)) + "-" + std::to_string(pick(rng_, 3, 5));
                else
                    c.results.front().consumedCapacity["dra.cpu/cpu"] = std::to_string(pick(rng_, 1, 4));
            }
            if (chance(rng_, 0.5))
                c.results.push_back(result("gpu.nvidia.com", chance(rng_, 0.2) ? "gpu-0-mig-1g" : fmt("gpu-%d", pick(rng_, 0, 1)), node));
            if (kind >= 8) {  // Slurm's own claim for a job
                c.ns = "slurm";
                c.labels = {{kLabelManagedBy, kManagedByValue}, {kLabelCluster, "test"},
                            {kLabelJob, std::to_string(100 + pick(rng_, 0, 5))}, {kLabelNode, labelValue(node)}};
            } else if (kind == 7) {  // a pod's claim that only looks like a job's
                c.labels = {{kLabelJob, "42"}};
            }
        }
        put_claim(std::move(c));
    }

    void change_claim() {
        if (previous_.empty())
            return;
        ClaimHolding c = previous_[size_t(pick(rng_, 0, int(previous_.size()) - 1))];
        if (!snap_.claims.find(claimKey(c.ns, c.name)))
            return;
        if (chance(rng_, 0.5)) {
            snap_.claims.erase(claimKey(c.ns, c.name));
            return;
        }
        c.allocated = !c.allocated;
        put_claim(std::move(c));
    }

    void put_claim(ClaimHolding c) {
        c.resourceVersion = std::to_string(++rv_);
        previous_.push_back(c);
        const std::string key = claimKey(c.ns, c.name);
        snap_.claims.set(key, std::make_shared<const ClaimHolding>(std::move(c)));
    }

    // A random round of changes, as watch events bring them.
    void change() {
        const int n = pick(rng_, 0, 6);
        for (int i = 0; i < n; ++i) {
            const int what = pick(rng_, 0, 5);
            const std::string node = nodes_[size_t(pick(rng_, 0, int(nodes_.size()) - 1))];
            if (what == 0)
                put_slices(node, pick(rng_, 0, 1000));
            else if (what == 1)
                remove_slices(node);
            else if (what == 2)
                add_node();
            else if (what == 3)
                change_claim();
            else
                add_claim();
        }
        ++snap_.version;
    }

    const Snapshot &snapshot() const { return snap_; }
    Rng &rng() { return rng_; }

private:
    Rng rng_;
    Snapshot snap_;
    std::vector<std::string> nodes_;
    std::map<std::string, Layout> layouts_;
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> slice_names_;
    std::vector<ClaimHolding> previous_;
    int next_node_ = 0, next_claim_ = 0;
    uint64_t rv_ = 0;
};

// The plain path: the whole snapshot expanded and built at once, claims
// marked as the feed marks them (only our own stand for Slurm jobs).
Inventory reference(const Snapshot &snap, const PluginConfig &pc) {
    std::vector<ResourceSlice> slices;
    snap.forEachSlice([&](const CompactSlice &s) { slices.push_back(s.expand()); });
    std::vector<ClaimHolding> claims;
    snap.forEachClaim([&](const ClaimHolding &c) {
        ClaimHolding copy = c;
        copy.labels.erase(kLabelJob);
        if (const uint32_t job = ownClaimJob(c, pc))
            copy.labels[kLabelJob] = std::to_string(job);
        claims.push_back(std::move(copy));
    });
    // The updater's order: slices by driver and name, claims by key.
    std::stable_sort(slices.begin(), slices.end(), [](const ResourceSlice &a, const ResourceSlice &b) {
        return std::tie(a.driver, a.name) < std::tie(b.driver, b.name);
    });
    std::stable_sort(claims.begin(), claims.end(), [](const ClaimHolding &a, const ClaimHolding &b) {
        return claimKey(a.ns, a.name) < claimKey(b.ns, b.name);
    });
    return Inventory::build(slices, claims, inventory_options(pc));
}

void same_gpu(const GpuInfo &a, const GpuInfo &b) {
    CHECK(a.driver == b.driver);
    CHECK(a.device == b.device);
    CHECK(a.uuid == b.uuid);
    CHECK(a.model == b.model);
    CHECK(a.pci_bus_id == b.pci_bus_id);
    CHECK(a.pcie_root == b.pcie_root);
    CHECK(a.memory == b.memory);
    CHECK(a.minor == b.minor);
    CHECK(a.numa_id == b.numa_id);
    CHECK(a.numa == b.numa);
    CHECK(a.socket == b.socket);
    CHECK(a.affinity_source == b.affinity_source);
    CHECK(a.unavailable == b.unavailable);
    CHECK(a.children == b.children);
    CHECK(a.shared == b.shared);
    CHECK(a.capacity == b.capacity);
}

// Everything the engine's view is made of, node by node.
void same_inventory(const Inventory &got, const Inventory &want) {
    REQUIRE(got.nodes().size() == want.nodes().size());
    for (const NodeEntry &w : want.nodes()) {
        INFO("node " << w.name);
        const NodeEntry *g = got.node(w.name);
        REQUIRE(g);
        CHECK(g->invalid == w.invalid);
        CHECK(g->warnings == w.warnings);
        CHECK(g->usable() == w.usable());
        REQUIRE(bool(g->topology.cpu) == bool(w.topology.cpu));
        if (w.topology.cpu) {
            CHECK(g->topology.cpu->fingerprint() == w.topology.cpu->fingerprint());
            CHECK(g->topology.cpu->grouped == w.topology.cpu->grouped);
            CHECK(g->topology.cpu->by_device == w.topology.cpu->by_device);
        }
        REQUIRE(g->topology.gpus.size() == w.topology.gpus.size());
        for (size_t i = 0; i < w.topology.gpus.size(); ++i)
            same_gpu(g->topology.gpus[i], w.topology.gpus[i]);
        REQUIRE(g->topology.unavailable_cpus.size() == w.topology.unavailable_cpus.size());
        for (size_t i = 0; i < w.topology.unavailable_cpus.size(); ++i) {
            CHECK(g->topology.unavailable_cpus[i].cpus == w.topology.unavailable_cpus[i].cpus);
            CHECK(g->topology.unavailable_cpus[i].reason == w.topology.unavailable_cpus[i].reason);
        }
        // free, pod-held and Slurm-held devices
        CHECK(g->ledger.free_cpus() == w.ledger.free_cpus());
        CHECK(g->ledger.free_gpus() == w.ledger.free_gpus());
        CHECK(g->ledger.job_holdings() == w.ledger.job_holdings());
        REQUIRE(g->ledger.holdings().size() == w.ledger.holdings().size());
        for (size_t i = 0; i < w.ledger.holdings().size(); ++i) {
            const Holding &a = g->ledger.holdings()[i], &b = w.ledger.holdings()[i];
            CHECK(a.who == b.who);
            CHECK(a.cpus == b.cpus);
            CHECK(a.gpus == b.gpus);
        }
        if (w.topology.cpu && w.ledger.numa_counts()) {
            REQUIRE(g->ledger.numa_counts());
            for (size_t n = 0; n < w.topology.cpu->numas.size(); ++n) {
                CHECK(g->ledger.numa_counts()[n].free_cpus == w.ledger.numa_counts()[n].free_cpus);
                CHECK(g->ledger.numa_counts()[n].whole_cores == w.ledger.numa_counts()[n].whole_cores);
                CHECK(g->ledger.numa_counts()[n].any_cores == w.ledger.numa_counts()[n].any_cores);
            }
        }
    }
}

// Nodes with equal CPU models share one object.
void shared_topologies(const Inventory &inv) {
    std::map<std::string, const CpuTopology *> by_print;
    for (const NodeEntry &e : inv.nodes()) {
        if (!e.topology.cpu)
            continue;
        auto [it, fresh] = by_print.try_emplace(e.topology.cpu->fingerprint(), e.topology.cpu.get());
        CHECK(it->second == e.topology.cpu.get());
    }
}

}  // namespace

TEST_CASE("the feed's build equals the plain build on random clusters, across changes", "[node_builder]") {
    const PluginConfig pc = config();
    for (uint32_t seed = 1; seed <= 12; ++seed) {
        INFO("seed " << seed);
        Cluster cluster(seed);
        for (int i = 0; i < 40; ++i)
            cluster.add_node();
        for (int i = 0; i < 60; ++i)
            cluster.add_claim();
        InventoryUpdater updater(pc);
        InventoryUpdater::Update first = updater.update(cluster.snapshot());
        REQUIRE(first.inventory);
        const Inventory want = reference(cluster.snapshot(), pc);
        same_inventory(*first.inventory, want);
        shared_topologies(*first.inventory);
        // All nodes built in one pass: every error the plain build reports
        // is reported (claims on two nodes add one per node rebuilt).
        const auto &errs = first.inventory->claim_errors();
        for (const std::string &e : want.claim_errors())
            CHECK(std::find(errs.begin(), errs.end(), e) != errs.end());
        // Far fewer CPU models than nodes were built.
        CHECK(updater.builder().cpu_parts_built() < first.inventory->nodes().size());
        for (int round = 0; round < 25; ++round) {
            INFO("round " << round);
            cluster.change();
            auto before = updater.current();
            InventoryUpdater::Update u = updater.update(cluster.snapshot());
            if (!u.inventory) {
                CHECK(u.rebuilt.empty());
                CHECK(updater.current() == before);
            }
            same_inventory(*updater.current(), reference(cluster.snapshot(), pc));
            shared_topologies(*updater.current());
        }
    }
}

TEST_CASE("an update rebuilds only the nodes whose objects changed", "[node_builder]") {
    const PluginConfig pc = config();
    Cluster cluster(99);
    for (int i = 0; i < 10; ++i)
        cluster.add_node();
    InventoryUpdater updater(pc);
    auto first = updater.update(cluster.snapshot());
    CHECK(first.rebuilt.size() == 10);
    CHECK_FALSE(updater.update(cluster.snapshot()).inventory);  // nothing changed
    const NodeEntry *kept = updater.current()->node("node003");
    REQUIRE(kept);
    const uint64_t stamp = kept->ledger.stamp();
    cluster.put_slices("node005", 5);
    auto u = updater.update(cluster.snapshot());
    REQUIRE(u.inventory);
    CHECK(u.rebuilt == std::vector<std::string>{"node005"});
    CHECK(u.inventory->node("node003")->ledger.stamp() == stamp);  // taken as it was
    CHECK(u.inventory->node("node003") == kept);                   // shared, not copied
    same_inventory(*u.inventory, reference(cluster.snapshot(), pc));
    cluster.remove_slices("node005");
    u = updater.update(cluster.snapshot());
    CHECK(u.rebuilt == std::vector<std::string>{"node005"});
    CHECK_FALSE(u.inventory->node("node005"));
}

namespace {

// The server's synthetic node (testsuite/apiserver/ktas/synthetic.py):
// 2 sockets x 32 cores x 2 threads, 8 GPUs.
std::vector<ResourceSlice> synthetic_node(int i) {
    const std::string node = fmt("node%05d", i);
    std::vector<Device> cpus;
    for (int s = 0; s < 2; ++s)
        for (int c = 0; c < 32; ++c)
            for (int t = 0; t < 2; ++t) {
                Device d;
                d.name = fmt("cpudev%03d", static_cast<int>(cpus.size()));
                d.attributes = {{"dra.cpu/cpuID", int64_t(t * 64 + s * 32 + c)},
                                {"dra.cpu/coreID", int64_t(c)},
                                {"dra.cpu/socketID", int64_t(s)},
                                {"dra.cpu/cacheL3ID", int64_t(s)},
                                {"dra.cpu/coreType", std::string("standard")},
                                {"dra.cpu/smtEnabled", true},
                                {"resource.kubernetes.io/numaNode", int64_t(s)},
                                {"dra.cpu/numaNodeID", int64_t(s)},
                                {"dra.net/numaNode", int64_t(s)}};
                cpus.push_back(std::move(d));
            }
    std::vector<Device> gpus;
    for (int g = 0; g < 8; ++g) {
        Device d;
        d.name = fmt("gpu-%d", g);
        d.attributes = {{"gpu.nvidia.com/type", std::string("gpu")},
                        {"gpu.nvidia.com/uuid", "GPU-" + std::to_string(i * 8 + g)},
                        {"gpu.nvidia.com/productName", std::string("NVIDIA A100-SXM4-80GB")},
                        {"resource.kubernetes.io/pciBusID", fmt("0000:%02x:00.0", 0x10 + 0x10 * g)},
                        {"resource.kubernetes.io/pcieRoot", fmt("pci0000:%02x", 0x0f + 0x10 * g)},
                        {"resource.kubernetes.io/numaNode", int64_t(g * 2 / 8)}};
        d.capacity = {{"gpu.nvidia.com/memory", "80Gi"}};
        gpus.push_back(std::move(d));
    }
    auto a = slice(node, "dra.cpu", cpus, 1, 1, "0"), b = slice(node, "gpu.nvidia.com", gpus, 1, 1, "0");
    a.resourceVersion = std::to_string(2 * i + 1);
    b.resourceVersion = std::to_string(2 * i + 2);
    return {a, b};
}

}  // namespace

TEST_CASE("identical nodes share one CPU model, built once", "[node_builder]") {
    const PluginConfig pc = config();
    Snapshot snap;
    for (int i = 0; i < 200; ++i)
        for (const ResourceSlice &s : synthetic_node(i))
            snap.slicesByDriver[s.driver].set(s.name, std::make_shared<const CompactSlice>(compactSlice(s)));
    InventoryUpdater updater(pc);
    auto u = updater.update(snap);
    REQUIRE(u.inventory);
    CHECK(updater.builder().cpu_parts_built() == 1);
    CHECK(u.inventory->distinct_topologies() == 1);
    for (const NodeEntry &e : u.inventory->nodes()) {
        CHECK(e.usable());
        CHECK(e.topology.cpu == u.inventory->nodes().front().topology.cpu);
        CHECK(e.topology.gpus.size() == 8);
    }
    same_inventory(*u.inventory, reference(snap, pc));
}

TEST_CASE("after incremental rebuilds overlapping claims keep the union out, unknown devices the node",
          "[node_builder]") {
    const PluginConfig pc = config();
    Snapshot snap;
    for (int i = 0; i < 3; ++i)
        for (const ResourceSlice &s : synthetic_node(i))
            snap.slicesByDriver[s.driver].set(s.name, std::make_shared<const CompactSlice>(compactSlice(s)));
    InventoryUpdater updater(pc);
    REQUIRE(updater.update(snap).inventory);
    auto claim = [](const std::string &name, const std::string &node, std::vector<std::string> devices) {
        ClaimHolding c;
        c.ns = "default";
        c.name = name;
        c.resourceVersion = "1";
        c.allocated = true;
        c.nodeName = node;
        for (const std::string &d : devices)
            c.results.push_back({"r", d.rfind("gpu", 0) == 0 ? "gpu.nvidia.com" : "dra.cpu", node, d, "", {}});
        return std::make_shared<const ClaimHolding>(c);
    };
    // node00001 has the same layout as node00000: it gets the shared model
    snap.claims.set("default/a", claim("a", "node00001", {"cpudev000", "cpudev001", "gpu-0"}));
    snap.claims.set("default/b", claim("b", "node00001", {"cpudev001", "cpudev002", "gpu-0", "gpu-1"}));
    snap.claims.set("default/c", claim("c", "node00002", {"cpudev003", "gpu-9"}));
    auto u = updater.update(snap);
    REQUIRE(u.inventory);
    const NodeEntry *n1 = u.inventory->node("node00001");
    REQUIRE(n1);
    CHECK(n1->topology.cpu == u.inventory->node("node00000")->topology.cpu);
    for (uint32_t cpu : {0u, 1u, 2u}) {
        const int64_t index = n1->topology.cpu->by_device.at(fmt("cpudev%03d", int(cpu)));
        CHECK_FALSE(bit_test(n1->ledger.free_cpus(), size_t(index)));
    }
    CHECK((n1->ledger.free_gpus() & 3u) == 0);
    CHECK(n1->ledger.holdings().size() == 2);
    CHECK_FALSE(u.inventory->node("node00002")->usable());
    CHECK(u.inventory->node("node00002")->invalid.find("unknown device gpu.nvidia.com/gpu-9") !=
          std::string::npos);
    same_inventory(*u.inventory, reference(snap, pc));
    // one claim goes: the other still keeps its devices out
    snap.claims.erase("default/a");
    u = updater.update(snap);
    REQUIRE(u.inventory);
    n1 = u.inventory->node("node00001");
    CHECK(bit_test(n1->ledger.free_cpus(), size_t(n1->topology.cpu->by_device.at("cpudev000"))));
    CHECK_FALSE(bit_test(n1->ledger.free_cpus(), size_t(n1->topology.cpu->by_device.at("cpudev001"))));
    same_inventory(*u.inventory, reference(snap, pc));
}

TEST_CASE("the plain incremental rebuild keeps overlapping claims' union out", "[node_builder]") {
    // Inventory::rebuild_nodes once replayed holdings one by one onto a
    // shared model, dropping the second of two overlapping claims.
    std::vector<ResourceSlice> all;
    for (int i = 0; i < 2; ++i)
        for (const ResourceSlice &s : synthetic_node(i))
            all.push_back(s);
    ClaimHolding a, b;
    a.ns = b.ns = "default";
    a.name = "a";
    b.name = "b";
    a.allocated = b.allocated = true;
    a.nodeName = b.nodeName = "node00001";
    a.results = {{"r", "dra.cpu", "node00001", "cpudev000", "", {}}, {"r", "dra.cpu", "node00001", "cpudev001", "", {}}};
    b.results = {{"r", "dra.cpu", "node00001", "cpudev001", "", {}}, {"r", "dra.cpu", "node00001", "cpudev002", "", {}}};
    const Inventory first = Inventory::build(all, {});
    const Inventory updated = Inventory::update(first, {"node00001"}, {{"node00001", {all[2], all[3]}}},
                                                {{"node00001", {a, b}}});
    const Inventory full = Inventory::build(all, {a, b});
    same_inventory(updated, full);
}

TEST_CASE("a claim reserved for a slurm-bridge pod is its job's, and follows the pod", "[node_builder]") {
    const PluginConfig pc = config();
    Snapshot snap;
    for (const ResourceSlice &s : synthetic_node(0))
        snap.slicesByDriver[s.driver].set(s.name, std::make_shared<const CompactSlice>(compactSlice(s)));
    ClaimHolding c;
    c.ns = "ml";
    c.name = "train-0-extended-resources-x7k2p";
    c.resourceVersion = "1";
    c.allocated = true;
    c.nodeName = "node00000";
    c.results = {{"cpu", "dra.cpu", "node00000", "cpudev000", "", {}},
                 {"gpu", "gpu.nvidia.com", "node00000", "gpu-0", "", {}}};
    c.reservedForPods = {"uid-1"};
    c.reservedForPodNames = {"train-0"};
    snap.claims.set("ml/" + c.name, std::make_shared<const ClaimHolding>(c));
    InventoryUpdater updater(pc);
    auto holder = [&](const InventoryUpdater::Update &u) {
        REQUIRE(u.inventory);
        const NodeEntry *n = u.inventory->node("node00000");
        REQUIRE(n);
        REQUIRE(n->ledger.holdings().size() == 1);
        return n->ledger.holdings().front().who;
    };
    CHECK(holder(updater.update(snap)) == Holder::of_claim("ml", c.name));  // no pod seen yet

    PodHolding pod;
    pod.ns = "ml";
    pod.name = "train-0";
    pod.uid = "uid-1";
    pod.labels = {{kLabelBridgeJob, "31"}};
    snap.bridgePods.set("ml/train-0", std::make_shared<const PodHolding>(pod));
    auto u = updater.update(snap);
    CHECK(u.rebuilt == std::vector<std::string>{"node00000"});  // the pod alone changes the holder
    CHECK(holder(u) == Holder::of_bridged(31, "ml", c.name));

    snap.bridgePods.erase("ml/train-0");
    CHECK(holder(updater.update(snap)) == Holder::of_claim("ml", c.name));
}
