// SPDX-License-Identifier: GPL-2.0-or-later
// DeviceTaintRules: decoded from the API's JSON, matched as kube-scheduler
// matches them (no selector: nothing; an empty one: everything; each field
// set must equal the device's), and applied to the inventory like taints
// the driver publishes: NoSchedule and NoExecute keep new jobs off a device,
// None does not, and a rule that cannot be decoded keeps every device off.
#include "k8s_sync/inventory_update.h"
#include "k8s_sync/taint_rule.h"
#include "testsuite/unit/core_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using k8s_cons_tres::test::slice;

namespace {

std::vector<Device> gpus(int n) {
    std::vector<Device> out;
    for (int g = 0; g < n; ++g) {
        Device d;
        d.name = "gpu-" + std::to_string(g);
        d.attributes = {{"gpu.nvidia.com/type", std::string("gpu")},
                        {"gpu.nvidia.com/uuid", "GPU-" + std::to_string(g)},
                        {"resource.kubernetes.io/pciBusID", "0000:1" + std::to_string(g) + ":00.0"},
                        {"resource.kubernetes.io/numaNode", int64_t(g / 2)}};
        out.push_back(std::move(d));
    }
    return out;
}

Snapshot two_nodes() {
    Snapshot snap;
    for (const char *node : {"n1", "n2"}) {
        for (const ResourceSlice &s : {slice(node, "dra.cpu", test::small_smt_cpus()),
                                       slice(node, "gpu.nvidia.com", gpus(4))})
            snap.slicesByDriver[s.driver].set(s.name, std::make_shared<const CompactSlice>(compactSlice(s)));
    }
    return snap;
}

TaintRule rule(std::string text) {
    rapidjson::Document doc;
    json::parseInsitu(doc, text);
    return decodeTaintRule(doc);
}

const PluginConfig kConfig = [] {
    PluginConfig pc;
    pc.gpu_drivers = {"gpu.nvidia.com"};
    return pc;
}();

void put(Snapshot &snap, const std::string &json) {
    auto r = std::make_shared<const TaintRule>(rule(json));
    snap.taintRules.set("/" + r->name, r);
}

// GPU index -> why it is unavailable ("" when usable), per node.
std::map<std::string, std::vector<std::string>> gpu_state(const Inventory &inv) {
    std::map<std::string, std::vector<std::string>> out;
    for (const NodeEntry &e : inv.nodes())
        for (const auto &g : e.topology.gpus)
            out[e.name].push_back(g.unavailable);
    return out;
}

}  // namespace

TEST_CASE("a DeviceTaintRule decodes and matches as kube-scheduler's selector does", "[taint_rule]") {
    const CompactSlice s = compactSlice(slice("n1", "gpu.nvidia.com", gpus(2)));
    const TaintRule one = rule(R"({"metadata":{"name":"r"},"spec":{"deviceSelector":{"driver":"gpu.nvidia.com",
        "pool":"n1","device":"gpu-1"},"taint":{"key":"example.com/broken","value":"fan","effect":"NoSchedule"}}})");
    CHECK(one.taint == DeviceTaint{"example.com/broken", "fan", "NoSchedule"});
    CHECK_FALSE(one.matches(s, 0));
    CHECK(one.matches(s, 1));
    // an empty selector: every device of every driver and pool
    const TaintRule all = rule(R"({"metadata":{"name":"all"},"spec":{"deviceSelector":{},
        "taint":{"key":"k","effect":"NoExecute"}}})");
    CHECK(all.matches(s, 0));
    CHECK(all.matches(s, 1));
    // no selector: no device
    const TaintRule none = rule(R"({"metadata":{"name":"none"},"spec":{"taint":{"key":"k","effect":"NoExecute"}}})");
    CHECK_FALSE(none.matches(s, 0));
    // another pool or driver
    CHECK_FALSE(rule(R"({"metadata":{"name":"p"},"spec":{"deviceSelector":{"pool":"n2"},
        "taint":{"key":"k","effect":"NoSchedule"}}})").matches(s, 0));
    CHECK_FALSE(rule(R"({"metadata":{"name":"d"},"spec":{"deviceSelector":{"driver":"dra.cpu"},
        "taint":{"key":"k","effect":"NoSchedule"}}})").matches(s, 0));
    // a taint without its key or effect is not a rule the plugin can read
    CHECK_THROWS(rule(R"({"metadata":{"name":"x"},"spec":{"deviceSelector":{},"taint":{"key":"k"}}})"));
    CHECK_THROWS(rule(R"({"metadata":{"name":"x"},"spec":{"deviceSelector":{"pool":7},
        "taint":{"key":"k","effect":"NoSchedule"}}})"));
}

TEST_CASE("the rules' taints are added to the slice as kube-scheduler sees it", "[taint_rule]") {
    ResourceSlice plain = slice("n1", "gpu.nvidia.com", gpus(2));
    plain.devices[0].taints = {{"gpu.nvidia.com/xid", "79", "NoSchedule"}};  // the driver's own
    const CompactSlice s = compactSlice(plain);
    TaintRuleMap rules;
    CHECK_FALSE(withRuleTaints(s, rules));
    auto r = std::make_shared<const TaintRule>(rule(R"({"metadata":{"name":"r"},"spec":{"deviceSelector":{},
        "taint":{"key":"example.com/maint","effect":"NoSchedule"}}})"));
    rules.set("/r", r);
    auto t = withRuleTaints(s, rules);
    REQUIRE(t);
    const ResourceSlice e = t->expand();
    CHECK(e.devices[0].taints == std::vector<DeviceTaint>{{"gpu.nvidia.com/xid", "79", "NoSchedule"},
                                                          {"example.com/maint", "", "NoSchedule"}});
    CHECK(e.devices[1].taints == std::vector<DeviceTaint>{{"example.com/maint", "", "NoSchedule"}});
    CHECK(s.expand().devices[1].taints.empty());  // the informer's slice is not touched
}

TEST_CASE("DeviceTaintRules keep devices from new jobs as slice taints do, and give them back when gone",
          "[taint_rule]") {
    InventoryUpdater updater(kConfig);
    Snapshot snap = two_nodes();
    auto u = updater.update(snap);
    REQUIRE(u.inventory);
    const auto clean = gpu_state(*u.inventory);
    CHECK(clean.at("n1") == std::vector<std::string>(4, ""));

    // GPU 2 of n1 out of service: only that GPU, only on n1
    put(snap, R"({"metadata":{"name":"n1-gpu2"},"spec":{"deviceSelector":{"driver":"gpu.nvidia.com","pool":"n1",
        "device":"gpu-2"},"taint":{"key":"example.com/maint","effect":"NoSchedule"}}})");
    u = updater.update(snap);
    REQUIRE(u.inventory);
    auto st = gpu_state(*u.inventory);
    CHECK(st.at("n1") == std::vector<std::string>{"", "", "taint example.com/maint=NoSchedule", ""});
    CHECK(st.at("n2") == clean.at("n2"));

    // effect None: informational, nothing is kept out
    put(snap, R"({"metadata":{"name":"n1-gpu2"},"spec":{"deviceSelector":{"driver":"gpu.nvidia.com","pool":"n1",
        "device":"gpu-2"},"taint":{"key":"example.com/maint","effect":"None"}}})");
    u = updater.update(snap);
    REQUIRE(u.inventory);
    CHECK(gpu_state(*u.inventory) == clean);

    // NoExecute on every device of n2's pool: its CPUs and GPUs all go
    put(snap, R"({"metadata":{"name":"n2-all"},"spec":{"deviceSelector":{"pool":"n2"},
        "taint":{"key":"example.com/drain","effect":"NoExecute"}}})");
    u = updater.update(snap);
    REQUIRE(u.inventory);
    st = gpu_state(*u.inventory);
    CHECK(st.at("n1") == clean.at("n1"));
    CHECK(st.at("n2") == std::vector<std::string>(4, "taint example.com/drain=NoExecute"));
    const NodeEntry *n2 = u.inventory->node("n2");
    REQUIRE(n2);
    size_t out_cpus = 0;
    for (const auto &x : n2->topology.unavailable_cpus)
        out_cpus += x.cpus.size();
    CHECK(out_cpus == 8);

    // the rules go: everything is usable again
    snap.taintRules = TaintRuleMap();
    u = updater.update(snap);
    REQUIRE(u.inventory);
    CHECK(gpu_state(*u.inventory) == clean);
    CHECK(u.inventory->node("n2")->topology.unavailable_cpus.empty());
}

TEST_CASE("a DeviceTaintRule that cannot be decoded keeps every device from new jobs", "[taint_rule]") {
    rapidjson::Document doc;
    std::string text = R"({"metadata":{"name":"odd"},"spec":{"deviceSelector":"gpu-*","taint":{}}})";
    json::parseInsitu(doc, text);
    CHECK_THROWS(decodeTaintRule(doc));
    auto stand_in = std::make_shared<const TaintRule>(salvageTaintRule(doc, "deviceSelector is not an object"));
    CHECK(stand_in->name == "odd");
    Snapshot snap = two_nodes();
    snap.taintRules.set("/odd", stand_in);
    InventoryUpdater updater(kConfig);
    auto u = updater.update(snap);
    REQUIRE(u.inventory);
    for (const auto &[node, gpu] : gpu_state(*u.inventory))
        for (const std::string &why : gpu)
            CHECK(why.rfind("taint k8s-cons-tres.slurm.io/undecodable-device-taint-rule=NoSchedule", 0) == 0);
}

TEST_CASE("a node gone in the update that changes the rules leaves the inventory", "[taint_rule]") {
    InventoryUpdater updater(kConfig);
    Snapshot snap = two_nodes();
    REQUIRE(updater.update(snap).inventory);
    for (const char *driver : {"dra.cpu", "gpu.nvidia.com"})
        snap.slicesByDriver[driver].erase(std::string("n2-") + driver + "-a");
    put(snap, R"({"metadata":{"name":"all"},"spec":{"deviceSelector":{},
        "taint":{"key":"example.com/maint","effect":"NoSchedule"}}})");
    auto u = updater.update(snap);
    REQUIRE(u.inventory);
    CHECK(u.rebuilt == std::vector<std::string>{"n1", "n2"});
    CHECK_FALSE(u.inventory->node("n2"));
    CHECK(gpu_state(*u.inventory).at("n1") ==
          std::vector<std::string>(4, "taint example.com/maint=NoSchedule"));
}
