// SPDX-License-Identifier: GPL-2.0-or-later
#include "k8s_sync/kube_node.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace k8s_cons_tres::k8s {

uint64_t parseBytes(const std::string &q, bool *ok) {
    *ok = false;
    if (q.empty() || q.size() > 32) return 0;
    static const struct { const char *suffix; double factor; } units[] = {
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
        {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0},
        {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18}, {"m", 1e-3}};
    std::string num = q;
    double factor = 1.0;
    for (const auto &u : units) {
        const std::string s = u.suffix;
        if (q.size() > s.size() && q.compare(q.size() - s.size(), s.size(), s) == 0) {
            num = q.substr(0, q.size() - s.size());
            factor = u.factor;
            break;
        }
    }
    for (char c : num)
        if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' ||
              c == '-'))
            return 0;
    char *end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size() || !std::isfinite(v) || v < 0) return 0;
    const double bytes = v * factor;
    if (bytes > 1.8e19) return 0;
    *ok = true;
    return static_cast<uint64_t>(bytes);
}

KubeNodeState nodeState(const KubeNode &n) {
    return {n.name, n.unschedulable, n.ready, n.notReady, n.memoryMiB, n.address};
}

std::string nodeAddress(const rapidjson::Value &status) {
    const rapidjson::Value *addrs = json::member(status, "addresses");
    if (!addrs || !addrs->IsArray()) return "";
    std::string v6;
    auto text = [](const rapidjson::Value &o, const char *key) {  // "" unless a string
        auto m = o.FindMember(key);
        return m != o.MemberEnd() && m->value.IsString() ? std::string(m->value.GetString(), m->value.GetStringLength())
                                                          : std::string();
    };
    for (const auto &a : addrs->GetArray()) {
        if (!a.IsObject() || text(a, "type") != "InternalIP") continue;
        const std::string ip = text(a, "address");
        unsigned char buf[sizeof(struct in6_addr)];
        if (ip.size() < INET6_ADDRSTRLEN && inet_pton(AF_INET, ip.c_str(), buf) == 1) return ip;
        if (v6.empty() && ip.size() < INET6_ADDRSTRLEN && inet_pton(AF_INET6, ip.c_str(), buf) == 1) v6 = ip;
    }
    return v6;
}

namespace {

// The string members of `map` (metadata.labels or .annotations) named in keys.
KeyValues pick(const rapidjson::Value &meta, const char *map, const std::vector<std::string> &keys) {
    KeyValues out;
    const rapidjson::Value *m = keys.empty() ? nullptr : json::member(meta, map);
    if (!m || !m->IsObject()) return out;
    for (const std::string &k : keys) {
        auto it = m->FindMember(rapidjson::StringRef(k.data(), k.size()));
        if (it == m->MemberEnd() || !it->value.IsString()) continue;
        const size_t len = std::min<size_t>(it->value.GetStringLength(), kMaxTopologyValue + 1);
        out.emplace_back(k, std::string(it->value.GetString(), len));
    }
    return out;
}

}  // namespace

KubeNode decodeKubeNode(const rapidjson::Value &obj) { return decodeKubeNode(obj, TopologyKeys{}); }

KubeNode decodeKubeNode(const rapidjson::Value &obj, const TopologyKeys &keys) {
    KubeNode n;
    const rapidjson::Value *meta = json::member(obj, "metadata");
    if (!meta || !meta->IsObject()) throw std::runtime_error("Node without metadata");
    n.name = json::getString(*meta, "name");
    if (n.name.empty()) throw std::runtime_error("Node without a name");
    n.topologyLabels = pick(*meta, "labels", keys.labels);
    n.topologyAnnotations = pick(*meta, "annotations", keys.annotations);
    if (const rapidjson::Value *spec = json::member(obj, "spec"); spec && spec->IsObject()) {
        auto u = spec->FindMember("unschedulable");
        n.unschedulable = u != spec->MemberEnd() && u->value.IsBool() && u->value.GetBool();
    }
    n.notReady = "no Ready condition";
    const rapidjson::Value *status = json::member(obj, "status");
    if (!status || !status->IsObject()) return n;
    if (const rapidjson::Value *alloc = json::member(*status, "allocatable"); alloc && alloc->IsObject()) {
        bool ok = false;
        const uint64_t bytes = parseBytes(json::getString(*alloc, "memory"), &ok);
        n.memoryMiB = ok ? bytes / 1048576 : 0;
    }
    n.address = nodeAddress(*status);
    if (const rapidjson::Value *conds = json::member(*status, "conditions"); conds && conds->IsArray()) {
        for (const auto &c : conds->GetArray()) {
            if (!c.IsObject() || json::getString(c, "type") != "Ready") continue;
            n.ready = json::getString(c, "status") == "True";
            n.notReady.clear();
            if (!n.ready) {
                const std::string reason = json::getString(c, "reason");
                const std::string status = json::getString(c, "status");
                n.notReady = "Ready=" + (status.empty() ? std::string("?") : status) +
                             (reason.empty() ? "" : " (" + reason + ")");
            }
        }
    }
    return n;
}

}  // namespace k8s_cons_tres::k8s
