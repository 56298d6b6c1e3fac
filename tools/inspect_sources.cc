// SPDX-License-Identifier: GPL-2.0-or-later
#include "tools/inspect_sources.h"

#include "k8s_sync/claim_json.h"
#include "k8s_client/config.h"
#include "k8s_client/http_client.h"
#include "k8s_client/json.h"
#include "k8s_sync/kube_node.h"
#include "k8s_sync/slice_json.h"
#include "k8s_sync/taint_rule.h"

#include <fstream>
#include <memory>
#include <sstream>

namespace k8s_cons_tres::inspect {
namespace {

// Calls each(item) for every object of a List, or once for a lone object.
template <class Each>
void for_each_item(const rapidjson::Value &doc, const std::string &kind, Each &&each) {
    const rapidjson::Value *items = doc.IsObject() ? json::member(doc, "items") : nullptr;
    if (items && items->IsArray()) {
        for (const rapidjson::Value &it : items->GetArray())
            if (json::getString(it, "kind", kind) == kind)
                each(it);
        return;
    }
    if (doc.IsArray()) {  // a bare array of objects
        for (const rapidjson::Value &it : doc.GetArray())
            each(it);
        return;
    }
    if (json::getString(doc, "kind") != kind)
        throw json::Error("neither a " + kind + " nor a List of them (kind " +
                          json::getString(doc, "kind", "missing") + ")");
    each(doc);
}

template <class T, class Decode>
std::vector<T> from_file(const std::string &path, const std::string &kind, Decode &&decode) {
    std::ifstream in(path);
    if (!in)
        throw SourceError(path + ": cannot read");
    std::stringstream ss;
    ss << in.rdbuf();
    std::vector<T> out;
    try {
        rapidjson::Document doc;
        json::parse(doc, ss.str());
        for_each_item(doc, kind, [&](const rapidjson::Value &v) { out.push_back(decode(v)); });
    } catch (const json::Error &e) {
        throw SourceError(path + ": " + e.what());
    }
    return out;
}

// As the plugin's node informer reads it (decodeKubeNode).
k8s::KubeNode kube_node(const rapidjson::Value &v, const TopologyKeys &keys) {
    try {
        return k8s::decodeKubeNode(v, keys);
    } catch (const json::Error &) {
        throw;
    } catch (const std::runtime_error &e) {
        throw json::Error(e.what());
    }
}

KubeNodeState node_state(const rapidjson::Value &v) { return k8s::nodeState(kube_node(v, {})); }

k8s::Client make_client(const std::string &kubeconfig, const std::string &context) {
    std::shared_ptr<const k8s::Config> cfg;
    try {
        cfg = std::make_shared<const k8s::Config>(k8s::loadKubeconfig(kubeconfig, context));
    } catch (const k8s::ConfigError &e) {
        throw SourceError(e.what());
    }
    return k8s::Client(cfg, std::make_shared<k8s::TokenSource>(*cfg), k8s::ClientOptions{},
                       std::make_shared<k8s::Stopper>());
}

// GET every page of a cluster-wide list.
template <class Each>
void list_all(k8s::Client &client, const std::string &path, const std::string &kind,
              Each &&each, const std::string &label_selector = "") {
    std::string cont;
    do {
        std::string url = path + "?limit=500";
        if (!label_selector.empty())
            url += "&labelSelector=" + k8s::urlEncode(label_selector);
        if (!cont.empty())
            url += "&continue=" + k8s::urlEncode(cont);
        k8s::HttpResponse r = client.get(url);
        if (!r.ok())
            throw SourceError(client.describe(r, "list " + kind));
        rapidjson::Document doc;
        try {
            json::parse(doc, r.body);
            for_each_item(doc, kind, each);
            const rapidjson::Value *meta = json::member(doc, "metadata");
            cont = meta ? json::getString(*meta, "continue") : "";
        } catch (const json::Error &e) {
            throw SourceError("list " + kind + ": " + e.what());
        }
    } while (!cont.empty());
}

}  // namespace

std::vector<ResourceSlice> slices_from_file(const std::string &path) {
    return from_file<ResourceSlice>(path, "ResourceSlice", [](const rapidjson::Value &v) {
        return k8s::decodeResourceSlice(v);
    });
}

std::vector<ClaimHolding> claims_from_file(const std::string &path) {
    return from_file<ClaimHolding>(path, "ResourceClaim", [](const rapidjson::Value &v) {
        return k8s::decodeClaimHolding(v);
    });
}

std::vector<KubeNodeState> nodes_from_file(const std::string &path) {
    return from_file<KubeNodeState>(path, "Node", node_state);
}

void fetch_from_api(const std::string &kubeconfig, const std::string &context,
                    std::vector<ResourceSlice> *slices, std::vector<ClaimHolding> *claims,
                    const std::string &node_selector, std::vector<KubeNodeState> *nodes) {
    k8s::Client client = make_client(kubeconfig, context);
    list_all(client, "/apis/resource.k8s.io/v1/resourceslices", "ResourceSlice",
             [&](const rapidjson::Value &v) { slices->push_back(k8s::decodeResourceSlice(v)); });
    list_all(client, "/apis/resource.k8s.io/v1/resourceclaims", "ResourceClaim",
             [&](const rapidjson::Value &v) { claims->push_back(k8s::decodeClaimHolding(v)); });
    // DeviceTaintRules, where served: added to the slices as the plugin and
    // kube-scheduler do (a 404: this version is not served).
    k8s::TaintRuleMap rules;
    for (const char *path : k8s::kTaintRulePaths) {
        if (client.get(std::string(path) + "?limit=1").status == 404)
            continue;
        list_all(client, path, "DeviceTaintRule", [&](const rapidjson::Value &v) {
            k8s::TaintRule r;
            try {
                r = k8s::decodeTaintRule(v);
            } catch (const json::Error &e) {
                r = k8s::salvageTaintRule(v, e.what());
            }
            const std::string key = "/" + r.name;
            rules.set(key, std::make_shared<const k8s::TaintRule>(std::move(r)));
        });
        break;
    }
    for (ResourceSlice &sl : *slices)
        if (auto t = k8s::withRuleTaints(k8s::compactSlice(sl), rules))
            sl = t->expand();
    if (nodes)
        list_all(client, "/api/v1/nodes", "Node",
                 [&](const rapidjson::Value &v) { nodes->push_back(node_state(v)); },
                 node_selector);
}

std::vector<k8s::KubeNode> kube_nodes_from_file(const std::string &path, const TopologyKeys &keys) {
    return from_file<k8s::KubeNode>(path, "Node", [&](const rapidjson::Value &v) { return kube_node(v, keys); });
}

std::vector<k8s::KubeNode> kube_nodes_from_api(const std::string &kubeconfig, const std::string &context,
                                               const std::string &node_selector, const TopologyKeys &keys) {
    k8s::Client client = make_client(kubeconfig, context);
    std::vector<k8s::KubeNode> nodes;
    list_all(client, "/api/v1/nodes", "Node",
             [&](const rapidjson::Value &v) { nodes.push_back(kube_node(v, keys)); }, node_selector);
    return nodes;
}

}  // namespace k8s_cons_tres::inspect
