// SPDX-License-Identifier: GPL-2.0-or-later
// Node discovery (NodeDiscovery=external, Slurm 25.05+): which Kubernetes
// nodes should be Slurm EXTERNAL nodes, with what definition, and what to do
// about the EXTERNAL nodes slurmctld has (create, drain, resume, delete).
// Pure functions of their inputs; the plugin applies the actions outside
// slurmctld's locks.
#pragma once

#include "core/topology.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres {

// What node discovery reads of a Kubernetes Node.
struct KubeNodeState {
    std::string name;
    bool unschedulable = false;  // cordoned
    bool ready = false;
    std::string not_ready;       // why not ready
    uint64_t memory_mb = 0;      // allocatable memory
    std::string address;         // an IP literal for NodeAddr=, "" if none
    bool operator==(const KubeNodeState &) const = default;
};

// A Slurm node as slurmctld has it (only the fields discovery compares).
struct SlurmNodeState {
    std::string name;
    uint32_t cpus = 0, sockets = 0, cores_per_socket = 0, threads_per_core = 0;
    uint64_t real_memory = 0;
    std::string gres;      // as configured, e.g. "gpu:nvidia_a100:8"
    std::string features;  // comma separated
    bool external = false;
    bool drained = false;       // DRAIN flag, by anyone
    bool drained_by_us = false; // with this plugin's reason prefix
    bool idle = true;           // no job on it
};

// The one rule for which Slurm nodes node discovery made (and so may drain,
// resume and delete): EXTERNAL and carrying this feature. Nodes defined in
// slurm.conf or created by anything else are never touched.
inline constexpr const char *kDiscoveredFeature = "k8s_cons_tres";
bool is_discovered(const SlurmNodeState &n);

struct ExternalNodeSpec {
    std::string name;
    uint32_t cpus = 0, sockets = 0, cores_per_socket = 0, threads_per_core = 0;
    uint64_t real_memory = 0;
    std::string gres;       // "" without GPUs
    std::string gres_conf;  // per GPU, in GRES index order ("" without GPUs)
    std::string features;   // base features, the marker, the GPU model
    std::string address;    // NodeAddr= (an IP literal), "" for none
};

// The definition of node `t` as an EXTERNAL Slurm node, or nullopt with
// *why when its slices cannot make one (incomplete topology, uneven
// sockets or cores, a name Slurm cannot take).
std::optional<ExternalNodeSpec> external_spec(const NodeTopology &t, const KubeNodeState &k,
                                              const std::vector<std::string> &base_features,
                                              std::string *why);

// The scontrol-style line that creates it ("NodeName=... State=EXTERNAL ...").
// GresConf= (each GPU's index) exists on 25.11+ only.
std::string nodeline(const ExternalNodeSpec &s, bool with_gres_conf);

// The GRES type Slurm gets for a GPU model: lower case letters, digits, '_'.
std::string gres_type_of(const std::string &model, const std::string &driver);

// Why Kubernetes takes node k out of service ("" when it does not): a
// discovered node is drained in Slurm for it, and not created while it lasts.
std::string kube_drain_cause(const KubeNodeState &k);

enum class ExtActionKind { Create, Drain, Resume, Delete };
struct ExtAction {
    ExtActionKind kind;
    std::string node;
    std::string text;  // Create: the node line; Drain: the reason
    bool operator==(const ExtAction &) const = default;
};

inline constexpr const char *kDrainPrefix = "k8s_cons_tres: ";

// What to do now. kube: the matching Kubernetes nodes; specs: those whose
// slices make a node definition; have: every Slurm node (only discovered
// ones are acted on; a plain node of the same name is left alone). At most
// max_actions, creations last, so that drains are never starved.
std::vector<ExtAction> plan_external_nodes(const std::map<std::string, KubeNodeState> &kube,
                                           const std::map<std::string, ExternalNodeSpec> &specs,
                                           const std::vector<SlurmNodeState> &have, size_t max_actions,
                                           bool with_gres_conf);

}  // namespace k8s_cons_tres
