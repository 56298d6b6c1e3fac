// SPDX-License-Identifier: GPL-2.0-or-later
// Reconciliation (ClaimSync) and the writer's Lease gate, with no API
// server: what is queued is read from the writer's counters, and nothing it
// sends can succeed (the server's port is closed).
#include "k8s_sync/claim_json.h"
#include "k8s_sync/claim_sync.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
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
    ClaimSync sync(config(), nowhere(), {}, quiet());
    sync.set_write_gate([] { return false; });  // nothing leaves the queue
    sync.set_leader(true);
    sync.jobs_known({}, std::make_shared<Inventory>());
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

TEST_CASE("a running job's claim on a node it no longer uses is deleted") {
    ClaimSync sync(config(), nowhere(), {}, quiet());
    sync.set_write_gate([] { return false; });
    sync.set_leader(true);
    auto inv = std::make_shared<const Inventory>();
    sync.jobs_known({JobAlloc{7, "alice", {JobNodeAlloc{"node1", {0}, {}}}}}, inv);
    Snapshot snap;
    snap.claimsSynced = true;
    snap.podsSynced = true;
    auto here = our_claim(7, "node1"), left = our_claim(7, "node2");
    snap.claims.set(claimKey(here->ns, here->name), here);
    snap.claims.set(claimKey(left->ns, left->name), left);
    sync.reconcile(snap, inv);
    // node1's stays (node1 cannot take claims now, so none is wanted there),
    // node2's goes: the job shrank off node2
    CHECK(sync.stats().submitted == 1);
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
    Snapshot snap;
    snap.claimsSynced = true;
    snap.podsSynced = true;
    auto gone = our_claim(9, "node1");
    snap.claims.set(claimKey(gone->ns, gone->name), gone);
    sync.reconcile(snap, inv);
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
