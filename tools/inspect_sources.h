// SPDX-License-Identifier: GPL-2.0-or-later
// Where k8s-cons-tres-inspect gets its objects: files as kubectl prints them
// (a List, or one object), or one list of each kind from the API server.
#pragma once

#include "core/dra_types.h"
#include "core/external_nodes.h"
#include "core/network_position.h"
#include "k8s_sync/kube_node.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace k8s_cons_tres::inspect {

class SourceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// `kubectl get resourceslices -o json` output (or one slice). Throws SourceError.
std::vector<ResourceSlice> slices_from_file(const std::string &path);
// `kubectl get resourceclaims -A -o json` output (or one claim).
std::vector<ClaimHolding> claims_from_file(const std::string &path);

// `kubectl get nodes -l SELECTOR -o json` output (or one Node): what node
// discovery reads of each.
std::vector<KubeNodeState> nodes_from_file(const std::string &path);

// Lists every ResourceSlice and ResourceClaim once (paged), with the
// kubeconfig's credentials, and when nodes is set the Nodes that
// node_selector (a label selector, "" = all) matches. Throws SourceError
// naming what failed.
void fetch_from_api(const std::string &kubeconfig, const std::string &context,
                    std::vector<ResourceSlice> *slices, std::vector<ClaimHolding> *claims,
                    const std::string &node_selector = "",
                    std::vector<KubeNodeState> *nodes = nullptr);

// The Nodes of a file as above, or listed from the API server (those
// node_selector matches, "" = all), keeping the labels and annotations that
// `keys` names: what --topology needs, without slices or claims.
std::vector<k8s::KubeNode> kube_nodes_from_file(const std::string &path, const TopologyKeys &keys);
std::vector<k8s::KubeNode> kube_nodes_from_api(const std::string &kubeconfig, const std::string &context,
                                               const std::string &node_selector, const TopologyKeys &keys);

}  // namespace k8s_cons_tres::inspect
