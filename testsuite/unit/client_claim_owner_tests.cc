// SPDX-License-Identifier: GPL-2.0-or-later
// The one rule for the plugin's own claims: labels alone never make a
// claim Slurm's.
#include "k8s_sync/claim_json.h"
#include "k8s_sync/claim_owner.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

namespace {
PluginConfig config() {
    PluginConfig c;
    c.claim_namespace = "slurm";
    c.cluster_label = "hpc1";
    return c;
}

// A claim exactly as the plugin writes it for job 42 on node n1.
ClaimHolding own() {
    ClaimHolding c;
    c.ns = "slurm";
    c.name = claimName("hpc1", 42, "n1");
    c.labels = claimLabels("hpc1", 42, "n1");
    c.allocated = true;
    c.nodeName = "n1";
    c.results.push_back({"cpu", "dra.cpu", "n1", "cpudev000", "", {}});
    return c;
}
}  // namespace

TEST_CASE("a claim the plugin wrote is its job's") {
    CHECK(ownClaimJob(own(), config()) == 42);
    CHECK(claimNodes(own()) == std::vector<std::string>{"n1"});
}

TEST_CASE("a tenant's claim with the plugin's labels is a pod's") {
    ClaimHolding spoof = own();
    spoof.ns = "ml-team";  // tenants write only to their own namespaces
    CHECK(ownClaimJob(spoof, config()) == 0);

    ClaimHolding unmarked = own();
    unmarked.labels.erase(kLabelManagedBy);
    CHECK(ownClaimJob(unmarked, config()) == 0);

    ClaimHolding other_cluster = own();
    other_cluster.labels[kLabelCluster] = "hpc2";
    CHECK(ownClaimJob(other_cluster, config()) == 0);

    for (const char *bad : {"", "0", "x42", "42x", "-1", "99999999999"}) {
        ClaimHolding c = own();
        c.labels[kLabelJob] = bad;
        CHECK(ownClaimJob(c, config()) == 0);
    }
    ClaimHolding no_job = own();
    no_job.labels.erase(kLabelJob);
    CHECK(ownClaimJob(no_job, config()) == 0);
}

TEST_CASE("a claim whose devices are not on the node its label names is not ours") {
    ClaimHolding elsewhere = own();
    elsewhere.labels[kLabelNode] = "n2";
    CHECK(ownClaimJob(elsewhere, config()) == 0);

    ClaimHolding spans = own();
    spans.nodeName.clear();
    spans.results.push_back({"cpu", "dra.cpu", "n2", "cpudev000", "", {}});
    CHECK(ownClaimJob(spans, config()) == 0);

    ClaimHolding other_pool = own();
    other_pool.results.push_back({"gpu", "gpu.nvidia.com", "n2", "gpu-0", "", {}});
    CHECK(ownClaimJob(other_pool, config()) == 0);

    ClaimHolding no_label = own();
    no_label.labels.erase(kLabelNode);
    CHECK(ownClaimJob(no_label, config()) == 0);
}

namespace {
// slurm-bridge's claim for pod ml/train-0 (uid u-1) on n1, and its pod.
ClaimHolding bridge_claim() {
    ClaimHolding c;
    c.ns = "ml";
    c.name = "train-0-extended-resources-abcde";
    c.allocated = true;
    c.nodeName = "n1";
    c.results.push_back({"cpu", "dra.cpu", "n1", "cpudev000", "", {}});
    c.reservedForPods = {"u-1"};
    c.reservedForPodNames = {"train-0"};
    return c;
}
PodMap bridge_pods(std::string job = "42", std::string node = "n1") {
    PodHolding p;
    p.ns = "ml";
    p.name = "train-0";
    p.uid = "u-1";
    p.nodeName = std::move(node);
    p.labels = {{kLabelBridgeJob, std::move(job)}};
    PodMap m;
    m.set("ml/train-0", std::make_shared<const PodHolding>(p));
    return m;
}
}  // namespace

TEST_CASE("a claim reserved for a slurm-bridge pod names the pod's job") {
    CHECK(bridgeClaimJob(bridge_claim(), bridge_pods()) == 42);
    CHECK(bridgeClaimJob(bridge_claim(), bridge_pods("42", "")) == 42);  // written before binding
}

TEST_CASE("a claim is not bridged unless its one pod is that labelled pod, there") {
    CHECK(bridgeClaimJob(bridge_claim(), PodMap{}) == 0);
    ClaimHolding other_uid = bridge_claim();  // a new pod of the same name
    other_uid.reservedForPods = {"u-2"};
    CHECK(bridgeClaimJob(other_uid, bridge_pods()) == 0);
    ClaimHolding other_ns = bridge_claim();  // a pod of another namespace cannot be the consumer
    other_ns.ns = "web";
    CHECK(bridgeClaimJob(other_ns, bridge_pods()) == 0);
    ClaimHolding two = bridge_claim();  // shared with a second pod
    two.reservedForPods.push_back("u-9");
    two.reservedForPodNames.push_back("other");
    CHECK(bridgeClaimJob(two, bridge_pods()) == 0);
    ClaimHolding unreserved = bridge_claim();
    unreserved.reservedForPods.clear();
    unreserved.reservedForPodNames.clear();
    CHECK(bridgeClaimJob(unreserved, bridge_pods()) == 0);
    CHECK(bridgeClaimJob(bridge_claim(), bridge_pods("42", "n2")) == 0);  // the pod runs elsewhere
    ClaimHolding spans = bridge_claim();
    spans.nodeName.clear();
    spans.results.push_back({"cpu", "dra.cpu", "n2", "cpudev000", "", {}});
    CHECK(bridgeClaimJob(spans, bridge_pods("42", "")) == 0);
    for (const char *bad : {"", "0", "x42", "42x", "-1", "99999999999"})
        CHECK(bridgeClaimJob(bridge_claim(), bridge_pods(bad)) == 0);
}
