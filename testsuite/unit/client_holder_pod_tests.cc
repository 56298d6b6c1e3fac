// SPDX-License-Identifier: GPL-2.0-or-later
// Holder pods: what the plugin asks kubelet to run for a job on a node, how
// it reads pods back, and which pods are its own.
#include "testsuite/support/hwloc_fixture.h"
#include "core/inventory.h"
#include "core/plugin_config.h"
#include "k8s_sync/claim_owner.h"
#include "k8s_sync/holder_pod.h"
#include "k8s_sync/job_claims.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

namespace {

Inventory inventory() {
    FixtureOptions o;
    o.node = "node1";
    o.mode = CpuMode::Individual;
    o.gpus = 4;
    FixtureResult f = fixture_from_synthetic("pack:2 numa:2 l3:1 core:6 pu:2", o);
    REQUIRE(f.ok);
    return Inventory::build(f.slices, {});
}

PluginConfig config() {
    PluginConfig c;
    c.claim_namespace = "slurm";
    c.cluster_label = "hpc1";
    c.holder_image = "ops/pause:3.10";
    return c;
}

rapidjson::Document parse(const std::string &text) {
    rapidjson::Document d;
    json::parse(d, text);
    return d;
}

// A pod as the API server returns the plugin's own.
PodHolding own_pod() {
    PodHolding p;
    p.ns = "slurm";
    p.name = holderPodName("hpc1", 42, "node1");
    p.uid = "u-1";
    p.labels = claimLabels("hpc1", 42, "node1");
    p.nodeName = "node1";
    p.claims = {claimName("hpc1", 42, "node1", 0)};
    p.phase = "Running";
    return p;
}

}  // namespace

TEST_CASE("a job's holder pod consumes its claims on that node and requests what it holds") {
    const Inventory inv = inventory();
    const PluginConfig cfg = config();
    JobAlloc job{42, "alice", {JobNodeAlloc{"node1", {0, 1, 2}, {1}, 2048}, JobNodeAlloc{"slurm-only", {0}, {}, 1}}};
    std::string error;
    auto claims = job_claims(job, inv, cfg, "hpc1", &error);
    REQUIRE(error.empty());
    auto pods = job_holders(job, claims, inv, cfg, "hpc1");
    REQUIRE(pods.size() == 1);  // a node that is not Kubernetes' has no claim and no pod
    const HolderIntent &h = pods[0];
    CHECK(h.name == "slurm-hpc1-42-node1-holder");
    CHECK(h.node == "node1");
    CHECK(h.cpus == 6);  // 3 cores, 2 threads each
    CHECK(h.memMb == 2048);
    CHECK(h.claims == std::vector<std::string>{claims[0].name});
    CHECK(h.labels.at(kLabelJob) == "42");
    CHECK(h.labels.at(kLabelUser) == "alice");

    auto d = parse(encodeHolderPod(h));
    CHECK(std::string(d["kind"].GetString()) == "Pod");
    CHECK(std::string(d["spec"]["nodeName"].GetString()) == "node1");
    CHECK(std::string(d["spec"]["priorityClassName"].GetString()) == cfg.holder_priority_class);
    CHECK(std::string(d["spec"]["tolerations"][0]["operator"].GetString()) == "Exists");
    const auto &rc = d["spec"]["resourceClaims"];
    REQUIRE(rc.Size() == 1);
    CHECK(std::string(rc[0]["resourceClaimName"].GetString()) == claims[0].name);
    const auto &ctr = d["spec"]["containers"][0];
    CHECK(std::string(ctr["image"].GetString()) == "ops/pause:3.10");
    CHECK(std::string(ctr["resources"]["requests"]["cpu"].GetString()) == "6");
    CHECK(std::string(ctr["resources"]["requests"]["memory"].GetString()) == "2048Mi");
    CHECK(std::string(ctr["resources"]["claims"][0]["name"].GetString()) == rc[0]["name"].GetString());
    CHECK(!ctr.HasMember("command"));  // the image's own: it runs nothing
}

TEST_CASE("pods read back; one that ended or moved is not the one wanted") {
    HolderIntent want;
    want.node = "node1";
    want.claims = {claimName("hpc1", 42, "node1", 0)};
    auto d = parse(R"({"metadata":{"name":"p","namespace":"slurm","uid":"u-1","labels":{"a":"b"}},
        "spec":{"nodeName":"node1","resourceClaims":[{"name":"c0","resourceClaimName":")" + want.claims[0] + R"("}]},
        "status":{"phase":"Running"}})");
    PodHolding p = decodePodHolding(d);
    CHECK(p.uid == "u-1");
    CHECK(p.labels.at("a") == "b");
    CHECK(p.claims == want.claims);
    CHECK(holderMatches(p, want));
    for (const char *phase : {"Failed", "Succeeded"}) {
        PodHolding ended = p;
        ended.phase = phase;
        CHECK_FALSE(holderMatches(ended, want));
    }
    PodHolding deleting = p;
    deleting.deleting = true;
    CHECK_FALSE(holderMatches(deleting, want));
    PodHolding moved = p;
    moved.nodeName = "node2";
    CHECK_FALSE(holderMatches(moved, want));
    HolderIntent grown = want;
    grown.claims.push_back(claimName("hpc1", 42, "node1", 1));
    CHECK_FALSE(holderMatches(p, grown));

    auto del = parse(R"({"metadata":{"name":"p","deletionTimestamp":"2026-12-01T00:00:00Z"},"spec":{}})");
    CHECK(decodePodHolding(del).deleting);
    CHECK_THROWS(decodePodHolding(parse("[]")));
}

TEST_CASE("holder pods follow the ownership rule of claims") {
    const PluginConfig cfg = config();
    CHECK(ownPodJob(own_pod(), cfg) == 42);

    PodHolding tenant = own_pod();
    tenant.ns = "ml-team";
    CHECK(ownPodJob(tenant, cfg) == 0);
    PodHolding elsewhere = own_pod();  // bound to another node than its label names
    elsewhere.nodeName = "node2";
    CHECK(ownPodJob(elsewhere, cfg) == 0);
    PodHolding unbound = own_pod();
    unbound.nodeName.clear();
    CHECK(ownPodJob(unbound, cfg) == 0);
    PodHolding unmarked = own_pod();
    unmarked.labels.erase(kLabelManagedBy);
    CHECK(ownPodJob(unmarked, cfg) == 0);
    PodHolding other = own_pod();
    other.labels[kLabelCluster] = "hpc2";
    CHECK(ownPodJob(other, cfg) == 0);
}

TEST_CASE("a claim is reserved for its holder pod alone, once") {
    auto claim = parse(R"({"metadata":{"name":"c","resourceVersion":"7"},
        "status":{"allocation":{"devices":{"results":[]}},
                  "reservedFor":[{"resource":"pods","name":"intruder","uid":"x"}]}})");
    CHECK(reserveClaimFor(claim, "holder", "u-1"));
    const auto &res = claim["status"]["reservedFor"];
    REQUIRE(res.Size() == 1);
    CHECK(std::string(res[0]["name"].GetString()) == "holder");
    CHECK(std::string(res[0]["uid"].GetString()) == "u-1");
    CHECK(claim["status"].HasMember("allocation"));           // kept as it was
    CHECK(std::string(claim["metadata"]["resourceVersion"].GetString()) == "7");
    CHECK_FALSE(reserveClaimFor(claim, "holder", "u-1"));     // nothing to write
    CHECK(reserveClaimFor(claim, "holder", "u-2"));           // a new pod of the same name

    rapidjson::StringBuffer buf;
    json::Writer w(buf);
    claim.Accept(w);
    ClaimHolding h = decodeClaimHolding(parse(std::string(buf.GetString(), buf.GetSize())));
    CHECK(h.reservedForPods == std::vector<std::string>{"u-2"});
    CHECK(h.reservedForPodNames == std::vector<std::string>{"holder"});

    auto bare = parse(R"({"metadata":{"name":"c"}})");
    CHECK(reserveClaimFor(bare, "holder", "u-1"));
    CHECK(bare["status"]["reservedFor"].Size() == 1);
}

TEST_CASE("HolderPods, HolderImage and HolderPriorityClass are read from k8s_cons_tres.conf") {
    const std::string base = "Kubeconfig=/etc/k\n";
    auto d = parse_plugin_config(base, "f");
    REQUIRE(d.config);
    CHECK(d.config->holder_pods);
    CHECK(!d.config->holder_image.empty());
    auto r = parse_plugin_config(base + "HolderPods=no\nHolderImage=ops/k8s/pause:3.10\n"
                                        "HolderPriorityClass=slurm-jobs\n", "f");
    REQUIRE(r.config);
    CHECK_FALSE(r.config->holder_pods);
    CHECK(r.config->holder_image == "ops/k8s/pause:3.10");
    CHECK(r.config->holder_priority_class == "slurm-jobs");
    CHECK_FALSE(parse_plugin_config(base + "HolderImage=a b\n", "f").config);
    CHECK_FALSE(parse_plugin_config(base + "HolderPriorityClass=Not_DNS\n", "f").config);
    CHECK_FALSE(parse_plugin_config(base + "HolderPods=maybe\n", "f").config);
}

TEST_CASE("holder pods pass Pod Security restricted, hold no token and run the sandbox image") {
    // The checks of the "restricted" profile that a pod spec can fail, as the
    // Pod Security admission applies them, plus what the plugin adds.
    HolderIntent h;
    h.name = "slurm-hpc1-42-node1-holder";
    h.ns = "slurm";
    h.node = "node1";
    h.image = PluginConfig{}.holder_image;
    h.claims = {claimName("hpc1", 42, "node1", 0)};
    auto d = parse(encodeHolderPod(h));
    const auto &spec = d["spec"];
    for (const char *host : {"hostNetwork", "hostPID", "hostIPC"})
        CHECK_FALSE((spec.HasMember(host) && spec[host].GetBool()));
    CHECK_FALSE(spec.HasMember("volumes"));
    CHECK_FALSE(spec["automountServiceAccountToken"].GetBool());
    const auto &psc = spec["securityContext"];
    CHECK(psc["runAsNonRoot"].GetBool());
    CHECK(psc["runAsUser"].GetInt() != 0);
    CHECK(std::string(psc["seccompProfile"]["type"].GetString()) == "RuntimeDefault");
    REQUIRE(spec["containers"].Size() == 1);
    CHECK_FALSE(spec.HasMember("initContainers"));
    const auto &ctr = spec["containers"][0];
    const auto &sc = ctr["securityContext"];
    CHECK_FALSE((sc.HasMember("privileged") && sc["privileged"].GetBool()));
    CHECK_FALSE(sc["allowPrivilegeEscalation"].GetBool());
    CHECK(sc["readOnlyRootFilesystem"].GetBool());
    REQUIRE(sc["capabilities"]["drop"].Size() == 1);
    CHECK(std::string(sc["capabilities"]["drop"][0].GetString()) == "ALL");
    CHECK_FALSE(sc["capabilities"].HasMember("add"));
    CHECK_FALSE(ctr.HasMember("ports"));
    // fully qualified: no registry search list can resolve it to another image
    CHECK(std::string(ctr["image"].GetString()) == "registry.k8s.io/pause:3.10");
}

TEST_CASE("a job that grew on a node gets a new holder pod: its claims hold other devices under the same names") {
    const Inventory inv = inventory();
    const PluginConfig cfg = config();
    JobAlloc small{42, "alice", {JobNodeAlloc{"node1", {0, 1}, {}, 1024}}};
    JobAlloc grown{42, "alice", {JobNodeAlloc{"node1", {0, 1, 2, 3}, {1}, 1024}}};
    std::string error;
    auto c1 = job_claims(small, inv, cfg, "hpc1", &error), c2 = job_claims(grown, inv, cfg, "hpc1", &error);
    REQUIRE(error.empty());
    const HolderIntent before = job_holders(small, c1, inv, cfg, "hpc1").at(0);
    const HolderIntent after = job_holders(grown, c2, inv, cfg, "hpc1").at(0);
    REQUIRE(before.claims == after.claims);  // the same claim names
    CHECK(before.claimsDigest != after.claimsDigest);
    PodHolding running = decodePodHolding(parse(encodeHolderPod(before)));
    running.phase = "Running";
    CHECK(running.claimsDigest == before.claimsDigest);
    CHECK(holderMatches(running, before));
    CHECK_FALSE(holderMatches(running, after));  // replaced, so kubelet prepares the new devices
    running.claimsDigest.clear();                // a pod written before digests: taken as it is
    CHECK(holderMatches(running, after));
}
