// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/claim_sync.h"

#include "k8s_client/claim_owner.h"
#include "k8s_client/job_claims.h"

#include <set>

namespace k8sdra::k8s {
namespace {
// A queued write is not repeated by reconciliation for this long.
constexpr std::chrono::seconds kInFlight{15};
}  // namespace

ClaimSync::ClaimSync(PluginConfig config, std::shared_ptr<const Config> api, WriterOptions opts,
                     Logger log)
    : config_(std::move(config)), log_(log), writer_(std::move(api), std::move(opts), log.child("claims: ")) {
    writer_.onResult([this](const ClaimOpResult &r) {
        if (r.ok)  // failures are logged by the writer itself
            log_.debug("claim " + r.ns + "/" + r.name + (r.kind == ClaimOpResult::Kind::Apply ? " written" : " deleted"));
        std::lock_guard lock(mu_);
        submitted_.erase(r.name);  // settled: reconciliation may look again
    });
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

void ClaimSync::submit_remove(const std::string &name) {
    if (!writer_.remove(config_.claim_namespace, name)) {
        log_.error("claim queue full: " + config_.claim_namespace + "/" + name +
                   " will be deleted by reconciliation");
        return;
    }
    submitted_[name] = Clock::now();
}

void ClaimSync::translate(uint32_t job_id, const Inventory &inventory) {
    std::string error;
    auto intents = job_claims(jobs_[job_id], inventory, config_, config_.cluster_label, &error, &log_);
    if (!error.empty()) {
        log_.error(error + "; no claim written for it");
        intents.clear();
    }
    intents_[job_id] = std::move(intents);
    // A Kubernetes node of the job that cannot take claims now (its pool
    // incomplete, a driver restarting) gets them once it can: translated
    // again by reconciliation until every node is covered.
    incomplete_.erase(job_id);
    for (const auto &n : jobs_[job_id].nodes)
        if (const NodeEntry *e = inventory.node(n.node); e && !e->usable())
            incomplete_.insert(job_id);
}

void ClaimSync::job_started(const JobAlloc &job, std::shared_ptr<const Inventory> inventory) {
    std::lock_guard lock(mu_);
    if (standby_) return;  // the controller in charge writes it
    jobs_[job.job_id] = job;
    intents_.erase(job.job_id);
    if (!inventory) return;  // reconciliation translates once there is one
    translate(job.job_id, *inventory);
    for (const auto &in : intents_[job.job_id]) {
        log_.debug("job " + std::to_string(job.job_id) + ": claim " + in.ns + "/" + in.name + " on " + in.nodeName +
                   " with " + std::to_string(in.results.size()) + " devices" +
                   (in.opaqueCpuset.empty() ? "" : ", cpuset " + in.opaqueCpuset));
        submit_apply(in);
    }
}

void ClaimSync::job_ended(uint32_t job_id) {
    std::lock_guard lock(mu_);
    jobs_.erase(job_id);
    incomplete_.erase(job_id);
    auto it = intents_.find(job_id);
    if (it == intents_.end()) return;  // reconciliation deletes whatever is left
    for (const auto &in : it->second) submit_remove(in.name);
    intents_.erase(it);
}

void ClaimSync::jobs_known(const std::vector<JobAlloc> &running,
                           std::shared_ptr<const Inventory> inventory) {
    std::lock_guard lock(mu_);
    jobs_.clear();
    intents_.clear();
    incomplete_.clear();
    for (const auto &job : running) {
        jobs_[job.job_id] = job;
        if (inventory) translate(job.job_id, *inventory);
    }
    known_ = true;
    standby_ = false;
    log_.verbose("slurmctld runs " + std::to_string(running.size()) + " jobs; reconciling their claims");
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
    intents_.clear();
    incomplete_.clear();
    submitted_.clear();
    known_ = false;
    log_.info("this slurmctld is no longer in control: claim writes and reconciliation stop (" +
              std::to_string(dropped) + " queued writes left to the controller in charge)");
}

void ClaimSync::reconcile(const Snapshot &snap, const std::shared_ptr<const Inventory> &inventory) {
    std::lock_guard lock(mu_);
    if (!known_ || !leader_ || !inventory) return;
    std::map<std::string, const ClaimIntent *> desired;
    for (const auto &[id, job] : jobs_) {
        if (!intents_.count(id) || incomplete_.count(id)) translate(id, *inventory);
        for (const auto &in : intents_[id]) desired[in.name] = &in;
    }
    std::set<std::string> seen;
    const auto now = Clock::now();
    snap.forEachClaim([&](const ClaimHolding &c) {
        const uint32_t job = ownClaimJob(c, config_);
        if (!job) return;
        seen.insert(c.name);
        if (recently_submitted(c.name, now)) return;
        // A running job's claims are never deleted for want of a match:
        // only a job that is gone loses them.
        const bool running = jobs_.count(job) != 0;
        auto want = desired.find(c.name);
        if (!running) {
            log_.info("deleting claim " + c.ns + "/" + c.name + ": its job is no longer running");
            submit_remove(c.name);
        } else if (want != desired.end() && !allocationMatches(c, *want->second)) {
            log_.error("claim " + c.ns + "/" + c.name + " does not hold its job's devices; recreating it");
            submit_remove(c.name);
        }
    });
    for (const auto &[name, intent] : desired) {
        if (seen.count(name) || recently_submitted(name, now)) continue;
        log_.info("writing missing claim " + intent->ns + "/" + name);
        submit_apply(*intent);
    }
}

}  // namespace k8sdra::k8s
