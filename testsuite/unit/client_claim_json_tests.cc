// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/claim_json.h"
#include "k8s_sync/holder_pod.h"
#include "testsuite/unit/client_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using k8s_cons_tres::test::readFixture;

namespace {

ClaimIntent exampleIntent() {
    ClaimIntent c;
    c.ns = "default";
    c.name = claimName("c1", 1234, "node1");
    c.labels = claimLabels("c1", 1234, "node1");
    c.results = {{"cpu", "dra.cpu", "node1", "cpudev000", "", {}},
                 {"cpu", "dra.cpu", "node1", "cpudev001", "", {}},
                 {"gpu", "gpu.nvidia.com", "node1", "gpu-0", "", {}}};
    c.nodeName = "node1";
    return c;
}

}  // namespace

TEST_CASE("recorded allocated claim decodes into a holding", "[json][claim]") {
    ClaimHolding h = parseClaimHolding(readFixture("claim_allocated.json"));
    CHECK(h.ns == "default");
    CHECK(h.name == "slurm-1234-node1");
    CHECK(h.uid == "1d0c5a7e-8f7b-4c1e-9a55-1f0b3c2d4e5f");
    CHECK(h.resourceVersion == "1007");
    CHECK(h.labels.at("k8s-cons-tres.slurm.io/job-id") == "1234");
    CHECK(h.allocated);
    CHECK(h.nodeName == "node1");
    CHECK(h.opaqueCpuset.empty());
    REQUIRE(h.results.size() == 3);
    CHECK(h.results[2] == AllocationResult{"gpu", "gpu.nvidia.com", "node1", "gpu-0", "", {}});
}

TEST_CASE("grouped-mode claim keeps shareID, consumed capacity and cpuset", "[json][claim]") {
    ClaimHolding h = parseClaimHolding(readFixture("claim_grouped.json"));
    CHECK(h.ns == "slurm");
    REQUIRE(h.results.size() == 1);
    CHECK(h.results[0].device == "cpudevmachine");
    CHECK(h.results[0].shareID == "0b5e8c1e-2f0a-4c5d-9a43-6f1e2d3c4b5a");
    CHECK(h.results[0].consumedCapacity.at("dra.cpu/cpu") == "4");
    CHECK(h.opaqueCpuset == "2-5");
}

TEST_CASE("unallocated claim", "[json][claim]") {
    ClaimHolding h = parseClaimHolding(readFixture("claim_pending.json"));
    CHECK_FALSE(h.allocated);
    CHECK(h.results.empty());
    CHECK(h.nodeName.empty());
}

TEST_CASE("claim names and labels are deterministic and valid", "[claim]") {
    CHECK(claimName("c1", 1234, "node1") == "slurm-c1-1234-node1-0");
    CHECK(claimName("c1", 1234, "node1", 2) == "slurm-c1-1234-node1-2");
    // node "n" part 1 and node "n-1" part 0; "Node_1" and "node-1"
    CHECK(claimName("c1", 7, "n", 1) != claimName("c1", 7, "n-1", 0));
    CHECK(claimName("c1", 7, "Node_1") != claimName("c1", 7, "node-1"));
    CHECK(claimName("C1", 1234, "Node_1", 2).rfind("slurm-c1-1234-node-1-", 0) == 0);
    CHECK(claimName("c1", 1, std::string(300, 'a')).size() <= 253);
    CHECK(claimName("c1", 1, std::string(300, 'a')) != claimName("c1", 1, std::string(301, 'a')));
    auto l = claimLabels("c1", 1234, "node1");
    CHECK(l.at(kLabelCluster) == "c1");
    CHECK(l.at(kLabelJob) == "1234");
    CHECK(l.at(kLabelNode) == "node1");
    CHECK(l.at(kLabelManagedBy) == kManagedByValue);
    CHECK(labelValue("ok.value_1") == "ok.value_1");
    std::string longv = labelValue(std::string(80, 'n'));
    CHECK(longv.size() <= 63);
    CHECK(labelValue("bad value!") != "bad value!");
}

TEST_CASE("create body carries metadata and spec, never status", "[json][claim]") {
    ClaimIntent c = exampleIntent();
    rapidjson::Document doc;
    json::parse(doc, encodeClaimCreate(c));
    CHECK(std::string(doc["kind"].GetString()) == "ResourceClaim");
    CHECK(std::string(doc["metadata"]["name"].GetString()) == "slurm-c1-1234-node1-0");
    CHECK(std::string(doc["metadata"]["labels"][kLabelJob].GetString()) == "1234");
    CHECK_FALSE(doc["metadata"].HasMember("resourceVersion"));
    CHECK_FALSE(doc.HasMember("status"));
    const auto &reqs = doc["spec"]["devices"]["requests"];
    REQUIRE(reqs.Size() == 2);
    CHECK(std::string(reqs[0]["name"].GetString()) == "cpu");
    CHECK(std::string(reqs[0]["exactly"]["deviceClassName"].GetString()) == "dra.cpu");
    CHECK(reqs[0]["exactly"]["count"].GetInt() == 2);
    CHECK(reqs[1]["exactly"]["count"].GetInt() == 1);
}

TEST_CASE("status body round-trips through the holding decoder", "[json][claim]") {
    ClaimIntent c = exampleIntent();
    std::string body = encodeClaimStatus(c, "77");
    rapidjson::Document doc;
    json::parse(doc, body);
    CHECK(std::string(doc["metadata"]["resourceVersion"].GetString()) == "77");
    const auto &term = doc["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0];
    CHECK(std::string(term["matchFields"][0]["key"].GetString()) == "metadata.name");
    ClaimHolding h = parseClaimHolding(body);
    CHECK(h.allocated);
    CHECK(h.results == c.results);
    CHECK(h.nodeName == "node1");
    CHECK(isOurs(h, c));
    CHECK(allocationMatches(h, c));
}

TEST_CASE("one status write carries the allocation and the holder pod's reservation", "[json][claim]") {
    ClaimIntent c = exampleIntent();
    rapidjson::Document doc;
    json::parse(doc, encodeClaimStatus(c, "5", "pod-uid"));
    CHECK_FALSE(doc["status"].HasMember("reservedFor"));  // no holder pod named
    c.holder = "slurm-hpc1-42-node1-holder";
    json::parse(doc, encodeClaimStatus(c, "5"));
    CHECK_FALSE(doc["status"].HasMember("reservedFor"));  // its uid not known yet
    json::parse(doc, encodeClaimStatus(c, "5", "pod-uid"));
    CHECK(doc["status"].HasMember("allocation"));
    const auto &r = doc["status"]["reservedFor"];
    REQUIRE(r.Size() == 1);
    CHECK(std::string(r[0]["resource"].GetString()) == "pods");
    CHECK(std::string(r[0]["name"].GetString()) == c.holder);
    CHECK(std::string(r[0]["uid"].GetString()) == "pod-uid");
    // what the pod's own operation would write is the same: nothing left to do
    CHECK_FALSE(reserveClaimFor(doc, c.holder, "pod-uid"));
}

TEST_CASE("grouped-mode status carries the opaque cpuset", "[json][claim]") {
    ClaimIntent c;
    c.name = "g";
    c.nodeName = "node1";
    c.opaqueCpuset = "2-5";
    c.results = {{"cpu", "dra.cpu", "node1", "cpudevmachine",
                  "0b5e8c1e-2f0a-4c5d-9a43-6f1e2d3c4b5a", {{"dra.cpu/cpu", "4"}}}};
    auto reqs = effectiveRequests(c);
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].capacity.at("dra.cpu/cpu") == "4");
    rapidjson::Document doc;
    json::parse(doc, encodeClaimStatus(c, "1"));
    const auto &cfg = doc["status"]["allocation"]["devices"]["config"][0];
    CHECK(std::string(cfg["source"].GetString()) == "FromClaim");
    CHECK(std::string(cfg["requests"][0].GetString()) == "cpu");
    CHECK(std::string(cfg["opaque"]["parameters"]["cpuConfig"]["cpuset"].GetString()) == "2-5");
    ClaimHolding h = parseClaimHolding(encodeClaimStatus(c, "1"));
    CHECK(h.opaqueCpuset == "2-5");
    CHECK(h.results[0].shareID == c.results[0].shareID);
    CHECK(allocationMatches(h, c));
}

TEST_CASE("ownership and allocation comparison", "[claim]") {
    ClaimIntent c = exampleIntent();
    ClaimHolding h = parseClaimHolding(encodeClaimStatus(c, "1"));
    std::reverse(h.results.begin(), h.results.end());
    CHECK(allocationMatches(h, c));  // order does not matter
    h.results.pop_back();
    CHECK_FALSE(allocationMatches(h, c));
    ClaimHolding other = h;
    other.labels[kLabelJob] = "999";
    CHECK_FALSE(isOurs(other, c));
    other.labels.erase(kLabelJob);
    CHECK_FALSE(isOurs(other, c));
    ClaimHolding unalloc = parseClaimHolding(encodeClaimCreate(c));
    CHECK_FALSE(allocationMatches(unalloc, c));
}

TEST_CASE("malformed claims are errors", "[json][claim]") {
    CHECK_THROWS_AS(parseClaimHolding("nope"), json::Error);
    CHECK_THROWS_AS(parseClaimHolding("{}"), json::Error);
    CHECK_THROWS_AS(parseClaimHolding(R"({"metadata":{"name":["x"]}})"), json::Error);
}

TEST_CASE("adminAccess results are read, and never in what the plugin writes", "[json][claim]") {
    ClaimHolding h = parseClaimHolding(R"({"metadata":{"name":"dcgm","namespace":"monitoring"},
        "status":{"allocation":{"devices":{"results":[
          {"request":"gpu","driver":"gpu.nvidia.com","pool":"node1","device":"gpu-0","adminAccess":true},
          {"request":"gpu","driver":"gpu.nvidia.com","pool":"node1","device":"gpu-1","adminAccess":false},
          {"request":"gpu","driver":"gpu.nvidia.com","pool":"node1","device":"gpu-2"}]}}}})");
    REQUIRE(h.results.size() == 3);
    CHECK(h.results[0].adminAccess);
    CHECK_FALSE(h.results[1].adminAccess);
    CHECK_FALSE(h.results[2].adminAccess);
    ClaimIntent c = exampleIntent();
    const std::string status = encodeClaimStatus(c, "1"), create = encodeClaimCreate(c);
    CHECK(status.find("adminAccess") == std::string::npos);
    CHECK(create.find("adminAccess") == std::string::npos);
    // an existing claim whose results are admin-access is not the allocation we want
    ClaimHolding existing = parseClaimHolding(status);
    REQUIRE(allocationMatches(existing, c));
    existing.results[0].adminAccess = true;
    CHECK_FALSE(allocationMatches(existing, c));
}
