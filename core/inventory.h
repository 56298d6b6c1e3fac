// SPDX-License-Identifier: GPL-2.0-or-later
// The per-node inventory: topology model and ledger of every node, built
// from ResourceSlices and ResourceClaims, updated by Slurm job begin/end.
#pragma once

#include "core/dra_types.h"
#include "core/ledger.h"
#include "core/placement.h"
#include "core/topology.h"
#include "core/topology_build.h"

#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace k8s_cons_tres {

struct InventoryOptions {
    GresOrder gres_order = GresOrder::Minor;
    std::string cpu_driver = kCpuDriver;  // CPUDriver=
    std::vector<std::string> gpu_drivers = {kNvidiaDriver, kExampleGpuDriver};  // GPUDrivers=
    // Claims carrying this label hold devices for that Slurm job id.
    std::string job_label = "k8s-cons-tres.slurm.io/job-id";
};

struct NodeEntry {
    std::string name;
    NodeTopology topology;   // cpu may be null when the node is invalid
    // Built on this topology: a new topology comes with a new ledger, so
    // the ledger's stamp names both (view().stamp).
    NodeLedger ledger;
    std::string invalid;     // why the node cannot be used, "" when usable
    // Pods' claims on devices a Slurm job holds here ("ns/name holds a
    // device of Slurm job N"): never unioned silently; while there is one,
    // the node takes no new job (invalid says so).
    std::vector<std::string> overlaps;
    std::vector<std::string> warnings;

    bool usable() const { return invalid.empty() && topology.cpu; }
    NodeView view() const;
};

// One node's topology as build_node_topology made it from the node's
// complete pools, and the pools left out as incomplete (select_pools).
struct NodeBuild {
    BuildResult result;
    std::vector<std::string> incomplete;
};

class Inventory {
public:
    // The nodes in order, read-only. An inventory and its copies share the
    // nodes neither has changed since (a node is copied when it changes): a
    // copy made to change a few of 15,000 nodes copies pointers, not nodes.
    class Nodes {
    public:
        using Store = std::vector<std::shared_ptr<NodeEntry>>;
        class const_iterator {
        public:
            using iterator_category = std::forward_iterator_tag;
            using value_type = NodeEntry;
            using difference_type = std::ptrdiff_t;
            using pointer = const NodeEntry *;
            using reference = const NodeEntry &;
            const_iterator() = default;
            explicit const_iterator(Store::const_iterator it) : it_(it) {}
            reference operator*() const { return **it_; }
            pointer operator->() const { return it_->get(); }
            const_iterator &operator++() {
                ++it_;
                return *this;
            }
            const_iterator operator++(int) { return const_iterator(it_++); }
            bool operator==(const const_iterator &) const = default;

        private:
            Store::const_iterator it_;
        };
        explicit Nodes(const Store &s) : s_(&s) {}
        size_t size() const { return s_->size(); }
        bool empty() const { return s_->empty(); }
        const NodeEntry &operator[](size_t i) const { return *(*s_)[i]; }
        const NodeEntry &at(size_t i) const { return *s_->at(i); }
        const NodeEntry &front() const { return *s_->front(); }
        const NodeEntry &back() const { return *s_->back(); }
        const_iterator begin() const { return const_iterator(s_->begin()); }
        const_iterator end() const { return const_iterator(s_->end()); }

    private:
        const Store *s_;
    };

    static Inventory build(const std::vector<ResourceSlice> &slices,
                           const std::vector<ClaimHolding> &claims,
                           const InventoryOptions &opts = {});

    // The same inventory with only `changed` nodes rebuilt from their own
    // slices and claims; every other node is taken from `prev` as it is. A
    // changed node without slices leaves the inventory. Topologies stay
    // shared across nodes as in build().
    static Inventory update(const Inventory &prev, const std::vector<std::string> &changed,
                            const std::map<std::string, std::vector<ResourceSlice>> &slices_of,
                            const std::map<std::string, std::vector<ClaimHolding>> &claims_of,
                            const InventoryOptions &opts = {});
    // The same, in place (claim_errors() then only tells of these nodes).
    void rebuild_nodes(const std::vector<std::string> &changed,
                       const std::map<std::string, std::vector<ResourceSlice>> &slices_of,
                       const std::map<std::string, std::vector<ClaimHolding>> &claims_of,
                       const InventoryOptions &opts = {});
    // One changed node, built elsewhere (the client builds straight from its
    // compact slices): replaces the node of that name, or adds it, with
    // `claims` applied to it alone; nullopt (no slices) removes it. As
    // rebuild_nodes does for each node; adds to claim_errors().
    void put_node(const std::string &name, std::optional<NodeBuild> built,
                  const std::vector<ClaimHolding> &claims, const InventoryOptions &opts = {});
    void clear_claim_errors() { claim_errors_.clear(); }

    const NodeEntry *node(const std::string &name) const;
    // For changing the node: its own copy from now on if it was shared.
    NodeEntry *node(const std::string &name);
    Nodes nodes() const { return Nodes(nodes_); }
    // Adds a node built elsewhere (tests, fixtures).
    NodeEntry &add_node(NodeTopology topo);

    // Records job `job` on `node`: CPU indices and GRES indices.
    bool job_begin(const std::string &node, uint32_t job,
                   const std::vector<uint32_t> &cpus,
                   const std::vector<uint32_t> &gpus, std::string *err);
    // Frees the job on every node; returns how many nodes it was on.
    size_t job_end(uint32_t job);

    // Claims that could not be applied (unknown device, double booking).
    const std::vector<std::string> &claim_errors() const { return claim_errors_; }
    // Number of distinct CPU topologies shared by the nodes.
    size_t distinct_topologies() const { return interned_.size(); }

private:
    NodeEntry make_entry(const std::string &name, NodeBuild built);
    static NodeEntry &own(std::shared_ptr<NodeEntry> &e);
    NodeEntry &insert(NodeEntry e);
    void remove_node(const std::string &name);
    // only: apply the results on that node alone, the others as on no node.
    void apply_claims(const std::vector<ClaimHolding> &claims, const InventoryOptions &opts,
                      const std::string *only = nullptr);
    enum class ClaimPass { Exact, Counts };
    void apply_claim(const ClaimHolding &c, const InventoryOptions &opts, ClaimPass pass,
                     const std::string *only);
    static void hold_unavailable(NodeEntry &e);
    void mark_overlaps(NodeEntry &e);
    std::shared_ptr<const CpuTopology> intern(std::shared_ptr<const CpuTopology> t);

    Nodes::Store nodes_;
    // Node name -> index into nodes_, shared with copies until nodes come or go.
    using NameIndex = std::unordered_map<std::string, size_t>;
    std::shared_ptr<NameIndex> by_name_ = std::make_shared<NameIndex>();
    NameIndex &names();  // by_name_, this inventory's own from now on
    std::optional<size_t> index_of(const std::string &name) const;
    std::unordered_map<std::string, std::shared_ptr<const CpuTopology>> interned_;
    // The interned topologies themselves: one that is already interned (the
    // client shares one among nodes) needs no fingerprint.
    std::unordered_set<const CpuTopology *> interned_ptrs_;
    std::vector<std::string> claim_errors_;
};

// ids (any order) -> "2-5,8,10-11".
std::string format_cpuset(std::vector<int32_t> ids);

// "2-5,8,10-11" -> ids; false on bad syntax.
bool parse_cpuset(const std::string &text, std::vector<int32_t> *ids);

}  // namespace k8s_cons_tres
