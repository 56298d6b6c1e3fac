// SPDX-License-Identifier: GPL-2.0-or-later
// k8s-cons-tres-inspect per driver variant: recorded slices -> report JSON.
#include "testsuite/support/hwloc_fixture.h"
#include "k8s_client/json.h"
#include "tools/inspect_report.h"
#include "tools/inspect_sources.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::inspect;

namespace {

std::string fixture(const std::string &name) { return std::string(K8S_CONS_TRES_FIXTURE_DIR) + "/" + name; }

std::vector<ResourceSlice> slices(std::initializer_list<const char *> files) {
    std::vector<ResourceSlice> out;
    for (const char *f : files)
        for (ResourceSlice &s : slices_from_file(fixture(f)))
            out.push_back(std::move(s));
    return out;
}

// The report as a script reads it: JSON, node "node1".
struct Json {
    rapidjson::Document doc;
    explicit Json(const Report &r) { json::parse(doc, report_json(r)); }
    const rapidjson::Value &node() const {
        for (const auto &n : doc["nodes"].GetArray())
            if (std::string(n["name"].GetString()) == "node1")
                return n;
        FAIL("no node1 in the report");
        return doc;
    }
    const rapidjson::Value &gpu(const std::string &device) const {
        for (const auto &g : node()["gpus"].GetArray())
            if (g["device"].GetString() == device)
                return g;
        FAIL("no GPU " << device);
        return doc;
    }
};

std::vector<int64_t> ints(const rapidjson::Value &a) {
    std::vector<int64_t> out;
    for (const auto &v : a.GetArray())
        out.push_back(v.GetInt64());
    return out;
}

std::vector<std::string> strings(const rapidjson::Value &a) {
    std::vector<std::string> out;
    for (const auto &v : a.GetArray())
        out.push_back(v.GetString());
    return out;
}

// "device: reason" of every unavailable entry.
std::vector<std::string> unavailable(const Json &j) {
    std::vector<std::string> out;
    for (const auto &u : j.node()["unavailable"].GetArray())
        out.push_back(std::string(u["device"].GetString()) + ": " + u["reason"].GetString());
    return out;
}

bool any_contains(const std::vector<std::string> &v, const std::string &part) {
    for (const std::string &s : v)
        if (s.find(part) != std::string::npos)
            return true;
    return false;
}

// dra.cpu v0.2.0 individual with --expose-pcie-roots: NUMA 0 has CPUs
// 0,1,4,5 and roots pci0000:00/1a; NUMA 1 has 2,3,6,7 and pci0000:80.
void check_v02_cpus(const Json &j) {
    const auto &n = j.node();
    CHECK(n["usable"].GetBool());
    CHECK(n["cpu_mode"].GetString() == std::string("individual"));
    CHECK(n["sockets"].GetInt() == 2);
    REQUIRE(n["numa_nodes"].Size() == 2);
    CHECK(n["numa_nodes"][0]["id"].GetInt() == 0);
    CHECK(ints(n["numa_nodes"][0]["cpus"]) == std::vector<int64_t>{0, 1, 4, 5});
    CHECK(ints(n["numa_nodes"][1]["cpus"]) == std::vector<int64_t>{2, 3, 6, 7});
    CHECK(strings(n["numa_nodes"][1]["pcie_roots"]) == std::vector<std::string>{"pci0000:80"});
}

}  // namespace

TEST_CASE("dra.cpu v0.2 with pcie roots + NVIDIA v25.12: GPU NUMA from pcieRoot") {
    Json j(build_report(slices({"dra_cpu_v0.2_individual_pcie.json", "nvidia_v25.12.json"}), {}));
    check_v02_cpus(j);
    CHECK(j.gpu("gpu-0")["numa"].GetInt() == 1);
    CHECK(j.gpu("gpu-0")["pcie_root"].GetString() == std::string("pci0000:80"));
    CHECK(j.gpu("gpu-0")["affinity_source"].GetString() == std::string("pcie-root"));
    CHECK(j.gpu("gpu-1")["numa"].GetInt() == 0);
    CHECK(j.gpu("gpu-1")["affinity_source"].GetString() == std::string("pcie-root"));
    const auto &n = j.node();
    CHECK(n["unavailable"].Size() == 0);
    CHECK(n["slurm_conf"].GetString() ==
          std::string("NodeName=node1 Sockets=2 CoresPerSocket=2 ThreadsPerCore=2 Gres=gpu:2"));
    // minor order; each GPU gets its NUMA node's Slurm cores (socket 1 = cores 2-3)
    CHECK(strings(n["gres_conf"]) ==
          std::vector<std::string>{"NodeName=node1 Name=gpu File=/dev/nvidia0 Cores=2-3",
                                   "NodeName=node1 Name=gpu File=/dev/nvidia1 Cores=0-1"});
}

TEST_CASE("NVIDIA v25.3 and v25.8 (bare pcieBusID): same affinity, PCI bus order works") {
    for (const char *f : {"nvidia_v25.3.json", "nvidia_v25.8.json"}) {
        INFO(f);
        ReportOptions o;
        o.inventory.gres_order = GresOrder::PciBusId;
        Json j(build_report(slices({"dra_cpu_v0.2_individual_pcie.json", f}), {}, o));
        check_v02_cpus(j);
        // by PCI bus id gpu-1 (0000:1b) comes before gpu-0 (0000:81)
        CHECK(j.node()["gpus"][0]["device"].GetString() == std::string("gpu-1"));
        CHECK(j.node()["gpus"][0]["pci_bus_id"].GetString() == std::string("0000:1b:00.0"));
        CHECK(j.gpu("gpu-0")["numa"].GetInt() == 1);
        CHECK(j.gpu("gpu-1")["affinity_source"].GetString() == std::string("pcie-root"));
    }
}

TEST_CASE("NVIDIA main with list-typed numaNode: affinity from the attribute") {
    Json j(build_report(slices({"dra_cpu_v0.2_individual_pcie.json", "nvidia_main_numa_list.json"}), {}));
    CHECK(j.gpu("gpu-0")["numa"].GetInt() == 1);
    CHECK(j.gpu("gpu-0")["affinity_source"].GetString() == std::string("numa-attribute"));
}

TEST_CASE("dra.cpu main individual + NVIDIA with numaNode") {
    Json j(build_report(slices({"dra_cpu_individual.json", "nvidia_gpu.json"}), {}));
    const auto &n = j.node();
    CHECK(n["cpu_mode"].GetString() == std::string("individual"));
    CHECK(j.gpu("gpu-0")["numa"].GetInt() == 0);
    CHECK(j.gpu("gpu-0")["affinity_source"].GetString() == std::string("numa-attribute"));
    CHECK(n["numa_nodes"][0]["cpus"].Size() == n["numa_nodes"][0]["ncpus"].GetUint());
}

TEST_CASE("grouped mode: counts per NUMA group, no CPU ids, a warning") {
    Json j(build_report(slices({"dra_cpu_grouped.json", "nvidia_gpu.json"}), {}));
    const auto &n = j.node();
    CHECK(n["cpu_mode"].GetString() == std::string("grouped-numa"));
    REQUIRE(n["numa_nodes"].Size() == 2);
    CHECK(n["numa_nodes"][0]["ncpus"].GetInt() == 64);
    CHECK(n["numa_nodes"][0]["cpus"].Size() == 0);
    CHECK(any_contains(strings(n["warnings"]), "grouped mode (numa)"));
    CHECK(j.gpu("gpu-0")["numa"].GetInt() == 0);
}

TEST_CASE("taints: NoSchedule and NoExecute GPUs unavailable, effect None is fine") {
    Json j(build_report(slices({"dra_cpu_v0.2_individual_pcie.json", "nvidia_taints.json"}), {}));
    const auto u = unavailable(j);
    CHECK(any_contains(u, "gpu-1: taint gpu.nvidia.com/xid"));
    CHECK(any_contains(u, "gpu-2: taint gpu.nvidia.com/gpu-lost"));
    CHECK_FALSE(any_contains(u, "gpu-0:"));
}

TEST_CASE("MIG: a pod holding a MIG slice makes its whole GPU unavailable") {
    ClaimHolding c;
    c.ns = "ml";
    c.name = "mig-user";
    c.allocated = true;
    c.nodeName = "node1";
    c.results.push_back({"gpu", "gpu.nvidia.com", "node1", "gpu-0-mig-1g10gb-19-1", "", {}});
    Json j(build_report(slices({"dra_cpu_v0.2_individual_pcie.json", "nvidia_mig.json"}), {c}));
    CHECK(strings(j.gpu("gpu-0")["partitions"]).size() == 2);
    const auto u = unavailable(j);
    CHECK(any_contains(u, "gpu-0: held by claim ml/mig-user through gpu-0-mig-1g10gb-19-1"));
    CHECK_FALSE(any_contains(u, "gpu-1:"));
}

TEST_CASE("example driver: partitions, and unknown affinity without Cores=") {
    Json j(build_report(slices({"dra_cpu_v0.2_individual_pcie.json", "example_partitions.json"}), {},
                        ReportOptions{InventoryOptions{GresOrder::Minor, "dra.cpu", {"gpu.example.com"}}, "", {}, {}}));
    const auto &g0 = j.gpu("gpu-0-full");
    CHECK(g0["affinity_source"].GetString() == std::string("unknown"));
    CHECK(g0["numa"].IsNull());
    CHECK(any_contains(strings(j.node()["warnings"]), "unknown CPU affinity (gpu-0-full, gpu-1-full)"));
    CHECK(any_contains(strings(j.node()["gres_conf"]), "File=/dev/nvidia0"));
    CHECK_FALSE(any_contains(strings(j.node()["gres_conf"]), "Cores="));
    CHECK(strings(j.gpu("gpu-1-full")["partitions"]) ==
          std::vector<std::string>{"gpu-1-partition-0", "gpu-1-partition-1"});
    CHECK(j.node()["unavailable"].Size() == 0);
}

TEST_CASE("GPU drivers not configured are not read (GPUDrivers= default)") {
    Json j(build_report(slices({"dra_cpu_v0.2_individual_pcie.json", "example_partitions.json"}), {},
                        ReportOptions{InventoryOptions{GresOrder::Minor, "dra.cpu", {"gpu.nvidia.com"}}, "", {}, {}}));
    CHECK(j.node()["gpus"].Size() == 0);
}

namespace {
// The report of claim_allocated.json's node with `claims`, for cluster `cluster`.
Json claims_report(const std::vector<ClaimHolding> &claims, const std::string &cluster) {
    ReportOptions opts;
    opts.owner.cluster_label = cluster;
    return Json(build_report(slices({"dra_cpu_individual.json", "nvidia_gpu.json"}), claims, opts));
}
}  // namespace

TEST_CASE("claims: a tenant's job label makes no claim a Slurm job's") {
    // claim_allocated.json carries the job-id label in namespace "default":
    // anyone can write that, so it is shown as what it is, a pod's claim
    const auto u = unavailable(claims_report(claims_from_file(fixture("claim_allocated.json")), "hpc1"));
    CHECK(any_contains(u, "cpudev000: held by claim default/slurm-1234-node1"));
    CHECK_FALSE(any_contains(u, "Slurm job 1234"));
}

TEST_CASE("claims: CPUs and GPUs held by a Slurm job's claim and a pod's") {
    // the same claim as the plugin writes it: claim namespace, its labels
    std::vector<ClaimHolding> claims = claims_from_file(fixture("claim_allocated.json"));
    ClaimHolding &c = claims.at(0);
    c.ns = "slurm";
    c.labels = {{"app.kubernetes.io/managed-by", "slurm-k8s-cons-tres"},
                {"k8s-cons-tres.slurm.io/cluster", "hpc1"},
                {"k8s-cons-tres.slurm.io/job-id", "1234"},
                {"k8s-cons-tres.slurm.io/node", "node1"}};
    Json j = claims_report(claims, "hpc1");
    const auto u = unavailable(j);
    CHECK(any_contains(u, "cpudev000: Slurm job 1234 (claim slurm/slurm-1234-node1)"));
    CHECK(any_contains(u, "gpu-0: Slurm job 1234"));
    // another cluster's controller wrote it: not this cluster's job
    CHECK_FALSE(any_contains(unavailable(claims_report(claims, "other")), "Slurm job 1234"));
    for (const auto &x : j.node()["unavailable"].GetArray())
        if (x["device"].GetString() == std::string("cpudev001"))
            CHECK(ints(x["cpus"]) == std::vector<int64_t>{32});
}

TEST_CASE("reserved CPUs and CPU taints as dra.cpu v0.2 publishes them") {
    FixtureOptions o;
    o.cpu_driver = CpuDriverVariant::V0_2;
    o.reserved_cpus = {0, 16};
    o.taints.push_back({"cpudev005", {"dra.cpu/broken", "", "NoExecute"}});
    FixtureResult f = fixture_from_synthetic("pack:2 numa:1 core:8 pu:2", o);
    REQUIRE(f.ok);
    Json j(build_report(f.slices, {}));
    const auto &n = j.node();
    CHECK(ints(n["reserved_cpus"]) == std::vector<int64_t>{0, 16});
    const auto u = unavailable(j);
    CHECK(any_contains(u, "cpu0: reserved"));
    CHECK(any_contains(u, "cpu16: reserved"));
    CHECK(any_contains(u, "cpudev005: taint dra.cpu/broken"));
    // Slurm describes the hardware: the core short of a thread does not shrink it
    CHECK(n["slurm_conf"].GetString() ==
          std::string("NodeName=node1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2"));
}

TEST_CASE("files: a List, one object, or an error naming the file") {
    CHECK(slices_from_file(fixture("dra_cpu_individual.json")).size() == 1);
    CHECK(slices_from_file(fixture("nvidia_mig.json")).size() == 2);
    CHECK(claims_from_file(fixture("claim_grouped.json")).at(0).opaqueCpuset == "2-5");
    CHECK_THROWS_WITH(slices_from_file(fixture("claim_grouped.json")),
                      Catch::Contains("claim_grouped.json") && Catch::Contains("ResourceSlice"));
    CHECK_THROWS_AS(slices_from_file(fixture("no-such-file.json")), SourceError);
}

TEST_CASE("node mode: slurmd without discovery, external with it, and what stops a node") {
    const auto s = slices({"dra_cpu_v0.2_individual_pcie.json", "nvidia_v25.12.json"});
    SECTION("NodeDiscovery=none: a slurmd node, with its slurm.conf line") {
        Json j(build_report(s, {}));
        CHECK(j.node()["mode"].GetString() == std::string("slurmd"));
        CHECK(j.node()["external_node"].IsNull());
        CHECK(std::string(j.node()["slurm_conf"].GetString()).rfind("NodeName=node1 ", 0) == 0);
    }
    ReportOptions o;
    o.discovery = Discovery{"scheduler.slinky.slurm.net/external-node", {"k8s"}, {}};
    for (KubeNodeState &n : nodes_from_file(fixture("nodes.json")))
        o.discovery->nodes[n.name] = n;
    SECTION("matched and Ready: the EXTERNAL node the plugin creates, no slurm.conf line") {
        Report r = build_report(s, {}, o);
        Json j(r);
        const auto &n = j.node();
        CHECK(n["mode"].GetString() == std::string("external"));
        const std::string line = n["external_node"].GetString();
        CHECK(line.rfind("NodeName=node1 NodeAddr=10.0.0.1 State=EXTERNAL CPUs=8 Sockets=2 CoresPerSocket=2 "
                         "ThreadsPerCore=2 RealMemory=31912 Features=k8s,k8s_cons_tres,",
                         0) == 0);
        CHECK(line.find(" Gres=gpu:") != std::string::npos);
        CHECK(line.find(" GresConf=\"name=gpu,") != std::string::npos);
        CHECK(n["slurm_conf"].GetString() == std::string());
        CHECK(n["gres_conf"].Size() == 0);
        CHECK_THAT(n["mode_note"].GetString(), Catch::Contains("no slurmd"));
        CHECK_THAT(report_text(r), Catch::Contains("  mode: external; matched by NodeSelector="
                                                   "scheduler.slinky.slurm.net/external-node") &&
                                       Catch::Contains("  created as: NodeName=node1 NodeAddr=10.0.0.1 State=EXTERNAL"));
    }
    SECTION("not matched by the selector: a slurmd node") {
        o.discovery->nodes.erase("node1");
        Json j(build_report(s, {}, o));
        CHECK(j.node()["mode"].GetString() == std::string("slurmd"));
        CHECK_THAT(j.node()["mode_note"].GetString(), Catch::Contains("not matched by NodeSelector="));
    }
    SECTION("cordoned: external, not created while it lasts") {
        o.discovery->nodes["node1"].unschedulable = true;
        Json j(build_report(s, {}, o));
        CHECK(j.node()["mode"].GetString() == std::string("external"));
        CHECK_THAT(j.node()["mode_note"].GetString(),
                   Catch::Contains("cordoned in Kubernetes") && Catch::Contains("not created"));
    }
    SECTION("matched without slices, or with slices that make no node: the reason") {
        o.discovery->nodes["node1"].memory_mb = 0;  // allocatable memory unreadable
        Report r = build_report(s, {}, o);
        REQUIRE(r.nodes.size() == 2);
        CHECK(r.nodes[0].name == "node1");
        CHECK(r.nodes[0].external_node.empty());
        CHECK_THAT(r.nodes[0].mode_note, Catch::Contains("not created: "));
        CHECK(r.nodes[1].name == "node2");
        CHECK(r.nodes[1].mode == "external");
        CHECK_THAT(r.nodes[1].mode_note,
                   Catch::Contains("not created: publishes no ResourceSlices"));
    }
}

TEST_CASE("node files: what node discovery reads of each Node") {
    const auto n = nodes_from_file(fixture("nodes.json"));
    REQUIRE(n.size() == 2);
    CHECK(n[0] == KubeNodeState{"node1", false, true, "", 31912, "10.0.0.1"});
    CHECK(n[1].unschedulable);
    CHECK_FALSE(n[1].ready);
    CHECK_THAT(n[1].not_ready, Catch::Contains("KubeletNotReady"));
    CHECK(n[1].memory_mb == 16384);
    CHECK_THROWS_WITH(nodes_from_file(fixture("claim_grouped.json")),
                      Catch::Contains("claim_grouped.json") && Catch::Contains("Node"));
}
