// SPDX-License-Identifier: GPL-2.0-or-later
// Holder pods: one pod per running job and Kubernetes node, bound to the node
// (spec.nodeName, no scheduler) and consuming the job's claims there. Kubelet
// prepares a claim only for a pod it is reserved for, and the DRA drivers
// carve prepared devices out of the node's shared pool; the pod's requests
// make kube-scheduler count Slurm's CPUs and memory on the node.
#pragma once

#include "core/dra_types.h"
#include "core/plugin_config.h"

#include "k8s_client/cow_map.h"
#include "k8s_client/json.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

// The pod the plugin wants for one job on one node.
struct HolderIntent {
    std::string ns, name, node;
    std::map<std::string, std::string> labels;  // as on the job's claims
    std::optional<uint32_t> userUid;            // as on the job's claims
    std::vector<std::string> claims;            // the job's claims on the node
    uint32_t cpus = 0;                          // CPUs the job holds there
    uint64_t memMb = 0;                         // memory Slurm gives it there
    std::string image, priorityClass;
    // What its claims hold (their results): claims keep their names when a
    // job grows on a node, so the names alone would keep a pod for which
    // kubelet prepared the older devices.
    std::string claimsDigest;
    bool operator==(const HolderIntent &) const = default;
};

// A pod as the plugin reads it back (its own, by the ownership rule).
struct PodHolding {
    std::string ns, name, uid;
    std::map<std::string, std::string> labels;
    std::string nodeName;
    std::vector<std::string> claims;  // spec.resourceClaims[].resourceClaimName
    std::string phase;
    bool deleting = false;            // metadata.deletionTimestamp set
    std::string claimsDigest;         // its kAnnotationClaims, "" when none
    bool operator==(const PodHolding &) const = default;
};
using PodMap = CowMap<PodHolding>;  // key: "namespace/name"

inline constexpr const char *kAnnotationClaims = "k8s-cons-tres.slurm.io/claims-digest";

// POST body of the pod.
std::string encodeHolderPod(const HolderIntent &in);
PodHolding decodePodHolding(const rapidjson::Value &obj);
// The pod is the one wanted: same node, claims and claims' devices (a pod
// written before the digest existed is taken as it is), not being deleted.
bool holderMatches(const PodHolding &pod, const HolderIntent &in);

// Marks claim (a ResourceClaim as read from the API server) reserved for the
// pod alone, for a PUT of its status; false when it already is.
bool reserveClaimFor(rapidjson::Document &claim, const std::string &podName, const std::string &podUid);

}  // namespace k8s_cons_tres::k8s
