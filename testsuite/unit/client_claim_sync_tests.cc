// SPDX-License-Identifier: GPL-2.0-or-later
// Reconciliation (ClaimSync) and the writer's Lease gate, with no API
// server: what is queued is read from the writer's counters, and nothing it
// sends can succeed (the server's port is closed).
#include "k8s_sync/claim_json.h"
#include "k8s_sync/claim_sync.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <thread>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;

namespace {

std::shared_ptr<const Config> nowhere() {
    auto c = std::make_shared<Config>();
    c->server = "https://127.0.0.1:1";  // refused at once
    c->token = "t";
    return c;
}

PluginConfig config() {
    PluginConfig c;
    c.cluster_label = "hpc1";
    return c;
}

// A claim as the plugin writes it for `job` on `node`.
std::shared_ptr<ClaimHolding> our_claim(uint32_t job, const std::string &node) {
    auto c = std::make_shared<ClaimHolding>();
    c->ns = "slurm";
    c->name = claimName("hpc1", job, node);
    c->uid = "uid-" + c->name;
    c->labels = claimLabels("hpc1", job, node);
    c->allocated = true;
    c->nodeName = node;
    c->results = {{"cpu", "dra.cpu", node, "cpudev000", "", {}}};
    return c;
}

// A synced snapshot (claims and pods) holding these claims.
Snapshot synced(std::initializer_list<std::shared_ptr<ClaimHolding>> claims) {
    Snapshot snap;
    snap.claimsSynced = true;
    snap.podsSynced = true;
    for (const auto &c : claims) snap.claims.set(claimKey(c->ns, c->name), c);
    return snap;
}

Logger quiet();

// A controller in charge told these jobs, whose writes never leave the
// queue (the queued ones are counted), and these nodes' slurmd registered.
std::unique_ptr<ClaimSync> in_charge(const std::vector<JobAlloc> &jobs,
                                     std::initializer_list<const char *> registered) {
    auto sync = std::make_unique<ClaimSync>(config(), nowhere(), WriterOptions{}, quiet());
    sync->set_write_gate([] { return false; });
    sync->set_leader(true);
    sync->jobs_known(jobs, std::make_shared<const Inventory>());
    for (const char *node : registered) sync->node_registered(node, std::chrono::seconds(0));
    return sync;
}

Logger quiet() { return Logger([](LogLevel, const std::string &) {}, ""); }

template <class F>
bool eventually(F &&f) {
    for (int i = 0; i < 100; ++i) {
        if (f()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

}  // namespace

TEST_CASE("reconciliation deletes no claim before it knows the holder pods") {
    auto owned = in_charge({}, {"node1"});
    ClaimSync &sync = *owned;
    Snapshot snap;
    snap.claimsSynced = true;
    auto gone = our_claim(9, "node1");  // job 9 no longer runs
    snap.claims.set(claimKey(gone->ns, gone->name), gone);
    auto inv = std::make_shared<const Inventory>();
    snap.podsSynced = false;  // a holder pod may still consume it
    sync.reconcile(snap, inv);
    CHECK(sync.stats().submitted == 0);
    snap.podsSynced = true;   // no pod of ours consumes it: it goes
    sync.reconcile(snap, inv);
    CHECK(sync.stats().submitted == 1);
}

TEST_CASE("a gone job's claim stays until its node's slurmd registered and Slurm had time to kill its steps") {
    // After a restart that lost the job state, the job's steps still run on
    // its node until slurmd registers and slurmctld kills them there.
    auto inv = std::make_shared<const Inventory>();
    auto owned = in_charge({}, {});
    ClaimSync &sync = *owned;
    const Snapshot snap = synced({our_claim(9, "node1"), our_claim(10, "node2")});
    sync.reconcile(snap, inv);
    CHECK(sync.stats().submitted == 0);           // neither slurmd registered
    sync.node_registered("node1", std::chrono::seconds(0));
    sync.node_registered("node2", std::chrono::seconds(3600));
    sync.reconcile(snap, inv);
    CHECK(sync.stats().submitted == 1);           // node1's goes; node2 settles for an hour
    // A new controller's list of jobs (a restart, a takeover): every node
    // registers anew before anything goes.
    auto next = in_charge({}, {"node1"});
    next->jobs_known({}, inv);
    next->reconcile(snap, inv);
    CHECK(next->stats().submitted == 0);
}

TEST_CASE("a finishing job's claims stay on each node until that node has ended it") {
    auto inv = std::make_shared<const Inventory>();
    const JobAlloc job{7, "alice", {JobNodeAlloc{"node1", {0}, {}}, JobNodeAlloc{"node2", {0}, {}}}};
    auto owned = in_charge({job}, {"node1", "node2"});
    ClaimSync &sync = *owned;
    const Snapshot both = synced({our_claim(7, "node1"), our_claim(7, "node2")});
    sync.job_finishing(7);  // slurmctld released it; its nodes still kill its steps
    sync.reconcile(both, inv);
    CHECK(sync.stats().submitted == 0);
    CHECK(sync.gate(7).kind == GateState::Kind::None);
    sync.job_released(7, "node1");
    sync.reconcile(both, inv);
    CHECK(sync.stats().submitted == 1);  // node1's only
    sync.job_released(7, "node2");
    sync.reconcile(synced({our_claim(7, "node2")}), inv);
    CHECK(sync.stats().submitted == 2);
    // Begun again while finishing (a requeue): its own again, kept.
    auto owned_again = in_charge({job}, {"node1", "node2"});
    ClaimSync &again = *owned_again;
    again.job_finishing(7);
    again.job_started(job, inv);
    again.job_released(7, "");  // a late release of the last run frees nothing
    again.reconcile(both, inv);
    CHECK(again.stats().submitted == 0);
    again.job_ended(7);  // at once, every node
    again.reconcile(both, inv);
    CHECK(again.stats().submitted == 2);
}

TEST_CASE("a running job's claim on a node it no longer uses is deleted") {
    auto sync = in_charge({JobAlloc{7, "alice", {JobNodeAlloc{"node1", {0}, {}}}}}, {"node1", "node2"});
    sync->reconcile(synced({our_claim(7, "node1"), our_claim(7, "node2")}), std::make_shared<const Inventory>());
    // node1's stays (node1 cannot take claims now, so none is wanted there),
    // node2's goes: the job shrank off node2
    CHECK(sync->stats().submitted == 1);
}

TEST_CASE("the writer sends nothing while the Lease gate says no, at once when it says yes") {
    ClaimSync sync(config(), nowhere(), {}, quiet());
    std::atomic<bool> held{false};
    std::atomic<int> asked{0};
    sync.set_write_gate([&] {
        ++asked;
        return held.load();
    });
    sync.set_leader(true);
    auto inv = std::make_shared<const Inventory>();
    sync.jobs_known({}, inv);
    sync.node_registered("node1", std::chrono::seconds(0));
    sync.reconcile(synced({our_claim(9, "node1")}), inv);
    REQUIRE(sync.stats().submitted == 1);
    // the writer has looked at the queued delete and been told no, twice
    const int before = asked.load();
    REQUIRE(eventually([&] { return asked.load() >= before + 2; }));
    WriterStats s = sync.stats();
    CHECK(s.retries == 0);
    CHECK(s.failed == 0);
    CHECK(s.depth == 1);
    held = true;  // the request goes out (and meets the closed port)
    CHECK(eventually([&] { WriterStats t = sync.stats(); return t.retries + t.failed > 0; }));
}
