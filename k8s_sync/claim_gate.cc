// SPDX-License-Identifier: GPL-2.0-or-later
// The launch gate's answers (ClaimSync::gate): a job may start once the
// snapshot shows every one of its claims allocated as written (with
// LaunchGate=prepared, also its holder pods Running), and the inventory
// built from that snapshot shows no pod claim sharing a device with them.
// The claims informer is one watch: a snapshot that has our claim has every
// claim written before it, so a pod that got one of the job's devices in
// the window between job_begin and the write is seen here.
#include "k8s_sync/claim_sync.h"

#include <algorithm>
#include <set>

namespace k8s_cons_tres::k8s {
namespace {

using Kind = GateState::Kind;

}  // namespace

void ClaimSync::gate_reset(uint32_t job_id) {
    GateState g{Kind::Wait, 0, 0, "claims not made yet"};
    if (auto it = intents_.find(job_id); it != intents_.end()) {
        g.total = static_cast<unsigned>(it->second.size());
        if (waits_for_pods()) g.total += static_cast<unsigned>(holders_[job_id].size());
        g.why = "claims not written yet";
        if (g.total == 0 && !incomplete_.count(job_id)) g = {};  // nothing of it on a Kubernetes node
    }
    if (g.kind == Kind::None)
        unwritten_.erase(job_id);
    else
        unwritten_.try_emplace(job_id, Clock::now());
    std::lock_guard lock(gate_mu_);
    set_gate(job_id, std::move(g));
}

void ClaimSync::set_gate(uint32_t job_id, GateState g) {
    if (g.kind == Kind::Wait)
        waiting_.insert(job_id);
    else
        waiting_.erase(job_id);
    if (g.kind == Kind::None)
        gates_.erase(job_id);
    else
        gates_[job_id] = std::move(g);
}

void ClaimSync::clear_gates() {
    std::lock_guard lock(gate_mu_);
    gates_.clear();
    waiting_.clear();
}

GateState ClaimSync::gate_of(uint32_t job_id, const Snapshot &snap, const Inventory &inventory,
                             bool *claimsShown) const {
    *claimsShown = false;
    auto in = intents_.find(job_id);
    if (in == intents_.end()) return {Kind::Wait, 0, 0, "claims not made yet (no view of the node)"};
    const bool pods = waits_for_pods();
    const auto hs = holders_.find(job_id);
    GateState g{Kind::Wait, 0, static_cast<unsigned>(in->second.size()), ""};
    if (pods && hs != holders_.end()) g.total += static_cast<unsigned>(hs->second.size());
    if (incomplete_.count(job_id)) {
        g.why = "a node of the job cannot take claims now";
        return g;
    }
    if (g.total == 0) {
        *claimsShown = true;
        return {};
    }
    std::string missing;
    for (const ClaimIntent &c : in->second) {
        const ClaimHolding *have = snap.claim(c.ns, c.name);
        if (have && have->allocated && allocationMatches(*have, c))
            ++g.ready;
        else if (missing.empty())
            missing = "ResourceClaim " + c.ns + "/" + c.name + (have ? " not allocated yet" : " not written yet");
    }
    *claimsShown = g.ready == in->second.size();
    if (pods && hs != holders_.end())
        for (const HolderIntent &h : hs->second) {
            const PodHolding *p = snap.pods.find(claimKey(h.ns, h.name));
            if (p && p->phase == "Running" && !p->deleting && holderMatches(*p, h))
                ++g.ready;
            else if (missing.empty())
                missing = "holder pod " + h.ns + "/" + h.name + " not Running yet";
        }
    if (g.ready < g.total) {
        g.why = missing;
        return g;
    }
    // All there: no pod may hold any of it.
    std::set<std::string> nodes;
    for (const ClaimIntent &c : in->second) nodes.insert(c.nodeName);
    for (const std::string &n : nodes) {
        const NodeEntry *e = inventory.node(n);
        if (!e) continue;
        for (const std::string &other : e->ledger.claims_sharing(Holder::of_job(job_id))) {
            std::string mine;
            for (const ClaimIntent &c : in->second)
                if (c.nodeName == n) mine += (mine.empty() ? "" : ", ") + c.ns + "/" + c.name;
            g.kind = Kind::Overlap;
            g.why = "ResourceClaim " + other + " holds a device of its claim " + mine + " on " + n;
            g.pod_claim = other;
            return g;
        }
    }
    g.kind = Kind::Open;
    return g;
}

void ClaimSync::tell_overlap(uint32_t job_id, const GateState &st) {
    const auto slash = st.pod_claim.find('/');
    // "driver/...": the driver's own hold (a taint, a partition), no object
    if (slash == std::string::npos || st.pod_claim.rfind("driver/", 0) == 0) return;
    ClaimEvent e;
    e.ns = st.pod_claim.substr(0, slash);
    e.claim = st.pod_claim.substr(slash + 1);
    e.reason = kReasonGateOverlap;
    e.message = "Slurm job " + std::to_string(job_id) + " was given a device of this claim before " +
                "Kubernetes showed it allocated: the job does not start and goes back to Slurm's queue; " +
                "this claim keeps the device. " + st.why;
    writer_.event(e);
}

bool ClaimSync::evaluate_gates(const Snapshot &snap, const Inventory &inventory) {
    std::lock_guard lock(mu_);
    std::vector<uint32_t> waiting;
    {
        std::lock_guard g(gate_mu_);
        waiting.assign(waiting_.begin(), waiting_.end());
    }
    if (waiting.empty()) return false;
    std::vector<std::pair<uint32_t, GateState>> now;
    for (uint32_t id : waiting) {
        if (!jobs_.count(id)) continue;
        bool shown = false;
        GateState st = gate_of(id, snap, inventory, &shown);
        if (shown) unwritten_.erase(id);
        if (st.kind == Kind::Overlap) {
            log_.error("job " + std::to_string(id) + " must not start: " + st.why +
                       " (the pod keeps it; the job goes back to the queue)");
            tell_overlap(id, st);
        }
        now.emplace_back(id, std::move(st));
    }
    bool answered = false;
    std::lock_guard g(gate_mu_);
    for (auto &[id, st] : now)
        if (waiting_.count(id)) {  // not answered, ended or reset meanwhile
            answered = answered || st.kind != Kind::Wait;
            set_gate(id, std::move(st));
        }
    return answered;
}

std::optional<std::string> ClaimSync::write_problem(Clock::time_point now) const {
    std::lock_guard lock(mu_);
    if (!known_ || standby_) return std::nullopt;
    if (!leader_) return "this controller does not hold the claim namespace's Lease";
    if (writer_.stats().depth >= capacity_)
        return "the claim queue is full (ClaimQueueLimit=" + std::to_string(capacity_) + ")";
    // Only claims that could be written count: a job whose node cannot take
    // claims now (no slices, an unusable node) waits for that node, which
    // keeps itself out; one broken node must not stop the others.
    const std::pair<const uint32_t, Clock::time_point> *oldest = nullptr;
    for (const auto &u : unwritten_)
        if (intents_.count(u.first) && !incomplete_.count(u.first) && (!oldest || u.second < oldest->second))
            oldest = &u;
    if (!oldest) return std::nullopt;
    if (!refused_.empty()) return "a claim write was refused (" + refused_ + ")";
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - oldest->second);
    if (age < config_.write_stale_after) return std::nullopt;
    return "the claims of job " + std::to_string(oldest->first) + " are not shown in Kubernetes after " +
           std::to_string(age.count()) + "s (WriteStaleAfter=" + std::to_string(config_.write_stale_after.count()) +
           "s)";
}

GateState ClaimSync::gate(uint32_t job_id) const {
    std::lock_guard lock(gate_mu_);
    auto it = gates_.find(job_id);
    return it == gates_.end() ? GateState{} : it->second;
}

bool ClaimSync::gates_waiting() const {
    std::lock_guard lock(gate_mu_);
    return !waiting_.empty();
}

}  // namespace k8s_cons_tres::k8s
