// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/inventory.h"

#include "core/pool_select.h"

#include <algorithm>
#include <charconv>

namespace k8s_cons_tres {

NodeView NodeEntry::view() const {
    NodeView v;
    v.cpu = topology.cpu.get();
    v.gpus = topology.gpus.data();
    v.ngpus = topology.gpus.size();
    v.free_cpus = ledger.free_cpus().data();
    v.free_gpus = ledger.free_gpus();
    v.numa_counts = ledger.numa_counts();
    v.stamp = ledger.stamp();
    return v;
}

std::string format_cpuset(std::vector<int32_t> ids) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::string out;
    for (size_t i = 0; i < ids.size();) {
        size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (!out.empty()) out += ",";
        out += std::to_string(ids[i]);
        if (j > i) out += "-" + std::to_string(ids[j]);
        i = j + 1;
    }
    return out;
}

bool parse_cpuset(const std::string &text, std::vector<int32_t> *ids) {
    // A claim's cpuset is tenant input: no node has more CPUs than this, so
    // anything longer is refused before it costs memory or time.
    constexpr size_t kMaxIds = 65536;
    ids->clear();
    if (text.size() > 16 * kMaxIds)
        return false;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos)
            end = text.size();
        const std::string part = text.substr(pos, end - pos);
        const size_t dash = part.find('-');
        int32_t lo = 0, hi = 0;
        const std::string a = part.substr(0, dash);
        const std::string b = dash == std::string::npos ? a : part.substr(dash + 1);
        auto r1 = std::from_chars(a.data(), a.data() + a.size(), lo);
        auto r2 = std::from_chars(b.data(), b.data() + b.size(), hi);
        if (a.empty() || b.empty() || r1.ec != std::errc() || r2.ec != std::errc() ||
            r1.ptr != a.data() + a.size() || r2.ptr != b.data() + b.size() || lo < 0 ||
            hi < lo || hi - lo > 65536)
            return false;
        if (ids->size() + static_cast<size_t>(hi - lo) + 1 > kMaxIds)
            return false;
        for (int32_t i = lo; i <= hi; ++i)
            ids->push_back(i);
        pos = end + 1;
    }
    return !ids->empty();
}

std::shared_ptr<const CpuTopology> Inventory::intern(std::shared_ptr<const CpuTopology> t) {
    if (interned_ptrs_.count(t.get()))
        return t;
    auto [it, fresh] = interned_.try_emplace(t->fingerprint(), t);
    if (fresh)
        interned_ptrs_.insert(t.get());
    return it->second;
}

NodeEntry &Inventory::own(std::shared_ptr<NodeEntry> &e) {
    if (e.use_count() > 1)  // another inventory has it: copy before changing
        e = std::make_shared<NodeEntry>(*e);
    return *e;
}

Inventory::NameIndex &Inventory::names() {
    if (!by_name_)
        by_name_ = std::make_shared<NameIndex>();
    else if (by_name_.use_count() > 1)  // a copy has it too: change a copy of it
        by_name_ = std::make_shared<NameIndex>(*by_name_);
    return *by_name_;
}

std::optional<size_t> Inventory::index_of(const std::string &name) const {
    if (!by_name_)
        return std::nullopt;
    auto it = by_name_->find(name);
    return it == by_name_->end() ? std::nullopt : std::optional<size_t>(it->second);
}

NodeEntry &Inventory::insert(NodeEntry e) {
    auto entry = std::make_shared<NodeEntry>(std::move(e));
    if (auto i = index_of(entry->name)) {  // a node replaced: the index stays as it is
        nodes_[*i] = std::move(entry);
        return *nodes_[*i];
    }
    names().emplace(entry->name, nodes_.size());
    nodes_.push_back(std::move(entry));
    return *nodes_.back();
}

NodeEntry &Inventory::add_node(NodeTopology topo) {
    NodeEntry e;
    e.name = topo.node;
    if (topo.cpu)
        topo.cpu = intern(topo.cpu);
    const size_t ncpus = topo.cpu ? topo.cpu->cpus.size() : 0;
    // Built on the shared topology from the start: its holdings then are
    // exactly those applied to it (overlapping ones included).
    e.ledger = topo.cpu ? NodeLedger(topo.cpu.get(), topo.gpus.size())
                        : NodeLedger(ncpus, topo.gpus.size());
    e.topology = std::move(topo);
    return insert(std::move(e));
}

NodeEntry Inventory::make_entry(const std::string &name, NodeBuild built) {
    BuildResult &r = built.result;
    if (!r.ok) {
        r.topology = NodeTopology{};
        r.topology.node = name;
    }
    NodeEntry e;
    e.name = name;
    if (r.topology.cpu)
        r.topology.cpu = intern(r.topology.cpu);
    e.ledger = r.topology.cpu ? NodeLedger(r.topology.cpu.get(), r.topology.gpus.size())
                              : NodeLedger(size_t{0}, r.topology.gpus.size());
    e.topology = std::move(r.topology);
    e.invalid = std::move(r.error);
    e.warnings = std::move(r.warnings);
    if (e.invalid.empty() && !e.topology.cpu)
        e.invalid = built.incomplete.empty() ? "no dra.cpu devices"
                                             : "incomplete " + built.incomplete.front();
    for (const std::string &inc : built.incomplete)
        e.warnings.push_back("incomplete " + inc);
    if (e.topology.cpu)
        hold_unavailable(e);
    return e;
}

const NodeEntry *Inventory::node(const std::string &name) const {
    auto i = index_of(name);
    return i ? nodes_[*i].get() : nullptr;
}

NodeEntry *Inventory::node(const std::string &name) {
    auto i = index_of(name);
    return i ? &own(nodes_[*i]) : nullptr;
}

Inventory Inventory::build(const std::vector<ResourceSlice> &slices,
                           const std::vector<ClaimHolding> &claims,
                           const InventoryOptions &opts) {
    Inventory inv;
    BuildOptions bo;
    bo.gres_order = opts.gres_order;
    bo.cpu_driver = opts.cpu_driver;
    bo.gpu_drivers = opts.gpu_drivers;
    for (auto &[name, ns] : select_pools(slices))
        inv.insert(inv.make_entry(name, {build_node_topology(name, ns.complete, bo), ns.incomplete}));
    inv.apply_claims(claims, opts);
    return inv;
}

Inventory Inventory::update(const Inventory &prev, const std::vector<std::string> &changed,
                            const std::map<std::string, std::vector<ResourceSlice>> &slices_of,
                            const std::map<std::string, std::vector<ClaimHolding>> &claims_of,
                            const InventoryOptions &opts) {
    Inventory inv = prev;
    inv.rebuild_nodes(changed, slices_of, claims_of, opts);
    return inv;
}

void Inventory::rebuild_nodes(const std::vector<std::string> &changed,
                              const std::map<std::string, std::vector<ResourceSlice>> &slices_of,
                              const std::map<std::string, std::vector<ClaimHolding>> &claims_of,
                              const InventoryOptions &opts) {
    static const std::vector<ResourceSlice> no_slices;
    static const std::vector<ClaimHolding> no_claims;
    BuildOptions bo;
    bo.gres_order = opts.gres_order;
    bo.cpu_driver = opts.cpu_driver;
    bo.gpu_drivers = opts.gpu_drivers;
    claim_errors_.clear();
    for (const std::string &name : changed) {
        auto s = slices_of.find(name);
        auto c = claims_of.find(name);
        auto pools = select_pools(s == slices_of.end() ? no_slices : s->second);
        auto mine = pools.find(name);
        std::optional<NodeBuild> built;
        if (mine != pools.end())
            built = NodeBuild{build_node_topology(name, mine->second.complete, bo),
                              std::move(mine->second.incomplete)};
        put_node(name, std::move(built), c == claims_of.end() ? no_claims : c->second, opts);
    }
}

void Inventory::put_node(const std::string &name, std::optional<NodeBuild> built,
                         const std::vector<ClaimHolding> &claims, const InventoryOptions &opts) {
    if (!built)
        remove_node(name);  // its claims now name no usable node: errors, as before
    const std::string &placed = built ? insert(make_entry(name, std::move(*built))).name : name;
    apply_claims(claims, opts, &placed);
}

void Inventory::remove_node(const std::string &name) {
    const auto at = index_of(name);
    if (!at) return;
    const size_t i = *at;
    NameIndex &idx = names();
    idx.erase(name);
    if (i + 1 != nodes_.size()) {
        nodes_[i] = std::move(nodes_.back());
        idx[nodes_[i]->name] = i;
    }
    nodes_.pop_back();
}

namespace {

// The holder a claim stands for: its Slurm job when labelled (our own) or
// bridged (slurm-bridge's for that job's pod), else itself.
Holder holder_of(const ClaimHolding &c, const InventoryOptions &opts) {
    if (c.bridgedJob) return Holder::of_bridged(c.bridgedJob, c.ns, c.name);
    auto it = c.labels.find(opts.job_label);
    uint32_t job = 0;
    if (it != c.labels.end()) {
        const std::string &v = it->second;
        auto r = std::from_chars(v.data(), v.data() + v.size(), job);
        if (r.ec == std::errc() && r.ptr == v.data() + v.size())
            return Holder::of_job(job);
    }
    return Holder::of_claim(c.ns, c.name);
}

// Grouped mode: the driver picks the CPUs of a count itself; take them from
// the group's highest CPUs that nothing holds yet. False when the group has
// fewer free CPUs than the count (all of them are then taken).
bool take_from_group(const CpuTopology &t, const Words &group, const Words &free,
                     int64_t count, Words &out) {
    for (size_t i = t.cpus.size(); i-- > 0 && count > 0;) {
        if (bit_test(group, i) && bit_test(free, i) && !bit_test(out, i)) {
            bit_set(out, i);
            --count;
        }
    }
    return count <= 0;
}

// The CPUs of group `g` a grouped result names exactly: its claim's cpuset,
// for a Slurm job's own claim (Slurm's record of the job's CPUs) or where the
// driver pins that cpuset (groupBy: machine); none otherwise. A tenant's
// cpuset is its own configuration and never lowers its count.
Words exact_group_cpus(const CpuTopology &t, size_t g, const ClaimHolding &c, bool own) {
    Words out(t.words, 0);
    std::vector<int32_t> ids;
    if ((own || t.cpuset_honoured()) && !c.opaqueCpuset.empty() && parse_cpuset(c.opaqueCpuset, &ids))
        for (int32_t id : ids)
            if (int64_t i = t.cpu_index(id); i >= 0 && bit_test(t.groups[g].mask, static_cast<size_t>(i)))
                bit_set(out, static_cast<size_t>(i));
    return out;
}

int64_t consumed_cpus(const AllocationResult &r, const InventoryOptions &opts) {
    auto q = r.consumedCapacity.find(opts.cpu_driver + "/cpu");
    int64_t n = 0;
    if (q != r.consumedCapacity.end())
        std::from_chars(q->second.data(), q->second.data() + q->second.size(), n);
    return n;
}

}  // namespace

// Devices the driver marks unusable for new work (taints, a GPU published
// only as partitions) are held by the driver itself: no Slurm job gets them.
void Inventory::hold_unavailable(NodeEntry &e) {
    const CpuTopology &t = *e.topology.cpu;
    for (const UnavailableCpus &u : e.topology.unavailable_cpus) {
        Words cpus(t.words, 0);
        for (uint32_t i : u.cpus)
            if (i < t.cpus.size()) bit_set(cpus, i);
        e.ledger.hold_shared(Holder::of_claim("driver", u.reason), cpus, 0);
    }
    for (size_t g = 0; g < e.topology.gpus.size() && g < 64; ++g)
        if (!e.topology.gpus[g].unavailable.empty())
            e.ledger.hold_shared(Holder::of_claim("driver", e.topology.gpus[g].unavailable),
                                 Words(t.words, 0), uint64_t{1} << g);
}

void Inventory::apply_claims(const std::vector<ClaimHolding> &claims, const InventoryOptions &opts,
                             const std::string *only) {
    // Exact devices first, grouped counts after: a count then never lands on
    // CPUs another claim names exactly, leaving those looking free.
    for (ClaimPass pass : {ClaimPass::Exact, ClaimPass::Counts})
        for (const ClaimHolding &c : claims)
            if (c.allocated)
                apply_claim(c, opts, pass, only);
    if (only) {
        if (NodeEntry *e = node(*only)) mark_overlaps(*e);
    } else {
        for (auto &p : nodes_)
            if (p->ledger.job_holdings()) mark_overlaps(own(p));
    }
}

// A pod's claim on a device a Slurm job's claim holds (kube-scheduler saw a
// stale view, or someone wrote it by hand): both keep it, so the node takes
// no new job until one of them goes, and it is told, never a silent union.
// The driver's own holds (taints, partitions) are not pods.
void Inventory::mark_overlaps(NodeEntry &e) {
    e.overlaps.clear();
    std::vector<Holder> jobs;
    for (const Holding &h : e.ledger.holdings())
        if (h.who.kind == Holder::Kind::Job && std::find(jobs.begin(), jobs.end(), h.who) == jobs.end())
            jobs.push_back(h.who);
    for (const Holder &j : jobs) {
        for (const std::string &claim : e.ledger.claims_sharing(j)) {
            if (claim.rfind("driver/", 0) == 0) continue;
            const std::string what = claim + " holds a device of Slurm job " + std::to_string(j.job);
            if (std::find(e.overlaps.begin(), e.overlaps.end(), what) != e.overlaps.end()) continue;
            e.overlaps.push_back(what);
            claim_errors_.push_back("overlap on " + e.name + ": pod claim " + what +
                                    "; the node takes no new job until one of them ends");
        }
    }
    if (!e.overlaps.empty() && e.invalid.empty())
        e.invalid = "overlap: pod claim " + e.overlaps.front() +
                    (e.overlaps.size() > 1 ? " (and " + std::to_string(e.overlaps.size() - 1) + " more)" : "");
}

void Inventory::apply_claim(const ClaimHolding &c, const InventoryOptions &opts, ClaimPass pass,
                            const std::string *only) {
    const Holder who = holder_of(c, opts);
    const std::string tag = "claim " + c.ns + "/" + c.name + ": ";
    // Fail closed: a claim on a node we track that names a device we cannot
    // place keeps the whole node out, never frees anything.
    auto unusable = [&](NodeEntry &e, const std::string &why) {
        claim_errors_.push_back(tag + why + "; node " + e.name + " kept out");
        if (e.invalid.empty()) e.invalid = tag + why;
    };
    auto target_node = [&](const AllocationResult &r) -> NodeEntry * {
        const std::string &target = c.nodeName.empty() ? r.pool : c.nodeName;
        return only && target != *only ? nullptr : node(target);
    };
    if (!c.undecodable.empty()) {
        if (pass != ClaimPass::Exact) return;
        std::vector<std::string> seen;
        auto out = [&](const std::string &n) {
            if ((only && n != *only) || std::find(seen.begin(), seen.end(), n) != seen.end()) return;
            seen.push_back(n);
            if (NodeEntry *e = node(n)) unusable(*e, "undecodable (" + c.undecodable + ")");
        };
        if (!c.nodeName.empty()) out(c.nodeName);
        for (const AllocationResult &r : c.results) out(r.pool);
        if (seen.empty())
            claim_errors_.push_back(tag + "undecodable (" + c.undecodable + ") and names no node");
        return;
    }
    const bool own = who.kind == Holder::Kind::Job && !who.bridged;
    std::map<std::string, std::pair<Words, uint64_t>> per_node;
    for (const AllocationResult &r : c.results) {
        if (r.adminAccess)  // kube-scheduler counts it as allocating nothing
            continue;
        NodeEntry *e = target_node(r);
        if (!e || !e->topology.cpu) {
            if (pass == ClaimPass::Exact)
                claim_errors_.push_back(tag + "node of pool " + r.pool + " is not usable");
            continue;
        }
        const CpuTopology &t = *e->topology.cpu;
        auto &[cpus, gpus] = per_node[e->name];
        cpus.resize(t.words, 0);
        if (r.driver == opts.cpu_driver) {
            auto it = t.by_device.find(r.device);
            if (it == t.by_device.end()) {
                if (pass == ClaimPass::Exact) unusable(*e, "unknown device " + r.device);
            } else if (!t.grouped) {
                if (pass == ClaimPass::Exact) bit_set(cpus, it->second);
            } else {
                const Words exact = exact_group_cpus(t, it->second, c, own);
                if (pass == ClaimPass::Exact) {
                    for (size_t w = 0; w < t.words; ++w) cpus[w] |= exact[w];
                    continue;
                }
                // At least its consumed count in this group, whatever cpuset it carries.
                const int64_t need = consumed_cpus(r, opts) -
                                     static_cast<int64_t>(popcount_and(exact.data(), t.groups[it->second].mask.data(), t.words));
                if (need > 0 && !take_from_group(t, t.groups[it->second].mask, e->ledger.free_cpus(), need, cpus))
                    claim_errors_.push_back(tag + "group " + r.device + " has too few free CPUs for its count " +
                                            "(all of them stay out)");
            }
        } else if (pass == ClaimPass::Exact) {
            // a MIG slice or partition takes its whole GPU from Slurm
            const int g = gpu_index_of(e->topology, r.driver, r.device);
            if (g >= 0 && g < 64)
                gpus |= uint64_t{1} << g;
            else if (std::find(opts.gpu_drivers.begin(), opts.gpu_drivers.end(), r.driver) !=
                     opts.gpu_drivers.end())
                unusable(*e, "unknown device " + r.driver + "/" + r.device);
        }
    }
    // Devices several claims hold stay out until the last claim goes.
    for (auto &[name, held] : per_node)
        node(name)->ledger.hold_shared(who, held.first, held.second);
}

bool Inventory::job_begin(const std::string &node_name, uint32_t job,
                          const std::vector<uint32_t> &cpus,
                          const std::vector<uint32_t> &gpus, std::string *err) {
    NodeEntry *e = node(node_name);
    if (!e || !e->topology.cpu) {
        *err = "node " + node_name + " is not in the inventory";
        return false;
    }
    Words mask(e->topology.cpu->words, 0);
    for (uint32_t c : cpus) {
        if (c >= e->topology.cpu->cpus.size()) {
            *err = "CPU index " + std::to_string(c) + " does not exist on " + node_name;
            return false;
        }
        bit_set(mask, c);
    }
    uint64_t g = 0;
    for (uint32_t i : gpus) {
        if (i >= 64 || i >= e->topology.gpus.size()) {
            *err = "GPU index " + std::to_string(i) + " does not exist on " + node_name;
            return false;
        }
        g |= uint64_t{1} << i;
    }
    return e->ledger.hold(Holder::of_job(job), mask, g, err);
}

size_t Inventory::job_end(uint32_t job) {
    const Holder who = Holder::of_job(job);
    size_t n = 0;
    for (auto &e : nodes_) {
        const auto &hs = e->ledger.holdings();
        if (std::any_of(hs.begin(), hs.end(), [&](const Holding &h) { return h.who == who; }))
            n += own(e).ledger.release(who);  // only nodes it was on get copied
    }
    return n;
}

}  // namespace k8s_cons_tres
