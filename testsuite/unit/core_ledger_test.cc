// SPDX-License-Identifier: GPL-2.0-or-later
// Ledger: free/claim/job holdings, from claims and from job begin/end.
#include "core/inventory.h"
#include "core/ledger.h"
#include "core/slurm_map.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

using namespace k8sdra;
using namespace k8sdra::test;

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
    std::vector<ResourceSlice> slices{
        slice("n1", kCpuDriver, small_smt_cpus()),
        slice("n1", kNvidiaDriver,
              {nvidia_gpu(0, 0, "0000:41:00.0"), nvidia_gpu(1, 1, "0000:c1:00.0")})};
    auto pod = claim("pod-a", {result(kCpuDriver, "cpudev000"), result(kCpuDriver, "cpudev001"),
                               result(kNvidiaDriver, "gpu-1")});
    auto job = claim("slurm-9", {result(kCpuDriver, "cpudev004")});
    job.labels["k8s-cons-tres.slurm.io/job-id"] = "9";
    auto bad = claim("ghost", {result(kCpuDriver, "cpudev099")});
    auto twice = claim("pod-b", {result(kCpuDriver, "cpudev000")});
    Inventory inv = Inventory::build(slices, {pod, job, bad, twice});
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
    REQUIRE(inv.claim_errors().size() == 2);
    CHECK(inv.claim_errors()[0] == "claim default/ghost: unknown device cpudev099");
    CHECK(inv.claim_errors()[1].find("held by claim default/pod-a") != std::string::npos);

    std::string err;
    CHECK(inv.job_begin("n1", 12, {2, 3}, {0}, &err));
    CHECK(inv.node("n1")->ledger.free_cpu_count() == 3);
    CHECK_FALSE(inv.job_begin("n1", 13, {3}, {}, &err));
    CHECK(inv.job_end(12) == 1);
    CHECK(inv.node("n1")->ledger.free_cpu_count() == 5);
    CHECK(inv.job_end(9) == 1);  // the labelled claim is job 9's
    CHECK_FALSE(inv.job_begin("nope", 1, {}, {}, &err));
}

TEST_CASE("grouped claims hold their cpuset or a count from the group", "[ledger]") {
    std::vector<Device> groups;
    for (int n = 0; n < 2; ++n) {
        Device d;
        d.name = "cpudevnuma00" + std::to_string(n);
        d.allowMultipleAllocations = true;
        d.attributes["resource.kubernetes.io/numaNode"] = int64_t{n};
        d.attributes["dra.cpu/socketID"] = int64_t{0};
        d.attributes["dra.cpu/smtEnabled"] = true;
        d.capacity["dra.cpu/cpu"] = "4";
        groups.push_back(d);
    }
    auto withset = claim("a", {result(kCpuDriver, "cpudevnuma000")});
    withset.results[0].consumedCapacity["dra.cpu/cpu"] = "2";
    withset.opaqueCpuset = "0-1";
    auto counted = claim("b", {result(kCpuDriver, "cpudevnuma001")});
    counted.results[0].consumedCapacity["dra.cpu/cpu"] = "3";
    Inventory inv = Inventory::build({slice("n1", kCpuDriver, groups)}, {withset, counted});
    const NodeEntry *n = inv.node("n1");
    REQUIRE(n->usable());
    CHECK(inv.claim_errors().empty());
    CHECK(n->ledger.free_cpu_count() == 3);
    CHECK_FALSE(bit_test(n->ledger.free_cpus(), 0));
    CHECK(bit_test(n->ledger.free_cpus(), 4));  // group 1 keeps its lowest CPU free
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
