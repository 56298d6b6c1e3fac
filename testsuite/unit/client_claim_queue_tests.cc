// SPDX-License-Identifier: GPL-2.0-or-later
// The claim queue: latest intent per claim wins, bounded, backoff aside.
#include "k8s_sync/claim_queue.h"
#include "k8s_sync/claim_writer.h"

#include <catch2/catch.hpp>

using namespace k8s_cons_tres;
using namespace k8s_cons_tres::k8s;
using namespace std::chrono_literals;

namespace {

using Clock = ClaimQueue::Clock;

ClaimOp op(ClaimOpKind kind, const std::string &name, uint64_t id = 0) {
    ClaimOp o;
    o.kind = kind;
    o.id = id;
    o.intent.ns = "slurm";
    o.intent.name = name;
    return o;
}
ClaimOp applyOp(const std::string &name, uint64_t id = 0) { return op(ClaimOpKind::Apply, name, id); }
ClaimOp removeOp(const std::string &name, uint64_t id = 0) { return op(ClaimOpKind::Remove, name, id); }

}  // namespace

TEST_CASE("the latest intent for a claim wins before it is sent", "[claimqueue]") {
    ClaimQueue q(10);
    const auto t = Clock::now();
    SECTION("apply then remove leaves the remove") {
        CHECK(q.push(applyOp("a", 1)) == ClaimQueue::Push::Queued);
        CHECK(q.push(removeOp("a", 2)) == ClaimQueue::Push::Replaced);
        CHECK(q.size() == 1);
        auto o = q.take(t);
        REQUIRE(o);
        CHECK(o->kind == ClaimOpKind::Remove);
        CHECK(o->id == 2);
    }
    SECTION("remove then apply leaves the apply") {
        q.push(removeOp("a", 1));
        q.push(applyOp("a", 2));
        auto o = q.take(t);
        REQUIRE(o);
        CHECK(o->kind == ClaimOpKind::Apply);
        CHECK(o->id == 2);
    }
    q.settle("slurm/a");
    CHECK_FALSE(q.take(t));
    CHECK(q.size() == 0);
}

TEST_CASE("a write for a claim in flight runs after it, once", "[claimqueue]") {
    ClaimQueue q(10);
    const auto t = Clock::now();
    q.push(applyOp("a", 1));
    auto sent = q.take(t);
    REQUIRE(sent);
    CHECK(q.push(removeOp("a", 2)) == ClaimQueue::Push::Queued);
    CHECK(q.push(applyOp("a", 3)) == ClaimQueue::Push::Replaced);  // 2 is dropped
    CHECK(q.size() == 1);
    CHECK_FALSE(q.take(t));  // never two requests for one claim at once
    SECTION("sent: the replacement follows") {
        q.settle("slurm/a");
        auto o = q.take(t);
        REQUIRE(o);
        CHECK(o->id == 3);
    }
    SECTION("failed: its retry is dropped for the replacement") {
        CHECK_FALSE(q.retry(std::move(*sent), t + 10s));
        auto o = q.take(t);
        REQUIRE(o);
        CHECK(o->id == 3);
    }
    CHECK(q.size() == 1);
}

TEST_CASE("an outage holds one entry per claim and stays bounded", "[claimqueue]") {
    ClaimQueue q(3);
    auto t = Clock::now();
    for (const char *n : {"a", "b", "c"})
        CHECK(q.push(applyOp(n)) == ClaimQueue::Push::Queued);
    CHECK(q.push(applyOp("d")) == ClaimQueue::Push::Full);
    // Every attempt fails and is retried; the same intents keep arriving.
    for (int round = 0; round < 50; ++round) {
        while (auto o = q.take(t))
            q.retry(std::move(*o), t + 1s);
        for (const char *n : {"a", "b", "c"})
            CHECK(q.push(applyOp(n)) == ClaimQueue::Push::Replaced);
        CHECK(q.push(removeOp("e")) == ClaimQueue::Push::Full);
        CHECK(q.size() == 3);
        t += 2s;
    }
    // A replacement for a claim is accepted even when full.
    CHECK(q.push(removeOp("b")) == ClaimQueue::Push::Replaced);
    auto left = q.drain();
    CHECK(left.size() == 3);
    CHECK(q.size() == 0);
    CHECK(q.push(applyOp("d")) == ClaimQueue::Push::Queued);
}

TEST_CASE("claims in backoff do not hold up new work", "[claimqueue]") {
    ClaimQueue q(100);
    const auto t = Clock::now();
    for (int i = 0; i < 20; ++i)
        q.push(applyOp("old" + std::to_string(i)));
    for (int i = 0; i < 20; ++i) {
        auto o = q.take(t);
        REQUIRE(o);
        q.retry(std::move(*o), t + 30s + std::chrono::milliseconds(i));
    }
    CHECK_FALSE(q.take(t + 1s));
    REQUIRE(q.nextDue());
    CHECK(*q.nextDue() == t + 30s);
    q.push(applyOp("new"));
    auto o = q.take(t + 1s);
    REQUIRE(o);
    CHECK(o->intent.name == "new");
    q.settle(o->key());
    // After the backoff (recovery) new work still goes ahead of the backlog,
    // while every kFreshBurst-th turn serves a retry so it is not starved.
    for (int i = 0; i < 20; ++i)
        q.push(applyOp("new" + std::to_string(i)));
    std::vector<std::string> order;
    while (auto n = q.take(t + 31s)) {
        order.push_back(n->intent.name);
        q.settle(n->key());
    }
    REQUIRE(order.size() == 40);
    CHECK(order.front() == "new0");
    int freshRun = 0, maxRun = 0;
    for (size_t i = 0; i < 28; ++i) {  // while both kinds are waiting
        freshRun = order[i].rfind("new", 0) == 0 ? freshRun + 1 : 0;
        maxRun = std::max(maxRun, freshRun);
    }
    CHECK(maxRun <= ClaimQueue::kFreshBurst);
    CHECK(std::count_if(order.begin(), order.begin() + 9,
                        [](const std::string &n) { return n.rfind("old", 0) == 0; }) >= 1);
}

TEST_CASE("a new intent for a claim in backoff is new work", "[claimqueue]") {
    ClaimQueue q(10);
    const auto t = Clock::now();
    q.push(applyOp("a", 1));
    auto o = q.take(t);
    q.retry(std::move(*o), t + 30s);
    CHECK(q.push(removeOp("a", 2)) == ClaimQueue::Push::Replaced);
    CHECK_FALSE(q.nextDue());
    auto r = q.take(t);
    REQUIRE(r);
    CHECK(r->id == 2);
    CHECK(r->attempts == 0);
}

TEST_CASE("the writer coalesces and bounds its queue", "[claimqueue][writer]") {
    auto cfg = std::make_shared<Config>();
    cfg->server = "https://127.0.0.1:1";  // never reached: the writer is not started
    WriterOptions o;
    o.capacity = 2;
    ClaimWriter w(cfg, o, Logger());
    std::vector<ClaimOpResult> results;
    w.onResult([&](const ClaimOpResult &r) { results.push_back(r); });
    ClaimIntent a;
    a.ns = "slurm";
    a.name = "a";
    CHECK(w.apply(a) != 0);
    CHECK(w.remove("slurm", "a") != 0);
    CHECK(w.apply(a) != 0);
    CHECK(w.remove("slurm", "b") != 0);
    CHECK(w.remove("slurm", "c") == 0);  // a third claim: full
    CHECK(w.apply(a) != 0);              // a replacement is never refused
    WriterStats s = w.stats();
    CHECK(s.depth == 2);
    CHECK(s.replaced == 3);
    CHECK(s.refused == 1);
    w.stop();
    REQUIRE(results.size() == 2);  // one per claim, the latest intent
    for (const auto &r : results) {
        CHECK_FALSE(r.ok);
        CHECK(r.error.find("writer stopped") != std::string::npos);
        CHECK(r.kind == (r.name == "a" ? ClaimOpKind::Apply : ClaimOpKind::Remove));
    }
}

TEST_CASE("a removal that yields keeps whatever was asked for the claim since", "[claimqueue]") {
    ClaimQueue q(10);
    const auto t = Clock::now();
    CHECK(q.push(applyOp("a", 1)) == ClaimQueue::Push::Queued);
    CHECK(q.push(removeOp("a", 2), false) == ClaimQueue::Push::Kept);
    auto o = q.take(t);
    REQUIRE(o);
    CHECK(o->kind == ClaimOpKind::Apply);  // and while it is in flight too
    CHECK(q.push(removeOp("a", 3), false) == ClaimQueue::Push::Kept);
    q.settle(o->key());
    CHECK(q.size() == 0);
    CHECK(q.push(removeOp("a", 4), false) == ClaimQueue::Push::Queued);  // nothing asked: it goes
}

TEST_CASE("a holder pod and a claim of the same name are queued apart", "[claimqueue]") {
    ClaimQueue q(10);
    CHECK(q.push(applyOp("x", 1)) == ClaimQueue::Push::Queued);
    CHECK(q.push(op(ClaimOpKind::PodRemove, "x", 2)) == ClaimQueue::Push::Queued);
    CHECK(q.size() == 2);
    CHECK(q.push(op(ClaimOpKind::PodApply, "x", 3)) == ClaimQueue::Push::Replaced);  // the pod's latest
    CHECK(q.size() == 2);
}

TEST_CASE("writes of starting jobs go before removals, which still get every fifth turn", "[claimqueue]") {
    ClaimQueue q(100);
    const auto t = Clock::now();
    for (int i = 0; i < 3; ++i) q.push(removeOp("old" + std::to_string(i)));
    for (int i = 0; i < 10; ++i) q.push(applyOp("new" + std::to_string(i)));
    std::string order;
    while (auto o = q.take(t)) {
        order += o->kind == ClaimOpKind::Apply ? 'A' : 'R';
        q.settle(o->key());
    }
    // kStartBurst (4) starts, then one removal, until the removals are done
    CHECK(order == "AAAARAAAARAAR");
    CHECK(q.size() == 0);
    // a removal queued behind an idle queue goes at once
    q.push(removeOp("x"));
    auto o = q.take(t);
    REQUIRE(o);
    CHECK(o->kind == ClaimOpKind::Remove);
}
