// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/claim_sync.h"

#include "k8s_sync/claim_owner.h"
#include "k8s_sync/job_claims.h"

#include <algorithm>
#include <set>

namespace k8s_cons_tres::k8s {
namespace {
// A queued write is not repeated by reconciliation for this long, nor one
// that went through for kSettled (until the watch shows it).
constexpr std::chrono::seconds kInFlight{15};
constexpr std::chrono::seconds kSettled{3};

std::string podKey(const std::string &name) { return "pod:" + name; }
}  // namespace

ClaimSync::ClaimSync(PluginConfig config, std::shared_ptr<const Config> api, WriterOptions opts,
                     Logger log)
    : config_(std::move(config)), log_(log), capacity_(opts.capacity),
      writer_(std::move(api), std::move(opts), log.child("claims: ")) {
    writer_.onResult([this](const ClaimOpResult &r) {
        using K = ClaimOpResult::Kind;
        if (r.kind == K::Event) return;  // tells, decides nothing; failures are logged
        const bool pod = r.kind == K::PodApply || r.kind == K::PodRemove;
        if (r.ok)  // failures are logged by the writer itself
            log_.debug(std::string(pod ? "holder pod " : "claim ") + r.ns + "/" + r.name +
                       (r.kind == K::Apply || r.kind == K::PodApply ? " written" : " deleted"));
        std::lock_guard lock(mu_);
        // Settled: reconciliation may look again, after a failure at once;
        // after a write that went through only kSettled later, since the
        // watch may not show it yet (a second POST or DELETE otherwise).
        const std::string key = pod ? podKey(r.name) : r.name;
        if (r.ok)
            submitted_[key] = Clock::now() - kInFlight + kSettled;
        else
            submitted_.erase(key);
        if (r.kind == K::Apply) refused_ = r.ok ? "" : r.ns + "/" + r.name + ": " + r.error;
    });
    if (!config_.holder_pods)
        log_.info("HolderPods=no: Kubernetes does not enforce Slurm's allocations on the nodes (no pod consumes "
                  "the claims, so kubelet never prepares them and pods may run on Slurm's CPUs)");
    writer_.set_enabled(false);  // until this controller holds the Lease
    writer_.start();
}

ClaimSync::~ClaimSync() { writer_.stop(); }

bool ClaimSync::recently_submitted(const std::string &name, Clock::time_point now) const {
    auto it = submitted_.find(name);
    return it != submitted_.end() && now - it->second < kInFlight;
}

void ClaimSync::submit_apply(const ClaimIntent &intent) {
    if (!writer_.apply(intent)) {
        log_.error("claim queue full: " + intent.ns + "/" + intent.name + " will be written by reconciliation");
        return;
    }
    submitted_[intent.name] = Clock::now();
}

void ClaimSync::submit_remove(const std::string &name, const std::string &uid) {
    if (!writer_.remove(config_.claim_namespace, name, uid)) {
        log_.error("claim queue full: " + config_.claim_namespace + "/" + name +
                   " will be deleted by reconciliation");
        return;
    }
    submitted_[name] = Clock::now();
}

void ClaimSync::submit_holder(const HolderIntent &pod) {
    if (!writer_.applyHolder(pod)) {
        log_.error("claim queue full: holder pod " + pod.ns + "/" + pod.name + " will be written by reconciliation");
        return;
    }
    submitted_[podKey(pod.name)] = Clock::now();
}

void ClaimSync::submit_holder_remove(const std::string &name, const std::vector<std::string> &claims,
                                     const std::string &uid) {
    if (!writer_.removeHolder(config_.claim_namespace, name, claims, uid)) {
        log_.error("claim queue full: holder pod " + config_.claim_namespace + "/" + name +
                   " will be deleted by reconciliation");
        return;
    }
    const auto now = Clock::now();
    submitted_[podKey(name)] = now;
    // the pod's operation deletes these once the pod is gone: reconciliation
    // seeing them meanwhile would send a second DELETE
    for (const auto &c : claims) submitted_[c] = now;
}

std::vector<std::string> ClaimSync::translate(uint32_t job_id, const Inventory &inventory) {
    if (bridgeWritesClaims(jobs_[job_id], config_)) {
        // slurm-bridge writes them (its pods' claims count as the job's:
        // claim_owner's bridgeClaimJob); ours would book the devices twice.
        if (!intents_.count(job_id))
            log_.verbose("job " + std::to_string(job_id) + ": external job of slurm-bridge's pods; its claims are slurm-bridge's");
        intents_[job_id].clear();
        holders_[job_id].clear();
        incomplete_.erase(job_id);
        return {};
    }
    std::string error;
    std::vector<std::string> failed;
    auto intents = job_claims(jobs_[job_id], inventory, config_, config_.cluster_label, &error, &log_, &failed);
    if (!error.empty())
        log_.error(error + "; no claim written there (its other nodes' claims stand), tried again");
    if (config_.holder_pods) {
        holders_[job_id] = job_holders(jobs_[job_id], intents, inventory, config_, config_.cluster_label);
        // a claim's status write reserves it for its pod: one request less
        for (const HolderIntent &h : holders_[job_id])
            for (ClaimIntent &in : intents)
                if (std::find(h.claims.begin(), h.claims.end(), in.name) != h.claims.end()) in.holder = h.name;
    }
    intents_[job_id] = std::move(intents);
    // A Kubernetes node of the job that cannot take claims now (its pool
    // incomplete, a driver restarting) gets them once it can: translated
    // again by reconciliation until every node is covered.
    incomplete_.erase(job_id);
    for (const auto &n : jobs_[job_id].nodes)
        if (const NodeEntry *e = inventory.node(n.node); e && !e->usable())
            incomplete_.insert(job_id);
    if (!failed.empty()) incomplete_.insert(job_id);
    return failed;
}

void ClaimSync::job_started(const JobAlloc &job, std::shared_ptr<const Inventory> inventory) {
    std::lock_guard lock(mu_);
    if (standby_) return;  // the controller in charge writes it
    // Told again while running: the job shrank, grew or lost a node.
    std::vector<ClaimIntent> before;
    std::vector<HolderIntent> podsBefore;
    if (ending_.erase(job.job_id)) {
        // begun again (a requeue): Slurm starts it only once its nodes have
        // ended the last run, so what that left goes now
        withdraw(intents_[job.job_id], holders_[job.job_id], {}, {});
        intents_.erase(job.job_id);
        holders_.erase(job.job_id);
    }
    if (jobs_.count(job.job_id)) {
        before = std::move(intents_[job.job_id]);
        podsBefore = std::move(holders_[job.job_id]);
    }
    jobs_[job.job_id] = job;
    intents_.erase(job.job_id);
    holders_.erase(job.job_id);
    if (!inventory) return;  // reconciliation translates once there is one
    // A node whose claims cannot be made now keeps those it had.
    for (const std::string &node : translate(job.job_id, *inventory)) {
        for (const auto &in : before)
            if (in.nodeName == node) intents_[job.job_id].push_back(in);
        for (const auto &h : podsBefore)
            if (h.node == node) holders_[job.job_id].push_back(h);
    }
    withdraw(before, podsBefore, intents_[job.job_id], holders_[job.job_id]);
    for (const auto &in : intents_[job.job_id]) {
        log_.debug("job " + std::to_string(job.job_id) + ": claim " + in.ns + "/" + in.name + " on " + in.nodeName +
                   " with " + std::to_string(in.results.size()) + " devices" +
                   (in.opaqueCpuset.empty() ? "" : ", cpuset " + in.opaqueCpuset));
        submit_apply(in);
    }
    for (const auto &h : holders_[job.job_id]) submit_holder(h);  // after its claims, on the same queue
    gate_reset(job.job_id);
}

// What a job had and no longer has goes: each pod first, its claims once it
// is gone; the rest stays as it is (a pod that still matches is not touched).
// A job that ended keeps nothing.
void ClaimSync::withdraw(const std::vector<ClaimIntent> &before, const std::vector<HolderIntent> &podsBefore,
                         const std::vector<ClaimIntent> &after, const std::vector<HolderIntent> &podsAfter) {
    std::set<std::string> claims, pods, held;
    for (const auto &in : after) claims.insert(in.name);
    for (const auto &h : podsAfter) pods.insert(h.name);
    for (const auto &h : podsBefore) {
        if (pods.count(h.name)) continue;
        std::vector<std::string> left;
        for (const auto &c : h.claims)
            if (!claims.count(c)) left.push_back(c);
        submit_holder_remove(h.name, left);
        held.insert(h.claims.begin(), h.claims.end());
    }
    for (const auto &in : before)
        if (!claims.count(in.name) && !held.count(in.name)) submit_remove(in.name);
}

void ClaimSync::job_ended(uint32_t job_id) {
    job_finishing(job_id);
    job_released(job_id, "");
}

void ClaimSync::job_finishing(uint32_t job_id) {
    std::lock_guard lock(mu_);
    {
        std::lock_guard g(gate_mu_);
        set_gate(job_id, {});
    }
    unwritten_.erase(job_id);
    incomplete_.erase(job_id);
    auto run = jobs_.find(job_id);
    if (run == jobs_.end()) return;
    std::set<std::string> &nodes = ending_[job_id];
    for (const auto &n : run->second.nodes) nodes.insert(n.node);
    jobs_.erase(run);
}

bool ClaimSync::holds_node(uint32_t job_id, const std::string &node) const {
    if (auto run = jobs_.find(job_id); run != jobs_.end())
        return std::any_of(run->second.nodes.begin(), run->second.nodes.end(),
                           [&](const JobNodeAlloc &n) { return n.node == node; });
    auto e = ending_.find(job_id);  // its steps may still run there
    return e != ending_.end() && e->second.count(node);
}

// A node has ended the job: what it had there goes, each pod first, its
// claims once it is gone. A job with no node left keeps nothing.
void ClaimSync::job_released(uint32_t job_id, const std::string &node) {
    std::lock_guard lock(mu_);
    auto e = ending_.find(job_id);
    if (e == ending_.end() || jobs_.count(job_id)) return;  // not ending (started again: its own)
    std::vector<ClaimIntent> gone, kept;
    std::vector<HolderIntent> podsGone, podsKept;
    for (auto &in : intents_[job_id]) (node.empty() || in.nodeName == node ? gone : kept).push_back(in);
    for (auto &h : holders_[job_id]) (node.empty() || h.node == node ? podsGone : podsKept).push_back(h);
    withdraw(gone, podsGone, {}, {});
    if (!node.empty()) e->second.erase(node);
    if (node.empty() || e->second.empty()) {
        ending_.erase(e);
        intents_.erase(job_id);
        holders_.erase(job_id);
        return;  // reconciliation deletes whatever is left
    }
    intents_[job_id] = std::move(kept);
    holders_[job_id] = std::move(podsKept);
}

void ClaimSync::jobs_known(const std::vector<JobAlloc> &running,
                           std::shared_ptr<const Inventory> inventory) {
    std::lock_guard lock(mu_);
    jobs_.clear();
    ending_.clear();  // what ending jobs left is an unknown job's now
    intents_.clear();
    holders_.clear();
    incomplete_.clear();
    clear_gates();
    unwritten_.clear();
    for (const auto &job : running) {
        jobs_[job.job_id] = job;
        if (inventory) translate(job.job_id, *inventory);
        gate_reset(job.job_id);  // a job held at the gate is asked again after a restart
    }
    known_ = true;
    standby_ = false;
    // Every node's slurmd registers anew with this controller before what
    // a job it does not know left there goes.
    clear_from_.clear();
    kept_told_.clear();
    log_.verbose("slurmctld runs " + std::to_string(running.size()) + " jobs; reconciling their claims");
}

void ClaimSync::node_registered(const std::string &node, std::chrono::seconds settle) {
    std::lock_guard lock(mu_);
    if (clear_from_.count(node)) return;
    clear_from_[node] = Clock::now() + settle;
    log_.debug("node " + node + ": its slurmd registered; claims of jobs slurmctld does not run there go in " +
               std::to_string(settle.count()) + " s");
}

bool ClaimSync::node_clear(const std::string &node, const std::string &what, Clock::time_point now) {
    auto it = clear_from_.find(node);
    if (it != clear_from_.end() && now >= it->second) {
        kept_told_.erase(what);
        return true;
    }
    if (kept_told_.insert(what).second)
        log_.info("keeping " + what + " of a job slurmctld does not run: " +
                  (it == clear_from_.end() ? "node " + node + "'s slurmd has not registered since slurmctld started, "
                                             "and steps of the job may still run there"
                                           : "node " + node + "'s slurmd registered just now; Slurm kills "
                                             "steps of unknown jobs there first"));
    return false;
}

bool ClaimSync::active() const {
    std::lock_guard lock(mu_);
    return known_ && !standby_;
}

void ClaimSync::set_leader(bool leader) {
    std::lock_guard lock(mu_);
    if (leader == leader_) return;
    leader_ = leader;
    writer_.set_enabled(leader);
}

void ClaimSync::standby() {
    std::lock_guard lock(mu_);
    if (standby_) return;
    standby_ = true;
    const size_t dropped = writer_.discard();
    jobs_.clear();
    ending_.clear();
    intents_.clear();
    holders_.clear();
    incomplete_.clear();
    submitted_.clear();
    unwritten_.clear();
    clear_from_.clear();
    kept_told_.clear();
    clear_gates();
    known_ = false;
    log_.info("this slurmctld is no longer in control: claim writes and reconciliation stop (" +
              std::to_string(dropped) + " queued writes left to the controller in charge)");
}

void ClaimSync::reconcile(const Snapshot &snap, const std::shared_ptr<const Inventory> &inventory) {
    std::lock_guard lock(mu_);
    if (!known_ || !leader_ || !inventory) return;
    // bounded: what settled writes leave (see the writer's result) goes
    std::erase_if(submitted_, [now = Clock::now()](const auto &e) { return now - e.second >= kInFlight; });
    std::map<std::string, const ClaimIntent *> desired;
    for (const auto &[id, job] : jobs_) {
        if (!intents_.count(id) || incomplete_.count(id)) translate(id, *inventory);
        for (const auto &in : intents_[id]) desired[in.name] = &in;
    }
    std::set<std::string> seen;
    const auto now = Clock::now();
    // Claims a holder pod of ours consumes go with the pod, after it.
    std::set<std::string> podClaims;
    if (config_.holder_pods)
        snap.pods.forEach([&](const std::string &, const PodHolding &p) {
            if (ownPodJob(p, config_)) podClaims.insert(p.claims.begin(), p.claims.end());
        });
    snap.forEachClaim([&](const ClaimHolding &c) {
        const uint32_t job = ownClaimJob(c, config_);
        if (!job) return;
        seen.insert(c.name);
        if (recently_submitted(c.name, now)) return;
        // A running job's claims on its nodes are never deleted for want of
        // a match (a node that cannot take claims now keeps them); a job
        // that is gone, or no longer on the claim's node, loses them.
        auto run = jobs_.find(job);
        const std::string node = claimNodes(c).front();  // ownClaimJob: one node
        const bool running = holds_node(job, node);
        auto want = desired.find(c.name);
        if (!running && config_.holder_pods && !snap.podsSynced) {
            return;  // which pod consumes it is not known yet: delete nothing
        } else if (!running && podClaims.count(c.name)) {
            return;  // its pod is deleted first (reconcile_pods), then it
        } else if (!running && !node_clear(node, "claim " + c.ns + "/" + c.name, now)) {
            return;  // steps of its job may still run there
        } else if (!running) {
            log_.info("deleting claim " + c.ns + "/" + c.name + ": its job is no longer running" +
                      (run != jobs_.end() ? " on " + node : ""));
            submit_remove(c.name, c.uid);
        } else if (want != desired.end() && !allocationMatches(c, *want->second)) {
            log_.error("claim " + c.ns + "/" + c.name + " does not hold its job's devices; recreating it");
            submit_remove(c.name, c.uid);
        }
    });
    for (const auto &[name, intent] : desired) {
        if (seen.count(name) || recently_submitted(name, now)) continue;
        log_.info("writing missing claim " + intent->ns + "/" + name);
        submit_apply(*intent);
    }
    if (config_.holder_pods && snap.podsSynced) reconcile_pods(snap, now);
}

// Pods as claims: missing ones written, ones of gone jobs (or of a node the
// job no longer has) deleted with their claims, never one of a running job
// on its node; a pod whose claims are not reserved for it is written again
// (the write reserves them).
void ClaimSync::reconcile_pods(const Snapshot &snap, Clock::time_point now) {
    std::map<std::string, const HolderIntent *> desired;
    for (const auto &[id, hs] : holders_)
        if (jobs_.count(id))  // an ending job's pods are kept, not made again
            for (const auto &h : hs) desired[h.name] = &h;
    std::set<std::string> seen;
    snap.pods.forEach([&](const std::string &, const PodHolding &p) {
        const uint32_t job = ownPodJob(p, config_);
        if (!job) return;
        seen.insert(p.name);
        if (recently_submitted(podKey(p.name), now)) return;
        const bool onNode = holds_node(job, p.nodeName);
        auto want = desired.find(p.name);
        if (!onNode && !node_clear(p.nodeName, "holder pod " + p.ns + "/" + p.name, now)) {
            return;  // steps of its job may still run there
        } else if (!onNode) {
            log_.info("deleting holder pod " + p.ns + "/" + p.name + ": its job no longer runs on " + p.nodeName);
            submit_holder_remove(p.name, p.claims, p.uid);
        } else if (want != desired.end() && !holderMatches(p, *want->second)) {
            log_.info("holder pod " + p.ns + "/" + p.name + " is not as its job needs (" +
                      (p.phase.empty() ? "no phase" : p.phase) + "); writing it again");
            submit_holder(*want->second);
        } else if (want != desired.end()) {
            for (const auto &name : want->second->claims) {
                const ClaimHolding *c = snap.claim(p.ns, name);
                if (c && std::find(c->reservedForPods.begin(), c->reservedForPods.end(), p.uid) ==
                             c->reservedForPods.end()) {
                    submit_holder(*want->second);
                    break;
                }
            }
        }
    });
    for (const auto &[name, pod] : desired) {
        if (seen.count(name) || recently_submitted(podKey(name), now)) continue;
        log_.info("writing missing holder pod " + pod->ns + "/" + name);
        submit_holder(*pod);
    }
}

}  // namespace k8s_cons_tres::k8s
