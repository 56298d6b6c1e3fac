// SPDX-License-Identifier: GPL-2.0-or-later
// The engine the scheduling path asks: which nodes are Kubernetes nodes,
// what to keep out of them, when its view is stale, and the choice it makes.
#include "core/engine.h"
#include "testsuite/support/hwloc_fixture.h"

#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <tuple>

using namespace k8s_cons_tres;

namespace {

struct Clock {
    Engine::Clock::time_point now{std::chrono::hours(1)};
};

PluginConfig config() {
    PluginConfig c;
    c.in_cluster = true;
    c.stale_after = std::chrono::seconds(30);
    c.cluster_label = "hpc1";
    return c;
}

std::vector<ResourceSlice> slices(const std::string &node) {
    FixtureOptions o;
    o.node = node;
    o.gpus = 4;
    FixtureResult f = fixture_from_synthetic("pack:2 numa:2 l3:1 core:4 pu:2", o);
    REQUIRE(f.ok);
    return f.slices;
}

// A pod's claim holding the CPUs with these ids and these GPUs on node1.
ClaimHolding pod_claim(const std::vector<ResourceSlice> &sl, std::vector<int64_t> cpu_ids,
                       std::vector<std::string> gpus, std::map<std::string, std::string> labels = {}) {
    ClaimHolding c;
    c.ns = "web";
    c.name = "pod-0";
    c.allocated = true;
    c.nodeName = "node1";
    c.labels = std::move(labels);
    for (const auto &s : sl)
        for (const auto &d : s.devices) {
            auto it = d.attributes.find("dra.cpu/cpuID");
            if (it != d.attributes.end() &&
                std::find(cpu_ids.begin(), cpu_ids.end(), std::get<int64_t>(it->second)) != cpu_ids.end())
                c.results.push_back({"cpu", "dra.cpu", "node1", d.name, "", {}});
        }
    for (const auto &g : gpus) c.results.push_back({"gpu", "gpu.nvidia.com", "node1", g, "", {}});
    return c;
}

}  // namespace

TEST_CASE("integration off: every node is plain cons_tres") {
    Engine e(std::nullopt);
    CHECK(e.generation() == 0);
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::NotK8s);
}

TEST_CASE("Kubernetes nodes are unavailable until the first sync, and when stale") {
    Clock clock;
    Engine e(config(), [&] { return clock.now; });
    auto before = e.exclusion("node1", nullptr, true);
    CHECK(before.state == ViewState::Unavailable);
    CHECK(before.reason == "inventory not yet in sync with the Kubernetes API server");
    CHECK(e.exclusion("other", nullptr, false).state == ViewState::NotK8s);

    auto sl = slices("node1");
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {})));
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::Ready);
    // a node with slices is a Kubernetes node even when not listed
    CHECK(e.exclusion("node1", nullptr, false).state == ViewState::Ready);
    const uint64_t fresh = e.generation();

    clock.now += std::chrono::seconds(31);
    auto stale = e.exclusion("node1", nullptr, true);
    CHECK(stale.state == ViewState::Unavailable);
    CHECK(stale.reason == "inventory is 31s old (StaleAfter=30s): API server unreachable?");
    CHECK(e.generation() != fresh);
    e.mark_fresh();
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::Ready);
    CHECK(e.generation() == fresh);
}

TEST_CASE("a view published before every informer listed is not in sync, whatever the clock reads") {
    // A steady clock near its epoch (a machine just booted, or this test's
    // clock at 0) must not make a never-synced view look fresh.
    Clock clock;
    clock.now = Engine::Clock::time_point{};
    Engine e(config(), [&] { return clock.now; });
    CHECK(e.stale_reason() == "inventory not yet in sync with the Kubernetes API server");
    e.publish(std::make_shared<const Inventory>(Inventory::build(slices("node1"), {})), false);
    auto ex = e.exclusion("node1", nullptr, true);
    CHECK(ex.state == ViewState::Unavailable);
    CHECK(ex.reason == "inventory not yet in sync with the Kubernetes API server");
    CHECK(e.stale_reason() == ex.reason);

    e.mark_fresh();  // at tick 0 of the clock: still a sync
    CHECK(e.stale_reason() == std::nullopt);
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::Ready);
    clock.now += std::chrono::seconds(31);
    CHECK(e.stale_reason() == "inventory is 31s old (StaleAfter=30s): API server unreachable?");
}

TEST_CASE("what pods hold is kept out, in Slurm core and GRES indices") {
    Engine e(config());
    auto sl = slices("node1");
    // CPU ids 0 and 1 are the two threads of core 0 here; 6 is core 3's first
    auto inv = Inventory::build(sl, {pod_claim(sl, {0, 1, 6}, {"gpu-2"})});
    e.publish(std::make_shared<const Inventory>(std::move(inv)));
    auto ex = e.exclusion("node1", nullptr, true);
    REQUIRE(ex.state == ViewState::Ready);
    CHECK(ex.cores == std::vector<uint32_t>{0, 3});
    CHECK(ex.gres == std::vector<uint32_t>{2});
}

TEST_CASE("a Slurm definition that disagrees with the slices is a mismatch with the difference") {
    Engine e(config());
    e.publish(std::make_shared<const Inventory>(Inventory::build(slices("node1"), {})));
    SlurmNodeDef def{2, 6, 2, 4};
    auto ex = e.exclusion("node1", &def, true);
    CHECK(ex.state == ViewState::Mismatch);
    CHECK(ex.reason == "Slurm node definition disagrees with its ResourceSlices: cores per socket: slurm 6, slices 8");
    SlurmNodeDef good{2, 8, 2, 4};
    CHECK(e.exclusion("node1", &good, true).state == ViewState::Ready);
}

TEST_CASE("our own job claims do not change the view's generation; pod claims do") {
    Engine e(config());
    auto sl = slices("node1");
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {})));
    e.job_started({7, "u", {{"node1", {1}, {}}}});  // CPU ids 2 and 3 are core 1
    const uint64_t g0 = e.generation();
    InventoryOptions io;
    io.job_label = "k8s-cons-tres.slurm.io/job-id";
    auto job_claim = pod_claim(sl, {2, 3}, {}, {{io.job_label, "7"}});
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {job_claim}, io)));
    CHECK(e.generation() == g0);
    CHECK(e.exclusion("node1", nullptr, true).cores.empty());
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {pod_claim(sl, {4}, {})}, io)));
    CHECK(e.generation() != g0);
}

TEST_CASE("a job's claim is Slurm's only within what slurmctld allocated to the job there") {
    Engine e(config());
    auto sl = slices("node1");
    InventoryOptions io;
    io.job_label = "k8s-cons-tres.slurm.io/job-id";
    // job 7 really has core 1 (CPU ids 2, 3) and GPU 1; its claim says more
    e.job_started({7, "u", {{"node1", {1}, {1}}}});
    auto greedy = pod_claim(sl, {2, 3, 4, 5}, {"gpu-1", "gpu-3"}, {{io.job_label, "7"}});
    auto unknown = pod_claim(sl, {8}, {}, {{io.job_label, "99"}});
    unknown.name = "pod-1";
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {greedy, unknown}, io)));
    auto ex = e.exclusion("node1", nullptr, true);
    REQUIRE(ex.state == ViewState::Ready);
    CHECK(ex.cores == std::vector<uint32_t>{1, 2, 4});  // the whole claim and job 99's stay out
    CHECK(ex.gres == std::vector<uint32_t>{1, 3});

    auto own = pod_claim(sl, {2, 3}, {"gpu-1"}, {{io.job_label, "7"}});
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {own}, io)));
    auto ok = e.exclusion("node1", nullptr, true);
    CHECK(ok.cores.empty());
    CHECK(ok.gres.empty());
    // once the job ended its claim only lags behind: Slurm may use its
    // devices at once, and the engine's choice sees them free
    const uint64_t g = e.generation();
    e.job_ended(7);
    CHECK(e.generation() == g);
    CHECK(e.exclusion("node1", nullptr, true).cores.empty());
    Request r;
    r.cpus = 16;
    r.gpus = 4;
    CHECK(e.choose("node1", r, {}, 0).fits);
}

TEST_CASE("after a restart our claims count once slurmctld has told its jobs") {
    Engine e(config());
    auto sl = slices("node1");
    InventoryOptions io;
    io.job_label = "k8s-cons-tres.slurm.io/job-id";
    auto own = pod_claim(sl, {2, 3}, {}, {{io.job_label, "7"}});
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {own}, io)));
    CHECK(e.exclusion("node1", nullptr, true).cores == std::vector<uint32_t>{1});
    const uint64_t g = e.generation();
    e.jobs_known({{7, "u", {{"node1", {1}, {}}}}});
    CHECK(e.generation() != g);
    CHECK(e.exclusion("node1", nullptr, true).cores.empty());
}

TEST_CASE("the choice avoids pod-held and Slurm-busy cores and aligns GPUs") {
    Engine e(config());
    auto sl = slices("node1");
    // pods hold all of NUMA node 0's GPU (gpu-0); Slurm jobs use core 4
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {pod_claim(sl, {}, {"gpu-0"})})));
    Request r;
    r.cpus = 4;
    r.whole_cores = true;
    r.gpus = 1;
    auto c = e.choose("node1", r, {4}, 0);
    REQUIRE(c.fits);
    CHECK(c.cores.size() == 2);
    CHECK(std::find(c.cores.begin(), c.cores.end(), 4u) == c.cores.end());
    REQUIRE(c.gres.size() == 1);
    CHECK(c.gres[0] != 0);
    CHECK(c.score.numa_nodes == 1);
    // everything busy: does not fit, with a reason
    auto none = e.choose("node1", r, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 0);
    CHECK_FALSE(none.fits);
    CHECK_FALSE(none.reason.empty());
}

TEST_CASE("an inventory update rebuilds only the changed nodes and equals a full build") {
    auto a = slices("node1");
    FixtureOptions o;
    o.node = "node2";
    o.gpus = 4;
    auto b = fixture_from_synthetic("pack:2 numa:2 l3:1 core:4 pu:2", o).slices;
    std::vector<ResourceSlice> all = a;
    all.insert(all.end(), b.begin(), b.end());
    const Inventory first = Inventory::build(all, {});
    REQUIRE(first.nodes().size() == 2);

    // a pod takes CPUs on node1 only
    ClaimHolding pod = pod_claim(a, {0, 1}, {"gpu-1"});
    const Inventory updated = Inventory::update(first, {"node1"}, {{"node1", a}}, {{"node1", {pod}}});
    const Inventory full = Inventory::build(all, {pod});
    for (const char *n : {"node1", "node2"}) {
        INFO(n);
        REQUIRE(updated.node(n));
        CHECK(updated.node(n)->ledger.free_cpus() == full.node(n)->ledger.free_cpus());
        CHECK(updated.node(n)->ledger.free_gpus() == full.node(n)->ledger.free_gpus());
    }
    CHECK(updated.node("node1")->ledger.free_cpu_count() == 30);
    // identical nodes keep sharing one topology
    CHECK(updated.node("node1")->topology.cpu == updated.node("node2")->topology.cpu);
    CHECK(updated.distinct_topologies() == 1);

    // a node whose slices are gone leaves
    const Inventory gone = Inventory::update(updated, {"node2"}, {}, {});
    CHECK(gone.node("node2") == nullptr);
    REQUIRE(gone.node("node1"));
    CHECK(gone.node("node1")->ledger.free_cpu_count() == 30);
}

TEST_CASE("a controller that cannot write claims keeps Kubernetes nodes from new jobs, as a stale view does") {
    Engine e(config());
    auto sl = slices("node1");
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {})));
    REQUIRE(e.exclusion("node1", nullptr, true).state == ViewState::Ready);
    const uint64_t g = e.generation();
    e.set_write_problem("a claim write was refused (slurm/x: 403)");
    const auto ex = e.exclusion("node1", nullptr, true);
    CHECK(ex.state == ViewState::Unavailable);
    CHECK(ex.reason == "claims cannot be written: a claim write was refused (slurm/x: 403)");
    CHECK(e.generation() != g);  // slurmctld's cache of the view is rebuilt
    REQUIRE(e.stale_reason());
    CHECK(e.exclusion("plain", nullptr, false).state == ViewState::NotK8s);
    e.set_write_problem(std::nullopt);
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::Ready);
    CHECK(!e.stale_reason());
}

TEST_CASE("a new view made while an informer is behind does not make the view fresh") {
    Clock clock;
    Engine e(config(), [&] { return clock.now; });
    auto sl = slices("node1");
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {})), false);
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::Unavailable);
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {})), true);
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::Ready);
    clock.now += std::chrono::seconds(31);
    // the slices informer keeps changing things; the claims one is silent
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {pod_claim(sl, {4}, {})})), false);
    CHECK(e.exclusion("node1", nullptr, true).state == ViewState::Unavailable);
}

namespace {
struct RecordingSink : ClaimSink {
    std::vector<std::string> calls;
    void job_started(const JobAlloc &j, std::shared_ptr<const Inventory>) override {
        calls.push_back("started " + std::to_string(j.job_id));
    }
    void job_ended(uint32_t id) override { calls.push_back("ended " + std::to_string(id)); }
    void job_finishing(uint32_t id) override { calls.push_back("finishing " + std::to_string(id)); }
    void job_released(uint32_t id, const std::string &node) override {
        calls.push_back("released " + std::to_string(id) + " " + node);
    }
    void jobs_known(const std::vector<JobAlloc> &r, std::shared_ptr<const Inventory>) override {
        calls.push_back("known " + std::to_string(r.size()));
    }
    void node_registered(const std::string &node, std::chrono::seconds settle) override {
        calls.push_back("registered " + node + " " + std::to_string(settle.count()));
    }
    void standby() override { calls.push_back("standby"); }
    GateState gate(uint32_t id) const override {
        return {GateState::Kind::Wait, 0, id, "asked"};
    }
};
}  // namespace

TEST_CASE("a slurmd's registration reaches the claim writer under the node's Kubernetes name") {
    PluginConfig c = config();
    c.node_name_map = {{"gpu01", "worker-gpu01"}};
    Engine e(c);
    auto sink = std::make_shared<RecordingSink>();
    e.set_claim_sink(sink);
    e.node_registered("gpu01", std::chrono::seconds(30));
    e.node_registered("node2", std::chrono::seconds(0));
    CHECK(sink->calls == std::vector<std::string>{"registered worker-gpu01 30", "registered node2 0"});
    Engine off(std::nullopt);  // integration off: nothing to tell
    off.set_claim_sink(sink);
    off.node_registered("gpu01", std::chrono::seconds(30));
    CHECK(sink->calls.size() == 2);
}

TEST_CASE("a controller leaving control forgets Slurm's jobs and tells the claim writer") {
    Engine e(config());
    auto sink = std::make_shared<RecordingSink>();
    e.set_claim_sink(sink);
    auto sl = slices("node1");
    InventoryOptions io;
    io.job_label = "k8s-cons-tres.slurm.io/job-id";
    e.jobs_known({{7, "u", {{"node1", {1}, {}}}}});
    e.publish(std::make_shared<const Inventory>(
        Inventory::build(sl, {pod_claim(sl, {2, 3}, {}, {{io.job_label, "7"}})}, io)));
    CHECK(e.exclusion("node1", nullptr, true).cores.empty());
    e.standby();
    CHECK(sink->calls == std::vector<std::string>{"known 1", "standby"});
    // its frozen job list vouches for no claim any more: fail closed
    CHECK(e.exclusion("node1", nullptr, true).cores == std::vector<uint32_t>{1});
}

TEST_CASE("a pod's claim on one node stamps only that node") {
    Engine e(config());
    auto a = slices("node1"), b = slices("node2");
    std::vector<ResourceSlice> both = a;
    both.insert(both.end(), b.begin(), b.end());
    e.publish(std::make_shared<const Inventory>(Inventory::build(both, {})));
    const uint64_t g0 = e.generation();
    CHECK(e.full_stamp() == g0 / 2);  // the first view is every node's
    CHECK(e.node_stamp("node1") == g0 / 2);
    e.publish(std::make_shared<const Inventory>(Inventory::build(both, {pod_claim(a, {4}, {})})));
    const uint64_t g1 = e.generation();
    CHECK(g1 != g0);
    CHECK(e.node_stamp("node1") == g1 / 2);
    CHECK(e.node_stamp("node2") == g0 / 2);  // unchanged: not rebuilt
    CHECK(e.full_stamp() == g0 / 2);
    // a node leaving the inventory is a change of that node
    e.publish(std::make_shared<const Inventory>(Inventory::build(a, {pod_claim(a, {4}, {})})));
    CHECK(e.node_stamp("node2") == e.generation() / 2);
    CHECK(e.node_stamp("node1") == g1 / 2);
    CHECK(e.node_stamp("other") == 0);
    // slurmctld telling its jobs changes every node's answers
    e.jobs_known({});
    CHECK(e.full_stamp() == e.generation() / 2);
}

TEST_CASE("a slurm-bridge claim is its running job's within the allocation, the pod's once the job ended") {
    Engine e(config());
    auto sl = slices("node1");
    // job 7 has core 1 (CPU ids 2, 3) and GPU 1; slurm-bridge's claim for
    // its pod holds exactly those, a spoofed one for job 7 holds more
    e.job_started({7, "u", {{"node1", {1}, {1}}}});
    auto bridged = pod_claim(sl, {2, 3}, {"gpu-1"});
    bridged.bridgedJob = 7;
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {bridged})));
    auto ex = e.exclusion("node1", nullptr, true);
    REQUIRE(ex.state == ViewState::Ready);
    CHECK(ex.cores.empty());
    CHECK(ex.gres.empty());

    auto greedy = pod_claim(sl, {2, 3, 4}, {"gpu-1", "gpu-2"});
    greedy.bridgedJob = 7;
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {greedy})));
    CHECK(e.exclusion("node1", nullptr, true).cores == std::vector<uint32_t>{1, 2});
    CHECK(e.exclusion("node1", nullptr, true).gres == std::vector<uint32_t>{1, 2});

    // the job ends while its pod still runs: the devices are the pod's now
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {bridged})));
    const uint64_t g = e.generation();
    e.job_ended(7);  // no Kubernetes change tells slurmctld: the engine does
    CHECK(e.generation() != g);
    CHECK(e.exclusion("node1", nullptr, true).cores == std::vector<uint32_t>{1});
    CHECK(e.exclusion("node1", nullptr, true).gres == std::vector<uint32_t>{1});
}

TEST_CASE("after a restart a slurm-bridge claim counts once slurmctld has told its job") {
    Engine e(config());
    auto sl = slices("node1");
    auto bridged = pod_claim(sl, {2, 3}, {});
    bridged.bridgedJob = 7;
    e.publish(std::make_shared<const Inventory>(Inventory::build(sl, {bridged})));
    CHECK(e.exclusion("node1", nullptr, true).cores == std::vector<uint32_t>{1});
    const uint64_t g = e.generation();
    e.jobs_known({{7, "u", {{"node1", {1}, {}}}}});
    CHECK(e.generation() != g);
    CHECK(e.exclusion("node1", nullptr, true).cores.empty());
}

namespace {

std::vector<ResourceSlice> slices_of_shape(const std::string &node, const std::string &shape, int gpus) {
    FixtureOptions o;
    o.node = node;
    o.gpus = gpus;
    FixtureResult f = fixture_from_synthetic(shape, o);
    REQUIRE(f.ok);
    return f.slices;
}

std::string created_line(const std::vector<ExtAction> &plan, const std::string &node) {
    for (const auto &a : plan)
        if (a.kind == ExtActionKind::Create && a.node == node) return a.text;
    return "";
}

}  // namespace

TEST_CASE("discovery rounds keep node definitions only while their slices and Node stay the same") {
    Clock clock;
    PluginConfig c = config();
    c.node_discovery = true;
    Engine e(c, [&] { return clock.now; });
    const std::string big = "pack:2 numa:2 l3:1 core:4 pu:2", small = "pack:1 numa:1 l3:1 core:4 pu:2";
    auto publish = [&](const std::string &shape, int gpus) {
        auto sl = slices_of_shape("node1", shape, gpus);
        auto more = slices_of_shape("node2", big, 0);
        sl.insert(sl.end(), more.begin(), more.end());
        e.publish(std::make_shared<Inventory>(Inventory::build(sl, {})));
    };
    auto node = [](const std::string &name, uint64_t mem) { return KubeNodeState{name, false, true, "", mem, ""}; };
    publish(big, 4);
    e.publish_kube_nodes({{"node1", node("node1", 64000)}, {"node2", node("node2", 64000)}}, true);
    std::string why;
    auto plan = e.external_plan({}, 16, true, nullptr, &why);
    const std::string first = created_line(plan, "node1");
    CHECK(first.find("CPUs=32 ") != std::string::npos);
    CHECK(first.find("Gres=gpu:") != std::string::npos);
    CHECK(first.find("RealMemory=64000") != std::string::npos);
    CHECK(!created_line(plan, "node2").empty());
    // the same inputs, the same definitions (kept from the round before)
    CHECK(e.external_plan({}, 16, true, nullptr, &why) == plan);

    SECTION("new slices of another shape") {
        publish(small, 0);
        const std::string line = created_line(e.external_plan({}, 16, true, nullptr, &why), "node1");
        CHECK(line.find("CPUs=8 ") != std::string::npos);
        CHECK(line.find("Gres=") == std::string::npos);
    }
    SECTION("the Node's memory changes") {
        e.publish_kube_nodes({{"node1", node("node1", 32000)}, {"node2", node("node2", 64000)}}, true);
        CHECK(created_line(e.external_plan({}, 16, true, nullptr, &why), "node1").find("RealMemory=32000") !=
              std::string::npos);
    }
    SECTION("the Node goes, and comes back") {
        e.publish_kube_nodes({{"node2", node("node2", 64000)}}, true);
        auto p = e.external_plan({}, 16, true, nullptr, &why);
        CHECK(created_line(p, "node1").empty());
        CHECK(!created_line(p, "node2").empty());
        e.publish_kube_nodes({{"node1", node("node1", 16000)}, {"node2", node("node2", 64000)}}, true);
        CHECK(created_line(e.external_plan({}, 16, true, nullptr, &why), "node1").find("RealMemory=16000") !=
              std::string::npos);
    }
    SECTION("the node's slices go") {
        e.publish(std::make_shared<Inventory>(Inventory::build(slices_of_shape("node2", big, 0), {})));
        auto p = e.external_plan({}, 16, true, nullptr, &why);
        CHECK(created_line(p, "node1").empty());
        CHECK(!created_line(p, "node2").empty());
    }
}

namespace {
// A claim on `node` holding these CPU ids and GPUs (`job`: one of ours for
// that Slurm job).
ClaimHolding claim_on(const std::string &node, const std::vector<ResourceSlice> &sl, const std::string &name,
                      const std::set<int64_t> &cpu_ids, const std::set<int> &gpus, uint32_t job = 0) {
    ClaimHolding c;
    c.ns = job ? "slurm" : "web";
    c.name = name;
    c.allocated = true;
    c.nodeName = node;
    if (job) c.labels["k8s-cons-tres.slurm.io/job-id"] = std::to_string(job);
    for (const auto &s : sl)
        for (const auto &d : s.devices) {
            auto it = d.attributes.find("dra.cpu/cpuID");
            if (it != d.attributes.end() && cpu_ids.count(std::get<int64_t>(it->second)))
                c.results.push_back({"cpu", "dra.cpu", node, d.name, "", {}});
        }
    for (int g : gpus) c.results.push_back({"gpu", "gpu.nvidia.com", node, "gpu-" + std::to_string(g), "", {}});
    return c;
}
}  // namespace

TEST_CASE("publish digests only the nodes that changed, and stamps every node whose answers changed") {
    // Random pods' claims, Slurm jobs and their claims on shared-node
    // inventories (Inventory::update, as the client makes them): after each
    // publication, every node whose answer to slurmctld differs from the
    // last one must carry a new stamp, or slurmctld would keep stale bitmaps.
    const unsigned seed = GENERATE(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u);
    std::mt19937 rng(seed);
    Engine e(config());
    const int kNodes = 5;
    std::vector<std::string> names;
    std::map<std::string, std::vector<ResourceSlice>> slices_of;
    std::map<std::string, std::vector<ClaimHolding>> claims_of;
    std::vector<ResourceSlice> all;
    for (int i = 1; i <= kNodes; ++i) {
        names.push_back("node" + std::to_string(i));
        slices_of[names.back()] = slices(names.back());
        all.insert(all.end(), slices_of[names.back()].begin(), slices_of[names.back()].end());
    }
    auto inv = std::make_shared<const Inventory>(Inventory::build(all, {}));
    e.publish(inv);
    auto answer = [&](const std::string &n) {
        auto x = e.exclusion(n, nullptr, true);
        return std::make_tuple(static_cast<int>(x.state), x.cores, x.gres);
    };
    std::map<std::string, decltype(answer(""))> last;
    for (const auto &n : names) last[n] = answer(n);
    std::map<uint32_t, std::string> running, ended;  // job -> its node
    std::map<uint32_t, std::pair<std::string, uint32_t>> untold;  // job -> node, core of its claim
    uint32_t next_job = 1;
    int claim_no = 0, stamped = 0, unchanged_kept = 0;
    for (int step = 0; step < 300; ++step) {
        const std::string node = names[rng() % kNodes];
        std::vector<std::string> changed;
        switch (rng() % 9) {
        case 0:  // a pod takes a CPU and maybe a GPU
        case 1: {
            std::set<int64_t> cpus{static_cast<int64_t>(rng() % 32)};
            std::set<int> gpus;
            if (rng() % 2) gpus.insert(static_cast<int>(rng() % 4));
            claims_of[node].push_back(claim_on(node, slices_of[node], "c" + std::to_string(++claim_no), cpus, gpus));
            changed.push_back(node);
            break;
        }
        case 2:  // a claim goes (a pod's or a job's)
            if (!claims_of[node].empty()) {
                claims_of[node].erase(claims_of[node].begin() + rng() % claims_of[node].size());
                changed.push_back(node);
            }
            break;
        case 3: {  // a Slurm job starts on one core and GPU; its claim follows, sometimes later
            const uint32_t job = next_job++;
            const uint32_t core = rng() % 16;
            const int gpu = static_cast<int>(rng() % 4);
            e.job_started({job, "u", {{node, {core}, {static_cast<uint32_t>(gpu)}}}});
            running[job] = node;
            if (rng() % 2) {
                // sometimes claiming more than slurmctld allocated
                std::set<int64_t> cpus{2 * core, 2 * core + 1};
                if (rng() % 4 == 0) cpus.insert(static_cast<int64_t>(rng() % 32));
                claims_of[node].push_back(
                    claim_on(node, slices_of[node], "job" + std::to_string(job), cpus, {gpu}, job));
                changed.push_back(node);
            }
            break;
        }
        case 4:  // a job ends; its claim stays until deleted
            if (!running.empty()) {
                auto it = std::next(running.begin(), static_cast<long>(rng() % running.size()));
                e.job_ended(it->first);
                ended[it->first] = it->second;
                running.erase(it);
            }
            break;
        case 5:  // nothing changed but the publication
            break;
        case 7: {  // a claim of ours for a job slurmctld tells of only later (a restart)
            const uint32_t job = next_job++;
            const uint32_t core = rng() % 16;
            claims_of[node].push_back(
                claim_on(node, slices_of[node], "job" + std::to_string(job), {2 * core, 2 * core + 1}, {}, job));
            untold[job] = {node, core};
            changed.push_back(node);
            break;
        }
        case 8:  // ... and then it does, with no change in Kubernetes; or a job starts again
            if (!untold.empty()) {
                auto it = std::next(untold.begin(), static_cast<long>(rng() % untold.size()));
                e.job_started({it->first, "u", {{it->second.first, {it->second.second}, {}}}});
                running[it->first] = it->second.first;
                untold.erase(it);
            } else if (!ended.empty()) {  // requeued, on another core
                auto it = std::next(ended.begin(), static_cast<long>(rng() % ended.size()));
                e.job_started({it->first, "u", {{it->second, {static_cast<uint32_t>(rng() % 16)}, {}}}});
                running[it->first] = it->second;
                ended.erase(it);
            }
            break;
        case 6:  // now and then slurmctld tells its jobs again, or a full rebuild
            if (rng() % 3 == 0) {
                std::vector<JobAlloc> jobs;
                for (const auto &[j, n] : running) jobs.push_back({j, "u", {{n, {}, {}}}});
                e.jobs_known(jobs);
            } else {
                std::vector<ClaimHolding> cs;
                for (const auto &[n, v] : claims_of) cs.insert(cs.end(), v.begin(), v.end());
                inv = std::make_shared<const Inventory>(Inventory::build(all, cs));
                changed.clear();
            }
            break;
        }
        if (!changed.empty()) inv = std::make_shared<const Inventory>(Inventory::update(*inv, changed, slices_of, claims_of));
        const uint64_t before = e.generation() / 2;
        e.publish(inv);
        for (const auto &n : names) {
            const auto now = answer(n);
            INFO("seed " << seed << " step " << step << " node " << n);
            if (now != last[n]) {
                CHECK(e.node_stamp(n) > before);
                ++stamped;
            } else if (e.node_stamp(n) <= before) {
                ++unchanged_kept;
            }
            last[n] = now;
        }
    }
    CHECK(stamped > 10);          // the walk changed answers ...
    CHECK(unchanged_kept > 300);  // ... and left most nodes alone
}
