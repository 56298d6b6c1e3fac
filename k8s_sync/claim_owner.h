// SPDX-License-Identifier: GPL-2.0-or-later
// The one rule that decides which ResourceClaims are the plugin's own.
// Kubernetes users are untrusted: anyone can put any label on a claim in
// their own namespace, so labels alone never make a claim Slurm's. Every
// claim that fails this rule counts as held by a pod.
#pragma once

#include "core/dra_types.h"
#include "k8s_sync/holder_pod.h"
#include "core/plugin_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

// The nodes a claim's devices are on: its nodeSelector's node, else the
// pools of its results (dra.cpu and GPU pools are named after the node).
std::vector<std::string> claimNodes(const ClaimHolding &c);

// The Slurm job a claim holds devices for when it is the plugin's own: in
// the claim namespace, marked managed by the plugin, labelled with this
// cluster, a job id and the one node all its devices are on. 0 otherwise.
// Whether slurmctld really runs that job there is the engine's question
// (Engine::exclusion), asked with Slurm's own allocation in hand.
uint32_t ownClaimJob(const ClaimHolding &c, const PluginConfig &config);
// The same rule for holder pods: in the claim namespace, with the plugin's
// labels for this cluster and a job id, bound to the node its label names.
// A pod never frees a device (only claims hold them); the rule decides
// which pods the plugin may delete.
uint32_t ownPodJob(const PodHolding &p, const PluginConfig &config);

// The Slurm job of a claim slurm-bridge wrote for one of its pods: reserved
// for exactly one pod, of the claim's namespace, with that uid, labelled
// with a job id (kLabelBridgeJob) and not bound to another node. 0 otherwise.
// Anyone can write such a pod and claim, so this frees nothing by itself:
// the engine counts the claim as the job's only as far as its devices are
// among those slurmctld allocated to that running job on that node
// (Engine::covered); the rest, and all of it once the job ended, stays
// held by the pod.
uint32_t bridgeClaimJob(const ClaimHolding &c, const PodMap &bridgePods);

// The claim as the inventory (and every report of it) must see it: labelled
// with its Slurm job only when ownClaimJob says it is the plugin's own, and
// bridged to a job only when bridgeClaimJob says so (with bridgePods given);
// every other claim is a pod's, whatever its labels say.
ClaimHolding asHeld(const ClaimHolding &c, const PluginConfig &config, const PodMap *bridgePods = nullptr);

}  // namespace k8s_cons_tres::k8s
