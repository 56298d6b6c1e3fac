// SPDX-License-Identifier: GPL-2.0-or-later
// Node discovery: node definitions from slices and the plan of actions.
#include "core/external_nodes.h"
#include "core_test_util.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using k8s_cons_tres::test::make_node;

namespace {

NodeTopology two_sockets(const std::string &name, int gpus) {
    std::vector<test::GpuSpec> g;
    for (int i = 0; i < gpus; ++i) g.emplace_back(i < gpus / 2 ? 0 : 1);
    auto t = make_node(name, {{0, {8}, 2}, {1, {8}, 2}}, g);
    for (auto &gpu : t.gpus) gpu.model = "NVIDIA A100-SXM4-80GB";
    return t;
}

KubeNodeState ready(const std::string &name, uint64_t mem = 64000) {
    return {name, false, true, "", mem, ""};
}

SlurmNodeState slurm_of(const ExternalNodeSpec &s) {
    SlurmNodeState h;
    h.name = s.name;
    h.cpus = s.cpus;
    h.sockets = s.sockets;
    h.cores_per_socket = s.cores_per_socket;
    h.threads_per_core = s.threads_per_core;
    h.real_memory = s.real_memory;
    h.gres = s.gres;
    h.features = s.features;
    h.external = true;
    return h;
}

}  // namespace

TEST_CASE("an external node is defined by its slices' topology, memory and GPUs") {
    std::string why;
    auto s = external_spec(two_sockets("k1", 4), ready("k1"), {"k8s"}, &why);
    REQUIRE(s);
    CHECK(s->cpus == 32);
    CHECK(s->sockets == 2);
    CHECK(s->cores_per_socket == 8);
    CHECK(s->threads_per_core == 2);
    CHECK(s->real_memory == 64000);
    CHECK(s->gres == "gpu:nvidia_a100_sxm4_80gb:4");
    CHECK(s->features == "k8s,k8s_cons_tres,nvidia_a100_sxm4_80gb");
    // one entry per GPU, in GRES index order, so each GPU has its index
    CHECK(s->gres_conf ==
          "name=gpu,type=nvidia_a100_sxm4_80gb,count=1,file=/dev/k8s_cons_tres/gpu0+"
          "name=gpu,type=nvidia_a100_sxm4_80gb,count=1,file=/dev/k8s_cons_tres/gpu1+"
          "name=gpu,type=nvidia_a100_sxm4_80gb,count=1,file=/dev/k8s_cons_tres/gpu2+"
          "name=gpu,type=nvidia_a100_sxm4_80gb,count=1,file=/dev/k8s_cons_tres/gpu3");
    CHECK(nodeline(*s, true) ==
          "NodeName=k1 State=EXTERNAL CPUs=32 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64000 "
          "Features=k8s,k8s_cons_tres,nvidia_a100_sxm4_80gb Gres=gpu:nvidia_a100_sxm4_80gb:4 GresConf=\"" +
              s->gres_conf + "\"");
    CHECK(nodeline(*s, false).find("GresConf") == std::string::npos);  // 25.05 has none
    CHECK(nodeline(*s, true).find("NodeAddr") == std::string::npos);    // no address: the name

    // the Node's address, so that slurmctld never resolves the name
    KubeNodeState with_ip = ready("k1");
    with_ip.address = "10.0.0.7";
    CHECK(nodeline(*external_spec(two_sockets("k1", 0), with_ip, {"k8s"}, &why), true)
              .rfind("NodeName=k1 NodeAddr=10.0.0.7 State=EXTERNAL ", 0) == 0);
    with_ip.address = "10.0.0.7 Weight=1";  // the client passes literals only; the core checks again
    CHECK(nodeline(*external_spec(two_sockets("k1", 0), with_ip, {"k8s"}, &why), true).find("NodeAddr") ==
          std::string::npos);

    auto cpu_only = external_spec(two_sockets("k2", 0), ready("k2"), {"k8s", "web"}, &why);
    REQUIRE(cpu_only);
    CHECK(cpu_only->gres.empty());
    CHECK(cpu_only->features == "k8s,web,k8s_cons_tres");
    CHECK(nodeline(*cpu_only, true).find("Gres") == std::string::npos);
}

TEST_CASE("nodes Slurm cannot describe or name are refused with a reason") {
    std::string why;
    CHECK_FALSE(external_spec(make_node("k1", {{0, {8}, 2}, {1, {6}, 2}}), ready("k1"), {"k8s"}, &why));
    CHECK(why.find("differ") != std::string::npos);
    CHECK_FALSE(external_spec(two_sockets("k1", 0), ready("k1", 0), {"k8s"}, &why));
    CHECK(why.find("memory") != std::string::npos);
    CHECK_FALSE(external_spec(two_sockets("a,b", 0), ready("a,b"), {"k8s"}, &why));
    CHECK(why.find("not a Slurm node name") != std::string::npos);
    CHECK(gres_type_of("", "gpu.example.com") == "gpu_example_com");
    CHECK(gres_type_of("  Tesla  T4 ", "x") == "tesla_t4");
}

TEST_CASE("the plan creates, drains, resumes and deletes only the nodes discovery made") {
    const auto spec = *external_spec(two_sockets("k1", 2), ready("k1"), {"k8s"}, nullptr);
    std::map<std::string, ExternalNodeSpec> specs{{"k1", spec}};
    std::map<std::string, KubeNodeState> kube{{"k1", ready("k1")}};

    SECTION("a new node is created, once") {
        auto plan = plan_external_nodes(kube, specs, {}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].kind == ExtActionKind::Create);
        CHECK(plan[0].text == nodeline(spec, true));
        CHECK(plan_external_nodes(kube, specs, {slurm_of(spec)}, 64, true).empty());
    }
    SECTION("not created while cordoned, not ready, or without complete slices") {
        kube["k1"].unschedulable = true;
        CHECK(plan_external_nodes(kube, specs, {}, 64, true).empty());
        kube["k1"] = ready("k1");
        kube["k1"].ready = false;
        CHECK(plan_external_nodes(kube, specs, {}, 64, true).empty());
        CHECK(plan_external_nodes({{"k1", ready("k1")}}, {}, {}, 64, true).empty());
    }
    SECTION("cordon and NotReady drain with the reason; the end of the cause resumes") {
        kube["k1"].unschedulable = true;
        auto plan = plan_external_nodes(kube, specs, {slurm_of(spec)}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0] == ExtAction{ExtActionKind::Drain, "k1", "k8s_cons_tres: cordoned in Kubernetes"});
        SlurmNodeState drained = slurm_of(spec);
        drained.drained = drained.drained_by_us = true;
        CHECK(plan_external_nodes(kube, specs, {drained}, 64, true).empty());  // already drained
        kube["k1"] = ready("k1");
        kube["k1"].ready = false;
        kube["k1"].not_ready = "Ready=False (KubeletNotReady)";
        plan = plan_external_nodes(kube, specs, {slurm_of(spec)}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].text == "k8s_cons_tres: not Ready in Kubernetes: Ready=False (KubeletNotReady)");
        kube["k1"] = ready("k1");
        plan = plan_external_nodes(kube, specs, {drained}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].kind == ExtActionKind::Resume);
        // a drain by the admin is the admin's to end
        drained.drained_by_us = false;
        CHECK(plan_external_nodes(kube, specs, {drained}, 64, true).empty());
    }
    SECTION("a changed shape: deleted (then made again) when idle, drained until then") {
        SlurmNodeState old = slurm_of(spec);
        old.gres = "gpu:nvidia_a100_sxm4_80gb:1";
        auto plan = plan_external_nodes(kube, specs, {old}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].kind == ExtActionKind::Delete);
        old.idle = false;
        plan = plan_external_nodes(kube, specs, {old}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].kind == ExtActionKind::Drain);
        CHECK(plan[0].text.find("recreated once idle") != std::string::npos);
    }
    SECTION("gone from Kubernetes: drained while busy, deleted once idle") {
        SlurmNodeState busy = slurm_of(spec);
        busy.idle = false;
        auto plan = plan_external_nodes({}, {}, {busy}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].kind == ExtActionKind::Drain);
        plan = plan_external_nodes({}, {}, {slurm_of(spec)}, 64, true);
        REQUIRE(plan.size() == 1);
        CHECK(plan[0].kind == ExtActionKind::Delete);
    }
    SECTION("nodes it did not make are never touched") {
        SlurmNodeState plain = slurm_of(spec);
        plain.external = false;  // a slurm.conf node with a slurmd
        CHECK(plan_external_nodes({}, {}, {plain}, 64, true).empty());
        CHECK(plan_external_nodes(kube, specs, {plain}, 64, true).empty());  // and no second k1
        SlurmNodeState bridge = slurm_of(spec);
        bridge.features = "slurm-bridge";  // EXTERNAL, but someone else's
        kube["k1"].unschedulable = true;
        CHECK(plan_external_nodes({}, {}, {bridge}, 64, true).empty());
        CHECK(plan_external_nodes(kube, specs, {bridge}, 64, true).empty());
    }
    SECTION("bounded per round, drains before creations") {
        std::map<std::string, KubeNodeState> many;
        std::map<std::string, ExternalNodeSpec> many_specs;
        for (int i = 0; i < 100; ++i) {
            const std::string n = "n" + std::to_string(i);
            many[n] = ready(n);
            many_specs[n] = *external_spec(two_sockets(n, 0), ready(n), {"k8s"}, nullptr);
        }
        SlurmNodeState gone = slurm_of(spec);
        gone.idle = false;
        auto plan = plan_external_nodes(many, many_specs, {gone}, 10, true);
        REQUIRE(plan.size() == 10);
        CHECK(plan[0].kind == ExtActionKind::Drain);
        CHECK(plan[9].kind == ExtActionKind::Create);
    }
}
