// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/claim_owner.h"

#include "k8s_sync/claim_json.h"

#include <algorithm>
#include <charconv>

namespace k8s_cons_tres::k8s {

std::vector<std::string> claimNodes(const ClaimHolding &c) {
    if (!c.nodeName.empty()) return {c.nodeName};
    std::vector<std::string> out;
    for (const auto &r : c.results)
        if (std::find(out.begin(), out.end(), r.pool) == out.end()) out.push_back(r.pool);
    return out;
}

namespace {
// A label value that is a Slurm job id: decimal digits only, not 0.
uint32_t jobIdOf(const std::string &v) {
    uint32_t id = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), id);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size() || id == 0) return 0;
    return id;
}

// The job id of an object in the claim namespace that carries the plugin's
// labels for this cluster and names `node`; 0 otherwise.
uint32_t labelledJob(const std::string &ns, const std::map<std::string, std::string> &labels,
                     const std::string &node, const PluginConfig &config) {
    auto label = [&](const char *k) -> const std::string * {
        auto it = labels.find(k);
        return it == labels.end() ? nullptr : &it->second;
    };
    const std::string *managed = label(kLabelManagedBy), *cluster = label(kLabelCluster),
                      *job = label(kLabelJob), *nodeLabel = label(kLabelNode);
    if (ns != config.claim_namespace || !managed || *managed != kManagedByValue || !cluster ||
        *cluster != labelValue(config.cluster_label) || !job || !nodeLabel || node.empty() ||
        labelValue(node) != *nodeLabel)
        return 0;
    return jobIdOf(*job);
}
}  // namespace

uint32_t ownClaimJob(const ClaimHolding &c, const PluginConfig &config) {
    // The plugin writes one claim per job and node; one that spans nodes or
    // names another node than its label is not one it wrote.
    const auto nodes = claimNodes(c);
    if (nodes.size() != 1) return 0;
    for (const auto &res : c.results)
        if (!c.nodeName.empty() && res.pool != c.nodeName) return 0;
    return labelledJob(c.ns, c.labels, nodes.front(), config);
}

uint32_t ownPodJob(const PodHolding &p, const PluginConfig &config) {
    // A holder pod is bound at creation to the node its labels name.
    return labelledJob(p.ns, p.labels, p.nodeName, config);
}

uint32_t bridgeClaimJob(const ClaimHolding &c, const PodMap &bridgePods) {
    if (c.reservedForPods.size() != 1 || c.reservedForPodNames.size() != 1 || c.reservedForPods[0].empty())
        return 0;
    const PodHolding *pod = bridgePods.find(c.ns + "/" + c.reservedForPodNames[0]);
    if (!pod || pod->uid != c.reservedForPods[0]) return 0;
    // slurm-bridge writes the claim in PreBind, before the pod is bound.
    const auto nodes = claimNodes(c);
    if (nodes.size() != 1 || (!pod->nodeName.empty() && pod->nodeName != nodes.front())) return 0;
    auto it = pod->labels.find(kLabelBridgeJob);
    return it == pod->labels.end() ? 0 : jobIdOf(it->second);
}

ClaimHolding asHeld(const ClaimHolding &c, const PluginConfig &config, const PodMap *bridgePods) {
    ClaimHolding copy = c;
    copy.labels.erase(kLabelJob);
    copy.bridgedJob = 0;
    if (const uint32_t job = ownClaimJob(c, config))
        copy.labels[kLabelJob] = std::to_string(job);
    else if (bridgePods && bridgePods->size())
        copy.bridgedJob = bridgeClaimJob(c, *bridgePods);
    return copy;
}

}  // namespace k8s_cons_tres::k8s
