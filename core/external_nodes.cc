// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/external_nodes.h"

#include "core/slurm_map.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace k8s_cons_tres {

namespace {

std::set<std::string> split_set(const std::string &s) {
    std::set<std::string> out;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');)
        if (!x.empty()) out.insert(x);
    return out;
}

// The same comma-separated set; equal strings (every node of an unchanged
// cluster, each discovery round) need no set.
bool same_set(const std::string &a, const std::string &b) {
    return a == b || split_set(a) == split_set(b);
}

// `list` (comma separated) holds `item`, without building anything.
bool has_item(std::string_view list, std::string_view item) {
    while (!list.empty()) {
        const size_t comma = list.find(',');
        if (list.substr(0, comma) == item) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

// Slurm's node names are hostnames; anything that its hostlist syntax or
// the node line would read differently is refused.
bool slurm_name_ok(const std::string &n) {
    if (n.empty() || n.size() > 64) return false;
    return std::all_of(n.begin(), n.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

std::string shape_difference(const SlurmNodeState &h, const ExternalNodeSpec &s) {
    std::string out;
    auto cmp = [&](const char *what, uint64_t have, uint64_t want) {
        if (have == want) return;
        out += (out.empty() ? "" : ", ") + std::string(what) + " " + std::to_string(have) + " -> " +
               std::to_string(want);
    };
    cmp("CPUs", h.cpus, s.cpus);
    cmp("Sockets", h.sockets, s.sockets);
    cmp("CoresPerSocket", h.cores_per_socket, s.cores_per_socket);
    cmp("ThreadsPerCore", h.threads_per_core, s.threads_per_core);
    cmp("RealMemory", h.real_memory, s.real_memory);
    if (!same_set(h.gres, s.gres))
        out += (out.empty() ? "" : ", ") + std::string("Gres ") + (h.gres.empty() ? "none" : h.gres) + " -> " +
               (s.gres.empty() ? "none" : s.gres);
    if (!same_set(h.features, s.features))
        out += (out.empty() ? "" : ", ") + std::string("Features ") + h.features + " -> " + s.features;
    return out;
}

}  // namespace

bool is_discovered(const SlurmNodeState &n) {
    return n.external && has_item(n.features, kDiscoveredFeature);
}

std::string gres_type_of(const std::string &model, const std::string &driver) {
    std::string out;
    for (char c : model.empty() ? driver : model) {
        const unsigned char u = static_cast<unsigned char>(c);
        const char l = static_cast<char>(std::tolower(u));
        if (std::isalnum(u))
            out += l;
        else if (!out.empty() && out.back() != '_')
            out += '_';
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    if (out.size() > 32) out.resize(32);
    return out.empty() ? "gpu" : out;
}

std::optional<ExternalNodeSpec> external_spec(const NodeTopology &t, const KubeNodeState &k,
                                              const std::vector<std::string> &base_features,
                                              std::string *why) {
    auto fail = [&](std::string w) -> std::optional<ExternalNodeSpec> {
        if (why) *why = std::move(w);
        return std::nullopt;
    };
    if (!slurm_name_ok(k.name)) return fail("'" + k.name + "' is not a Slurm node name");
    if (!t.cpu) return fail("no CPU topology in its slices");
    const SlurmNodeDef v = slurm_view(t);
    if (!v.sockets || !v.cores_per_socket || !v.threads_per_core)
        return fail("its sockets or cores differ in size, which a Slurm node line cannot describe");
    if (!k.memory_mb) return fail("its Node publishes no allocatable memory");
    ExternalNodeSpec s;
    s.name = k.name;
    s.sockets = v.sockets;
    s.cores_per_socket = v.cores_per_socket;
    s.threads_per_core = v.threads_per_core;
    s.cpus = v.sockets * v.cores_per_socket * v.threads_per_core;
    s.real_memory = k.memory_mb;
    // an IP literal or nothing: the node line is scontrol's syntax
    if (k.address.find_first_not_of("0123456789abcdefABCDEF.:") == std::string::npos) s.address = k.address;
    std::vector<std::string> features = base_features;
    features.push_back(kDiscoveredFeature);
    std::vector<std::pair<std::string, uint32_t>> types;  // in first-index order
    for (size_t i = 0; i < t.gpus.size(); ++i) {
        const std::string type = gres_type_of(t.gpus[i].model.str(), t.gpus[i].driver.str());
        auto it = std::find_if(types.begin(), types.end(), [&](const auto &p) { return p.first == type; });
        if (it == types.end()) {
            types.emplace_back(type, 1);
            features.push_back(type);
        } else {
            ++it->second;
        }
        s.gres_conf += (s.gres_conf.empty() ? "" : "+") + std::string("name=gpu,type=") + type +
                       ",count=1,file=/dev/k8s_cons_tres/gpu" + std::to_string(i);
    }
    for (const auto &[type, n] : types)
        s.gres += (s.gres.empty() ? "" : ",") + std::string("gpu:") + type + ":" + std::to_string(n);
    std::set<std::string> seen;
    for (const auto &f : features)
        if (seen.insert(f).second) s.features += (s.features.empty() ? "" : ",") + f;
    return s;
}

std::string nodeline(const ExternalNodeSpec &s, bool with_gres_conf) {
    std::string l = "NodeName=" + s.name + (s.address.empty() ? "" : " NodeAddr=" + s.address) +
                    " State=EXTERNAL CPUs=" + std::to_string(s.cpus) +
                    " Sockets=" + std::to_string(s.sockets) + " CoresPerSocket=" +
                    std::to_string(s.cores_per_socket) + " ThreadsPerCore=" + std::to_string(s.threads_per_core) +
                    " RealMemory=" + std::to_string(s.real_memory) + " Features=" + s.features;
    if (!s.gres.empty()) l += " Gres=" + s.gres;
    if (!s.gres.empty() && with_gres_conf) l += " GresConf=\"" + s.gres_conf + "\"";
    return l;
}

std::string kube_drain_cause(const KubeNodeState &k) {
    if (k.unschedulable) return "cordoned in Kubernetes";
    if (!k.ready) return "not Ready in Kubernetes: " + k.not_ready;
    return "";
}

std::vector<ExtAction> plan_external_nodes(const std::map<std::string, KubeNodeState> &kube,
                                           const std::map<std::string, ExternalNodeSpec> &specs,
                                           const std::vector<SlurmNodeState> &have, size_t max_actions,
                                           bool with_gres_conf) {
    std::vector<ExtAction> now, creates;
    std::unordered_map<std::string_view, const SlurmNodeState *> slurm;  // views into `have`
    slurm.reserve(have.size());
    for (const auto &h : have) slurm[h.name] = &h;
    auto drain = [&](const SlurmNodeState &h, const std::string &why) {
        if (!h.drained) now.push_back({ExtActionKind::Drain, h.name, kDrainPrefix + why});
    };
    for (const auto &[name, k] : kube) {
        auto spec = specs.find(name);
        auto it = slurm.find(name);
        if (it == slurm.end()) {
            if (spec != specs.end() && kube_drain_cause(k).empty())
                creates.push_back({ExtActionKind::Create, name, ""});
            continue;
        }
        const SlurmNodeState &h = *it->second;
        if (!is_discovered(h)) continue;  // the admin's, or another tool's
        std::string cause = kube_drain_cause(k);
        if (spec != specs.end()) {
            if (std::string diff = shape_difference(h, spec->second); !diff.empty()) {
                if (h.idle) {  // made again, with the new shape, next round
                    now.push_back({ExtActionKind::Delete, name, "its slices changed shape: " + diff});
                    continue;
                }
                cause = "its slices changed shape (" + diff + "); recreated once idle";
            }
        }
        // Slices gone for a while (a driver restart) only make the node
        // unavailable, through the view: no drain for that.
        if (!cause.empty())
            drain(h, cause);
        else if (h.drained_by_us)
            now.push_back({ExtActionKind::Resume, name, ""});
    }
    for (const auto &h : have) {
        if (!is_discovered(h) || kube.count(h.name)) continue;
        if (h.idle)
            now.push_back({ExtActionKind::Delete, h.name, "gone from Kubernetes or no longer selected"});
        else
            drain(h, "gone from Kubernetes or no longer selected; deleted once idle");
    }
    for (auto &c : creates) c.text = nodeline(specs.at(c.node), with_gres_conf);
    now.insert(now.end(), creates.begin(), creates.end());
    if (now.size() > max_actions) now.resize(max_actions);
    return now;
}

}  // namespace k8s_cons_tres
