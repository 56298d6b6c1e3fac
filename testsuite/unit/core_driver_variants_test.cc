// SPDX-License-Identifier: GPL-2.0-or-later
// The topology builder across driver variants: NUMA attribute preference,
// unusable attributes as warnings, taints, partitions, configurable driver
// names; and the fixture generator imitating each release.
#include "testsuite/support/hwloc_fixture.h"
#include "core/inventory.h"
#include "core/pool_select.h"
#include "core/slurm_map.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::test;

namespace {

bool warned(const BuildResult &r, const std::string &text) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [&](const std::string &w) { return w.find(text) != std::string::npos; });
}

BuildResult build_fixture(const FixtureResult &f, const BuildOptions &o = {}) {
    REQUIRE(f.ok);
    static std::vector<std::vector<ResourceSlice>> keep;  // select_pools returns pointers
    keep.push_back(f.slices);
    auto pools = select_pools(keep.back());
    REQUIRE(pools["node1"].incomplete.empty());
    return build_node_topology("node1", pools["node1"].complete, o);
}

const Device *find_device(const FixtureResult &f, const std::string &name) {
    for (const ResourceSlice &s : f.slices)
        for (const Device &d : s.devices)
            if (d.name == name)
                return &d;
    return nullptr;
}

}  // namespace

TEST_CASE("NUMA: standard attribute first, then numaNodeID, then dra.net", "[variants]") {
    auto devs = small_smt_cpus();
    for (auto &d : devs) {  // releases: no standard attribute, dra.net only on some
        d.attributes["dra.net/numaNode"] = d.attributes["resource.kubernetes.io/numaNode"];
        d.attributes.erase("resource.kubernetes.io/numaNode");
    }
    auto s = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    CHECK(r.topology.cpu->numas.size() == 2);
    CHECK(r.warnings.empty());

    devs = small_smt_cpus();
    for (auto &d : devs)
        d.attributes["dra.cpu/numaNodeID"] = int64_t{7};  // disagrees: the standard one wins
    auto s2 = slice("n1", kCpuDriver, devs);
    r = build_node_topology("n1", {&s2});
    REQUIRE(r.ok);
    CHECK(r.topology.cpu->numas[1].id == 1);
    REQUIRE(r.warnings.size() == 2);  // one line per distinct note, not per device
    CHECK(warned(r, "device cpudev000 (and 3 more): attributes resource.kubernetes.io/numaNode (0) "
                    "and dra.cpu/numaNodeID (7) disagree"));

    for (auto &d : devs) {
        d.attributes.erase("resource.kubernetes.io/numaNode");
        d.attributes.erase("dra.cpu/numaNodeID");
    }
    auto s3 = slice("n1", kCpuDriver, devs);
    CHECK(build_node_topology("n1", {&s3}).error.find("missing attribute "
                                                     "resource.kubernetes.io/numaNode") !=
          std::string::npos);
}

TEST_CASE("unusable optional attributes are warnings, not silently dropped", "[variants]") {
    auto devs = small_smt_cpus();
    devs[0].attributes["dra.cpu/coreType"] = int64_t{1};  // slurm-bridge's mistake, inverted
    devs[1].attributes["dra.cpu/cacheL3ID"] = AttrInts{0, 1};
    devs[2].attributes["dra.cpu/smtEnabled"] = AttrBools{true};  // one-element list is fine
    for (auto &d : devs)
        d.attributes["resource.kubernetes.io/numaNode"] =
            AttrInts{std::get<int64_t>(d.attributes["dra.cpu/socketID"])};
    auto s = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    CHECK(r.topology.cpu->numas.size() == 2);
    CHECK(warned(r, "device cpudev000: attribute dra.cpu/coreType is not string; ignored"));
    CHECK(warned(r, "device cpudev001: attribute dra.cpu/cacheL3ID has 2 values, expected one"));
    CHECK(r.warnings.size() == 2);
}

TEST_CASE("cacheL3ID -1 means no L3: one group per NUMA node", "[variants]") {
    auto devs = small_smt_cpus();
    for (auto &d : devs)
        d.attributes["dra.cpu/cacheL3ID"] = int64_t{-1};
    auto s = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    REQUIRE(r.topology.cpu->cells.size() == 2);
    CHECK(r.topology.cpu->cells[0].numa != r.topology.cpu->cells[1].numa);
}

TEST_CASE("tainted CPU devices are recorded with their reason", "[variants]") {
    auto devs = small_smt_cpus();
    devs[2].taints = {{"example.com/bad", "", "NoExecute"}};
    devs[3].taints = {{"example.com/info", "", "None"}};
    auto s = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    REQUIRE(r.topology.unavailable_cpus.size() == 1);
    CHECK(r.topology.unavailable_cpus[0].reason == "taint example.com/bad=NoExecute");
    REQUIRE(r.topology.unavailable_cpus[0].cpus.size() == 1);
    CHECK(r.topology.cpu->cpus[r.topology.unavailable_cpus[0].cpus[0]].device == "cpudev002");

    // Grouped: a tainted group takes all its CPUs.
    FixtureOptions o;
    o.mode = CpuMode::GroupNuma;
    o.taints = {{"cpudevnuma001", {"x.io/y", "", "NoSchedule"}}};
    BuildResult g = build_fixture(fixture_from_synthetic("pack:2 numa:1 core:2 pu:2", o));
    REQUIRE(g.ok);
    REQUIRE(g.topology.unavailable_cpus.size() == 1);
    CHECK(g.topology.unavailable_cpus[0].cpus == std::vector<uint32_t>{4, 5, 6, 7});
}

TEST_CASE("partitions found by counter set; GPUs published only as partitions", "[variants]") {
    auto c = slice("n1", kCpuDriver, small_smt_cpus());
    Device odd = nvidia_gpu(1, 0, "0000:41:00.0");
    odd.name = "slice-a";  // no gpu-N name: its counter set tells its GPU
    odd.attributes["gpu.nvidia.com/type"] = std::string("mig");
    odd.consumesCounters = {{"gpu-0-counter-set", {{"memory", "10Gi"}}}};
    Device mig = nvidia_gpu(1, 1, "0000:81:00.0");
    mig.name = "gpu-1-mig-3g40gb-0-0";  // MIG only: no gpu-1 device
    mig.attributes["gpu.nvidia.com/type"] = std::string("mig");
    mig.taints = {{"gpu.nvidia.com/xid", "48", "NoExecute"}};
    Device other = nvidia_gpu(2, 0, "0000:c1:00.0");
    other.name = "vgpu-profile-x";
    auto g = slice("n1", kNvidiaDriver, {nvidia_gpu(0, 0, "0000:41:00.0"), odd, mig, other});
    BuildResult r = build_node_topology("n1", {&c, &g});
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 2);
    CHECK(r.topology.gpus[0].children == std::vector<std::string>{"slice-a"});
    CHECK(gpu_index_of(r.topology, kNvidiaDriver, "slice-a") == 0);
    const GpuInfo &g1 = r.topology.gpus[1];
    CHECK(g1.device == "gpu-1");
    CHECK(g1.unavailable == "taint gpu.nvidia.com/xid=NoExecute on gpu-1-mig-3g40gb-0-0");
    CHECK(g1.numa_id == 1);
    CHECK(gpu_index_of(r.topology, kNvidiaDriver, "gpu-1-mig-3g40gb-0-0") == 1);
    CHECK(warned(r, "device vgpu-profile-x: not a GPU nor a partition of one; ignored"));
}

TEST_CASE("driver names come from the options", "[variants]") {
    auto devs = small_smt_cpus();
    for (auto &d : devs) {
        std::map<std::string, AttrValue> renamed;
        for (auto &[k, v] : d.attributes)
            renamed[k.rfind("dra.cpu/", 0) == 0 ? "cpu.example.org/" + k.substr(8) : k] = v;
        d.attributes = renamed;
    }
    auto c = slice("n1", "cpu.example.org", devs);
    Device gpu = nvidia_gpu(0, 1, "0000:41:00.0");
    gpu.attributes = {{"acme.io/uuid", std::string("A-0")},
                      {"resource.kubernetes.io/numaNode", int64_t{1}}};
    auto g = slice("n1", "acme.io", {gpu});
    CHECK_FALSE(build_node_topology("n1", {&c, &g}).topology.cpu);  // defaults: not ours
    BuildOptions o;
    o.cpu_driver = "cpu.example.org";
    o.gpu_drivers = {"acme.io"};
    BuildResult r = build_node_topology("n1", {&c, &g}, o);
    REQUIRE(r.ok);
    REQUIRE(r.topology.cpu);
    CHECK(r.topology.cpu->cpus.size() == 8);
    REQUIRE(r.topology.gpus.size() == 1);
    CHECK(r.topology.gpus[0].uuid == "A-0");
    CHECK(r.topology.gpus[0].socket == 1);
}

TEST_CASE("fixture generator: dra.cpu releases", "[variants][fixture]") {
    FixtureOptions o;
    o.cpu_driver = CpuDriverVariant::V0_2;
    o.expose_pcie_roots = true;
    o.gpu_list = {{1, "pci0000:80"}};
    o.gpu_driver = GpuDriverVariant::V25_12;
    o.reserved_cpus = {0, 1};
    FixtureResult f = fixture_from_synthetic("pack:2 numa:1 core:40 pu:2", o);
    REQUIRE(f.ok);
    // 158 CPU devices at 64 per slice (list attributes) + 1 GPU slice.
    REQUIRE(f.slices.size() == 4);
    CHECK(f.slices[0].devices.size() == 64);
    CHECK(f.slices[0].pool.resourceSliceCount == 3);
    const Device *d = find_device(f, "cpudev000");
    REQUIRE(d);
    CHECK(std::get<int64_t>(d->attributes.at("dra.cpu/cpuID")) == 2);  // 0 and 1 reserved
    CHECK_FALSE(d->attributes.count("resource.kubernetes.io/numaNode"));
    CHECK(d->attributes.count("dra.cpu/numaNodeID"));
    const Device *s1 = find_device(f, "cpudev078");  // socket 1's first core: coreID 0 again
    REQUIRE(s1);
    CHECK(std::get<int64_t>(s1->attributes.at("dra.cpu/socketID")) == 1);
    CHECK(std::get<int64_t>(s1->attributes.at("dra.cpu/coreID")) == 0);
    CHECK(std::get<AttrStrings>(s1->attributes.at("resource.kubernetes.io/pcieRoot")) ==
          AttrStrings{"pci0000:80"});
    const Device *gpu = find_device(f, "gpu-0");
    REQUIRE(gpu);
    CHECK_FALSE(gpu->attributes.count("resource.kubernetes.io/numaNode"));
    BuildResult r = build_fixture(f);
    REQUIRE(r.ok);
    // the 2 reserved CPUs are placeholders the driver holds: 160 in all
    CHECK(r.topology.cpu->cpus.size() == 160);
    REQUIRE(r.topology.unavailable_cpus.size() == 1);
    CHECK(r.topology.unavailable_cpus[0].cpus.size() == 2);
    CHECK(r.topology.gpus[0].numa_id == 1);
    CHECK(r.topology.gpus[0].affinity_source == AffinitySource::PcieRoot);
}

TEST_CASE("fixture generator: NVIDIA releases and the example driver", "[variants][fixture]") {
    FixtureOptions o;
    o.gpus = 4;
    o.gpu_driver = GpuDriverVariant::V25_3;
    o.shuffle_gpus = true;
    o.taints = {{"gpu-2", {"gpu.nvidia.com/xid", "79", "NoSchedule"}}};
    FixtureResult f = fixture_from_synthetic("pack:2 numa:1 core:2 pu:1", o);
    REQUIRE(f.ok);
    const Device *g = find_device(f, "gpu-3");
    REQUIRE(g);
    CHECK(std::get<int64_t>(g->attributes.at("gpu.nvidia.com/minor")) == 3);
    CHECK(g->attributes.count("gpu.nvidia.com/pcieBusID"));
    CHECK_FALSE(g->attributes.count("resource.kubernetes.io/pciBusID"));
    BuildResult r = build_fixture(f, {GresOrder::PciBusId});
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 4);
    CHECK(r.topology.gpus[3].device == "gpu-3");
    CHECK(r.topology.gpus[2].unavailable == "taint gpu.nvidia.com/xid=NoSchedule");

    o = {};
    o.gpus = 2;
    o.gpu_driver = GpuDriverVariant::Main;
    o.list_attributes = true;
    o.partitions_per_gpu = 2;
    f = fixture_from_synthetic("pack:2 numa:1 core:2 pu:1", o);
    CHECK(std::get<AttrInts>(find_device(f, "gpu-1")->attributes.at(
              "resource.kubernetes.io/numaNode")) == AttrInts{1});
    r = build_fixture(f);
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 2);
    CHECK(r.topology.gpus[1].children.size() == 2);
    CHECK(r.topology.gpus[1].affinity_source == AffinitySource::NumaAttribute);

    o.gpu_driver = GpuDriverVariant::Example;
    f = fixture_from_synthetic("pack:2 numa:1 core:2 pu:1", o);
    REQUIRE(f.ok);
    CHECK(f.slices.back().sharedCounters.size() == 2);
    r = build_fixture(f);
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 2);
    CHECK(r.topology.gpus[0].device == "gpu-0-full");
    CHECK(gpu_index_of(r.topology, kExampleGpuDriver, "gpu-1-partition-1") == 1);
    CHECK(r.topology.gpus[0].affinity_source == AffinitySource::Unknown);
}

TEST_CASE("reserved CPUs are no mismatch and never go to Slurm", "[variants][reserved]") {
    for (CpuMode mode : {CpuMode::Individual, CpuMode::GroupNuma}) {
        FixtureOptions o;
        o.node = "n1";
        o.mode = mode;
        o.reserved_cpus = {0, 1};  // both threads of core 0 (synthetic: siblings adjacent)
        FixtureResult f = fixture_from_synthetic("pack:2 numa:1 core:20 pu:2", o);
        REQUIRE(f.ok);
        Inventory inv = Inventory::build(f.slices, {});
        const NodeEntry *n = inv.node("n1");
        REQUIRE(n);
        REQUIRE(n->usable());
        const CpuTopology &t = *n->topology.cpu;
        CHECK(t.cpus.size() == 80);  // as slurm.conf defines the machine
        CHECK(slurm_mismatch(n->topology, SlurmNodeDef{2, 20, 2, 0}).empty());
        // a real disagreement still is one
        CHECK_FALSE(slurm_mismatch(n->topology, SlurmNodeDef{2, 24, 2, 0}).empty());
        CHECK(n->ledger.free_cpu_count() == 78);
        const Words held = n->ledger.held_cpus(Holder::Kind::Claim);
        uint32_t held_cores = 0;
        for (const CoreInfo &k : t.cores) {
            bool any = false;
            for (uint32_t i = 0; i < k.nthreads; ++i) any = any || bit_test(held, k.first_cpu + i);
            held_cores += any;
        }
        CHECK(held_cores == 1);  // one whole Slurm core stays out
    }
}
