// SPDX-License-Identifier: GPL-2.0-or-later
// What node discovery (NodeDiscovery=external) reads of a core/v1 Node:
// whether it may take new work (cordon, Ready), its allocatable memory, its
// address, and the labels and annotations its network position comes from.
#pragma once

#include "core/external_nodes.h"
#include "core/network_position.h"
#include "k8s_client/json.h"

#include <cstdint>
#include <string>

namespace k8s_cons_tres::k8s {

struct KubeNode {
    std::string ns;  // always "": Nodes are cluster-scoped (keys are "/name")
    std::string name;
    bool unschedulable = false;  // spec.unschedulable (kubectl cordon)
    bool ready = false;          // condition Ready is True
    std::string notReady;        // why not, from the Ready condition ("" when ready)
    uint64_t memoryMiB = 0;      // status.allocatable.memory, rounded down
    std::string address;         // an InternalIP literal (IPv4 first), "" if none
    // Only the keys TopologyFrom= reads (none without it): 15,000 Nodes'
    // full label sets would cost megabytes for nothing.
    KeyValues topologyLabels, topologyAnnotations;
};

// Throws on a Node without a name; a missing or malformed field reads as
// "not ready" / 0 memory, so such a node is never offered to Slurm. Keeps
// the labels and annotations `keys` names that are strings, each cut to
// kMaxTopologyValue + 1 characters (position_of refuses longer ones).
KubeNode decodeKubeNode(const rapidjson::Value &obj);
KubeNode decodeKubeNode(const rapidjson::Value &obj, const TopologyKeys &keys);

// What node discovery reads of it (the plugin's informer and the inspect
// command alike).
KubeNodeState nodeState(const KubeNode &n);

// The address slurmctld gets for the node (NodeAddr=): an InternalIP that is
// an IP literal, IPv4 before IPv6; "" when there is none. Never a name:
// slurmctld resolves a dynamic node's address for every job it starts, under
// its job lock, and Kubernetes node names often do not resolve there.
std::string nodeAddress(const rapidjson::Value &status);

// A Kubernetes quantity in bytes ("65536000Ki", "64Gi", "1e9", "512M");
// nullopt-like 0 with ok=false when malformed or absurdly large.
uint64_t parseBytes(const std::string &q, bool *ok);

}  // namespace k8s_cons_tres::k8s
