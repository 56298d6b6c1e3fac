// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_client/claim_owner.h"

#include "k8s_client/claim_json.h"

#include <algorithm>
#include <charconv>

namespace k8sdra::k8s {

std::vector<std::string> claimNodes(const ClaimHolding &c) {
    if (!c.nodeName.empty()) return {c.nodeName};
    std::vector<std::string> out;
    for (const auto &r : c.results)
        if (std::find(out.begin(), out.end(), r.pool) == out.end()) out.push_back(r.pool);
    return out;
}

uint32_t ownClaimJob(const ClaimHolding &c, const PluginConfig &config) {
    auto label = [&](const char *k) -> const std::string * {
        auto it = c.labels.find(k);
        return it == c.labels.end() ? nullptr : &it->second;
    };
    const std::string *managed = label(kLabelManagedBy), *cluster = label(kLabelCluster),
                      *job = label(kLabelJob), *node = label(kLabelNode);
    if (c.ns != config.claim_namespace || !managed || *managed != kManagedByValue || !cluster ||
        *cluster != labelValue(config.cluster_label) || !job || !node)
        return 0;
    uint32_t id = 0;
    auto r = std::from_chars(job->data(), job->data() + job->size(), id);
    if (r.ec != std::errc() || r.ptr != job->data() + job->size() || id == 0) return 0;
    // The plugin writes one claim per job and node; one that spans nodes or
    // names another node than its label is not one it wrote.
    const auto nodes = claimNodes(c);
    if (nodes.size() != 1 || labelValue(nodes.front()) != *node) return 0;
    for (const auto &res : c.results)
        if (!c.nodeName.empty() && res.pool != c.nodeName) return 0;
    return id;
}

}  // namespace k8sdra::k8s
