// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/claim_queue.h"

namespace k8s_cons_tres::k8s {

ClaimQueue::Push ClaimQueue::push(ClaimOp op, bool replace) {
    const std::string key = op.key();
    auto it = entries_.find(key);
    if (it != entries_.end() && !replace)
        return Push::Kept;
    if (it == entries_.end()) {
        if (entries_.size() >= capacity_)
            return Push::Full;
        Entry &e = entries_[key];
        e.op = std::move(op);
        ready(key, e);
        return Push::Queued;
    }
    Entry &e = it->second;
    if (e.where == Where::InFlight) {  // runs after the request being sent
        const bool dropped = e.next.has_value();
        e.next = std::move(op);
        return dropped ? Push::Replaced : Push::Queued;
    }
    e.op = std::move(op);
    if (e.where == Where::Waiting) {  // a new intent is new work: no backoff
        waiting_.erase(e.wait);
        ready(key, e);
    }
    return Push::Replaced;
}

void ClaimQueue::ready(const std::string &key, Entry &e) {
    e.where = Where::Fresh;
    const bool starts = e.op.kind == ClaimOpKind::Apply || e.op.kind == ClaimOpKind::PodApply;
    (starts ? starting_ : fresh_).push_back(key);
}

std::optional<std::string> ClaimQueue::popLive(std::deque<std::string> &q, Where w) {
    while (!q.empty()) {
        std::string key = std::move(q.front());
        q.pop_front();
        auto it = entries_.find(key);
        if (it != entries_.end() && it->second.where == w)
            return key;
    }
    return std::nullopt;
}

std::optional<ClaimOp> ClaimQueue::take(Clock::time_point now) {
    while (!waiting_.empty() && waiting_.begin()->first <= now) {
        const std::string key = waiting_.begin()->second;
        waiting_.erase(waiting_.begin());
        entries_.at(key).where = Where::Due;
        due_.push_back(key);
    }
    const bool retriesDue = !due_.empty();
    std::optional<std::string> key;
    if ((fresh_.empty() && starting_.empty()) || freshStreak_ >= kFreshBurst)
        key = popLive(due_, Where::Due);
    bool retryTurn = key.has_value();
    if (!key && (fresh_.empty() || startStreak_ < kStartBurst)) {
        key = popLive(starting_, Where::Fresh);
        startStreak_ = key ? startStreak_ + 1 : 0;
    }
    if (!key) {
        key = popLive(fresh_, Where::Fresh);
        if (key) startStreak_ = 0;
    }
    if (!key)  // a removal's turn came with none queued
        key = popLive(starting_, Where::Fresh);
    if (!key)
        retryTurn = (key = popLive(due_, Where::Due)).has_value();
    if (!key)
        return std::nullopt;
    // Counts fresh turns taken while a retry was due.
    freshStreak_ = retryTurn || !retriesDue ? 0 : freshStreak_ + 1;
    Entry &e = entries_.at(*key);
    e.where = Where::InFlight;
    return std::move(e.op);
}

std::optional<ClaimQueue::Clock::time_point> ClaimQueue::nextDue() const {
    if (waiting_.empty())
        return std::nullopt;
    return waiting_.begin()->first;
}

void ClaimQueue::settle(const std::string &key) {
    auto it = entries_.find(key);
    if (it == entries_.end())
        return;
    Entry &e = it->second;
    if (!e.next) {
        entries_.erase(it);
        return;
    }
    e.op = std::move(*e.next);
    e.next.reset();
    ready(key, e);
}

bool ClaimQueue::retry(ClaimOp op, Clock::time_point when) {
    const std::string key = op.key();
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.next) {
        settle(key);
        return false;
    }
    Entry &e = it->second;
    e.op = std::move(op);
    e.where = Where::Waiting;
    e.wait = waiting_.emplace(when, key);
    return true;
}

std::vector<ClaimOp> ClaimQueue::drain() {
    std::vector<ClaimOp> out;
    for (auto it = entries_.begin(); it != entries_.end();) {
        Entry &e = it->second;
        if (e.next)
            out.push_back(std::move(*e.next));
        if (e.where == Where::InFlight) {
            e.next.reset();
            ++it;
            continue;
        }
        out.push_back(std::move(e.op));
        it = entries_.erase(it);
    }
    fresh_.clear();
    starting_.clear();
    due_.clear();
    waiting_.clear();
    return out;
}

}  // namespace k8s_cons_tres::k8s
