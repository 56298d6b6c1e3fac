// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plugin_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <sstream>

namespace k8s_cons_tres {
namespace {

std::string trim(std::string s) {
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
    s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
    return s;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

std::vector<std::string> split_list(const std::string &v) {
    std::vector<std::string> out;
    std::stringstream ss(v);
    for (std::string item; std::getline(ss, item, ',');) {
        item = trim(item);
        if (!item.empty()) out.push_back(item);
    }
    return out;
}

// Setters return "" when the value is accepted, else what is wrong with it.
using Setter = std::function<std::string(PluginConfig &, const std::string &)>;

std::string set_bool(bool &dst, const std::string &v) {
    const std::string l = lower(v);
    if (l == "yes" || l == "true" || l == "1") { dst = true; return ""; }
    if (l == "no" || l == "false" || l == "0") { dst = false; return ""; }
    return "expected yes or no";
}

std::string set_seconds(std::chrono::seconds &dst, const std::string &v, long min, long max) {
    long n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size())
        return "expected a whole number of seconds";
    if (n < min || n > max)
        return "must be between " + std::to_string(min) + " and " + std::to_string(max) + " seconds";
    dst = std::chrono::seconds(n);
    return "";
}

// A whole number from min to max, into any integer type.
template <typename T>
std::string set_count(T &dst, const std::string &v, long min, long max) {
    long n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < min || n > max)
        return "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    dst = static_cast<T>(n);
    return "";
}

std::string set_nonempty(std::string &dst, const std::string &v) {
    if (v.empty()) return "must not be empty";
    dst = v;
    return "";
}

// A DNS label (namespaces, label values we write) or subdomain (drivers, classes).
bool is_dns_label(const std::string &s) {
    if (s.empty() || s.size() > 63) return false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i != 0 && i + 1 != s.size())) return false;
    }
    return true;
}

bool is_dns_subdomain(const std::string &s) {
    if (s.empty() || s.size() > 253) return false;
    std::stringstream ss(s);
    for (std::string part; std::getline(ss, part, '.');)
        if (!is_dns_label(part)) return false;
    return s.back() != '.';
}

std::string set_subdomain(std::string &dst, const std::string &v) {
    if (!is_dns_subdomain(v)) return "'" + v + "' is not a DNS subdomain (lower case, digits, '-', '.')";
    dst = v;
    return "";
}

const std::map<std::string, std::pair<std::string, Setter>> &keys() {
    // lower-case key -> (canonical spelling, setter)
    static const std::map<std::string, std::pair<std::string, Setter>> table = {
        {"kubeconfig", {"Kubeconfig", [](PluginConfig &c, const std::string &v) { return set_nonempty(c.kubeconfig, v); }}},
        {"incluster", {"InCluster", [](PluginConfig &c, const std::string &v) { return set_bool(c.in_cluster, v); }}},
        {"apiserver", {"APIServer", [](PluginConfig &c, const std::string &v) -> std::string {
             if (v.rfind("https://", 0) != 0 && v.rfind("http://", 0) != 0)
                 return "expected an https:// URL";
             c.api_server = v;
             return "";
         }}},
        {"tokenfile", {"TokenFile", [](PluginConfig &c, const std::string &v) { return set_nonempty(c.token_file, v); }}},
        {"certificateauthority", {"CertificateAuthority", [](PluginConfig &c, const std::string &v) { return set_nonempty(c.ca_file, v); }}},
        {"insecureskiptlsverify", {"InsecureSkipTLSVerify", [](PluginConfig &c, const std::string &v) { return set_bool(c.insecure_skip_tls_verify, v); }}},
        {"claimnamespace", {"ClaimNamespace", [](PluginConfig &c, const std::string &v) -> std::string {
             if (!is_dns_label(v)) return "'" + v + "' is not a valid namespace name (DNS label)";
             c.claim_namespace = v;
             return "";
         }}},
        {"clusterlabel", {"ClusterLabel", [](PluginConfig &c, const std::string &v) -> std::string {
             if (!is_dns_label(v)) return "'" + v + "' is not a valid label value here (DNS label)";
             c.cluster_label = v;
             return "";
         }}},
        {"cpudriver", {"CPUDriver", [](PluginConfig &c, const std::string &v) { return set_subdomain(c.cpu_driver, v); }}},
        {"gpudrivers", {"GPUDrivers", [](PluginConfig &c, const std::string &v) -> std::string {
             auto list = split_list(v);
             for (const auto &d : list)
                 if (!is_dns_subdomain(d)) return "'" + d + "' is not a DNS subdomain";
             c.gpu_drivers = list;
             return "";
         }}},
        {"cpudeviceclass", {"CPUDeviceClass", [](PluginConfig &c, const std::string &v) { return set_subdomain(c.cpu_device_class, v); }}},
        {"gpudeviceclass", {"GPUDeviceClass", [](PluginConfig &c, const std::string &v) { return set_subdomain(c.gpu_device_class, v); }}},
        {"gpuindexorder", {"GPUIndexOrder", [](PluginConfig &c, const std::string &v) -> std::string {
             const std::string l = lower(v);
             if (l == "minor") { c.gres_by_pci_bus = false; return ""; }
             if (l == "pcibusid") { c.gres_by_pci_bus = true; return ""; }
             return "expected minor or pcibusid";
         }}},
        {"k8snodename", {"K8sNodeName", [](PluginConfig &c, const std::string &v) -> std::string {
             if (v.find("%n") == std::string::npos) return "must contain %n (the Slurm node name)";
             c.node_name_format = v;
             return "";
         }}},
        {"nodenamemap", {"NodeNameMap", [](PluginConfig &c, const std::string &v) -> std::string {
             for (const auto &pair : split_list(v)) {
                 auto colon = pair.find(':');
                 if (colon == std::string::npos || colon == 0 || colon + 1 == pair.size())
                     return "expected slurmname:k8sname[,...], got '" + pair + "'";
                 c.node_name_map[pair.substr(0, colon)] = pair.substr(colon + 1);
             }
             return "";
         }}},
        {"kubernetesnodes", {"KubernetesNodes", [](PluginConfig &c, const std::string &v) { return set_nonempty(c.kubernetes_nodes, v); }}},
        {"staleafter", {"StaleAfter", [](PluginConfig &c, const std::string &v) { return set_seconds(c.stale_after, v, 5, 86400); }}},
        {"requesttimeout", {"RequestTimeout", [](PluginConfig &c, const std::string &v) { return set_seconds(c.request_timeout, v, 1, 300); }}},
        {"claimqueuelimit", {"ClaimQueueLimit", [](PluginConfig &c, const std::string &v) { return set_count(c.claim_queue_limit, v, 100, 10000000); }}},
        {"maxinflightwrites", {"MaxInflightWrites", [](PluginConfig &c, const std::string &v) { return set_count(c.max_inflight_writes, v, 1, 64); }}},
        {"holderpods", {"HolderPods", [](PluginConfig &c, const std::string &v) { return set_bool(c.holder_pods, v); }}},
        {"holderimage", {"HolderImage", [](PluginConfig &c, const std::string &v) -> std::string {
             for (char ch : v)
                 if (std::isspace(static_cast<unsigned char>(ch)) || ch == '"') return "an image reference has no spaces or quotes";
             return set_nonempty(c.holder_image, v);
         }}},
        {"holderpriorityclass", {"HolderPriorityClass", [](PluginConfig &c, const std::string &v) { return set_subdomain(c.holder_priority_class, v); }}},
        {"launchgate", {"LaunchGate", [](PluginConfig &c, const std::string &v) -> std::string {
             const std::string l = lower(v);
             if (l == "off") { c.launch_gate = PluginConfig::LaunchGate::Off; return ""; }
             if (l == "claims") { c.launch_gate = PluginConfig::LaunchGate::Claims; return ""; }
             if (l == "prepared") { c.launch_gate = PluginConfig::LaunchGate::Prepared; return ""; }
             return "expected off, claims or prepared";
         }}},
        {"writestaleafter", {"WriteStaleAfter", [](PluginConfig &c, const std::string &v) { return set_seconds(c.write_stale_after, v, 2, 3600); }}},
        {"launchgatetimeout", {"LaunchGateTimeout", [](PluginConfig &c, const std::string &v) { return set_seconds(c.launch_gate_timeout, v, 5, 86400); }}},
        {"launchgaterequeues", {"LaunchGateRequeues", [](PluginConfig &c, const std::string &v) { return set_count(c.launch_gate_requeues, v, 0, 1000); }}},
        {"nodediscovery", {"NodeDiscovery", [](PluginConfig &c, const std::string &v) -> std::string {
             const std::string l = lower(v);
             if (l == "none") { c.node_discovery = false; return ""; }
             if (l == "external") { c.node_discovery = true; return ""; }
             return "expected none or external";
         }}},
        {"externaljobclaims", {"ExternalJobClaims", [](PluginConfig &c, const std::string &v) -> std::string {
             const std::string l = lower(v);
             if (l == "plugin") { c.bridge_job_claims = false; return ""; }
             if (l == "bridge") { c.bridge_job_claims = true; return ""; }
             return "expected plugin (the plugin writes every job's claims) or bridge (slurm-bridge writes those of its pods' jobs)";
         }}},
        {"nodeselector", {"NodeSelector", [](PluginConfig &c, const std::string &v) -> std::string {
             for (char ch : v)
                 if (std::isspace(static_cast<unsigned char>(ch)) || ch == '"' || ch == '&' || ch == '#')
                     return "a Kubernetes label selector, e.g. slurm.example.com/external=true (no spaces)";
             c.node_selector = v;
             return "";
         }}},
        {"nodefeatures", {"NodeFeatures", [](PluginConfig &c, const std::string &v) -> std::string {
             auto list = split_list(v);
             for (const auto &f : list)
                 for (char ch : f)
                     if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '.')
                         return "'" + f + "' is not a Slurm feature name (letters, digits, '_', '.')";
             c.node_features = list;
             return "";
         }}},
        {"topologyfrom", {"TopologyFrom", [](PluginConfig &c, const std::string &v) -> std::string {
             TopologySpecResult r = parse_topology_from(v);
             if (!r.spec) return r.error;
             c.topology_from = std::move(r.spec);
             return "";
         }}},
        {"topologyname", {"TopologyName", [](PluginConfig &c, const std::string &v) -> std::string {
             // A topology.yaml name, which also travels in scontrol's Topology=NAME:UNIT.
             if (v.empty()) return "must not be empty";
             for (char ch : v)
                 if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.')
                     return "'" + v + "' is not a topology name (letters, digits, '-', '_', '.')";
             c.topology_name = v;
             return "";
         }}},
        {"debuglevel", {"DebugLevel", [](PluginConfig &c, const std::string &v) -> std::string {
             static const std::map<std::string, int> levels = {
                 {"error", 0}, {"info", 1}, {"verbose", 2}, {"debug", 3}};
             auto it = levels.find(lower(v));
             if (it == levels.end()) return "expected error, info, verbose or debug";
             c.log_level = it->second;
             return "";
         }}},
    };
    return table;
}

std::string known_keys() {
    std::string out;
    for (const auto &[_, entry] : keys()) out += (out.empty() ? "" : ", ") + entry.first;
    return out;
}

// Settings that are valid one by one but not together.
std::string check_combination(const PluginConfig &c) {
    const int sources = !c.kubeconfig.empty() + c.in_cluster + !c.api_server.empty();
    if (sources == 0)
        return "no API server configured: set one of Kubeconfig=, InCluster=yes or APIServer=";
    if (sources > 1)
        return "Kubeconfig=, InCluster=yes and APIServer= are alternatives: set only one";
    if (!c.api_server.empty() && c.token_file.empty())
        return "APIServer= needs TokenFile= (a file holding the bearer token)";
    if (c.api_server.rfind("http://", 0) == 0)
        return "APIServer= must be https:// (tokens are never sent in clear)";
    return "";
}

}  // namespace

std::string PluginConfig::k8s_node_name(const std::string &slurm_node) const {
    if (auto it = node_name_map.find(slurm_node); it != node_name_map.end()) return it->second;
    std::string out;
    for (size_t i = 0; i < node_name_format.size(); ++i) {
        if (node_name_format[i] == '%' && i + 1 < node_name_format.size() && node_name_format[i + 1] == 'n') {
            out += slurm_node;
            ++i;
        } else {
            out += node_name_format[i];
        }
    }
    return out;
}

ConfigResult parse_plugin_config(const std::string &text, const std::string &path) {
    PluginConfig cfg;
    std::map<std::string, int> seen;
    std::istringstream in(text);
    int lineno = 0;
    for (std::string raw; std::getline(in, raw);) {
        ++lineno;
        const std::string where = path + ":" + std::to_string(lineno) + ": ";
        std::string line = trim(raw.substr(0, raw.find('#')));
        if (line.empty()) continue;
        const auto eq = line.find('=');
        if (eq == std::string::npos)
            return {std::nullopt, where + "expected Key=Value, got '" + line + "'"};
        const std::string key = trim(line.substr(0, eq));
        const std::string value = trim(line.substr(eq + 1));
        auto it = keys().find(lower(key));
        if (it == keys().end())
            return {std::nullopt, where + "unknown key '" + key + "' (known keys: " + known_keys() + ")"};
        if (auto prev = seen.find(it->first); prev != seen.end())
            return {std::nullopt, where + it->second.first + " already set on line " + std::to_string(prev->second)};
        seen[it->first] = lineno;
        if (std::string why = it->second.second(cfg, value); !why.empty())
            return {std::nullopt, where + "bad value for " + it->second.first + "='" + value + "': " + why};
    }
    if (std::string why = check_combination(cfg); !why.empty())
        return {std::nullopt, path + ": " + why};
    return {cfg, ""};
}

ConfigResult load_plugin_config(const std::string &path) {
    std::ifstream f(path);
    if (!f) return {std::nullopt, path + ": cannot read (does it exist and is it readable by SlurmUser?)"};
    std::stringstream buf;
    buf << f.rdbuf();
    return parse_plugin_config(buf.str(), path);
}

}  // namespace k8s_cons_tres
