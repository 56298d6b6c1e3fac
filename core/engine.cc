// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/engine.h"

#include <algorithm>

namespace k8s_cons_tres {

Engine::Engine(std::optional<PluginConfig> config, NowFn now)
    : config_(std::move(config)), now_(std::move(now)) {}

namespace {

// Ended jobs whose allocations are remembered while their claims go.
constexpr size_t kEndedJobs = 4096;

// Slurm core indices of several CPUs, each core once, ascending.
void sort_unique(std::vector<uint32_t> &v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

bool contains(const std::vector<uint32_t> &sorted, uint32_t v) {
    return std::binary_search(sorted.begin(), sorted.end(), v);
}

}  // namespace

// A job's claim is Slurm's own only as far as slurmctld allocated those
// devices to that job on that node; anything beyond stays out.
bool Engine::covered(const Holding &h, const NodeEntry &entry) const {
    if (h.who.kind != Holder::Kind::Job) return false;
    const std::vector<JobNodeAlloc> *alloc = nullptr;
    if (auto it = jobs_.find(h.who.job); it != jobs_.end()) alloc = &it->second;
    // Our own claims of an ended job go soon (we delete them); a bridged
    // claim's pod may outlive the job, and then it is the pod's.
    else if (auto e = ended_.find(h.who.job); e != ended_.end() && !h.who.bridged) alloc = &e->second;
    if (!alloc) return false;
    auto n = std::find_if(alloc->begin(), alloc->end(),
                          [&](const JobNodeAlloc &a) { return a.node == entry.name; });
    if (n == alloc->end()) return false;
    const CpuTopology &cpu = *entry.topology.cpu;
    bool ok = true;
    for_each_bit(h.cpus.data(), h.cpus.size(), [&](size_t i) {
        ok = ok && i < cpu.cpus.size() && contains(n->cores, slurm_core_of(cpu, static_cast<uint32_t>(i)));
    });
    for (uint32_t g = 0; g < 64 && ok; ++g)
        if ((h.gpus >> g) & 1U) ok = contains(n->gres, g);
    return ok;
}

void Engine::held_for_slurm(const NodeEntry &entry, Words *cpus, uint64_t *gpus) const {
    const std::vector<Holding> &hs = entry.ledger.holdings();
    if (entry.ledger.job_holdings() == 0 ||
        std::none_of(hs.begin(), hs.end(), [&](const Holding &h) { return covered(h, entry); })) {
        // Every holding counts (the usual case): what they hold together is
        // what the ledger does not have free, without reading each of them.
        const CpuTopology &t = *entry.topology.cpu;
        const Words &free = entry.ledger.free_cpus();
        cpus->assign(t.words, 0);
        for (size_t i = 0; i < t.words && i < free.size(); ++i) (*cpus)[i] = ~free[i];
        for (size_t i = t.cpus.size(); i < t.words * 64; ++i) bit_clear(*cpus, i);
        const size_t ngpus = std::min<size_t>(entry.topology.gpus.size(), 64);
        const uint64_t all = ngpus == 64 ? ~uint64_t{0} : (uint64_t{1} << ngpus) - 1;
        *gpus = all & ~entry.ledger.free_gpus();
        return;
    }
    cpus->assign(entry.topology.cpu->words, 0);
    *gpus = 0;
    for (const Holding &h : entry.ledger.holdings()) {
        if (covered(h, entry)) continue;
        for (size_t i = 0; i < cpus->size() && i < h.cpus.size(); ++i) (*cpus)[i] |= h.cpus[i];
        *gpus |= h.gpus;
    }
}

// What Slurm's exclusions of one node depend on: whether it is usable with
// which topology, and what Slurm must keep out of it. Our own claims change
// the inventory with every job but must not make slurmctld rebuild its view.
uint64_t Engine::node_digest(const NodeEntry &n) const {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
    mix(std::hash<std::string>{}(n.invalid));
    mix(n.topology.gpus.size());
    if (!n.usable()) return h;
    const CpuTopology &t = *n.topology.cpu;
    mix(t.cpus.size());
    mix(t.cores.size());
    mix(t.sockets.size());
    mix(t.numas.size());
    Words held;
    uint64_t gpus = 0;
    held_for_slurm(n, &held, &gpus);
    for (size_t i = 0; i < held.size(); ++i)
        if (held[i]) mix(i ^ (held[i] * 31));
    mix(gpus);
    return h | 1;  // never 0: 0 stands for a node gone from the inventory
}

void Engine::mark_digest_dirty(const std::vector<JobNodeAlloc> &nodes) {
    for (const JobNodeAlloc &n : nodes) digest_dirty_.insert(n.node);
}

// Which nodes' digests may differ from those of the last publication: the
// nodes `inventory` does not share with `prev` (the same node set, in the
// same order, is the usual case: a claim changes a few of 15,000 nodes) and
// those a job's start or end touched. Every node when that cannot be told.
std::vector<const NodeEntry *> Engine::digest_candidates(const Inventory *prev, const Inventory &inventory,
                                                         bool *all) {
    const auto now = inventory.nodes();
    std::vector<const NodeEntry *> out;
    *all = digest_all_ || !prev || prev->nodes().size() != now.size();
    for (size_t i = 0; !*all && i < now.size(); ++i) {
        const NodeEntry &n = now[i], &was = prev->nodes()[i];
        if (&n == &was && !digest_dirty_.count(n.name)) continue;  // shared: unchanged
        if (n.name != was.name) *all = true;  // the node set changed
        out.push_back(&n);
    }
    if (*all) {
        out.clear();
        for (const NodeEntry &n : now) out.push_back(&n);
    }
    digest_all_ = false;
    digest_dirty_.clear();
    return out;
}

void Engine::publish(std::shared_ptr<const Inventory> inventory, bool in_sync) {
    std::vector<std::pair<const std::string *, uint64_t>> digests;
    bool all = true;
    if (inventory) {
        // Only this thread publishes: the current view is the last one.
        const auto prev = current();
        std::lock_guard lock(jobs_mu_);
        for (const NodeEntry *n : digest_candidates(prev.get(), *inventory, &all))
            digests.emplace_back(&n->name, node_digest(*n));
    }
    std::lock_guard lock(mu_);
    // Each node whose answers change gets the new change count as its
    // stamp, so slurmctld rebuilds only those nodes' bitmaps.
    const uint64_t next = view_changes_.load() + 1;
    bool changed = published_.load() == 0;
    for (const auto &[name, d] : digests) {
        auto [it, fresh_node] = stamps_.try_emplace(*name, NodeStamp{d, next});
        if (fresh_node || it->second.digest != d) {
            it->second = {d, next};
            changed = true;
        }
    }
    if (all) {  // a node not in the new inventory is gone
        std::unordered_set<std::string_view> present;
        present.reserve(digests.size());
        for (const auto &[name, d] : digests) present.insert(*name);
        for (auto &[name, st] : stamps_)
            if (st.digest && !present.count(name)) {
                st = {0, next};
                changed = true;
            }
    }
    inventory_ = std::move(inventory);
    if (in_sync) synced_at_.store(now_().time_since_epoch().count());
    if (published_.fetch_add(1) == 0) full_stamp_ = next;
    if (changed) view_changes_.store(next);
}

void Engine::change_all() {
    std::lock_guard lock(mu_);
    full_stamp_ = view_changes_.fetch_add(1) + 1;
}

uint64_t Engine::node_stamp(const std::string &slurm_node) const {
    if (!config_) return 0;
    const std::string name = config_->k8s_node_name(slurm_node);
    std::lock_guard lock(mu_);
    auto it = stamps_.find(name);
    return it == stamps_.end() ? 0 : it->second.stamp;
}

uint64_t Engine::full_stamp() const {
    std::lock_guard lock(mu_);
    return full_stamp_;
}

void Engine::mark_fresh() { synced_at_.store(now_().time_since_epoch().count()); }

std::shared_ptr<const Inventory> Engine::current() const {
    std::lock_guard lock(mu_);
    return inventory_;
}

void Engine::set_write_problem(std::optional<std::string> why) {
    std::lock_guard lock(write_mu_);
    write_problem_ = why.value_or("");
    write_blocked_.store(why.has_value());
}

bool Engine::view_fresh(Clock::time_point now) const {
    const int64_t at = synced_at_.load();
    if (published_.load() == 0 || at == kNeverSynced) return false;
    return now - Clock::time_point{Clock::duration(at)} <= config_->stale_after;
}

bool Engine::fresh(Clock::time_point now) const { return !write_blocked_.load() && view_fresh(now); }

// An old view is named first: it is the cause when the API server is gone
// (and writes fail with it).
std::string Engine::staleness_reason(Clock::time_point now) const {
    if (view_fresh(now) && write_blocked_.load()) {
        std::lock_guard lock(write_mu_);
        return kCannotWrite + write_problem_;
    }
    const int64_t at = synced_at_.load();
    // Published but never in sync: one informer listed, another has not.
    if (published_.load() == 0 || at == kNeverSynced) return "inventory not yet in sync with the Kubernetes API server";
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - Clock::time_point{Clock::duration(at)});
    return "inventory is " + std::to_string(age.count()) + "s old (StaleAfter=" +
           std::to_string(config_->stale_after.count()) + "s): API server unreachable?";
}

std::optional<std::string> Engine::stale_reason() const {
    if (!config_) return std::nullopt;
    const auto now = now_();
    if (fresh(now)) return std::nullopt;
    return staleness_reason(now);
}

uint64_t Engine::generation() const {
    if (!config_) return 0;
    return view_changes_.load() * 2 + (fresh(now_()) ? 0 : 1);
}

SlurmExclusion Engine::exclusion(const std::string &slurm_node, const SlurmNodeDef *slurm,
                           bool is_k8s) const {
    SlurmExclusion view;
    if (!config_) return view;
    const auto inventory = current();
    const std::string k8s_name = config_->k8s_node_name(slurm_node);
    const NodeEntry *entry = inventory ? inventory->node(k8s_name) : nullptr;
    if (!is_k8s && !entry) return view;  // not a Kubernetes node

    view.state = ViewState::Unavailable;
    const auto now = now_();
    if (!fresh(now)) {
        view.reason = staleness_reason(now);
        return view;
    }
    if (!entry) {
        view.reason = "no ResourceSlices for Kubernetes node " + k8s_name;
        return view;
    }
    if (!entry->usable()) {
        view.reason = entry->invalid;
        return view;
    }
    if (slurm) {
        if (std::string diff = slurm_mismatch(entry->topology, *slurm); !diff.empty()) {
            view.state = ViewState::Mismatch;
            view.reason = "Slurm node definition disagrees with its ResourceSlices: " + diff;
            return view;
        }
    }
    const CpuTopology &cpu = *entry->topology.cpu;
    Words held;
    uint64_t gpus = 0;
    {
        std::lock_guard lock(jobs_mu_);
        held_for_slurm(*entry, &held, &gpus);
    }
    for_each_bit(held.data(), held.size(), [&](size_t i) {
        view.cores.push_back(slurm_core_of(cpu, static_cast<uint32_t>(i)));
    });
    sort_unique(view.cores);
    for (uint32_t g = 0; g < 64; ++g)
        if (gpus & (uint64_t{1} << g)) view.gres.push_back(g);
    view.state = ViewState::Ready;
    return view;
}

NodeChoice Engine::choose(const std::string &slurm_node, const Request &req,
                          const std::vector<uint32_t> &busy_cores, uint64_t busy_gres) const {
    NodeChoice out;
    if (!config_ || !fresh(now_())) {
        out.reason = "no fresh Kubernetes view";
        return out;
    }
    const auto inventory = current();
    const NodeEntry *entry = inventory ? inventory->node(config_->k8s_node_name(slurm_node)) : nullptr;
    if (!entry || !entry->usable()) {
        out.reason = "not a usable Kubernetes node";
        return out;
    }
    const CpuTopology &cpu = *entry->topology.cpu;
    NodeView view = entry->view();
    // Free for this job: what pods do not hold, less what Slurm's jobs use
    // now. Claims of jobs that just ended do not count: Slurm freed their
    // devices already, the claims only lag behind.
    Words free;
    uint64_t held_gpus = 0;
    {
        std::lock_guard lock(jobs_mu_);
        held_for_slurm(*entry, &free, &held_gpus);
    }
    for (size_t i = 0; i < free.size(); ++i) free[i] = ~free[i];
    for (size_t i = cpu.cpus.size(); i < free.size() * 64; ++i) bit_clear(free, i);
    const uint64_t all_gpus = view.ngpus >= 64 ? ~uint64_t{0} : (uint64_t{1} << view.ngpus) - 1;
    view.free_gpus = all_gpus & ~held_gpus;
    for (uint32_t core : busy_cores) {
        if (core >= cpu.cores.size()) continue;
        const CoreInfo &ci = cpu.cores[core];
        for (uint32_t t = 0; t < ci.nthreads; ++t) bit_clear(free, ci.first_cpu + t);
    }
    view.free_cpus = free.data();
    view.free_gpus &= ~busy_gres;
    view.numa_counts = nullptr;  // they describe the ledger alone, not our mask
    view.stamp = 0;              // nor does its stamp
    const PlacementKey key(view, req);
    if (auto kept = choices_.find(key)) return std::move(*kept);
    const Placement p = place(view, req);
    out.fits = p.fits;
    out.reason = p.reason;
    out.score = p.score;
    for (uint32_t c : p.cpus) out.cores.push_back(slurm_core_of(cpu, c));
    sort_unique(out.cores);
    out.gres = p.gpus;
    choices_.put(key, entry->topology.cpu, out);
    return out;
}

void Engine::set_claim_sink(std::shared_ptr<ClaimSink> sink) {
    std::lock_guard lock(mu_);
    sink_ = std::move(sink);
}

std::shared_ptr<ClaimSink> Engine::sink() const {
    std::lock_guard lock(mu_);
    return sink_;
}

// Slurm node names become Kubernetes node names. Which of them are
// Kubernetes nodes is the sink's question, asked of a synced inventory.
JobAlloc Engine::kubernetes_names(JobAlloc job) const {
    for (auto &n : job.nodes) n.node = config_->k8s_node_name(n.node);
    return job;
}

namespace {
std::vector<JobNodeAlloc> sorted_nodes(std::vector<JobNodeAlloc> nodes) {
    for (auto &n : nodes) {
        sort_unique(n.cores);
        sort_unique(n.gres);
    }
    return nodes;
}

// A claim on one of the job's nodes stands for the job (ours, or only
// bridged ones of slurm-bridge's).
bool holds_for(const Inventory *inv, uint32_t job_id, const std::vector<JobNodeAlloc> &nodes,
               bool bridged_only = false) {
    if (!inv) return false;
    for (const auto &n : nodes)
        if (const NodeEntry *e = inv->node(n.node))
            for (const Holding &h : e->ledger.holdings())
                if (h.who.kind == Holder::Kind::Job && h.who.job == job_id && (h.who.bridged || !bridged_only))
                    return true;
    return false;
}
}  // namespace

void Engine::remember_ended(uint32_t job_id) {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return;
    mark_digest_dirty(it->second);
    ended_[job_id] = std::move(it->second);
    jobs_.erase(it);
    ended_order_.push_back(job_id);
    while (ended_order_.size() > kEndedJobs) {
        // a claim of it still there is nobody's job's any more
        if (auto e = ended_.find(ended_order_.front()); e != ended_.end()) mark_digest_dirty(e->second);
        ended_.erase(ended_order_.front());
        ended_order_.pop_front();
    }
}

void Engine::job_started(JobAlloc job) {
    if (!config_) return;
    job = kubernetes_names(std::move(job));
    const auto inv = current();
    {
        std::lock_guard lock(jobs_mu_);
        if (auto e = ended_.find(job.job_id); e != ended_.end()) mark_digest_dirty(e->second);
        ended_.erase(job.job_id);
        auto &nodes = jobs_[job.job_id];
        mark_digest_dirty(nodes);  // a job started again (requeue, resize)
        nodes = sorted_nodes(job.nodes);
        mark_digest_dirty(nodes);
    }
    // Only after a restart can a claim of this job be there already, kept
    // out until now: slurmctld's view must be rebuilt then.
    if (holds_for(inv.get(), job.job_id, job.nodes)) change_all();
    if (auto s = sink()) s->job_started(job, inv);
}

void Engine::forget_job(uint32_t job_id) {
    const auto inv = current();
    bool bridged = false;
    {
        std::lock_guard lock(jobs_mu_);
        if (auto it = jobs_.find(job_id); it != jobs_.end())
            bridged = holds_for(inv.get(), job_id, it->second, true);
        remember_ended(job_id);
    }
    // slurm-bridge's claims of the job are its pods' from now on, with no
    // Kubernetes change to tell slurmctld: its view must be rebuilt now.
    if (bridged) change_all();
}

void Engine::job_ended(uint32_t job_id) {
    if (!config_) return;
    forget_job(job_id);
    if (auto s = sink()) s->job_ended(job_id);
}

void Engine::job_finishing(uint32_t job_id) {
    if (!config_) return;
    forget_job(job_id);
    if (auto s = sink()) s->job_finishing(job_id);
}

void Engine::job_released(uint32_t job_id, const std::string &slurm_node) {
    if (!config_) return;
    if (auto s = sink()) s->job_released(job_id, slurm_node.empty() ? "" : config_->k8s_node_name(slurm_node));
}

namespace {
std::atomic<void (*)()> gate_notify{nullptr};
}  // namespace

void set_gate_notify(void (*notify)()) { gate_notify.store(notify); }

void notify_gate_answer() {
    if (auto fn = gate_notify.load()) fn();
}

GateState Engine::gate(uint32_t job_id) const {
    if (!config_ || config_->launch_gate == PluginConfig::LaunchGate::Off) return {};
    auto s = sink();
    return s ? s->gate(job_id) : GateState{};
}

void Engine::standby() {
    if (!config_) return;
    {
        std::lock_guard lock(jobs_mu_);
        jobs_.clear();
        ended_.clear();
        ended_order_.clear();
        digest_all_ = true;
    }
    if (auto s = sink()) s->standby();
}

void Engine::jobs_known(std::vector<JobAlloc> running) {
    if (!config_) return;
    for (auto &job : running) job = kubernetes_names(std::move(job));
    {
        std::lock_guard lock(jobs_mu_);
        jobs_.clear();
        for (const auto &job : running) jobs_[job.job_id] = sorted_nodes(job.nodes);
        digest_all_ = true;
    }
    change_all();  // our claims of these jobs are Slurm's now
    if (auto s = sink()) s->jobs_known(running, current());
}

void Engine::node_registered(const std::string &slurm_node, std::chrono::seconds settle) {
    if (!config_) return;
    if (auto s = sink()) s->node_registered(config_->k8s_node_name(slurm_node), settle);
}

void Engine::publish_kube_nodes(std::map<std::string, KubeNodeState> nodes, bool synced) {
    auto next = std::make_shared<const std::map<std::string, KubeNodeState>>(std::move(nodes));
    std::lock_guard lock(kube_mu_);
    kube_nodes_ = std::move(next);
    kube_synced_ = kube_synced_ || synced;
    kube_version_.fetch_add(1);
}

uint64_t Engine::discovery_version() const {
    return generation() * 0x9E3779B97F4A7C15ULL ^ kube_version_.load();
}

namespace {

bool same_gpus(const std::vector<std::pair<IStr, IStr>> &have, const std::vector<GpuInfo> &gpus) {
    if (have.size() != gpus.size()) return false;
    for (size_t i = 0; i < gpus.size(); ++i)
        if (!(have[i].first == gpus[i].model) || !(have[i].second == gpus[i].driver)) return false;
    return true;
}

}  // namespace

// What external_spec reads of node e with Node k (base features are the
// configuration's, fixed for the engine's life).
Engine::SpecInput Engine::spec_input(const NodeEntry &e, const KubeNodeState &k) {
    SpecInput in{e.topology.cpu, {}, k, e.invalid, ""};
    for (const GpuInfo &g : e.topology.gpus) in.gpus.emplace_back(g.model, g.driver);
    return in;
}

bool Engine::same_spec_input(const SpecInput &in, const NodeEntry &e, const KubeNodeState &k) {
    return in.cpu == e.topology.cpu && in.kube == k && in.invalid == e.invalid && same_gpus(in.gpus, e.topology.gpus);
}

std::vector<ExtAction> Engine::external_plan(const std::vector<SlurmNodeState> &have, size_t max_actions,
                                             bool with_gres_conf, std::vector<std::string> *notes,
                                             std::string *why) const {
    if (!config_ || !config_->node_discovery) return {};
    std::shared_ptr<const std::map<std::string, KubeNodeState>> kube;
    {
        std::lock_guard lock(kube_mu_);
        if (kube_synced_) kube = kube_nodes_;
    }
    if (!kube) {
        if (why) *why = "Node objects not listed yet";
        return {};
    }
    const auto now = now_();
    if (!fresh(now)) {
        if (why) *why = staleness_reason(now);
        return {};
    }
    const auto inventory = current();
    std::lock_guard plan_lock(plan_mu_);
    std::map<std::string, std::string> unfit;
    for (const auto &[name, k] : *kube) {
        const NodeEntry *e = inventory ? inventory->node(name) : nullptr;
        if (!e) continue;  // no slices (yet): nothing to describe
        auto [in, added] = spec_inputs_.try_emplace(name);
        if (added || !same_spec_input(in->second, *e, k)) {
            in->second = spec_input(*e, k);
            specs_.erase(name);
            std::string w = e->invalid;
            if (w.empty()) {
                if (auto s = external_spec(e->topology, k, config_->node_features, &w))
                    specs_.emplace(name, std::move(*s));
            }
            in->second.why = std::move(w);
        }
        if (!in->second.why.empty()) unfit[name] = in->second.why;
    }
    // Nodes gone from Kubernetes or from the inventory have no definition.
    std::erase_if(spec_inputs_, [&](const auto &p) {
        const bool keep = kube->count(p.first) && inventory && inventory->node(p.first);
        if (!keep) specs_.erase(p.first);
        return !keep;
    });
    const auto &specs = specs_;
    {
        std::lock_guard lock(kube_mu_);
        for (const auto &[name, w] : unfit) {
            auto [it, added] = spec_notes_.try_emplace(name, w);
            if ((added || it->second != w) && notes) notes->push_back(name + ": " + w);
            it->second = w;
        }
        std::erase_if(spec_notes_, [&](const auto &p) { return !unfit.count(p.first); });
    }
    return plan_external_nodes(*kube, specs, have, max_actions, with_gres_conf);
}

}  // namespace k8s_cons_tres
