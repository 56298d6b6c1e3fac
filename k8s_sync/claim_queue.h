// SPDX-License-Identifier: GPL-2.0-or-later
// The claim writer's queue. One entry per claim (namespace/name) holding the
// latest wanted operation: a later apply or remove of the same claim replaces
// one not yet sent, so an outage never piles up duplicates and the bound is
// on distinct claims. An entry whose attempt failed waits out its backoff
// aside, so a backlog of failures never holds up new work. Not thread-safe:
// the writer guards it with its mutex. Time is passed in, for exact tests.
#pragma once

#include "k8s_client/backoff.h"
#include "k8s_sync/claim_json.h"
#include "k8s_sync/holder_pod.h"

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace k8s_cons_tres::k8s {

// Claims, the holder pods that consume them (HolderPods=yes), and Events
// on pods' claims (claim_event.h).
enum class ClaimOpKind { Apply, Remove, PodApply, PodRemove, Event };

struct ClaimOp {
    ClaimOpKind kind = ClaimOpKind::Apply;
    uint64_t id = 0;
    ClaimIntent intent;  // for Remove and the pod kinds only ns/name are used
    HolderIntent pod;    // PodApply: the pod; PodRemove: its claims, deleted once it is gone
    std::string uid;     // Remove, PodRemove: exactly this object (reconciliation saw it), or
                         // "" for the one the writer wrote last or, failing that, finds
    std::string body;    // Event: what is POSTed (intent.ns/name: the Event's)
    std::chrono::steady_clock::time_point queued;
    int attempts = 0;    // requests made for it so far
    Backoff backoff;     // its own: one claim's failures do not slow another's
    bool isPod() const { return kind == ClaimOpKind::PodApply || kind == ClaimOpKind::PodRemove; }
    // A pod and a claim may share a name; their operations never replace each other.
    std::string key() const {
        return (isPod() ? "pod:" : kind == ClaimOpKind::Event ? "event:" : "") + intent.ns + "/" + intent.name;
    }
};

class ClaimQueue {
public:
    using Clock = std::chrono::steady_clock;
    enum class Push { Queued, Replaced, Full, Kept };

    explicit ClaimQueue(size_t capacity) : capacity_(capacity) {}

    // Queues op (behind the claim's request in flight, if any), or replaces
    // the unsent operation of the same claim: Replaced, and that one is
    // dropped (it reports no result). Full only for a new claim.
    // With replace=false an operation of a claim that has one queued or in
    // flight is dropped instead (Kept): a later request already decided.
    Push push(ClaimOp op, bool replace = true);
    // The next operation to send at now: new work first, but after
    // kFreshBurst new ones in a row a retry whose backoff has ended gets a
    // turn, so neither starves. Among new work, what starting jobs wait
    // for (claims and holder pods to write; the launch gate holds the job
    // until they show) goes before removals, but after kStartBurst of them
    // in a row a removal gets a turn. The entry stays, in flight, until settle or retry.
    std::optional<ClaimOp> take(Clock::time_point now);
    // When the earliest entry in backoff becomes due, if any.
    std::optional<Clock::time_point> nextDue() const;
    // The in-flight operation of key is done (sent, or failed for good). A
    // replacement queued meanwhile becomes ready.
    void settle(const std::string &key);
    // The in-flight op failed and is tried again at `when`, unless it was
    // replaced meanwhile (then false: the replacement wins).
    bool retry(ClaimOp op, Clock::time_point when);
    // Everything not in flight, removed (on stop).
    std::vector<ClaimOp> drain();

    size_t size() const { return entries_.size(); }  // distinct claims
    // Queued to go now, or in flight; not waiting out a backoff.
    bool busy(const std::string &key) const {
        auto it = entries_.find(key);
        return it != entries_.end() && it->second.where != Where::Waiting;
    }
    // Taken by a writer thread and not settled yet.
    bool inFlight(const std::string &key) const {
        auto it = entries_.find(key);
        return it != entries_.end() && it->second.where == Where::InFlight;
    }
    size_t capacity() const { return capacity_; }
    static constexpr int kFreshBurst = 8;
    static constexpr int kStartBurst = 4;

private:
    enum class Where { Fresh, Due, Waiting, InFlight };
    struct Entry {
        ClaimOp op;
        std::optional<ClaimOp> next;  // arrived while op was in flight
        Where where = Where::Fresh;
        std::multimap<Clock::time_point, std::string>::iterator wait;
    };
    void ready(const std::string &key, Entry &e);
    std::optional<std::string> popLive(std::deque<std::string> &q, Where w);

    size_t capacity_;
    std::unordered_map<std::string, Entry> entries_;
    std::deque<std::string> fresh_;     // keys never tried (or replaced), FIFO: removals
    std::deque<std::string> starting_;  // the same, writes of starting jobs
    std::deque<std::string> due_;    // keys whose backoff has ended, FIFO
    std::multimap<Clock::time_point, std::string> waiting_;  // in backoff
    int freshStreak_ = 0;
    int startStreak_ = 0;  // writes of starting jobs taken in a row
};

}  // namespace k8s_cons_tres::k8s
