// SPDX-License-Identifier: GPL-2.0-or-later
// Round trip: hwloc topology -> fixture slices -> model reproduces it.
#include "testsuite/support/hwloc_fixture.h"
#include "core/inventory.h"
#include "core/slurm_map.h"

#include <catch2/catch.hpp>
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <unistd.h>

using namespace k8s_cons_tres;

namespace {

// What hwloc itself says about a topology.
struct HwlocCounts {
    int pus = 0, cores = 0, numas = 0, packages = 0, l3 = 0;
};

// An empty description counts this machine.
HwlocCounts count_synthetic(const std::string &desc) {
    hwloc_topology_t t;
    hwloc_topology_init(&t);
    if (!desc.empty())
        hwloc_topology_set_synthetic(t, desc.c_str());
    hwloc_topology_load(t);
    HwlocCounts c{hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU),
                  hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE),
                  hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE),
                  hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE),
                  hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_L3CACHE)};
    hwloc_topology_destroy(t);
    return c;
}

Inventory model_of(const FixtureResult &f) {
    REQUIRE(f.ok);
    Inventory inv = Inventory::build(f.slices, {});
    REQUIRE(inv.nodes().size() == 1);
    INFO(inv.nodes()[0].invalid);
    REQUIRE(inv.nodes()[0].usable());
    return inv;
}

}  // namespace

TEST_CASE("individual mode fixture round-trips through the model", "[fixture]") {
    const std::string desc = "pack:2 numa:4 l3:2 core:8 pu:2";
    const HwlocCounts hw = count_synthetic(desc);
    FixtureOptions o;
    o.node = "big";
    o.gpus = 8;
    FixtureResult f = fixture_from_synthetic(desc, o);
    REQUIRE(f.ok);
    // 256 CPUs: two dra.cpu slices of 128 in one pool, plus one GPU slice.
    REQUIRE(f.slices.size() == 3);
    CHECK(f.slices[0].devices.size() == 128);
    CHECK(f.slices[0].pool.resourceSliceCount == 2);
    CHECK(f.slices[0].devices[0].name == "cpudev000");
    CHECK(f.slices[1].devices[127].name == "cpudev255");
    CHECK(f.slices[2].driver == "gpu.nvidia.com");

    Inventory inv = model_of(f);
    const NodeEntry &n = inv.nodes()[0];
    const CpuTopology &t = *n.topology.cpu;
    CHECK(static_cast<int>(t.cpus.size()) == hw.pus);
    CHECK(static_cast<int>(t.cores.size()) == hw.cores);
    CHECK(static_cast<int>(t.numas.size()) == hw.numas);
    CHECK(static_cast<int>(t.sockets.size()) == hw.packages);
    CHECK(static_cast<int>(t.cells.size()) == hw.l3);
    CHECK(slurm_mismatch(n.topology, {2, 64, 2, 8}).empty());
    // Every NUMA node holds 32 CPUs in 2 L3 groups; GPUs one per NUMA node.
    for (const NumaInfo &numa : t.numas)
        CHECK(numa.ncpus == 32);
    for (const CellInfo &c : t.cells)
        CHECK(c.cores.size() == 8);
    REQUIRE(n.topology.gpus.size() == 8);
    std::set<int32_t> gpu_numas;
    for (const GpuInfo &g : n.topology.gpus)
        gpu_numas.insert(g.numa);
    CHECK(gpu_numas.size() == 8);
    // A slice missing from the pool makes the node unusable.
    f.slices.erase(f.slices.begin() + 1);
    CHECK_FALSE(Inventory::build(f.slices, {}).nodes()[0].usable());
}

TEST_CASE("grouped mode fixtures", "[fixture]") {
    const std::string desc = "pack:2 numa:2 core:4 pu:2";
    FixtureOptions o;
    o.mode = CpuMode::GroupNuma;
    FixtureResult f = fixture_from_synthetic(desc, o);
    REQUIRE(f.ok);
    REQUIRE(f.slices.size() == 1);
    REQUIRE(f.slices[0].devices.size() == 4);
    CHECK(f.slices[0].devices[3].name == "cpudevnuma003");
    CHECK(f.slices[0].devices[3].capacity.at("dra.cpu/cpu") == "8");
    CHECK(f.slices[0].devices[3].allowMultipleAllocations);
    Inventory inv = model_of(f);
    const CpuTopology &t = *inv.nodes()[0].topology.cpu;
    CHECK(t.grouped);
    CHECK(t.cpus.size() == 32);
    CHECK(t.numas.size() == 4);
    CHECK(t.sockets.size() == 2);
    CHECK(t.max_threads_per_core == 2);

    o.mode = CpuMode::GroupSocket;
    f = fixture_from_synthetic(desc, o);
    REQUIRE(f.slices[0].devices.size() == 2);
    CHECK(f.slices[0].devices[1].name == "cpudevsocket001");
    CHECK(model_of(f).nodes()[0].topology.cpu->sockets.size() == 2);

    o.mode = CpuMode::GroupMachine;
    f = fixture_from_synthetic(desc, o);
    REQUIRE(f.slices[0].devices.size() == 1);
    CHECK(f.slices[0].devices[0].name == "cpudevmachine");
    CHECK(model_of(f).nodes()[0].topology.cpu->cpus.size() == 32);
}

TEST_CASE("XML and this machine's topology", "[fixture]") {
    hwloc_topology_t t;
    hwloc_topology_init(&t);
    hwloc_topology_set_synthetic(t, "pack:1 numa:2 core:3 pu:1");
    hwloc_topology_load(t);
    char path[] = "/tmp/core_fixture_XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE(hwloc_topology_export_xml(t, path, 0) == 0);
    hwloc_topology_destroy(t);
    FixtureResult f = fixture_from_xml(path, {});
    std::remove(path);
    Inventory inv = model_of(f);
    CHECK(inv.nodes()[0].topology.cpu->cpus.size() == 6);
    CHECK(inv.nodes()[0].topology.cpu->numas.size() == 2);

    FixtureResult me = fixture_from_this_machine({});
    Inventory mine = model_of(me);
    const HwlocCounts hw = count_synthetic("");
    CHECK(static_cast<int>(mine.nodes()[0].topology.cpu->cpus.size()) == hw.pus);
    CHECK(static_cast<int>(mine.nodes()[0].topology.cpu->numas.size()) == std::max(1, hw.numas));

    CHECK_FALSE(fixture_from_synthetic("bogus:7", {}).ok);
    CHECK_FALSE(fixture_from_xml("/nonexistent.xml", {}).ok);
}

TEST_CASE("hand-placed fixture GPUs", "[fixture]") {
    FixtureOptions o;
    o.gpu_list = {{1, "pci0000:90"}, {-1, ""}};
    FixtureResult f = fixture_from_synthetic("pack:1 numa:2 core:2 pu:1", o);
    Inventory inv = model_of(f);
    const auto &gpus = inv.nodes()[0].topology.gpus;
    REQUIRE(gpus.size() == 2);
    CHECK(gpus[0].numa_id == 1);
    CHECK(gpus[0].pcie_root == "pci0000:90");
    CHECK(gpus[1].numa == kUnknown);
    CHECK(gpus[1].pcie_root == "pci0000:20");
    CHECK(gpus[1].uuid != gpus[0].uuid);
}
