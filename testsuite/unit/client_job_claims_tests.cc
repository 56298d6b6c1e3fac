// SPDX-License-Identifier: GPL-2.0-or-later
// A Slurm job's devices as the ResourceClaims that hold exactly them.
#include "testsuite/support/hwloc_fixture.h"
#include "core/inventory.h"
#include "k8s_sync/job_claims.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

namespace {

// 2 sockets x 2 NUMA x 6 cores x 2 threads: 24 cores, 48 CPUs, GPUs spread.
Inventory inventory(CpuMode mode, uint32_t gpus = 4) {
    FixtureOptions o;
    o.node = "node1";
    o.mode = mode;
    o.gpus = gpus;
    FixtureResult f = fixture_from_synthetic("pack:2 numa:2 l3:1 core:6 pu:2", o);
    REQUIRE(f.ok);
    return Inventory::build(f.slices, {});
}

PluginConfig config() {
    PluginConfig c;
    c.claim_namespace = "hpc";
    return c;
}

JobAlloc job(std::vector<uint32_t> cores, std::vector<uint32_t> gres = {}) {
    return JobAlloc{42, "alice", {JobNodeAlloc{"node1", std::move(cores), std::move(gres)}}};
}

std::set<int32_t> cpu_ids_of(const Inventory &inv, const std::vector<uint32_t> &cores) {
    const CpuTopology &t = *inv.node("node1")->topology.cpu;
    std::set<int32_t> ids;
    for (uint32_t c : cores)
        for (uint32_t th = 0; th < t.cores[c].nthreads; ++th) ids.insert(t.cpus[t.cores[c].first_cpu + th].cpu_id);
    return ids;
}

}  // namespace

TEST_CASE("individual mode: one result per CPU of every core, plus the GPUs") {
    const Inventory inv = inventory(CpuMode::Individual);
    std::string error;
    auto claims = job_claims(job({0, 1}, {1}), inv, config(), "hpc1", &error);
    REQUIRE(error.empty());
    REQUIRE(claims.size() == 1);
    const ClaimIntent &c = claims[0];
    CHECK(c.ns == "hpc");
    CHECK(c.name == claimName("hpc1", 42, "node1", 0));
    CHECK(c.nodeName == "node1");
    CHECK(c.labels.at(kLabelJob) == "42");
    CHECK(c.labels.at(kLabelUser) == "alice");
    CHECK(c.labels.at(kLabelCluster) == "hpc1");
    CHECK(c.opaqueCpuset.empty());
    // the devices are exactly the CPUs of cores 0 and 1 and GPU 1
    const CpuTopology &t = *inv.node("node1")->topology.cpu;
    std::set<int32_t> got;
    std::vector<std::string> gpus;
    for (const auto &r : c.results) {
        CHECK(r.pool == "node1");
        if (r.request == "cpu") {
            CHECK(r.driver == "dra.cpu");
            got.insert(t.cpus[t.by_device.at(r.device)].cpu_id);
        } else {
            gpus.push_back(r.device);
        }
    }
    CHECK(got == cpu_ids_of(inv, {0, 1}));
    CHECK(gpus == std::vector<std::string>{inv.node("node1")->topology.gpus[1].device});
    REQUIRE(c.requests.size() == 2);
    CHECK(c.requests[0].count == 4);
    CHECK(std::regex_search(c.requests[0].celSelectors.at(0), std::regex("cpuID in \\[")));
}

TEST_CASE("more than 32 devices are split over claims of at most 32 results") {
    const Inventory inv = inventory(CpuMode::Individual);
    std::vector<uint32_t> cores;
    for (uint32_t c = 0; c < 20; ++c) cores.push_back(c);  // 40 CPUs
    std::string error;
    auto claims = job_claims(job(cores, {0, 2}), inv, config(), "hpc1", &error);
    REQUIRE(claims.size() == 2);
    CHECK(claims[0].results.size() == 32);
    CHECK(claims[1].results.size() == 10);
    CHECK(claims[0].name == claimName("hpc1", 42, "node1", 0));
    CHECK(claims[1].name == claimName("hpc1", 42, "node1", 1));
    size_t total_cpu = 0;
    for (const auto &c : claims) {
        for (const auto &r : c.results) total_cpu += r.request == "cpu";
        // each claim's requests count exactly its own results
        int64_t counted = 0;
        for (const auto &q : c.requests) counted += q.count;
        CHECK(counted == static_cast<int64_t>(c.results.size()));
    }
    CHECK(total_cpu == 40);
}

// Every CPU request of a grouped claim asks for exactly what its one result
// consumes, and names no other device: spec and status say the same.
void check_grouped_consistent(const ClaimIntent &c) {
    for (const auto &r : c.results) {
        if (r.driver != "dra.cpu") continue;
        auto q = std::find_if(c.requests.begin(), c.requests.end(),
                              [&](const ClaimRequestSpec &x) { return x.name == r.request; });
        REQUIRE(q != c.requests.end());
        CHECK(q->count == 1);
        CHECK(q->capacity == r.consumedCapacity);
        CHECK(std::count_if(c.results.begin(), c.results.end(),
                            [&](const AllocationResult &x) { return x.request == r.request; }) == 1);
        CHECK(std::regex_match(r.shareID, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
    }
}

TEST_CASE("grouped mode: one share per group, its request asking for what it consumes") {
    const Inventory inv = inventory(CpuMode::GroupNuma);
    std::string error;
    // cores 5 and 6 sit in two different NUMA nodes of socket 0; core 7 too
    auto claims = job_claims(job({5, 6, 7}), inv, config(), "hpc1", &error);
    REQUIRE(error.empty());
    REQUIRE(claims.size() == 1);
    const ClaimIntent &c = claims[0];
    REQUIRE(c.results.size() == 2);
    REQUIRE(c.requests.size() == 2);
    std::map<std::string, std::string> consumed;
    for (const auto &r : c.results) consumed[r.device] = r.consumedCapacity.at("dra.cpu/cpu");
    CHECK(consumed == std::map<std::string, std::string>{{"cpudevnuma000", "2"}, {"cpudevnuma001", "4"}});
    check_grouped_consistent(c);
    CHECK(c.results[0].shareID != c.results[1].shareID);
    std::vector<int32_t> ids;
    REQUIRE(parse_cpuset(c.opaqueCpuset, &ids));
    CHECK(std::set<int32_t>(ids.begin(), ids.end()) == cpu_ids_of(inv, {5, 6, 7}));
    // the status written for it carries both shares and their capacity
    const std::string status = encodeClaimStatus(c, "1");
    CHECK(status.find("\"consumedCapacity\":{\"dra.cpu/cpu\":\"4\"}") != std::string::npos);
    CHECK(status.find("\"capacity\":{\"requests\":{\"dra.cpu/cpu\":\"4\"}}") != std::string::npos);
}

TEST_CASE("socket grouping with GPUs: shares and GPUs split, each part consistent") {
    const Inventory inv = inventory(CpuMode::GroupSocket);
    std::vector<uint32_t> cores;
    for (uint32_t k = 0; k < 24; ++k) cores.push_back(k);
    std::string error;
    auto claims = job_claims(job(cores, {0, 3}), inv, config(), "hpc1", &error);
    REQUIRE(claims.size() == 1);
    const ClaimIntent &c = claims[0];
    REQUIRE(c.results.size() == 4);
    check_grouped_consistent(c);
    CHECK(c.results[0].consumedCapacity.at("dra.cpu/cpu") == "24");
    CHECK(c.results[1].consumedCapacity.at("dra.cpu/cpu") == "24");
    // a GPU on a device without multiple allocations is a plain result
    CHECK(c.results[2].request == "gpu");
    CHECK(c.results[2].shareID.empty());
    CHECK(c.requests.back().count == 2);
}

TEST_CASE("grouped mode is logged once per node at info level; machine grouping not") {
    std::vector<std::string> lines;
    Logger log([&](LogLevel l, const std::string &m) { if (l == LogLevel::Info) lines.push_back(m); }, "t: ");
    std::string error;
    const Inventory numa = inventory(CpuMode::GroupNuma);
    job_claims(job({0}), numa, config(), "hpc1", &error, &log);
    job_claims(job({9}), numa, config(), "hpc1", &error, &log);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("node node1") != std::string::npos);
    CHECK(lines[0].find("counts per group, not individual CPUs") != std::string::npos);
    FixtureOptions o;
    o.node = "node2";
    o.mode = CpuMode::GroupMachine;
    FixtureResult f = fixture_from_synthetic("pack:1 core:4 pu:2", o);
    REQUIRE(f.ok);
    const Inventory machine = Inventory::build(f.slices, {});
    JobAlloc j{7, "bob", {JobNodeAlloc{"node2", {0}, {}}}};
    auto claims = job_claims(j, machine, config(), "hpc1", &error, &log);
    REQUIRE(claims.size() == 1);
    CHECK(claims[0].results.at(0).consumedCapacity.at("dra.cpu/cpu") == "2");
    CHECK(lines.size() == 1);
}

TEST_CASE("nodes the inventory does not know get no claim; bad indices are errors") {
    const Inventory inv = inventory(CpuMode::Individual);
    std::string error;
    JobAlloc j = job({0});
    j.nodes.push_back(JobNodeAlloc{"plain-node", {0, 1}, {}});
    auto claims = job_claims(j, inv, config(), "hpc1", &error);
    CHECK(error.empty());
    REQUIRE(claims.size() == 1);
    CHECK(claims[0].nodeName == "node1");

    CHECK(job_claims(job({24}), inv, config(), "hpc1", &error).empty());
    CHECK(error == "job 42: node node1 has no Slurm core 24 (it has 24)");
    error.clear();
    CHECK(job_claims(job({0}, {9}), inv, config(), "hpc1", &error).empty());
    CHECK(error == "job 42: node node1 has no GPU 9 (it has 4)");
}

TEST_CASE("shareIDs are stable and distinct") {
    CHECK(stable_uuid("a") == stable_uuid("a"));
    CHECK(stable_uuid("a") != stable_uuid("b"));
}

TEST_CASE("cpusets are written as sorted ranges and read back") {
    CHECK(format_cpuset({5, 2, 3, 4, 9, 11, 10, 3}) == "2-5,9-11");
    CHECK(format_cpuset({7}) == "7");
    CHECK(format_cpuset({}) == "");
    std::vector<int32_t> ids;
    REQUIRE(parse_cpuset(format_cpuset({0, 1, 2, 8, 16, 17}), &ids));
    CHECK(ids == std::vector<int32_t>{0, 1, 2, 8, 16, 17});
}

TEST_CASE("GPUs that allow multiple allocations: results carry a shareID and all their capacity") {
    FixtureOptions o;
    o.node = "node1";
    o.gpus = 2;
    o.gpu_driver = GpuDriverVariant::Example;
    FixtureResult f = fixture_from_synthetic("pack:2 numa:2 l3:1 core:6 pu:2", o);
    REQUIRE(f.ok);
    for (auto &s : f.slices)
        for (auto &d : s.devices)
            if (s.driver == "gpu.example.com") d.allowMultipleAllocations = true;
    const Inventory inv = Inventory::build(f.slices, {});
    REQUIRE(inv.node("node1")->usable());
    std::string error;
    auto claims = job_claims(job({0}, {1}), inv, config(), "hpc1", &error);
    REQUIRE(error.empty());
    REQUIRE(claims.size() == 1);
    const AllocationResult *gpu = nullptr;
    for (const auto &r : claims[0].results)
        if (r.driver == "gpu.example.com") gpu = &r;
    REQUIRE(gpu);
    CHECK_FALSE(gpu->shareID.empty());
    CHECK(gpu->consumedCapacity == inv.node("node1")->topology.gpus[1].capacity);
    CHECK_FALSE(gpu->consumedCapacity.empty());
    // an exclusive GPU's result says nothing of the kind
    const Inventory plain = inventory(CpuMode::Individual);
    auto c2 = job_claims(job({0}, {1}), plain, config(), "hpc1", &error);
    for (const auto &r : c2[0].results)
        if (r.driver != "dra.cpu") CHECK(r.shareID.empty());
}

TEST_CASE("slurm-bridge writes the claims of its external jobs only with ExternalJobClaims=bridge") {
    PluginConfig c = config();
    JobAlloc j = job({0});
    j.external = true;
    j.admin_comment = R"({"pods":["ml/train-0"]})";
    CHECK_FALSE(bridgeWritesClaims(j, c));  // the default: the plugin writes every job's
    c.bridge_job_claims = true;
    CHECK(bridgeWritesClaims(j, c));
    JobAlloc batch = j;  // AdminComment alone is anybody's to write
    batch.external = false;
    CHECK_FALSE(bridgeWritesClaims(batch, c));
    for (const char *comment : {"", "pods", "{}", R"({"pods":[]})", R"({"pods":"ml/a"})", R"({"pods":[1]})",
                                R"({"pods":[""]})", R"(["ml/a"])", R"({"pods":["ml/a"])"}) {
        JobAlloc other = j;
        other.admin_comment = comment;
        CHECK_FALSE(bridgeWritesClaims(other, c));
    }
}

TEST_CASE("one node's error costs that node's claims only, not the job's others") {
    std::vector<ResourceSlice> slices;
    for (const char *name : {"node1", "node2"}) {
        FixtureOptions o;
        o.node = name;
        o.mode = CpuMode::Individual;
        o.gpus = 4;
        FixtureResult f = fixture_from_synthetic("pack:2 numa:2 l3:1 core:6 pu:2", o);
        REQUIRE(f.ok);
        slices.insert(slices.end(), f.slices.begin(), f.slices.end());
    }
    const Inventory inv = Inventory::build(slices, {});
    // node2's part names a GPU it does not have (a resized or re-told job)
    JobAlloc j{42, "alice", {JobNodeAlloc{"node1", {0, 1}, {0}}, JobNodeAlloc{"node2", {0}, {9}}}};
    std::string error;
    std::vector<std::string> failed;
    auto claims = job_claims(j, inv, config(), "hpc1", &error, nullptr, &failed);
    REQUIRE(claims.size() == 1);
    CHECK(claims[0].nodeName == "node1");
    CHECK(claims[0].results.size() == 5);  // 4 CPUs and the GPU
    CHECK(error == "job 42: node node2 has no GPU 9 (it has 4)");
    CHECK(failed == std::vector<std::string>{"node2"});
}

TEST_CASE("without the user's name the label comes from the uid, looked up when the claim is encoded") {
    const Inventory inv = inventory(CpuMode::Individual);
    JobAlloc j = job({0});
    j.user.clear();
    j.uid = static_cast<uint32_t>(getuid());
    const std::string me = userName(*j.uid);
    REQUIRE(!me.empty());  // the test runs as a user with a name
    std::string error;
    auto claims = job_claims(j, inv, config(), "hpc1", &error);
    REQUIRE(claims.size() == 1);
    // no lookup while translating (that runs under slurmctld's locks) ...
    CHECK(!claims[0].labels.count(kLabelUser));
    CHECK(claims[0].userUid == j.uid);
    // ... only in the body the writer's thread sends
    rapidjson::Document d;
    json::parse(d, encodeClaimCreate(claims[0]));
    REQUIRE(d.IsObject());
    CHECK(std::string(d["metadata"]["labels"][kLabelUser].GetString()) == labelValue(me));
    CHECK(std::string(d["metadata"]["labels"][kLabelJob].GetString()) == "42");
    auto pods = job_holders(j, claims, inv, config(), "hpc1");
    REQUIRE(pods.size() == 1);
    json::parse(d, encodeHolderPod(pods[0]));
    CHECK(std::string(d["metadata"]["labels"][kLabelUser].GetString()) == labelValue(me));

    // a uid without a name: no label, and no name made up
    claims[0].userUid = 3999999999u;
    REQUIRE(userName(3999999999u).empty());
    json::parse(d, encodeClaimCreate(claims[0]));
    CHECK(!d["metadata"]["labels"].HasMember(kLabelUser));
    // a name slurmctld had already wins over the uid
    claims[0].labels[kLabelUser] = "alice";
    json::parse(d, encodeClaimCreate(claims[0]));
    CHECK(std::string(d["metadata"]["labels"][kLabelUser].GetString()) == "alice");
}
