// SPDX-License-Identifier: GPL-2.0-or-later
// Ledger: free/claim/job holdings, from claims and from job begin/end.
#include "core/inventory.h"
#include "core/ledger.h"
#include "core/slurm_map.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::test;

namespace {
Words cpus_of(size_t words, std::initializer_list<size_t> idx) {
    Words w(words, 0);
    for (size_t i : idx)
        bit_set(w, i);
    return w;
}

ClaimHolding claim(const std::string &name, std::vector<AllocationResult> results) {
    ClaimHolding c;
    c.ns = "default";
    c.name = name;
    c.allocated = true;
    c.nodeName = "n1";
    c.results = std::move(results);
    return c;
}

AllocationResult result(const std::string &driver, const std::string &device) {
    AllocationResult r;
    r.request = "r";
    r.driver = driver;
    r.pool = "n1";
    r.device = device;
    return r;
}
}  // namespace

// n1: small_smt_cpus() and two GPUs, one per NUMA node.
static std::vector<ResourceSlice> smt_node_with_two_gpus() {
    return {slice("n1", kCpuDriver, small_smt_cpus()),
            slice("n1", kNvidiaDriver, {nvidia_gpu(0, 0, "0000:41:00.0"), nvidia_gpu(1, 1, "0000:c1:00.0")})};
}

TEST_CASE("ledger counts free CPUs, cores and GPUs and refuses double booking", "[ledger]") {
    auto node = make_node("n", {{0, {4}, 2}, {1, {4}, 2}}, {{0}, {1}});
    const CpuTopology &t = *node.cpu;
    NodeLedger l(t.cpus.size(), 2);
    CHECK(l.free_cpu_count() == 16);
    CHECK(l.free_core_count(t) == 8);
    CHECK(l.free_gpu_count() == 2);
    std::string err;
    REQUIRE(l.hold(Holder::of_claim("ns", "pod-a"), cpus_of(t.words, {0, 3}), 0b01, &err));
    CHECK(l.free_cpu_count() == 14);
    CHECK(l.free_core_count(t) == 6);
    CHECK(l.free_gpu_count() == 1);
    CHECK_FALSE(l.hold(Holder::of_job(7), cpus_of(t.words, {3}), 0, &err));
    CHECK(err == "CPU index 3 is held by claim ns/pod-a");
    CHECK_FALSE(l.hold(Holder::of_job(7), cpus_of(t.words, {5}), 0b01, &err));
    CHECK(err == "GPU index 0 is held by claim ns/pod-a");
    CHECK(l.free_cpu_count() == 14);  // a refused hold changes nothing
    REQUIRE(l.hold(Holder::of_job(7), cpus_of(t.words, {4, 5}), 0b10, &err));
    CHECK(l.free_core_count(t) == 5);
    CHECK(bit_test(l.held_cpus(Holder::Kind::Claim), 3));
    CHECK_FALSE(bit_test(l.held_cpus(Holder::Kind::Claim), 4));
    CHECK(l.held_gpus(Holder::Kind::Job) == 0b10);
    CHECK(l.release(Holder::of_job(7)));
    CHECK_FALSE(l.release(Holder::of_job(7)));
    CHECK(l.free_cpu_count() == 14);
    CHECK(l.free_gpu_count() == 1);
}

TEST_CASE("free cores without uniform threads per core", "[ledger]") {
    auto node = make_node("n", {{0, {2}, 2}, {0, {3}, 1}});
    const CpuTopology &t = *node.cpu;
    CHECK(t.uniform_threads == 0);
    NodeLedger l(t.cpus.size(), 0);
    CHECK(l.free_core_count(t) == 5);
    std::string err;
    REQUIRE(l.hold(Holder::of_job(1), cpus_of(t.words, {1, 4}), 0, &err));
    CHECK(l.free_core_count(t) == 3);
}

TEST_CASE("claims in the snapshot hold devices, by name and by cpuset", "[ledger]") {
    const std::vector<ResourceSlice> slices = smt_node_with_two_gpus();
    auto pod = claim("pod-a", {result(kCpuDriver, "cpudev000"), result(kCpuDriver, "cpudev001"),
                               result(kNvidiaDriver, "gpu-1")});
    auto job = claim("slurm-9", {result(kCpuDriver, "cpudev004")});
    job.labels["k8s-cons-tres.slurm.io/job-id"] = "9";
    auto twice = claim("pod-b", {result(kCpuDriver, "cpudev000")});
    Inventory inv = Inventory::build(slices, {pod, job, twice});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n);
    CHECK(n->ledger.free_cpu_count() == 5);
    CHECK(n->ledger.free_gpu_count() == 1);
    CHECK(n->ledger.held_gpus(Holder::Kind::Claim) == 0b10);
    // cpudev000/001 are CPUs 0 and 4: Slurm core 0 is fully held.
    const CpuTopology &t = *n->topology.cpu;
    Words held = n->ledger.held_cpus(Holder::Kind::Claim);
    CHECK(bit_test(held, *cpu_of_slurm_core(t, 0, 0)));
    CHECK(bit_test(held, *cpu_of_slurm_core(t, 0, 1)));
    CHECK(bit_test(n->ledger.held_cpus(Holder::Kind::Job), t.by_device.at("cpudev004")));
    // a device two claims hold is no error: both hold it (see below)
    CHECK(inv.claim_errors().empty());

    std::string err;
    CHECK(inv.job_begin("n1", 12, {2, 3}, {0}, &err));
    CHECK(inv.node("n1")->ledger.free_cpu_count() == 3);
    CHECK_FALSE(inv.job_begin("n1", 13, {3}, {}, &err));
    CHECK(inv.job_end(12) == 1);
    CHECK(inv.node("n1")->ledger.free_cpu_count() == 5);
    CHECK(inv.job_end(9) == 1);  // the labelled claim is job 9's
    CHECK_FALSE(inv.job_begin("nope", 1, {}, {}, &err));
}

TEST_CASE("a pod claim on a Slurm job's device is an overlap: told, and the node takes no new job", "[ledger]") {
    const std::vector<ResourceSlice> slices = smt_node_with_two_gpus();
    auto job = claim("slurm-9", {result(kCpuDriver, "cpudev004"), result(kNvidiaDriver, "gpu-0")});
    job.labels["k8s-cons-tres.slurm.io/job-id"] = "9";
    auto beside = claim("pod-a", {result(kCpuDriver, "cpudev001"), result(kNvidiaDriver, "gpu-1")});
    Inventory ok = Inventory::build(slices, {job, beside});
    REQUIRE(ok.node("n1"));
    CHECK(ok.node("n1")->usable());
    CHECK(ok.node("n1")->overlaps.empty());

    auto onto = claim("pod-b", {result(kNvidiaDriver, "gpu-0")});
    Inventory bad = Inventory::build(slices, {job, beside, onto});
    const NodeEntry *n = bad.node("n1");
    REQUIRE(n);
    CHECK_FALSE(n->usable());
    REQUIRE(n->overlaps.size() == 1);
    CHECK(n->overlaps[0].find(onto.ns + "/pod-b") != std::string::npos);
    CHECK(n->overlaps[0].find("Slurm job 9") != std::string::npos);
    CHECK(n->invalid.rfind("overlap: ", 0) == 0);
    REQUIRE(bad.claim_errors().size() == 1);
    CHECK(bad.claim_errors()[0].find("pod-b") != std::string::npos);
    // the same on a rebuild of the node alone; gone once the pod's claim goes
    Inventory again = Inventory::update(ok, {"n1"}, {{"n1", slices}}, {{"n1", {job, beside, onto}}});
    CHECK_FALSE(again.node("n1")->usable());
    Inventory after = Inventory::update(again, {"n1"}, {{"n1", slices}}, {{"n1", {job, beside}}});
    CHECK(after.node("n1")->usable());
    CHECK(after.node("n1")->overlaps.empty());
}

TEST_CASE("devices several claims hold stay out until the last claim goes", "[ledger]") {
    auto node = make_node("n", {{0, {4}, 2}}, {{0}});
    const CpuTopology &t = *node.cpu;
    NodeLedger l(&t, 2);
    l.hold_shared(Holder::of_claim("ns", "a"), cpus_of(t.words, {0, 1}), 0b01);
    l.hold_shared(Holder::of_claim("ns", "b"), cpus_of(t.words, {1, 2}), 0b11);
    CHECK(l.free_cpu_count() == 5);
    CHECK(l.free_gpus() == 0);
    REQUIRE(l.release(Holder::of_claim("ns", "a")));
    CHECK(bit_test(l.free_cpus(), 0));
    CHECK_FALSE(bit_test(l.free_cpus(), 1));  // b still holds it
    CHECK(l.free_gpus() == 0);
    REQUIRE(l.release(Holder::of_claim("ns", "b")));
    CHECK(l.free_cpu_count() == 8);
    CHECK(l.free_gpus() == 0b11);
    // devices beyond the node are ignored, not wrapped around
    l.hold_shared(Holder::of_claim("ns", "c"), cpus_of(2, {70}), uint64_t{1} << 5);
    CHECK(l.free_cpu_count() == 8);
    CHECK(l.free_gpus() == 0b11);
}

TEST_CASE("overlapping claims keep the union out; neither is dropped", "[ledger]") {
    const std::vector<ResourceSlice> slices = smt_node_with_two_gpus();
    // the later claim shares cpudev000 and gpu-0 and adds cpudev001 and gpu-1
    auto first = claim("admin", {result(kCpuDriver, "cpudev000"), result(kNvidiaDriver, "gpu-0")});
    auto later = claim("late", {result(kCpuDriver, "cpudev000"), result(kCpuDriver, "cpudev001"),
                                result(kNvidiaDriver, "gpu-0"), result(kNvidiaDriver, "gpu-1")});
    Inventory inv = Inventory::build(slices, {first, later});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n->usable());
    const CpuTopology &t = *n->topology.cpu;
    CHECK_FALSE(bit_test(n->ledger.free_cpus(), t.by_device.at("cpudev000")));
    CHECK_FALSE(bit_test(n->ledger.free_cpus(), t.by_device.at("cpudev001")));
    CHECK(n->ledger.held_gpus(Holder::Kind::Claim) == 0b11);
    CHECK(n->ledger.free_gpu_count() == 0);
}

TEST_CASE("a claim naming an unknown device keeps its node out, not free", "[ledger]") {
    std::vector<ResourceSlice> slices{
        slice("n1", kCpuDriver, small_smt_cpus()),
        slice("n1", kNvidiaDriver, {nvidia_gpu(0, 0, "0000:41:00.0")})};
    auto ghost = claim("ghost", {result(kCpuDriver, "cpudev099")});
    Inventory inv = Inventory::build(slices, {ghost});
    REQUIRE(inv.claim_errors().size() == 1);
    CHECK(inv.claim_errors()[0] == "claim default/ghost: unknown device cpudev099; node n1 kept out");
    CHECK_FALSE(inv.node("n1")->usable());
    CHECK(inv.node("n1")->invalid == "claim default/ghost: unknown device cpudev099");

    auto gpu = claim("ghost-gpu", {result(kNvidiaDriver, "gpu-7")});
    Inventory inv2 = Inventory::build(slices, {gpu});
    CHECK_FALSE(inv2.node("n1")->usable());
    // a device of a driver the plugin does not read is none of its business
    auto nic = claim("nic", {result("nic.example.com", "eth0")});
    Inventory inv3 = Inventory::build(slices, {nic});
    CHECK(inv3.node("n1")->usable());
}

TEST_CASE("a pod holding a MIG slice takes its whole GPU from Slurm", "[ledger]") {
    Device mig;
    mig.name = "gpu-1-mig-1g10gb-9-0";
    mig.attributes["gpu.nvidia.com/type"] = std::string("mig");
    mig.attributes["gpu.nvidia.com/uuid"] = std::string("MIG-1");
    mig.attributes["gpu.nvidia.com/parentUUID"] = std::string("GPU-1");
    std::vector<ResourceSlice> slices{
        slice("n1", kCpuDriver, small_smt_cpus()),
        slice("n1", kNvidiaDriver,
              {nvidia_gpu(0, 0, "0000:41:00.0"), nvidia_gpu(1, 1, "0000:c1:00.0"), mig})};
    Inventory inv = Inventory::build(slices, {claim("mig-pod", {result(kNvidiaDriver, mig.name)})});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n->usable());
    REQUIRE(n->topology.gpus.size() == 2);  // physical GPUs only
    CHECK(n->ledger.held_gpus(Holder::Kind::Claim) == 0b10);
    CHECK(inv.claim_errors().empty());
}

TEST_CASE("tainted devices are held by the driver, not given to Slurm", "[ledger]") {
    Device sick = nvidia_gpu(1, 1, "0000:c1:00.0");
    sick.taints.push_back({"gpu.nvidia.com/xid", "79", "NoExecute"});
    Device fine = nvidia_gpu(0, 0, "0000:41:00.0");
    fine.taints.push_back({"gpu.nvidia.com/unmonitored", "", "None"});
    auto cpus = small_smt_cpus();
    cpus[2].taints.push_back({"example.com/maintenance", "", "NoSchedule"});
    Inventory inv = Inventory::build({slice("n1", kCpuDriver, cpus), slice("n1", kNvidiaDriver, {fine, sick})}, {});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n->usable());
    CHECK(n->ledger.held_gpus(Holder::Kind::Claim) == 0b10);  // effect None is fine
    const CpuTopology &t = *n->topology.cpu;
    const Words held = n->ledger.held_cpus(Holder::Kind::Claim);
    CHECK(bit_test(held, t.by_device.at(cpus[2].name)));
    CHECK(n->ledger.free_cpu_count() == 7);
}

TEST_CASE("the CPU and GPU drivers named in the configuration are the ones read", "[ledger]") {
    auto cpus = small_smt_cpus();
    for (Device &d : cpus) {  // a renamed CPU driver publishes its own attribute domain
        std::map<std::string, AttrValue> renamed;
        for (auto &[k, v] : d.attributes)
            renamed[k.rfind("dra.cpu/", 0) == 0 ? "cpu.acme.io/" + k.substr(8) : k] = v;
        d.attributes = std::move(renamed);
    }
    InventoryOptions io;
    io.cpu_driver = "cpu.acme.io";
    io.gpu_drivers = {kNvidiaDriver};
    auto pod = claim("pod", {result("cpu.acme.io", cpus[0].name)});
    Inventory inv = Inventory::build({slice("n1", "cpu.acme.io", cpus),
                                      slice("n1", kNvidiaDriver, {nvidia_gpu(0, 0, "0000:41:00.0")})},
                                     {pod}, io);
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n);
    REQUIRE(n->usable());
    CHECK(n->ledger.free_cpu_count() == 7);
    // with the default names the same slices have no CPU driver at all
    Inventory plain = Inventory::build({slice("n1", "cpu.acme.io", cpus)}, {});
    CHECK_FALSE((plain.node("n1") && plain.node("n1")->usable()));
}

namespace {
// dra.cpu grouped devices: `per_group` CPUs in each of `n` groups, named as
// the driver names them (numa grouping, or one machine group).
std::vector<Device> cpu_groups(int n, int per_group, bool machine = false) {
    std::vector<Device> groups;
    for (int g = 0; g < n; ++g) {
        Device d;
        d.name = machine ? "cpudevmachine" : "cpudevnuma00" + std::to_string(g);
        d.allowMultipleAllocations = true;
        d.attributes["resource.kubernetes.io/numaNode"] = int64_t{g};
        d.attributes["dra.cpu/socketID"] = int64_t{0};
        d.attributes["dra.cpu/smtEnabled"] = true;
        d.capacity["dra.cpu/cpu"] = std::to_string(per_group);
        groups.push_back(d);
    }
    return groups;
}

ClaimHolding group_share(const std::string &name, const std::string &group, int count,
                         const std::string &cpuset = "") {
    auto c = claim(name, {result(kCpuDriver, group)});
    c.results[0].consumedCapacity["dra.cpu/cpu"] = std::to_string(count);
    c.opaqueCpuset = cpuset;
    return c;
}

size_t free_in(const NodeEntry &n, size_t first, size_t count) {
    size_t k = 0;
    for (size_t i = first; i < first + count; ++i) k += bit_test(n.ledger.free_cpus(), i);
    return k;
}
}  // namespace

TEST_CASE("grouped claims hold their count in each group", "[ledger]") {
    // numa grouping: the driver picks a share's CPUs, a pod's cpuset pins nothing
    Inventory inv = Inventory::build({slice("n1", kCpuDriver, cpu_groups(2, 4))},
                                     {group_share("a", "cpudevnuma000", 2, "0-1"),
                                      group_share("b", "cpudevnuma001", 3)});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n->usable());
    CHECK_FALSE(n->topology.cpu->cpuset_honoured());
    CHECK(inv.claim_errors().empty());
    CHECK(n->ledger.free_cpu_count() == 3);
    CHECK(free_in(*n, 0, 4) == 2);
    CHECK(free_in(*n, 4, 4) == 1);
}

TEST_CASE("a pod's cpuset never lowers its consumed count", "[ledger]") {
    // 32 CPUs consumed with cpuset "0": Kubernetes counts 32 taken, so Slurm
    // may use the group's capacity minus 32, never 63.
    SECTION("numa grouping: the count alone") {
        Inventory inv = Inventory::build({slice("n1", kCpuDriver, cpu_groups(2, 64))},
                                         {group_share("greedy", "cpudevnuma000", 32, "0")});
        const NodeEntry *n = inv.node("n1");
        REQUIRE(n->usable());
        CHECK(free_in(*n, 0, 64) == 32);
        CHECK(free_in(*n, 64, 64) == 64);
    }
    SECTION("machine grouping: its cpuset is pinned, and the rest of its count as well") {
        Inventory inv = Inventory::build({slice("n1", kCpuDriver, cpu_groups(1, 64, true))},
                                         {group_share("greedy", "cpudevmachine", 32, "0")});
        const NodeEntry *n = inv.node("n1");
        REQUIRE(n->usable());
        REQUIRE(n->topology.cpu->cpuset_honoured());
        CHECK(n->ledger.free_cpu_count() == 32);
        CHECK_FALSE(bit_test(n->ledger.free_cpus(), 0));  // the pinned CPU is among them
    }
}

TEST_CASE("grouped counts never land on CPUs an exact claim names", "[ledger]") {
    // a pod's count, listed first, and a Slurm job's exact CPUs 2-3 in the
    // same group of 4: together they take all four, not leave two looking free
    auto job = group_share("slurm-7", "cpudevnuma000", 2, "2-3");
    job.labels["k8s-cons-tres.slurm.io/job-id"] = "7";
    Inventory inv = Inventory::build({slice("n1", kCpuDriver, cpu_groups(2, 4))},
                                     {group_share("a-pod", "cpudevnuma000", 2), job});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n->usable());
    CHECK(inv.claim_errors().empty());
    CHECK(free_in(*n, 0, 4) == 0);
    const Words held_by_job = n->ledger.held_cpus(Holder::Kind::Job);
    CHECK(bit_test(held_by_job, 2));
    CHECK(bit_test(held_by_job, 3));
    CHECK_FALSE(bit_test(n->ledger.held_cpus(Holder::Kind::Claim), 2));
}

TEST_CASE("a group counted past its capacity keeps all of it from Slurm", "[ledger]") {
    Inventory inv = Inventory::build({slice("n1", kCpuDriver, cpu_groups(2, 4))},
                                     {group_share("a", "cpudevnuma000", 3), group_share("b", "cpudevnuma000", 3)});
    const NodeEntry *n = inv.node("n1");
    CHECK(free_in(*n, 0, 4) == 0);
    CHECK(free_in(*n, 4, 4) == 4);
    REQUIRE(inv.claim_errors().size() == 1);
    CHECK(inv.claim_errors()[0].find("too few free CPUs") != std::string::npos);
}

TEST_CASE("adminAccess results allocate nothing, as kube-scheduler counts them", "[ledger]") {
    // a monitoring DaemonSet's admin-access claims on every GPU and CPU
    std::vector<ResourceSlice> slices{
        slice("n1", kCpuDriver, small_smt_cpus()),
        slice("n1", kNvidiaDriver, {nvidia_gpu(0, 0, "0000:41:00.0"), nvidia_gpu(1, 1, "0000:c1:00.0")})};
    auto monitor = claim("dcgm", {result(kNvidiaDriver, "gpu-0"), result(kNvidiaDriver, "gpu-1"),
                                  result(kCpuDriver, "cpudev000")});
    for (auto &r : monitor.results) r.adminAccess = true;
    auto pod = claim("pod", {result(kNvidiaDriver, "gpu-1")});
    Inventory inv = Inventory::build(slices, {monitor, pod});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n->usable());
    CHECK(n->ledger.held_gpus(Holder::Kind::Claim) == 0b10);  // only the ordinary claim's
    CHECK(n->ledger.free_cpu_count() == 8);
    CHECK(inv.claim_errors().empty());
}

TEST_CASE("an undecodable claim keeps the nodes it names out", "[ledger]") {
    std::vector<ResourceSlice> slices{slice("n1", kCpuDriver, small_smt_cpus()),
                                      slice("n2", kCpuDriver, small_smt_cpus())};
    ClaimHolding bad;
    bad.ns = "tenant";
    bad.name = "odd";
    bad.allocated = true;
    bad.undecodable = "'device' is not a string";
    bad.results.push_back({"", "", "n2", "", "", {}});
    Inventory inv = Inventory::build(slices, {bad});
    REQUIRE(inv.node("n1"));
    CHECK(inv.node("n1")->usable());
    REQUIRE(inv.node("n2"));
    CHECK_FALSE(inv.node("n2")->usable());
    CHECK(inv.node("n2")->invalid.find("undecodable") != std::string::npos);
    // the same, on the node-by-node path the client takes
    Inventory later = Inventory::build(slices, {});
    later.rebuild_nodes({"n2"}, {{"n2", {slices[1]}}}, {{"n2", {bad}}});
    CHECK_FALSE(later.node("n2")->usable());
}

TEST_CASE("a cpuset of any size costs bounded memory", "[ledger]") {
    std::vector<int32_t> ids;
    std::string many;
    for (int i = 0; i < 2000; ++i) many += (i ? "," : "") + std::string("0-65535");
    CHECK_FALSE(parse_cpuset(many, &ids));  // 131 million ids asked for
    CHECK(ids.size() <= 65536);
    CHECK_FALSE(parse_cpuset(std::string(20 * 65536, '1'), &ids));
    CHECK(parse_cpuset("0-65535", &ids));
    CHECK(ids.size() == 65536);
}

TEST_CASE("cpuset text", "[ledger]") {
    std::vector<int32_t> ids;
    CHECK(parse_cpuset("2-5,8", &ids));
    CHECK(ids == std::vector<int32_t>{2, 3, 4, 5, 8});
    CHECK_FALSE(parse_cpuset("5-2", &ids));
    CHECK_FALSE(parse_cpuset("a", &ids));
    CHECK_FALSE(parse_cpuset("", &ids));
    CHECK_FALSE(parse_cpuset("1,,2", &ids));
}

TEST_CASE("inventory copies share unchanged nodes and copy one before changing it", "[ledger]") {
    std::vector<ResourceSlice> slices{slice("n1", kCpuDriver, small_smt_cpus()),
                                      slice("n2", kCpuDriver, small_smt_cpus())};
    const Inventory first = Inventory::build(slices, {});
    Inventory copy = first;
    const Inventory &read = copy;
    CHECK(read.node("n1") == first.node("n1"));  // the same object, not a copy of it
    std::string err;
    REQUIRE(copy.job_begin("n1", 7, {0, 1}, {}, &err));
    CHECK(read.node("n1") != first.node("n1"));
    CHECK(read.node("n1")->ledger.free_cpu_count() + 2 == first.node("n1")->ledger.free_cpu_count());
    CHECK(read.node("n2") == first.node("n2"));
    // ending the job copies only the node it was on
    Inventory later = copy;
    const Inventory &after = later;
    CHECK(later.job_end(7) == 1);
    CHECK(after.node("n2") == first.node("n2"));
    CHECK(read.node("n1")->ledger.job_holdings() == 1);
    CHECK(after.node("n1")->ledger.job_holdings() == 0);
    CHECK(later.job_end(7) == 0);
    CHECK(after.nodes().size() == 2);
}
