// SPDX-License-Identifier: GPL-2.0-or-later
// The launch gate's answers (ClaimSync::gate, claim_gate.cc): a job waits
// until the snapshot shows each of its claims allocated as written, and
// must not start when a pod's claim holds one of its devices by then.
// No API server: the writer's port is closed and its gate shut, so only
// the snapshots given here decide.
#include "testsuite/support/hwloc_fixture.h"
#include "k8s_sync/claim_event.h"
#include "k8s_sync/claim_json.h"
#include "k8s_sync/claim_sync.h"
#include "k8s_sync/job_claims.h"

#include <catch2/catch.hpp>

#include <memory>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using Kind = GateState::Kind;

namespace {

std::shared_ptr<const Config> nowhere() {
    auto c = std::make_shared<Config>();
    c->server = "https://127.0.0.1:1";
    c->token = "t";
    return c;
}

PluginConfig config(PluginConfig::LaunchGate gate = PluginConfig::LaunchGate::Claims, bool pods = false) {
    PluginConfig c;
    c.cluster_label = "hpc1";
    c.launch_gate = gate;
    c.holder_pods = pods;
    return c;
}

Logger quiet() { return Logger([](LogLevel, const std::string &) {}, ""); }

std::vector<ResourceSlice> slices() {
    FixtureOptions o;
    o.node = "node1";
    o.gpus = 4;
    FixtureResult f = fixture_from_synthetic("pack:2 numa:2 l3:1 core:6 pu:2", o);
    REQUIRE(f.ok);
    return f.slices;
}

JobAlloc job42() { return JobAlloc{42, "alice", {JobNodeAlloc{"node1", {0, 1}, {1}}}}; }

// The claim as Kubernetes shows it once written: the intent, allocated.
std::shared_ptr<ClaimHolding> shown(const ClaimIntent &in) {
    auto c = std::make_shared<ClaimHolding>();
    c->ns = in.ns;
    c->name = in.name;
    c->uid = "uid-" + in.name;
    c->labels = in.labels;
    c->allocated = true;
    c->results = in.results;
    c->nodeName = in.nodeName;
    c->opaqueCpuset = in.opaqueCpuset;
    return c;
}

// A pod's claim on node1 holding GPU gpu-<g> of the fixture's driver.
std::shared_ptr<ClaimHolding> pod_claim(const ClaimIntent &ours, const std::string &gpuDevice) {
    auto c = std::make_shared<ClaimHolding>();
    c->ns = "tenant";
    c->name = "train";
    c->uid = "uid-train";
    c->allocated = true;
    c->nodeName = "node1";
    for (const auto &r : ours.results)
        if (r.device == gpuDevice) c->results.push_back(r);
    REQUIRE(c->results.size() == 1);
    return c;
}

struct World {
    PluginConfig cfg;
    ClaimSync sync;
    std::vector<ResourceSlice> sl = slices();
    std::vector<ClaimIntent> intents;
    explicit World(PluginConfig c) : cfg(c), sync(c, nowhere(), {}, quiet()) {
        sync.set_write_gate([] { return false; });
        auto inv = std::make_shared<const Inventory>(Inventory::build(sl, {}));
        sync.jobs_known({}, inv);
        sync.job_started(job42(), inv);
        std::string err;
        intents = job_claims(job42(), *inv, cfg, cfg.cluster_label, &err);
        REQUIRE(err.empty());
        REQUIRE(intents.size() == 1);
    }
    // The feed's step: a snapshot of these claims, the inventory built from it.
    GateState after(const std::vector<std::shared_ptr<ClaimHolding>> &claims, PodMap pods = {}) {
        Snapshot snap;
        snap.claimsSynced = true;
        std::vector<ClaimHolding> held;
        for (const auto &c : claims) {
            snap.claims.set(claimKey(c->ns, c->name), c);
            held.push_back(*c);
        }
        snap.pods = std::move(pods);
        snap.podsSynced = true;
        InventoryOptions io;
        io.job_label = kLabelJob;
        const Inventory inv = Inventory::build(sl, held, io);
        answered = sync.evaluate_gates(snap, inv);
        return sync.gate(42);
    }
    bool answered = false;  // the last evaluate_gates: some gate left Wait
    std::string gpu_of_job() const {
        for (const auto &r : intents[0].results)
            if (r.driver != "dra.cpu") return r.device;
        FAIL("the job's claim has no GPU");
        return "";
    }
};

}  // namespace

TEST_CASE("the gate waits until Kubernetes shows the job's claim allocated as written") {
    World w(config());
    GateState g = w.sync.gate(42);
    CHECK(g.kind == Kind::Wait);
    CHECK(g.total == 1);
    CHECK(w.sync.gates_waiting());
    g = w.after({});
    CHECK(g.kind == Kind::Wait);
    CHECK_FALSE(w.answered);  // nothing to tell the plugin
    CHECK(g.ready == 0);
    CHECK(g.why.find("not written yet") != std::string::npos);
    auto unallocated = shown(w.intents[0]);
    unallocated->allocated = false;
    CHECK(w.after({unallocated}).why.find("not allocated yet") != std::string::npos);
    auto other = shown(w.intents[0]);  // allocated, but not the job's devices
    other->results.pop_back();
    CHECK(w.after({other}).kind == Kind::Wait);
    g = w.after({shown(w.intents[0])});
    CHECK(g.kind == Kind::Open);
    CHECK(g.ready == 1);
    CHECK(w.answered);  // the plugin is woken to let it go
    CHECK_FALSE(w.sync.gates_waiting());
    // Open stays open, told once; the job's end forgets it.
    CHECK(w.after({}).kind == Kind::Open);
    CHECK_FALSE(w.answered);
    w.sync.job_ended(42);
    CHECK(w.sync.gate(42).kind == Kind::None);
}

TEST_CASE("a pod claim on one of the job's devices by the time its claim shows keeps the job from starting") {
    World w(config());
    const auto pod = pod_claim(w.intents[0], w.gpu_of_job());
    const uint64_t queued = w.sync.stats().submitted;
    const GateState g = w.after({shown(w.intents[0]), pod});
    REQUIRE(g.kind == Kind::Overlap);
    CHECK(w.answered);  // the plugin is woken to requeue it
    CHECK(g.why.find("tenant/train") != std::string::npos);
    CHECK(g.why.find(w.intents[0].name) != std::string::npos);
    CHECK(g.pod_claim == "tenant/train");
    CHECK(w.sync.stats().submitted == queued + 1);  // the Event on the pod's claim
    // once decided, the pod's going does not let the job start here
    CHECK(w.after({shown(w.intents[0])}).kind == Kind::Overlap);
    CHECK(w.sync.stats().submitted == queued + 1);  // told once
}

TEST_CASE("the Event on a pod's claim names it and says what happened, as kubectl shows it") {
    ClaimEvent e;
    e.ns = "tenant";
    e.claim = "train";
    e.reason = kReasonGateOverlap;
    e.message = "Slurm job 42 was given a device of this claim";
    const std::string name = eventName(e);
    CHECK(name.rfind("train.", 0) == 0);
    CHECK(eventName(e) != name);  // each call its own object
    rapidjson::Document d;
    json::parse(d, encodeClaimEvent(e, name, "ctld1"));
    REQUIRE(d.IsObject());
    CHECK(std::string(d["kind"].GetString()) == "Event");
    CHECK(std::string(d["metadata"]["name"].GetString()) == name);
    CHECK(std::string(d["metadata"]["namespace"].GetString()) == "tenant");
    const auto &obj = d["involvedObject"];
    CHECK(std::string(obj["kind"].GetString()) == "ResourceClaim");
    CHECK(std::string(obj["apiVersion"].GetString()) == "resource.k8s.io/v1");
    CHECK(std::string(obj["namespace"].GetString()) == "tenant");  // an Event lives beside its object
    CHECK(std::string(obj["name"].GetString()) == "train");
    CHECK(std::string(d["type"].GetString()) == "Warning");
    CHECK(std::string(d["reason"].GetString()) == "DeviceOfStartingSlurmJob");
    CHECK(std::string(d["message"].GetString()) == e.message);
    CHECK(std::string(d["reportingInstance"].GetString()) == "ctld1");
    CHECK(std::string(d["firstTimestamp"].GetString()).size() == 20);  // 2026-12-07T11:00:00Z
}

TEST_CASE("a pod claim on another device of the node does not hold the job") {
    World w(config());
    std::string otherGpu;
    for (const auto &s : w.sl)
        for (const auto &d : s.devices)
            if (s.driver != "dra.cpu" && d.name != w.gpu_of_job()) otherGpu = d.name;
    REQUIRE(!otherGpu.empty());
    auto pod = std::make_shared<ClaimHolding>(*pod_claim(w.intents[0], w.gpu_of_job()));
    pod->results[0].device = otherGpu;
    CHECK(w.after({shown(w.intents[0]), pod}).kind == Kind::Open);
}

TEST_CASE("a job with nothing on a Kubernetes node, or with the gate off, is not held") {
    ClaimSync sync(config(), nowhere(), {}, quiet());
    sync.set_write_gate([] { return false; });
    auto inv = std::make_shared<const Inventory>(Inventory::build(slices(), {}));
    sync.jobs_known({}, inv);
    sync.job_started(JobAlloc{7, "bob", {JobNodeAlloc{"plain1", {0}, {}}}}, inv);
    CHECK(sync.gate(7).kind == Kind::None);
    Engine off(config(PluginConfig::LaunchGate::Off));
    auto s = std::make_shared<ClaimSync>(config(), nowhere(), WriterOptions{}, quiet());
    off.set_claim_sink(s);
    s->jobs_known({}, inv);
    s->job_started(job42(), inv);
    CHECK(s->gate(42).kind == Kind::Wait);
    CHECK(off.gate(42).kind == Kind::None);
}

TEST_CASE("LaunchGate=prepared also waits for the holder pod to run") {
    World w(config(PluginConfig::LaunchGate::Prepared, true));
    CHECK(w.sync.gate(42).total == 2);
    const auto claim = shown(w.intents[0]);
    GateState g = w.after({claim});
    CHECK(g.kind == Kind::Wait);
    CHECK(g.ready == 1);
    CHECK(g.why.find("holder pod") != std::string::npos);
    auto inv = std::make_shared<const Inventory>(Inventory::build(w.sl, {}));
    const auto holders = job_holders(job42(), w.intents, *inv, w.cfg, w.cfg.cluster_label);
    REQUIRE(holders.size() == 1);
    auto pod = std::make_shared<PodHolding>();
    pod->ns = holders[0].ns;
    pod->name = holders[0].name;
    pod->uid = "uid-holder";
    pod->labels = holders[0].labels;
    pod->nodeName = holders[0].node;
    pod->claims = holders[0].claims;
    pod->claimsDigest = holders[0].claimsDigest;
    pod->phase = "Pending";
    PodMap pods;
    pods.set(claimKey(pod->ns, pod->name), pod);
    CHECK(w.after({claim}, pods).kind == Kind::Wait);
    auto running = std::make_shared<PodHolding>(*pod);
    running->phase = "Running";
    PodMap ran;
    ran.set(claimKey(pod->ns, pod->name), running);
    g = w.after({claim}, ran);
    CHECK(g.kind == Kind::Open);
    CHECK(g.ready == 2);
}

TEST_CASE("not being able to write is a problem to report: no Lease, a refusal, claims not shown in time") {
    World w(config());
    const auto now = std::chrono::steady_clock::now();
    auto problem = w.sync.write_problem(now);
    REQUIRE(problem);  // in charge, but without the Lease
    CHECK(problem->find("Lease") != std::string::npos);
    w.sync.set_leader(true);
    CHECK(!w.sync.write_problem(now));  // job 42's claim is young
    problem = w.sync.write_problem(now + std::chrono::seconds(11));
    REQUIRE(problem);
    CHECK(problem->find("job 42") != std::string::npos);
    CHECK(problem->find("WriteStaleAfter=10s") != std::string::npos);
    w.after({shown(w.intents[0])});  // Kubernetes shows it: nothing unwritten
    CHECK(!w.sync.write_problem(now + std::chrono::seconds(11)));
    // a job that ends takes its unwritten claims with it
    w.sync.job_started(JobAlloc{43, "alice", {JobNodeAlloc{"node1", {5}, {}}}},
                       std::make_shared<const Inventory>(Inventory::build(w.sl, {})));
    CHECK(w.sync.write_problem(now + std::chrono::seconds(30)));
    w.sync.job_ended(43);
    CHECK(!w.sync.write_problem(now + std::chrono::seconds(30)));
    // a job whose node cannot take claims now is that node's problem, not the writer's
    Inventory broken = Inventory::build(w.sl, {});
    broken.node("node1")->invalid = "driver restarting";
    w.sync.job_started(JobAlloc{44, "alice", {JobNodeAlloc{"node1", {6}, {}}}},
                       std::make_shared<const Inventory>(std::move(broken)));
    CHECK(w.sync.gate(44).kind == Kind::Wait);
    CHECK(!w.sync.write_problem(now + std::chrono::seconds(30)));
    // standby: not this controller's to write
    w.sync.standby();
    CHECK(!w.sync.write_problem(now + std::chrono::seconds(30)));
}
