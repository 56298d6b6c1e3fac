// SPDX-License-Identifier: GPL-2.0-or-later
// k8s-cons-tres-inspect --topology: Slurm's topology files for the
// Kubernetes nodes, from their labels as TopologyFrom= maps them.
#pragma once

#include "core/network_position.h"
#include "k8s_sync/kube_node.h"

#include <string>
#include <vector>

namespace k8s_cons_tres::inspect {

struct TopologyReport {
    std::string out;  // topology.conf (tree, then block) and topology.yaml, for stdout
    std::string err;  // nodes left out and why, and warnings, for stderr
};

// Node names are the Kubernetes names, as in the NodeName= lines the
// report prints; name is the topology.yaml base name (NAME-block, NAME-tree).
TopologyReport topology_report(const std::vector<k8s::KubeNode> &nodes, const TopologySpec &spec,
                               const std::string &name);

}  // namespace k8s_cons_tres::inspect
