// SPDX-License-Identifier: GPL-2.0-or-later
// The per-node inventory: topology model and ledger of every node, built
// from ResourceSlices and ResourceClaims, updated by Slurm job begin/end.
#pragma once

#include "core/dra_types.h"
#include "core/ledger.h"
#include "core/placement.h"
#include "core/topology.h"
#include "core/topology_build.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace k8sdra {

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
    std::vector<std::string> warnings;

    bool usable() const { return invalid.empty() && topology.cpu; }
    NodeView view() const;
};

class Inventory {
public:
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

    const NodeEntry *node(const std::string &name) const;
    NodeEntry *node(const std::string &name);
    const std::vector<NodeEntry> &nodes() const { return nodes_; }
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
    void remove_node(const std::string &name);
    void apply_claim(const ClaimHolding &c, const InventoryOptions &opts);
    static void hold_unavailable(NodeEntry &e);
    std::shared_ptr<const CpuTopology> intern(std::shared_ptr<const CpuTopology> t);

    std::vector<NodeEntry> nodes_;
    std::unordered_map<std::string, size_t> by_name_;
    std::unordered_map<std::string, std::shared_ptr<const CpuTopology>> interned_;
    std::vector<std::string> claim_errors_;
};

// ids (any order) -> "2-5,8,10-11".
std::string format_cpuset(std::vector<int32_t> ids);

// "2-5,8,10-11" -> ids; false on bad syntax.
bool parse_cpuset(const std::string &text, std::vector<int32_t> *ids);

}  // namespace k8sdra
