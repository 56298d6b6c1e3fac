// SPDX-License-Identifier: GPL-2.0-or-later
// What select/k8s_cons_tres makes of each node's ResourceSlices and claims,
// as a plain report for k8s-cons-tres-inspect: topology, GPU affinity, what
// Slurm jobs cannot get and why, and the matching slurm.conf / gres.conf.
#pragma once

#include "core/dra_types.h"
#include "core/external_nodes.h"
#include "core/inventory.h"
#include "core/plugin_config.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres::inspect {

struct NumaReport {
    int32_t id = 0;                   // NUMA attribute value
    int32_t socket = 0;               // socket id
    uint32_t ncpus = 0;
    std::vector<int32_t> cpus;        // Linux CPU ids; empty in grouped mode
    std::vector<uint32_t> slurm_cores;
    std::vector<std::string> pcie_roots;
};

struct L3Report {
    int32_t numa = 0;  // NUMA id
    int32_t l3_id = 0;
    std::vector<int32_t> cpus;  // Linux CPU ids; empty in grouped mode
};

struct GpuReport {
    uint32_t index = 0;  // GRES index
    std::string device, driver, uuid, model, pci_bus_id, pcie_root;
    int64_t minor = 0;
    int32_t numa = -1;   // NUMA id, -1 when unknown
    std::string affinity_source;
    std::vector<uint32_t> slurm_cores;    // gres.conf Cores=, empty when unknown
    std::vector<std::string> partitions;  // MIG / partition devices of it
};

// A device Slurm jobs do not get: reserved, tainted, partition-only or held.
struct Unavailable {
    std::string kind;           // "cpu" or "gpu"
    std::string device;         // "cpudev003", "cpudevnuma000", "gpu-1", "cpu16" (unpublished)
    std::vector<int32_t> cpus;  // Linux CPU ids (individual mode)
    std::string reason;
};

// How Slurm runs a node: "slurmd" (a slurm.conf NodeName= line and a
// slurmd on the node) or "external" (NodeDiscovery=external: an EXTERNAL
// Slurm node the plugin creates from the slices, no slurmd).
struct NodeReport {
    std::string name;
    std::string invalid;   // why the plugin cannot use the node, "" when usable
    std::vector<std::string> overlaps;  // pods' claims on Slurm jobs' devices
    std::string mode;          // "slurmd" or "external"
    std::string mode_note;     // why that mode, and what it takes or what stops it
    std::string external_node; // the EXTERNAL node definition the plugin creates
    std::string cpu_mode;  // individual, grouped-numa, grouped-socket, grouped-machine
    uint32_t sockets = 0, cores_per_socket = 0, threads_per_core = 0, cpus = 0;
    std::vector<NumaReport> numa_nodes;
    std::vector<L3Report> l3_groups;
    std::vector<GpuReport> gpus;
    std::vector<int32_t> reserved_cpus;  // CPU ids the driver does not publish
    std::vector<Unavailable> unavailable;
    std::vector<std::string> warnings;
    std::string slurm_conf;              // NodeName= line
    std::vector<std::string> gres_conf;  // one line per GPU, GRES order
};

struct Report {
    std::vector<NodeReport> nodes;
    std::vector<std::string> claim_errors;
};

// NodeDiscovery=external as the plugin would run it.
struct Discovery {
    std::string node_selector;                   // NodeSelector=, for the notes
    std::vector<std::string> features = {"k8s"};  // NodeFeatures=
    // The Kubernetes nodes NodeSelector matches, by name.
    std::map<std::string, KubeNodeState> nodes;
};

struct ReportOptions {
    InventoryOptions inventory;
    std::string gres_type;  // Type= of the gres.conf lines, "" for none
    std::optional<Discovery> discovery;  // unset: NodeDiscovery=none
    // Which claims are the plugin's own (k8s_sync/claim_owner.h): its
    // ClaimNamespace= and cluster. With no cluster named none is, and every
    // claim shows as a pod's: a tenant's labels never make one Slurm's.
    PluginConfig owner;
};

Report build_report(const std::vector<ResourceSlice> &slices,
                    const std::vector<ClaimHolding> &claims, const ReportOptions &opts = {});

// For people: one block per node.
std::string report_text(const Report &r);
// For scripts: {"nodes": [...], "claim_errors": [...]}.
std::string report_json(const Report &r);

}  // namespace k8s_cons_tres::inspect
