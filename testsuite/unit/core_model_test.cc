// SPDX-License-Identifier: GPL-2.0-or-later
// Topology model from DRA devices, pools, Slurm mapping and mismatches.
#include "core/inventory.h"
#include "core/pool_select.h"
#include "core/slurm_map.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::test;

TEST_CASE("individual dra.cpu devices build the tree in Slurm order", "[model]") {
    auto s = slice("n1", kCpuDriver, small_smt_cpus());
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    const CpuTopology &t = *r.topology.cpu;
    REQUIRE(t.cpus.size() == 8);
    REQUIRE(t.cores.size() == 4);
    REQUIRE(t.sockets.size() == 2);
    REQUIRE(t.numas.size() == 2);
    REQUIRE(t.cells.size() == 2);
    // Slurm core 1 = socket 0 core 1: CPUs 1 and 5 (siblings by cpuID order).
    CHECK(t.cpus[*cpu_of_slurm_core(t, 1, 0)].cpu_id == 1);
    CHECK(t.cpus[*cpu_of_slurm_core(t, 1, 1)].cpu_id == 5);
    // Slurm core 2 = socket 1 core 0.
    CHECK(t.cpus[*cpu_of_slurm_core(t, 2, 0)].cpu_id == 2);
    CHECK(slurm_core_of(t, static_cast<uint32_t>(t.cpu_index(7))) == 3);
    CHECK_FALSE(cpu_of_slurm_core(t, 4, 0));
    CHECK_FALSE(cpu_of_slurm_core(t, 0, 2));
    // The device name is not the CPU id: cpudev001 is CPU 4.
    CHECK(t.cpus[t.by_device.at("cpudev001")].cpu_id == 4);
}

TEST_CASE("unknown attributes are ignored, missing required ones name device and attribute",
          "[model]") {
    auto devs = small_smt_cpus();
    devs[0].attributes["dra.cpu/somethingNew"] = std::string("x");
    auto ok = slice("n1", kCpuDriver, devs);
    CHECK(build_node_topology("n1", {&ok}).ok);

    devs[3].attributes.erase("dra.cpu/socketID");
    auto bad = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&bad});
    CHECK_FALSE(r.ok);
    CHECK(r.error == "device cpudev003: missing attribute dra.cpu/socketID");

    devs = small_smt_cpus();
    devs[2].attributes["dra.cpu/coreID"] = std::string("zero");
    auto typed = slice("n1", kCpuDriver, devs);
    CHECK(build_node_topology("n1", {&typed}).error ==
          "device cpudev002: attribute dra.cpu/coreID is not int");

    auto gpu = nvidia_gpu(0, 0, "0000:65:00.0");
    gpu.attributes.erase("gpu.nvidia.com/uuid");
    auto gs = slice("n1", kNvidiaDriver, {gpu});
    CHECK(build_node_topology("n1", {&ok, &gs}).error ==
          "device gpu-0: missing attribute gpu.nvidia.com/uuid");
}

TEST_CASE("deprecated numaNodeID is accepted when the standard attribute is absent", "[model]") {
    auto devs = small_smt_cpus();
    for (auto &d : devs) {
        d.attributes["dra.cpu/numaNodeID"] = d.attributes["resource.kubernetes.io/numaNode"];
        d.attributes.erase("resource.kubernetes.io/numaNode");
    }
    auto s = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    CHECK(r.topology.cpu->numas.size() == 2);
}

TEST_CASE("a core spanning NUMA nodes makes the node invalid", "[model]") {
    auto devs = small_smt_cpus();
    devs[1].attributes["resource.kubernetes.io/numaNode"] = int64_t{1};
    auto s = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&s});
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("cpudev001") != std::string::npos);
}

TEST_CASE("grouped dra.cpu devices give a synthetic layout with groups", "[model]") {
    std::vector<Device> groups;
    for (int n = 0; n < 2; ++n) {
        Device d;
        char name[24];
        std::snprintf(name, sizeof name, "cpudevnuma%03d", n);
        d.name = name;
        d.allowMultipleAllocations = true;
        d.attributes["resource.kubernetes.io/numaNode"] = int64_t{n};
        d.attributes["dra.cpu/socketID"] = int64_t{n};
        d.attributes["dra.cpu/numCPUs"] = int64_t{8};
        d.attributes["dra.cpu/smtEnabled"] = true;
        d.capacity["dra.cpu/cpu"] = "8";
        groups.push_back(d);
    }
    auto s = slice("n1", kCpuDriver, groups);
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    const CpuTopology &t = *r.topology.cpu;
    CHECK(t.grouped);
    CHECK(t.cpus.size() == 16);
    CHECK(t.cores.size() == 8);
    CHECK(t.sockets.size() == 2);
    CHECK(t.numas.size() == 2);
    REQUIRE(t.groups.size() == 2);
    CHECK(popcount(t.groups[t.by_device.at("cpudevnuma001")].mask.data(), t.words) == 8);
    CHECK(bit_test(t.groups[t.by_device.at("cpudevnuma001")].mask, 15));

    Device machine;
    machine.name = "cpudevmachine";
    machine.attributes["dra.cpu/numCPUs"] = int64_t{4};
    machine.capacity["dra.cpu/cpu"] = "4";
    auto m = slice("n2", kCpuDriver, {machine});
    BuildResult rm = build_node_topology("n2", {&m});
    REQUIRE(rm.ok);
    CHECK(rm.topology.cpu->cpus.size() == 4);
    CHECK(rm.topology.cpu->max_threads_per_core == 1);
}

TEST_CASE("GPUs: minor order by default, PCI bus order on request", "[model]") {
    auto c = slice("n1", kCpuDriver, small_smt_cpus());
    // gpu-1 sits on the lower bus id; gpu-10 sorts after gpu-2 by minor.
    auto g = slice("n1", kNvidiaDriver,
                   {nvidia_gpu(10, 1, "0000:c1:00.0"), nvidia_gpu(2, 1, "0000:81:00.0"),
                    nvidia_gpu(1, 0, "0000:41:00.0"), nvidia_gpu(0, 0, "0000:65:00.0")});
    Device mig = nvidia_gpu(0, 0, "0000:65:00.0");
    mig.name = "gpu-0-mig-1g5gb-0";
    mig.attributes["gpu.nvidia.com/type"] = std::string("mig");
    g.devices.push_back(mig);
    BuildResult r = build_node_topology("n1", {&c, &g});
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 4);  // the MIG device is not a GRES GPU
    CHECK(r.topology.gpus[0].device == "gpu-0");
    CHECK(r.topology.gpus[1].device == "gpu-1");
    CHECK(r.topology.gpus[2].device == "gpu-2");
    CHECK(r.topology.gpus[3].device == "gpu-10");
    CHECK(r.topology.gpus[3].numa == 1);
    CHECK(r.topology.gpus[3].socket == 1);
    CHECK(r.topology.gpus[0].pcie_root == "pci0000:65");

    BuildResult p = build_node_topology("n1", {&c, &g}, {GresOrder::PciBusId});
    REQUIRE(p.ok);
    CHECK(p.topology.gpus[0].device == "gpu-1");
    CHECK(p.topology.gpus[1].device == "gpu-0");
    CHECK(p.topology.gpus[2].device == "gpu-2");
    CHECK(p.topology.gpus[3].device == "gpu-10");
}

TEST_CASE("example driver GPUs map by index and have no NUMA node", "[model]") {
    auto c = slice("n1", kCpuDriver, small_smt_cpus());
    std::vector<Device> gpus;
    for (int i : {1, 0}) {
        Device d;
        d.name = "gpu-" + std::to_string(i);
        d.attributes["gpu.example.com/index"] = int64_t{i};
        d.attributes["gpu.example.com/uuid"] = "gpu-" + std::to_string(i);
        d.attributes["gpu.example.com/model"] = std::string("LATEST-GPU-MODEL");
        d.attributes["gpu.example.com/driverVersion"] = AttrVersion{"1.0.0"};
        gpus.push_back(d);
    }
    auto g = slice("n1", kExampleGpuDriver, gpus);
    BuildResult r = build_node_topology("n1", {&c, &g});
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 2);
    CHECK(r.topology.gpus[0].uuid == "gpu-0");
    CHECK(r.topology.gpus[0].numa == kUnknown);
}

TEST_CASE("a pool counts only when all slices of its highest generation are present", "[model]") {
    auto devs = small_smt_cpus();
    std::vector<Device> a(devs.begin(), devs.begin() + 4), b(devs.begin() + 4, devs.end());
    std::vector<ResourceSlice> slices{slice("n1", kCpuDriver, a, 1, 2, "a")};
    auto sel = select_pools(slices);
    CHECK(sel["n1"].complete.empty());
    REQUIRE(sel["n1"].incomplete.size() == 1);
    CHECK(sel["n1"].incomplete[0] == "pool n1 of driver dra.cpu: 1 of 2 slices of generation 1");
    Inventory inv = Inventory::build(slices, {});
    REQUIRE(inv.node("n1"));
    CHECK_FALSE(inv.node("n1")->usable());

    slices.push_back(slice("n1", kCpuDriver, b, 1, 2, "b"));
    inv = Inventory::build(slices, {});
    REQUIRE(inv.node("n1")->usable());
    CHECK(inv.node("n1")->topology.cpu->cpus.size() == 8);

    // Generation 2 starts arriving: generation 1 no longer counts.
    slices.push_back(slice("n1", kCpuDriver, a, 2, 2, "c"));
    inv = Inventory::build(slices, {});
    CHECK_FALSE(inv.node("n1")->usable());
    slices.push_back(slice("n1", kCpuDriver, b, 2, 2, "d"));
    inv = Inventory::build(slices, {});
    CHECK(inv.node("n1")->usable());
    // Stale generation-1 slices listed after newer ones are ignored too.
    std::reverse(slices.begin(), slices.end());
    inv = Inventory::build(slices, {});
    CHECK(inv.node("n1")->usable());
    CHECK(inv.node("n1")->topology.cpu->cpus.size() == 8);
}

TEST_CASE("Slurm definition mismatches are reported with the exact difference", "[model]") {
    auto c = slice("n1", kCpuDriver, small_smt_cpus());
    auto g = slice("n1", kNvidiaDriver, {nvidia_gpu(0, 0, "0000:65:00.0")});
    BuildResult r = build_node_topology("n1", {&c, &g});
    REQUIRE(r.ok);
    CHECK(slurm_mismatch(r.topology, {2, 2, 2, 1}).empty());
    CHECK(slurm_mismatch(r.topology, {1, 4, 1, 2}) ==
          "sockets: slurm 1, slices 2; cores per socket: slurm 4, slices 2; "
          "threads per core: slurm 1, slices 2; gpus: slurm 2, slices 1");
    auto asym = make_node("n2", {{0, {3}, 2}, {1, {2}, 2}});
    CHECK(slurm_mismatch(asym, {2, 3, 2, 0}) == "cores per socket: slurm 3, slices not uniform");
}

TEST_CASE("identical nodes share one CPU topology", "[model]") {
    std::vector<ResourceSlice> slices;
    for (int i = 0; i < 5; ++i) {
        const std::string n = "node" + std::to_string(i);
        slices.push_back(slice(n, kCpuDriver, small_smt_cpus()));
        slices.push_back(slice(n, kNvidiaDriver, {nvidia_gpu(0, 1, "0000:65:00.0")}));
    }
    Inventory inv = Inventory::build(slices, {});
    CHECK(inv.nodes().size() == 5);
    CHECK(inv.distinct_topologies() == 1);
    CHECK(inv.node("node3")->topology.gpus.size() == 1);
}

TEST_CASE("Slurm core indices follow coreID order within sockets, gaps and all", "[model]") {
    // Two sockets with ids 3 and 7; core ids with gaps (0, 4, 9) as on real
    // parts; siblings 64 apart; devices listed in a scrambled order.
    std::vector<Device> devs;
    int n = 0;
    for (int64_t socket : {7, 3})
        for (int64_t core : {9, 0, 4})
            for (int64_t t : {1, 0}) {
                const int64_t cpu = (socket == 3 ? 0 : 16) + core + t * 64;
                devs.push_back(cpu_device("cpudev" + std::to_string(n++), cpu, core, socket,
                                          socket == 3 ? 0 : 1, socket, true));
            }
    auto s = slice("n1", kCpuDriver, devs);
    BuildResult r = build_node_topology("n1", {&s});
    REQUIRE(r.ok);
    const CpuTopology &t = *r.topology.cpu;
    const int32_t expect[6][2] = {{0, 64}, {4, 68}, {9, 73}, {16, 80}, {20, 84}, {25, 89}};
    for (uint32_t core = 0; core < 6; ++core)
        for (uint32_t th = 0; th < 2; ++th)
            CHECK(t.cpus[*cpu_of_slurm_core(t, core, th)].cpu_id == expect[core][th]);
    CHECK(slurm_mismatch(r.topology, {2, 3, 2, 0}).empty());
}
