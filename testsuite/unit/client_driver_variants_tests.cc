// SPDX-License-Identifier: GPL-2.0-or-later
// Recorded-style slices of each released driver variant -> decoded slices ->
// the topology the core builds from them.
#include "core/pool_select.h"
#include "core/topology_build.h"
#include "k8s_sync/compact_slice.h"
#include "k8s_sync/slice_json.h"
#include "testsuite/unit/client_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using k8s_cons_tres::test::readFixture;

namespace {

std::vector<ResourceSlice> readList(const std::string &file) {
    rapidjson::Document d;
    json::parse(d, readFixture(file));
    if (!d.HasMember("items"))  // a single ResourceSlice
        return {decodeResourceSlice(d)};
    std::vector<ResourceSlice> out;
    for (const rapidjson::Value &item : d["items"].GetArray())
        out.push_back(decodeResourceSlice(item));
    return out;
}

// The node built from the slices of these files (all of node1).
BuildResult buildFrom(std::initializer_list<const char *> files, GresOrder order = GresOrder::Minor) {
    static std::vector<std::vector<ResourceSlice>> keep;  // select_pools returns pointers
    std::vector<ResourceSlice> all;
    for (const char *f : files)
        for (ResourceSlice &s : readList(f))
            all.push_back(std::move(s));
    keep.push_back(std::move(all));
    auto pools = select_pools(keep.back());
    REQUIRE(pools.count("node1"));
    REQUIRE(pools["node1"].incomplete.empty());
    BuildOptions o;
    o.gres_order = order;
    return build_node_topology("node1", pools["node1"].complete, o);
}

const GpuInfo &gpu(const BuildResult &r, const std::string &device) {
    for (const GpuInfo &g : r.topology.gpus)
        if (g.device == device)
            return g;
    FAIL("no GPU " << device);
    throw std::logic_error("unreachable");
}

bool warned(const BuildResult &r, const std::string &text) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [&](const std::string &w) { return w.find(text) != std::string::npos; });
}

const char *const kVariantFiles[] = {
    "dra_cpu_v0.2_individual_pcie.json", "nvidia_v25.3.json",  "nvidia_v25.8.json",
    "nvidia_v25.12.json",                "nvidia_main_numa_list.json", "nvidia_mig.json",
    "nvidia_taints.json",                "example_partitions.json"};

}  // namespace

TEST_CASE("variant slices survive encode/decode and the compact form", "[variants]") {
    for (const char *f : kVariantFiles) {
        INFO(f);
        for (const ResourceSlice &s : readList(f)) {
            CHECK(parseResourceSlice(encodeResourceSlice(s)) == s);
            CHECK(compactSlice(s).expand() == s);
        }
    }
}

TEST_CASE("dra.cpu v0.2 individual: per-socket coreID, NUMA from numaNodeID, pcieRoot lists",
          "[variants]") {
    auto slices = readList("dra_cpu_v0.2_individual_pcie.json");
    REQUIRE(slices.size() == 2);
    const Device &d1 = slices[0].devices[1];
    CHECK(d1.name == "cpudev001");  // devices go by core: cpu0, cpu4, cpu1, cpu5, ...
    CHECK(std::get<int64_t>(d1.attributes.at("dra.cpu/cpuID")) == 4);
    CHECK_FALSE(d1.attributes.count("resource.kubernetes.io/numaNode"));
    CHECK(std::get<AttrStrings>(d1.attributes.at("resource.kubernetes.io/pcieRoot")) ==
          AttrStrings{"pci0000:00", "pci0000:1a"});

    BuildResult r = buildFrom({"dra_cpu_v0.2_individual_pcie.json", "nvidia_v25.12.json"});
    REQUIRE(r.ok);
    const CpuTopology &t = *r.topology.cpu;
    REQUIRE(t.cpus.size() == 8);
    REQUIRE(t.sockets.size() == 2);
    CHECK(t.cores.size() == 4);  // coreID 0 and 1 repeat on both sockets
    CHECK(t.sockets[0].ncores == 2);
    CHECK(t.sockets[1].ncores == 2);
    for (int32_t cpu : {0, 1, 4, 5})
        CHECK(t.numas[t.cores[t.cpus[t.cpu_index(cpu)].core].numa].id == 0);
    for (int32_t cpu : {2, 3, 6, 7})
        CHECK(t.numas[t.cores[t.cpus[t.cpu_index(cpu)].core].numa].id == 1);
    // Socket 1's first core is CPUs 2 and 6 (siblings 4 apart).
    const CoreInfo &c2 = t.cores[t.sockets[1].first_core];
    CHECK(t.cpus[c2.first_cpu].cpu_id == 2);
    CHECK(t.cpus[c2.first_cpu + 1].cpu_id == 6);
    REQUIRE(t.cells.size() == 2);
    CHECK(t.cells[0].l3_id == 0);
    CHECK(t.cells[1].l3_id == 1);
    CHECK(t.cells[1].cores.size() == 2);
    CHECK(t.numas[0].pcie_roots == std::vector<std::string>{"pci0000:00", "pci0000:1a"});

    // v25.12 GPUs publish no NUMA: affinity from their pcieRoot in the CPUs' lists.
    REQUIRE(r.topology.gpus.size() == 2);
    CHECK(r.topology.gpus[0].device == "gpu-0");
    CHECK(gpu(r, "gpu-0").numa_id == 1);
    CHECK(gpu(r, "gpu-0").affinity_source == AffinitySource::PcieRoot);
    CHECK(std::string(affinity_source_name(gpu(r, "gpu-0").affinity_source)) == "pcie-root");
    CHECK(gpu(r, "gpu-0").socket == 1);
    CHECK(gpu(r, "gpu-1").numa_id == 0);
    CHECK(gpu(r, "gpu-1").pci_bus_id == "0000:1b:00.0");
    CHECK(r.warnings.empty());
}

TEST_CASE("NVIDIA releases: GRES order by minor and by PCI bus id", "[variants]") {
    for (const char *f : {"nvidia_v25.3.json", "nvidia_v25.8.json", "nvidia_v25.12.json",
                          "nvidia_main_numa_list.json"}) {
        INFO(f);
        BuildResult m = buildFrom({"dra_cpu_v0.2_individual_pcie.json", f});
        REQUIRE(m.ok);
        REQUIRE(m.topology.gpus.size() == 2);
        CHECK(m.topology.gpus[0].device == "gpu-0");
        CHECK(m.topology.gpus[0].minor == 0);
        CHECK(m.topology.gpus[0].pci_bus_id == "0000:81:00.0");
        CHECK(m.topology.gpus[1].uuid == "GPU-5a8e3c1f-0b2d-4e6f-9a1c-000000000001");
        CHECK(m.topology.gpus[0].model == "NVIDIA H100 80GB HBM3");
        CHECK(m.topology.gpus[0].memory == "80Gi");
        CHECK(m.topology.gpus[0].numa_id == 1);
        BuildResult p = buildFrom({"dra_cpu_v0.2_individual_pcie.json", f}, GresOrder::PciBusId);
        REQUIRE(p.ok);
        CHECK(p.topology.gpus[0].device == "gpu-1");
        CHECK(p.topology.gpus[1].device == "gpu-0");
    }
}

TEST_CASE("NVIDIA main: numaNode as an ints list wins over pcieRoot", "[variants]") {
    BuildResult r = buildFrom({"dra_cpu_v0.2_individual_pcie.json", "nvidia_main_numa_list.json"});
    REQUIRE(r.ok);
    CHECK(gpu(r, "gpu-0").numa_id == 1);
    CHECK(gpu(r, "gpu-0").affinity_source == AffinitySource::NumaAttribute);
    CHECK(gpu(r, "gpu-1").numa_id == 0);
    CHECK(gpu(r, "gpu-1").affinity_source == AffinitySource::NumaAttribute);
}

TEST_CASE("GPUs without NUMA or a matching pcieRoot have unknown affinity", "[variants]") {
    // dra_cpu_individual.json (main, no --expose-pcie-roots) lists no roots.
    BuildResult r = buildFrom({"dra_cpu_individual.json", "nvidia_v25.8.json"});
    REQUIRE(r.ok);
    for (const GpuInfo &g : r.topology.gpus) {
        CHECK(g.numa == kUnknown);
        CHECK(g.socket == kUnknown);
        CHECK(g.affinity_source == AffinitySource::Unknown);
    }
    CHECK(warned(r, "CPU affinity unknown"));
}

TEST_CASE("NVIDIA DynamicMIG: MIG devices are children of their GPU", "[variants]") {
    auto slices = readList("nvidia_mig.json");
    REQUIRE(slices[0].sharedCounters.size() == 1);
    CHECK(slices[0].sharedCounters[0].name == "gpu-0-counter-set");
    CHECK(slices[0].sharedCounters[0].counters.at("memory") == "80Gi");
    REQUIRE(slices[1].devices[0].consumesCounters.size() == 1);
    CHECK(slices[1].devices[0].consumesCounters[0].counterSet == "gpu-0-counter-set");

    BuildResult r = buildFrom({"dra_cpu_v0.2_individual_pcie.json", "nvidia_mig.json"});
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 2);  // physical GPUs only
    const GpuInfo &g0 = r.topology.gpus[0];
    CHECK(g0.device == "gpu-0");
    CHECK(g0.unavailable.empty());
    CHECK(g0.children == std::vector<std::string>{"gpu-0-mig-1g10gb-19-1",
                                                  "gpu-0-mig-1g10gb-19-0"});
    CHECK(gpu_index_of(r.topology, "gpu.nvidia.com", "gpu-0-mig-1g10gb-19-0") == 0);
    CHECK(gpu_index_of(r.topology, "gpu.nvidia.com", "gpu-0") == 0);
    CHECK(gpu_index_of(r.topology, "gpu.nvidia.com", "gpu-1") == 1);
    CHECK(gpu_index_of(r.topology, "gpu.example.com", "gpu-1") == -1);
    CHECK(gpu_index_of(r.topology, "gpu.nvidia.com", "gpu-7") == -1);
}

TEST_CASE("tainted GPUs are unavailable unless the effect is None", "[variants]") {
    auto slices = readList("nvidia_taints.json");
    const DeviceTaint &t = slices[0].devices[1].taints.at(0);
    CHECK(t.key == "gpu.nvidia.com/xid");
    CHECK(t.value == "79");
    CHECK(t.effect == "NoSchedule");
    BuildResult r = buildFrom({"dra_cpu_v0.2_individual_pcie.json", "nvidia_taints.json"});
    REQUIRE(r.ok);
    CHECK(gpu(r, "gpu-0").unavailable.empty());
    CHECK(gpu(r, "gpu-1").unavailable == "taint gpu.nvidia.com/xid=NoSchedule");
    CHECK(gpu(r, "gpu-2").unavailable == "taint gpu.nvidia.com/gpu-lost=NoExecute");
}

TEST_CASE("example driver partitions: gpu-N-full is the GPU, partitions its children",
          "[variants]") {
    BuildResult r = buildFrom({"dra_cpu_v0.2_individual_pcie.json", "example_partitions.json"});
    REQUIRE(r.ok);
    REQUIRE(r.topology.gpus.size() == 2);
    const GpuInfo &g1 = r.topology.gpus[1];
    CHECK(g1.device == "gpu-1-full");
    CHECK(g1.driver == "gpu.example.com");
    CHECK(g1.minor == 1);
    CHECK(g1.model == "LATEST-GPU-MODEL");
    CHECK(g1.numa == kUnknown);
    CHECK(g1.affinity_source == AffinitySource::Unknown);
    CHECK(g1.children == std::vector<std::string>{"gpu-1-partition-0", "gpu-1-partition-1"});
    CHECK(gpu_index_of(r.topology, "gpu.example.com", "gpu-1-partition-1") == 1);
    CHECK(gpu_index_of(r.topology, "gpu.example.com", "gpu-0-full") == 0);
}
