// SPDX-License-Identifier: GPL-2.0-or-later
// Slurm jobs -> ResourceClaims and their holder pods, kept in step. Job starts and ends arrive under
// slurmctld's locks and are only queued to the claim writer. The feed thread
// then reconciles what Kubernetes has (our claims, by label) with the jobs
// slurmctld runs: missing claims are written, claims of jobs that are gone
// are deleted. Nothing is deleted before slurmctld has listed its running
// jobs (after a restart), so a restart never drops a running job's claims.
#pragma once

#include "core/engine.h"
#include "k8s_sync/claim_writer.h"
#include "k8s_sync/snapshot.h"

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <string>

namespace k8s_cons_tres::k8s {

class ClaimSync final : public ClaimSink {
public:
    ClaimSync(PluginConfig config, std::shared_ptr<const Config> api, WriterOptions opts, Logger log);
    ~ClaimSync() override;

    void job_started(const JobAlloc &job, std::shared_ptr<const Inventory> inventory) override;
    void job_ended(uint32_t job_id) override;
    void job_finishing(uint32_t job_id) override;
    void job_released(uint32_t job_id, const std::string &node) override;
    void jobs_known(const std::vector<JobAlloc> &running,
                    std::shared_ptr<const Inventory> inventory) override;
    void node_registered(const std::string &node, std::chrono::seconds settle) override;
    void standby() override;
    // Whether this controller holds the claim namespace's Lease: only then
    // are claims written and reconciled (queued writes wait meanwhile).
    void set_leader(bool leader);
    // Asked by the writer before every request (ClaimWriter::set_gate).
    void set_write_gate(std::function<bool()> gate) { writer_.set_gate(std::move(gate)); }
    // Told the jobs by the controller in charge, and not in standby since.
    bool active() const;

    // Feed thread, with a synced snapshot and the inventory built from it.
    void reconcile(const Snapshot &snap, const std::shared_ptr<const Inventory> &inventory);
    // Feed thread, after every new snapshot: the launch gate of each job
    // still waiting, from that snapshot and the inventory built from it
    // (claim_gate.cc). Costs only the waiting jobs.
    // True when some job's gate has its answer now (no longer Wait).
    bool evaluate_gates(const Snapshot &snap, const Inventory &inventory);
    GateState gate(uint32_t job_id) const override;
    // Some job waits at the launch gate (the feed then passes sooner).
    bool gates_waiting() const;
    // Why this controller cannot write claims now (the Lease not held while
    // in charge, the queue full, a write refused, or a job's claims not
    // shown in Kubernetes for WriteStaleAfter), nullopt when it can; nullopt
    // too when not in charge (then nothing is written anyway).
    std::optional<std::string> write_problem(std::chrono::steady_clock::time_point now) const;
    WriterStats stats() const { return writer_.stats(); }

private:
    using Clock = std::chrono::steady_clock;
    // mu_ held; returns the job's nodes whose claims could not be made now
    std::vector<std::string> translate(uint32_t job_id, const Inventory &inventory);
    void submit_apply(const ClaimIntent &intent);                  // mu_ held
    // uid: exactly the object reconciliation saw; "" for the one written.
    void submit_remove(const std::string &name, const std::string &uid = "");  // mu_ held
    void submit_holder(const HolderIntent &pod);                   // mu_ held
    void submit_holder_remove(const std::string &name, const std::vector<std::string> &claims,
                              const std::string &uid = "");  // mu_ held
    void reconcile_pods(const Snapshot &snap, Clock::time_point now);  // mu_ held
    void withdraw(const std::vector<ClaimIntent> &before, const std::vector<HolderIntent> &podsBefore,
                  const std::vector<ClaimIntent> &after,
                  const std::vector<HolderIntent> &podsAfter);      // mu_ held
    bool recently_submitted(const std::string &name, Clock::time_point now) const;
    // mu_ held: whether what a job slurmctld no longer runs on `node` left
    // there may go now; logs once per object why it stays otherwise.
    bool node_clear(const std::string &node, const std::string &what, Clock::time_point now);
    // LaunchGate=prepared with holder pods: the gate waits for them too.
    bool waits_for_pods() const {
        return config_.launch_gate == PluginConfig::LaunchGate::Prepared && config_.holder_pods;
    }
    // An Event on the pod's claim that a starting job's gate found (mu_).
    void tell_overlap(uint32_t job_id, const GateState &st);
    // mu_ held: the job's gate from its intents, waiting until evaluated.
    void gate_reset(uint32_t job_id);
    // gate_mu_ held: the job's gate now (None: it has none), kept in
    // waiting_ while it waits.
    void set_gate(uint32_t job_id, GateState g);
    void clear_gates();  // takes gate_mu_
    // mu_ held; claimsShown: every claim of the job is there as written.
    GateState gate_of(uint32_t job_id, const Snapshot &snap, const Inventory &inventory,
                      bool *claimsShown) const;

    PluginConfig config_;
    Logger log_;
    mutable std::mutex mu_;
    std::map<uint32_t, JobAlloc> jobs_;                    // running jobs (Kubernetes node names)
    std::map<uint32_t, std::vector<ClaimIntent>> intents_; // their claims, once translated
    std::map<uint32_t, std::vector<HolderIntent>> holders_; // their holder pods (HolderPods=yes)
    std::set<uint32_t> incomplete_;  // jobs with a node that could not take claims yet
    // Jobs slurmctld released whose nodes are still ending them: the
    // Kubernetes nodes where their claims and pods (intents_, holders_)
    // stay until job_released(). Neither written again nor deleted.
    std::map<uint32_t, std::set<std::string>> ending_;
    // mu_ held: the job runs on the node, or is ending there.
    bool holds_node(uint32_t job_id, const std::string &node) const;
    std::map<std::string, Clock::time_point> submitted_;   // claim name or "pod:"name -> last write queued
    // Kubernetes nodes whose slurmd registered since jobs_known(): from
    // when a gone job's claims and pods there may be deleted (mu_). A
    // node not in it may still run steps of jobs a restart lost.
    std::map<std::string, Clock::time_point> clear_from_;
    std::set<std::string> kept_told_;  // objects kept for that, logged once
    bool known_ = false;
    bool standby_ = false;  // no longer in control: write nothing
    bool leader_ = false;   // holds the Lease
    // The launch gate per job told (a job that waits for nothing has
    // none); its own mutex, taken inside mu_ or alone, so that slurmctld
    // asking never waits for a reconciliation.
    mutable std::mutex gate_mu_;
    std::map<uint32_t, GateState> gates_;
    // The jobs whose gate waits: open gates stay until their job ends, and
    // the feed asks at every wakeup whether any waits.
    std::set<uint32_t> waiting_;
    // Jobs whose claims Kubernetes does not show yet, since when (mu_), and
    // the last refusal of a claim write since the last success (mu_).
    std::map<uint32_t, Clock::time_point> unwritten_;
    std::string refused_;
    size_t capacity_;
    ClaimWriter writer_;
};

}  // namespace k8s_cons_tres::k8s
