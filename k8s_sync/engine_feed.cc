// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/engine_feed.h"

#include "core/k8s_cons_tres.h"
#include "k8s_sync/claim_json.h"
#include "k8s_client/thread_name.h"
#include "k8s_sync/view_json.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <vector>

namespace k8s_cons_tres::k8s {
namespace {
constexpr std::chrono::milliseconds kCoalesce{200};
// ... and while a job waits at the launch gate: srun asks whether its job
// may start 0.1 s after the allocation, then only 1 s later.
constexpr std::chrono::milliseconds kGateCoalesce{50};
// The admin view file, at most this often, and at most 1% of this thread's
// time: at 15,000 nodes one write of the file takes tens of milliseconds.
constexpr std::chrono::seconds kViewInterval{2};
constexpr int kViewShare = 100;
}  // namespace

Config api_config(const PluginConfig &pc) {
    if (!pc.kubeconfig.empty()) return loadKubeconfig(pc.kubeconfig);
    if (pc.in_cluster) return loadInCluster();
    Config c;
    c.server = pc.api_server;
    c.tokenFile = pc.token_file;
    c.caFile = pc.ca_file;
    c.insecureSkipTlsVerify = pc.insecure_skip_tls_verify;
    c.source = "k8s_cons_tres.conf";
    readFileFor(pc.token_file, c.source, "TokenFile", "point TokenFile= at a readable file holding the bearer token");
    return c;
}

WatcherOptions watcher_options(const PluginConfig &pc) {
    WatcherOptions o;
    o.drivers = {pc.cpu_driver};
    o.drivers.insert(o.drivers.end(), pc.gpu_drivers.begin(), pc.gpu_drivers.end());
    o.client.requestTimeout = std::chrono::duration_cast<std::chrono::milliseconds>(pc.request_timeout);
    if (pc.holder_pods) {  // only ours: the claim namespace, our label
        o.podNamespace = pc.claim_namespace;
        o.podLabelSelector = std::string(kLabelManagedBy) + "=" + kManagedByValue;
    }
    o.watchNodes = pc.node_discovery;
    o.watchBridgePods = pc.node_discovery || pc.bridge_job_claims;
    o.nodeLabelSelector = pc.node_selector;
    if (pc.topology_from) o.nodeTopologyKeys = keys_of(*pc.topology_from);
    return o;
}

LeaseOptions lease_options(const PluginConfig &pc) {
    LeaseOptions o;
    o.ns = pc.claim_namespace;
    o.name = leaseName(pc.cluster_label);
    o.identity = controllerIdentity();
    o.replaced_pid = pc.replaced_pid;
    return o;
}

WriterOptions writer_options(const PluginConfig &pc) {
    WriterOptions o;
    o.capacity = pc.claim_queue_limit;
    o.inflight = pc.max_inflight_writes;
    o.client.requestTimeout = std::chrono::duration_cast<std::chrono::milliseconds>(pc.request_timeout);
    return o;
}

EngineFeed::EngineFeed(std::shared_ptr<Engine> engine, std::shared_ptr<const Config> api,
                       WatcherOptions opts, Logger log)
    : engine_(std::move(engine)), log_(log),
      claims_(std::make_shared<ClaimSync>(*engine_->config(), api, writer_options(*engine_->config()), log)),
      lease_(api, lease_options(*engine_->config()), writer_options(*engine_->config()).client, log),
      watcher_(api, std::move(opts), log), updater_(*engine_->config()) {
    engine_->set_claim_sink(claims_);
    // the writer asks at each request, not only when the feed ticks
    claims_->set_write_gate(lease_.heldCheck());
    watcher_.store().onPublish([this](const std::shared_ptr<const Snapshot> &) {
        std::lock_guard lock(mu_);
        dirty_ = true;
        cv_.notify_all();
    });
    thread_ = std::thread([this] { run(); });
    try {
        watcher_.start();
    } catch (...) {
        // A joinable std::thread destroyed by the unwinding would call
        // std::terminate inside slurmctld: stop it first, then report.
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        cv_.notify_all();
        thread_.join();
        engine_->set_claim_sink(nullptr);
        throw;
    }
}

EngineFeed::~EngineFeed() {
    engine_->set_claim_sink(nullptr);
    watcher_.stop();  // aborts transfers; returns promptly
    lease_.stop();
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

// In sync: every informer has listed and has had data within StaleAfter.
bool EngineFeed::healthy() {
    // Fresh only while every informer has received data (list, event or
    // bookmark) within StaleAfter: a black-holed connection or one informer
    // down stops mark_fresh, and the engine goes stale StaleAfter later.
    return watcher_.snapshot()->synced() && watcher_.fresh(engine_->config()->stale_after);
}

// The admin's window on the plugin: every node's free and held devices.
void EngineFeed::write_view(const Inventory &inv, uint64_t version) {
    const std::string &dir = engine_->config()->state_dir;
    if (dir.empty()) return;
    std::string error;
    if (!write_file_atomically(dir + "/k8s_cons_tres_view.json", inventory_view_json(inv, version), &error))
        log_.error(error);
}

// Kubernetes nodes take jobs only while the view is in sync: say when that
// starts and stops, once each time (the reason is the one job_test gives).
void EngineFeed::log_sync_change() {
    const std::optional<std::string> stale = engine_->stale_reason();
    // Each edge once, and again when the kind of cause changes (claims that
    // cannot be written, a view that is old): both are worth an admin's
    // reading, and an outage often brings one after the other.
    const bool writes = stale && stale->rfind(Engine::kCannotWrite, 0) == 0;
    if (!stale == in_sync_ && (in_sync_ || writes == stale_writes_)) return;
    stale_writes_ = writes;
    in_sync_ = !stale;
    if (in_sync_)
        log_.info("view in sync with the Kubernetes API server: Kubernetes nodes take jobs");
    else
        log_.info("view out of sync: " + *stale + "; Kubernetes nodes take no new jobs");
}

// Only the nodes whose slices or claims changed since the last inventory are
// rebuilt (all of them, in one pass, for the first view).
void EngineFeed::rebuild(const Snapshot &snap) {
    const auto start = std::chrono::steady_clock::now();
    InventoryUpdater::Update u = updater_.update(snap);
    published_version_ = snap.version;
    if (!u.inventory) {  // nothing Slurm sees changed
        if (healthy()) engine_->mark_fresh();
        return;
    }
    for (const auto &e : u.inventory->claim_errors()) log_.error(e);
    // What the model could not use of a node's slices, once per node (again
    // only when it changes).
    for (const std::string &name : u.rebuilt) {
        const NodeEntry *e = u.inventory->node(name);
        if (!e) {  // gone from the inventory: nothing to remember
            warned_.erase(name);
            continue;
        }
        uint64_t h = 0;
        for (const std::string &w : e->warnings) h = h * 31 + std::hash<std::string>{}(w);
        auto [it, fresh] = warned_.try_emplace(name, 0);
        if (!e->warnings.empty() && (fresh || it->second != h))
            for (const std::string &w : e->warnings) log_.debug("node " + name + ": " + w);
        it->second = h;
    }
    const size_t nodes = u.inventory->nodes().size();
    // A new view counts as in sync only while every informer is: one
    // informer down must not be hidden by another's changes.
    engine_->publish(std::move(u.inventory), healthy());
    view_pending_ = true;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    log_.verbose("inventory " + std::to_string(snap.version) + ": " + std::to_string(nodes) + " nodes (" +
                 std::to_string(u.rebuilt.size()) + " rebuilt in " + std::to_string(ms.count()) + " ms), " +
                 std::to_string(u.claims) + " claims");
}

void EngineFeed::run() {
    name_this_thread("k8s_feed");
    std::unique_lock lock(mu_);
    while (!stopping_) {
        cv_.wait_for(lock, std::chrono::seconds(1), [this] { return dirty_ || stopping_; });
        // Let a burst of events (every Slurm job writes and deletes claims)
        // make one inventory instead of one each: while events keep coming,
        // one pass per kCoalesce. The first event after a quiet spell is
        // taken at once: a job at the launch gate waits for its own claim,
        // not for a timer. Before the first view the informers publish only
        // when a list completes: no burst to wait for.
        // Each event that arrives meanwhile asks again: a job may have come
        // to the gate.
        while (dirty_ && published_version_ && !stopping_) {
            const auto due = last_event_pass_ + (claims_->gates_waiting() ? kGateCoalesce : kCoalesce);
            if (std::chrono::steady_clock::now() >= due) break;
            cv_.wait_until(lock, due);
        }
        if (stopping_) break;
        if (dirty_) last_event_pass_ = std::chrono::steady_clock::now();
        dirty_ = false;
        lock.unlock();
        try {
            auto snap = watcher_.snapshot();
            if (snap->synced() && snap->version != published_version_)
                rebuild(*snap);
            else if (published_version_ && healthy())
                engine_->mark_fresh();
            log_sync_change();
            if (engine_->config()->node_discovery) publish_nodes(*snap);
            const auto now = std::chrono::steady_clock::now();
            if (view_pending_ && now - last_view_ >= std::max<std::chrono::steady_clock::duration>(
                                                          kViewInterval, kViewShare * view_took_)) {
                write_view(*updater_.current(), published_version_);
                view_pending_ = false;
                last_view_ = now;
                view_took_ = std::chrono::steady_clock::now() - now;
            }
            // Only the Lease's holder writes: a split brain never double-writes.
            // Only the controller in charge competes for it; one that went
            // to standby gives it up at once.
            const bool active = claims_->active();
            if (active && now - last_lease_ >= std::chrono::seconds(2)) {
                // The server answers: informers in a backoff need not wait it out.
                if (lease_.tick())
                    watcher_.answered();
                last_lease_ = now;
            } else if (!active) {
                lease_.release();
            }
            claims_->set_leader(active && lease_.held());
            // Not being able to write counts as staleness (logged below, at each edge).
            engine_->set_write_problem(claims_->write_problem(now));
            // The launch gate: at every new view, not at reconciliation's pace.
            // The plugin is told at once when a job may go (or must not).
            if (published_version_)
                if (auto inv = engine_->current(); inv && claims_->evaluate_gates(*snap, *inv))
                    notify_gate_answer();
            if (published_version_ && now - last_reconcile_ >= std::chrono::seconds(2)) {
                claims_->reconcile(*snap, engine_->current());
                last_reconcile_ = now;
            }
        } catch (const std::exception &e) {
            log_.error(std::string("cannot build the inventory: ") + e.what());
        }
        lock.lock();
    }
}

// Node discovery's input: the selected Nodes, handed on when they change.
void EngineFeed::publish_nodes(const Snapshot &snap) {
    // The same Node objects as last time (held here, so not changed in
    // place): nothing to compare, at 15,000 nodes several times a second.
    if (snap.nodesSynced == nodes_synced_ && seen_nodes_ && snap.nodes.same(*seen_nodes_)) return;
    seen_nodes_ = snap.nodes;
    std::map<std::string, KubeNodeState> nodes;
    snap.nodes.forEach([&](const std::string &, const KubeNode &n) {
        nodes[n.name] = nodeState(n);
    });
    if (snap.nodesSynced == nodes_synced_ && nodes == last_nodes_) return;
    nodes_synced_ = snap.nodesSynced;
    last_nodes_ = nodes;
    engine_->publish_kube_nodes(std::move(nodes), snap.nodesSynced);
}

std::unique_ptr<Feed> make_engine_feed(std::shared_ptr<Engine> engine, FeedLog log, std::string *error) {
    try {
        const PluginConfig &pc = *engine->config();
        auto api = std::make_shared<const Config>(api_config(pc));
        Logger logger([log](LogLevel l, const std::string &m) { log(static_cast<int>(l), m); }, "");
        return std::make_unique<EngineFeed>(std::move(engine), std::move(api), watcher_options(pc), logger);
    } catch (const std::exception &e) {
        *error = e.what();
        return nullptr;
    }
}

}  // namespace k8s_cons_tres::k8s
