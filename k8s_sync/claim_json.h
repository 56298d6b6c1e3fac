// SPDX-License-Identifier: GPL-2.0-or-later
// ResourceClaim JSON: decoding what the inventory needs (ClaimHolding) and
// encoding the claims the plugin writes (create body, then status body).
#pragma once

#include "core/dra_types.h"
#include "k8s_client/json.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace k8s_cons_tres::k8s {

// Labels that mark a claim as written by this plugin.
inline constexpr const char *kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr const char *kManagedByValue = "slurm-k8s-cons-tres";
inline constexpr const char *kLabelCluster = "k8s-cons-tres.slurm.io/cluster";
inline constexpr const char *kLabelJob = "k8s-cons-tres.slurm.io/job-id";
// slurm-bridge labels each pod it placed with its Slurm job's id.
inline constexpr const char *kLabelBridgeJob = "scheduler.slinky.slurm.net/slurm-jobid";
inline constexpr const char *kLabelNode = "k8s-cons-tres.slurm.io/node";
inline constexpr const char *kCpuDriver = "dra.cpu";

struct ClaimRequestSpec {
    std::string name;
    std::string deviceClassName;
    int64_t count = 1;
    std::vector<std::string> celSelectors;          // document intent only
    std::map<std::string, std::string> capacity;    // capacity.requests
    bool operator==(const ClaimRequestSpec &) const = default;
};

// One claim the plugin wants to exist with a given allocation.
struct ClaimIntent {
    std::string ns = "default";
    std::string name;
    std::map<std::string, std::string> labels;
    std::vector<ClaimRequestSpec> requests;  // empty: derived from results
    std::vector<AllocationResult> results;   // at most 32
    std::string nodeName;                    // nodeSelector matchFields metadata.name
    std::string opaqueCpuset;                // grouped dra.cpu mode, "" otherwise
    std::optional<uint32_t> userUid;         // labelled with its name when encoded (user_names.h)
    std::string holder;                      // its holder pod ("" none): the status write reserves it
    bool operator==(const ClaimIntent &) const = default;
};

// Deterministic, DNS-safe claim name: slurm-<cluster>-<job>-<node>[-<part>].
std::string claimName(const std::string &cluster, uint64_t jobId,
                      const std::string &node, unsigned part = 0);
// The job's holder pod on node: slurm-<cluster>-<job>-<node>-holder.
std::string holderPodName(const std::string &cluster, uint64_t jobId, const std::string &node);
// The labels for cluster/job/node, valid as Kubernetes label values.
std::map<std::string, std::string> claimLabels(const std::string &cluster,
                                               uint64_t jobId,
                                               const std::string &node);
// A label value: kept when valid, otherwise sanitised and shortened with a hash.
std::string labelValue(const std::string &raw);
// A DNS label (lowercase alphanumerics and '-', at most 40 characters here):
// kept when it is one, otherwise sanitised with a hash of the raw text, so
// two different inputs never give the same label.
std::string dnsLabel(const std::string &raw);

// Requests implied by the results: one per request name, class = driver.
std::vector<ClaimRequestSpec> effectiveRequests(const ClaimIntent &intent);

// POST body (metadata + spec; status would be discarded by the server).
std::string encodeClaimCreate(const ClaimIntent &intent);
// PUT .../status body: the full object with resourceVersion and allocation;
// with holderUid also reservedFor naming the holder pod (intent.holder), as
// kube-scheduler writes both in one update.
std::string encodeClaimStatus(const ClaimIntent &intent,
                              const std::string &resourceVersion,
                              const std::string &holderUid = "");

ClaimHolding decodeClaimHolding(const rapidjson::Value &obj);
// What can still be read of a claim decodeClaimHolding refused: its name,
// whether it is allocated, and the nodes it may name (nodeSelector, results'
// pools), with `undecodable` set to why. Never throws. Fail closed: the
// inventory keeps those nodes out rather than free what it cannot read.
ClaimHolding salvageClaimHolding(const rapidjson::Value &obj, const std::string &why);
// DeleteOptions: with a uid, delete exactly the object seen, never a
// successor; a grace period of 0 deletes a pod at once. "" when neither.
std::string encodeDeleteOptions(const std::string &uid, int gracePeriodSeconds = -1);
ClaimHolding parseClaimHolding(const std::string &text);

// Does an existing claim carry our cluster/job/node labels?
bool isOurs(const ClaimHolding &existing, const ClaimIntent &intent);
// Does its allocation equal what we want (results in any order)?
bool allocationMatches(const ClaimHolding &existing, const ClaimIntent &intent);

}  // namespace k8s_cons_tres::k8s
