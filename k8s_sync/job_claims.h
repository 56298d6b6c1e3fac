// SPDX-License-Identifier: GPL-2.0-or-later
// A Slurm job's devices on its Kubernetes nodes as the ResourceClaims that
// hold exactly those devices: one claim per node, split in parts of at most
// 32 results (AllocationResultsMaxSize); in grouped dra.cpu mode the CPUs
// travel as one share per group device (its own request, capacity request =
// consumedCapacity = the CPUs Slurm uses in that group) plus the opaque
// cpuset, which the driver honours only in machine grouping.
#pragma once

#include "core/engine.h"
#include "core/inventory.h"
#include "core/plugin_config.h"
#include "k8s_sync/claim_json.h"
#include "k8s_sync/holder_pod.h"
#include "k8s_sync/user_names.h"
#include "k8s_client/log.h"

#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

inline constexpr size_t kMaxResultsPerClaim = 32;

// Nodes the inventory does not know (not Kubernetes nodes) get no claim.
// A core or GPU index a node does not have is an error of that node alone:
// *error says which (errors of several nodes joined by "; "), the node is
// added to *failed and gets no claim; the job's other nodes get theirs.
// With a log, the first claim on a node in numa or socket grouping logs once
// (info) that such claims isolate CPU counts per group, not individual CPUs.
std::vector<ClaimIntent> job_claims(const JobAlloc &job, const Inventory &inventory,
                                    const PluginConfig &config, const std::string &cluster,
                                    std::string *error, const Logger *log = nullptr,
                                    std::vector<std::string> *failed = nullptr);

// The holder pods of a job: one per node where it has claims, consuming
// them, requesting the CPUs (all threads of its cores) and memory it holds.
std::vector<HolderIntent> job_holders(const JobAlloc &job, const std::vector<ClaimIntent> &claims,
                                      const Inventory &inventory, const PluginConfig &config,
                                      const std::string &cluster);

// slurm-bridge writes this job's claims itself: ExternalJobClaims=bridge and
// an external job whose AdminComment is slurm-bridge's JSON naming at least
// one pod ({"pods":["ns/name",...]}). Any other AdminComment, or none,
// leaves them to the plugin.
bool bridgeWritesClaims(const JobAlloc &job, const PluginConfig &config);

// A stable UUID (for shareID) from any text.
std::string stable_uuid(const std::string &text);

}  // namespace k8s_cons_tres::k8s
