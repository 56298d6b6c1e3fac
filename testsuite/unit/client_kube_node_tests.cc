// SPDX-License-Identifier: GPL-2.0-or-later
// Node objects as node discovery reads them.
#include "k8s_sync/kube_node.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres::k8s;

namespace {
// Through json::parse, as the informer decodes: rapidjson's SSE2 scan may
// read past the end of a bare C string, which ASan rightly reports.
KubeNode decode(const char *text) {
    rapidjson::Document d;
    k8s_cons_tres::json::parse(d, text);
    return decodeKubeNode(d);
}
}  // namespace

TEST_CASE("a Node's cordon, Ready condition and allocatable memory") {
    auto n = decode(R"({"metadata":{"name":"k1"},"spec":{"unschedulable":true},
        "status":{"allocatable":{"cpu":"128","memory":"65536000Ki"},
                  "conditions":[{"type":"MemoryPressure","status":"False"},
                                {"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
    CHECK(n.name == "k1");
    CHECK(n.ns.empty());
    CHECK(n.unschedulable);
    CHECK(n.ready);
    CHECK(n.notReady.empty());
    CHECK(n.memoryMiB == 64000);
    CHECK(n.address.empty());  // no addresses

    auto down = decode(R"({"metadata":{"name":"k2"},"status":{"conditions":[
        {"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}})");
    CHECK_FALSE(down.ready);
    CHECK_FALSE(down.unschedulable);
    CHECK(down.notReady == "Ready=Unknown (NodeStatusUnknown)");
    CHECK(down.memoryMiB == 0);

    // no status at all: never offered to Slurm
    auto bare = decode(R"({"metadata":{"name":"k3"}})");
    CHECK_FALSE(bare.ready);
    CHECK(bare.notReady == "no Ready condition");
    CHECK_THROWS(decode(R"({"metadata":{}})"));
}

TEST_CASE("a Node's address is an InternalIP literal, IPv4 first, never a name") {
    auto addr = [](const char *addresses) {
        return decode((std::string(R"({"metadata":{"name":"k1"},"status":{"addresses":)") + addresses + "}}").c_str())
            .address;
    };
    CHECK(addr(R"([{"type":"InternalIP","address":"10.0.0.7"},{"type":"Hostname","address":"k1"}])") == "10.0.0.7");
    CHECK(addr(R"([{"type":"InternalIP","address":"fd00::7"},{"type":"InternalIP","address":"10.0.0.7"}])") ==
          "10.0.0.7");
    CHECK(addr(R"([{"type":"InternalIP","address":"fd00::7"}])") == "fd00::7");
    CHECK(addr(R"([{"type":"ExternalIP","address":"192.0.2.1"},{"type":"Hostname","address":"k1"}])").empty());
    CHECK(addr(R"([{"type":"InternalIP","address":"k1.example.com"}])").empty());
    CHECK(addr(R"([{"type":"InternalIP","address":"10.0.0.7 State=DOWN"}])").empty());
    CHECK(addr(R"([{"type":"InternalIP","address":7}])").empty());
    CHECK(addr(R"({"type":"InternalIP"})").empty());
}

TEST_CASE("memory quantities in bytes") {
    bool ok = false;
    CHECK(parseBytes("64Gi", &ok) == 68719476736ULL);
    CHECK(ok);
    CHECK(parseBytes("1e9", &ok) == 1000000000ULL);
    CHECK(parseBytes("512M", &ok) == 512000000ULL);
    CHECK(parseBytes("1024", &ok) == 1024);
    for (const char *bad : {"", "Gi", "12Qi", "-1Ki", "1e400", "abc", "1.5.5Mi"}) {
        parseBytes(bad, &ok);
        CHECK_FALSE(ok);
    }
}

TEST_CASE("a Node keeps only the labels and annotations its network position reads") {
    const char *text = R"({"metadata":{"name":"k1",
        "labels":{"kubernetes.io/hostname":"k1","cloud.google.com/gce-topology-block":"9b6c",
                  "cloud.google.com/gce-topology-subblock":"4f1a","example.com/count":7},
        "annotations":{"topology.slinky.slurm.net/spec":"topo-switch:s1,topo-block:b1",
                       "node.alpha.kubernetes.io/ttl":"0"}}})";
    rapidjson::Document d;
    k8s_cons_tres::json::parse(d, text);
    k8s_cons_tres::TopologyKeys keys;
    keys.labels = {"cloud.google.com/gce-topology-subblock", "cloud.google.com/gce-topology-block",
                   "example.com/count", "example.com/absent"};
    keys.annotations = {"topology.slinky.slurm.net/spec"};
    const KubeNode n = decodeKubeNode(d, keys);
    CHECK(n.name == "k1");
    // In the keys' order; a number is no label value, an absent key is absent.
    CHECK(n.topologyLabels == k8s_cons_tres::KeyValues{{"cloud.google.com/gce-topology-subblock", "4f1a"},
                                                       {"cloud.google.com/gce-topology-block", "9b6c"}});
    CHECK(n.topologyAnnotations ==
          k8s_cons_tres::KeyValues{{"topology.slinky.slurm.net/spec", "topo-switch:s1,topo-block:b1"}});
    // Without keys (no TopologyFrom=) nothing is kept.
    const KubeNode plain = decodeKubeNode(d);
    CHECK(plain.topologyLabels.empty());
    CHECK(plain.topologyAnnotations.empty());

    // An overlong annotation is cut just past the limit: position_of refuses it.
    const std::string big(100000, 'x');
    const std::string long_text = R"({"metadata":{"name":"k2","annotations":{"a.example.com/rack":")" + big + R"("}}})";
    rapidjson::Document d2;
    k8s_cons_tres::json::parse(d2, long_text);
    k8s_cons_tres::TopologyKeys rack;
    rack.annotations = {"a.example.com/rack"};
    const KubeNode k2 = decodeKubeNode(d2, rack);
    REQUIRE(k2.topologyAnnotations.size() == 1);
    CHECK(k2.topologyAnnotations[0].second.size() == k8s_cons_tres::kMaxTopologyValue + 1);
}
