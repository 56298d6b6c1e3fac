// SPDX-License-Identifier: GPL-2.0-or-later
// The engine inside slurmctld: the current Kubernetes view (an immutable
// Inventory published by the client thread) and the answers the scheduling
// path asks of it. Readers never wait on I/O: they take the current
// snapshot pointer under a short mutex and work on that.
#pragma once

#include "core/external_nodes.h"
#include "core/inventory.h"
#include "core/placement.h"
#include "core/placement_cache.h"
#include "core/plugin_config.h"
#include "core/slurm_map.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace k8s_cons_tres {

enum class ViewState { NotK8s = 0, Ready = 1, Unavailable = 2, Mismatch = 3 };

struct SlurmExclusion {  // what Slurm must keep out of one node
    ViewState state = ViewState::NotK8s;
    std::vector<uint32_t> cores;  // Slurm core indices with a pod-held thread
    std::vector<uint32_t> gres;   // GPU GRES indices held by pods
    std::string reason;           // why Unavailable
};

// The engine's choice for a job on one node, in Slurm terms.
struct NodeChoice {
    bool fits = false;
    std::string reason;           // why not
    Score score;
    std::vector<uint32_t> cores;  // Slurm core indices
    std::vector<uint32_t> gres;   // GPU GRES indices
};

// One Slurm job's devices on its Kubernetes nodes, in Slurm terms.
struct JobNodeAlloc {
    std::string node;             // Kubernetes node name
    std::vector<uint32_t> cores;  // Slurm core indices (every thread is the job's)
    std::vector<uint32_t> gres;   // GPU GRES indices
    uint64_t mem_mb = 0;          // memory Slurm gives the job there
    bool operator==(const JobNodeAlloc &) const = default;
};

struct JobAlloc {
    uint32_t job_id = 0;
    std::string user;                   // "" when slurmctld had not looked it up
    std::vector<JobNodeAlloc> nodes;
    bool external = false;      // an EXTERNAL_JOB (Slurm 25.05+): no script, no steps
    std::string admin_comment = {};  // an external job's AdminComment (slurm-bridge names its pods there)
    std::optional<uint32_t> uid = {};  // without user, the claims' user label comes from it
    bool operator==(const JobAlloc &) const = default;
};

// A job at the launch gate: whether Kubernetes shows its claims allocated.
struct GateState {
    enum class Kind {
        None,     // nothing to wait for: no claim on a Kubernetes node, or gate off
        Wait,     // not all of its claims (or holder pods) are there yet
        Open,     // all there, and no pod claim shares a device with them
        Overlap,  // a pod's claim holds one of its devices: it must not start
    };
    Kind kind = Kind::None;
    unsigned ready = 0, total = 0;  // claims (and holder pods) there / wanted
    std::string why;                // Wait: what it waits for; Overlap: both objects
    std::string pod_claim = {};     // Overlap: the pod's claim, "namespace/name"
    bool operator==(const GateState &) const = default;
};

// Where job allocations go to become ResourceClaims (the client's writer).
// Called under slurmctld's locks: implementations must only queue.
class ClaimSink {
public:
    virtual ~ClaimSink() = default;
    virtual void job_started(const JobAlloc &job, std::shared_ptr<const Inventory> inventory) = 0;
    // The job is over: its claims and holder pods go.
    virtual void job_ended(uint32_t job_id) = 0;
    // slurmctld released the job, but its nodes are still ending it (its
    // steps may run until killed): its claims and pods stay on each node
    // until job_released() names that node ("" every node).
    virtual void job_finishing(uint32_t job_id) = 0;
    virtual void job_released(uint32_t job_id, const std::string &node) = 0;
    // slurmctld has told us every running job (after a restart): claims of
    // jobs not in `running` may now be deleted.
    virtual void jobs_known(const std::vector<JobAlloc> &running,
                            std::shared_ptr<const Inventory> inventory) = 0;
    // The Kubernetes node's slurmd has registered with this slurmctld since
    // jobs_known(): slurmctld has then had steps of jobs it does not know
    // killed there, so their claims and holder pods may go `settle` later.
    // Until then they stay (a restart that lost jobs leaves them running).
    virtual void node_registered(const std::string &node, std::chrono::seconds settle) = 0;
    // This slurmctld stopped being the controller in charge (a backup
    // going back to standby, or shutting down): its job list is frozen from
    // now on, so nothing may be written or reconciled from it until
    // jobs_known() again.
    virtual void standby() = 0;
    // The launch gate's answer for a job now; cheap and never waits on I/O
    // (asked under slurmctld's locks too).
    virtual GateState gate(uint32_t job_id) const = 0;
};

// The launch gate's waker (k8s_cons_tres_set_gate_notify): told, with no lock
// held, that some job's gate has an answer now.
void set_gate_notify(void (*notify)());
void notify_gate_answer();

class Engine {
public:
    using Clock = std::chrono::steady_clock;
    using NowFn = std::function<Clock::time_point()>;

    explicit Engine(std::optional<PluginConfig> config, NowFn now = Clock::now);

    bool integration_on() const { return config_.has_value(); }
    const PluginConfig *config() const { return config_ ? &*config_ : nullptr; }

    // Client thread: a new complete view, in sync as of now unless
    // `in_sync` says otherwise (then freshness stays as it was).
    void publish(std::shared_ptr<const Inventory> inventory, bool in_sync = true);
    // Client thread: nothing changed, but the view is still in sync (a watch
    // event or bookmark arrived).
    void mark_fresh();

    // Why Kubernetes nodes take no new jobs now, or nothing while the view
    // is in sync (the feed logs each change of this).
    std::optional<std::string> stale_reason() const;
    // How stale_reason() begins when the cause is that claims cannot be written.
    static constexpr const char *kCannotWrite = "claims cannot be written: ";
    // Client thread: why this controller cannot write claims now, nullopt
    // when it can. Not being able to write counts as a stale view: until
    // it can, Kubernetes nodes take no new jobs.
    void set_write_problem(std::optional<std::string> why);

    // Changes whenever exclusion() answers may change.
    uint64_t generation() const;
    // generation() / 2 when this node's answers last changed (0: never);
    // full_stamp(): when every node's did. A cache built at generation G
    // needs only the nodes stamped after G / 2 rebuilt.
    uint64_t node_stamp(const std::string &slurm_node) const;
    uint64_t full_stamp() const;
    SlurmExclusion exclusion(const std::string &slurm_node, const SlurmNodeDef *slurm, bool is_k8s) const;

    std::shared_ptr<const Inventory> current() const;

    // Best placement on a ready Kubernetes node, leaving out what Slurm's
    // own jobs use there (busy cores, busy GPUs) besides what pods hold.
    // Choices are kept by topology, free sets and request (PlacementCache):
    // job_test asks for every candidate node, and most have not changed
    // since the last job, or look like another node.
    NodeChoice choose(const std::string &slurm_node, const Request &req,
                      const std::vector<uint32_t> &busy_cores, uint64_t busy_gres) const;

    // Slurm -> Kubernetes: queue claim writes (never waits).
    void set_claim_sink(std::shared_ptr<ClaimSink> sink);
    void job_started(JobAlloc job);
    void job_ended(uint32_t job_id);
    // ClaimSink::job_finishing and job_released (slurm_node: Slurm's name,
    // "" every node of the job).
    void job_finishing(uint32_t job_id);
    void job_released(uint32_t job_id, const std::string &slurm_node);
    void jobs_known(std::vector<JobAlloc> running);
    // A Slurm node's slurmd registered (ClaimSink::node_registered).
    void node_registered(const std::string &slurm_node, std::chrono::seconds settle);
    // slurmctld relinquished control (see ClaimSink::standby).
    void standby();
    // The launch gate's answer (ClaimSink::gate); None when LaunchGate=off
    // or nothing writes claims.
    GateState gate(uint32_t job_id) const;

    // Node discovery. Client thread: the Kubernetes nodes that match
    // NodeSelector (synced: listed at least once).
    void publish_kube_nodes(std::map<std::string, KubeNodeState> nodes, bool synced);
    // Changes whenever external_plan()'s Kubernetes side may have changed
    // (Nodes, slices, freshness); slurmctld's side it cannot see.
    uint64_t discovery_version() const;
    // What to do about slurmctld's nodes now (plan_external_nodes), from
    // the current view; nothing while Node objects are not listed yet or the
    // view is stale (*why says so), so nothing is ever deleted on old data.
    // notes: nodes that cannot become Slurm nodes and why, each once per
    // change of reason.
    std::vector<ExtAction> external_plan(const std::vector<SlurmNodeState> &have, size_t max_actions,
                                         bool with_gres_conf, std::vector<std::string> *notes,
                                         std::string *why) const;

private:
    std::shared_ptr<ClaimSink> sink() const;
    JobAlloc kubernetes_names(JobAlloc job) const;

    // What Slurm must keep out of a node: devices held by pods' claims, and
    // devices our own claims hold beyond what slurmctld allocated to their
    // job there (jobs_mu_ held).
    void held_for_slurm(const NodeEntry &entry, Words *cpus, uint64_t *gpus) const;
    bool covered(const Holding &h, const NodeEntry &entry) const;
    uint64_t node_digest(const NodeEntry &entry) const;  // jobs_mu_ held
    std::vector<const NodeEntry *> digest_candidates(const Inventory *prev, const Inventory &inventory,
                                                     bool *all);  // jobs_mu_ held
    void change_all();
    void remember_ended(uint32_t job_id);
    void forget_job(uint32_t job_id);  // Slurm released it

    bool fresh(Clock::time_point now) const;       // the view, and writes possible
    bool view_fresh(Clock::time_point now) const;  // the view alone
    std::string staleness_reason(Clock::time_point now) const;

    std::optional<PluginConfig> config_;
    NowFn now_;
    mutable std::mutex mu_;
    std::shared_ptr<const Inventory> inventory_;
    std::shared_ptr<ClaimSink> sink_;
    std::atomic<uint64_t> published_{0};
    std::atomic<uint64_t> view_changes_{0};  // publications that changed what Slurm keeps out
    struct NodeStamp {
        uint64_t digest = 0;  // 0: gone from the inventory
        uint64_t stamp = 0;
    };
    std::unordered_map<std::string, NodeStamp> stamps_;  // k8s node name; mu_
    uint64_t full_stamp_ = 0;                            // mu_
    static constexpr int64_t kNeverSynced = INT64_MIN;
    std::atomic<int64_t> synced_at_{kNeverSynced};  // Clock ticks of the last sync
    std::atomic<bool> write_blocked_{false};
    mutable std::mutex write_mu_;
    std::string write_problem_;  // write_mu_
    mutable PlacementCache<NodeChoice> choices_;  // choose()'s answers

    // Slurm's own allocations per job (Kubernetes node names), as slurmctld
    // told them, and those of recently ended jobs whose claims are still
    // being deleted. A claim counts as a job's only within these.
    mutable std::mutex jobs_mu_;
    std::map<uint32_t, std::vector<JobNodeAlloc>> jobs_;
    std::map<uint32_t, std::vector<JobNodeAlloc>> ended_;
    std::deque<uint32_t> ended_order_;
    // Nodes whose digest a change of jobs_ or ended_ may have changed since
    // the last publish(), or all of them (jobs_mu_): publish() digests
    // those and the nodes the new inventory does not share with the last.
    std::unordered_set<std::string> digest_dirty_;
    bool digest_all_ = true;
    void mark_digest_dirty(const std::vector<JobNodeAlloc> &nodes);  // jobs_mu_ held

    mutable std::mutex kube_mu_;
    std::shared_ptr<const std::map<std::string, KubeNodeState>> kube_nodes_;  // kube_mu_
    bool kube_synced_ = false;                                                 // kube_mu_
    std::atomic<uint64_t> kube_version_{0};  // publications of kube_nodes_
    mutable std::map<std::string, std::string> spec_notes_;                   // kube_mu_

    // external_plan's node definitions, made again only for a node whose
    // inputs changed (its CPU topology, GPU models, Node or invalidity):
    // a discovery round at 15,000 unchanged nodes makes none.
    struct SpecInput {
        std::shared_ptr<const CpuTopology> cpu;
        std::vector<std::pair<IStr, IStr>> gpus;  // model, driver
        KubeNodeState kube;
        std::string invalid;
        std::string why;  // external_spec's refusal, "" when it made one
    };
    static SpecInput spec_input(const NodeEntry &e, const KubeNodeState &k);
    static bool same_spec_input(const SpecInput &in, const NodeEntry &e, const KubeNodeState &k);
    mutable std::mutex plan_mu_;  // one discovery round at a time
    mutable std::unordered_map<std::string, SpecInput> spec_inputs_;  // plan_mu_
    mutable std::map<std::string, ExternalNodeSpec> specs_;           // plan_mu_
};

// The engine of the started core (lifecycle.cc), or null when stopped.
std::shared_ptr<Engine> running_engine();

}  // namespace k8s_cons_tres
