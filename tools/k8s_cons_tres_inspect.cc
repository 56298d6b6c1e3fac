// SPDX-License-Identifier: GPL-2.0-or-later
// k8s-cons-tres-inspect: what select/k8s_cons_tres makes of each node's
// ResourceSlices and ResourceClaims, and the slurm.conf / gres.conf lines
// that match it. Reads files as kubectl prints them, or the API server.
#include "core/plugin_config.h"
#include "tools/inspect_report.h"
#include "tools/inspect_sources.h"
#include "tools/inspect_topology.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace k8s_cons_tres;

namespace {

const char *kUsage =
    "usage: k8s-cons-tres-inspect [--config FILE]\n"
    "         (--kubeconfig FILE [--context NAME] |\n"
    "          --slices FILE... [--claims FILE...] [--nodes FILE...])\n"
    "         [--node NAME]... [--json] [--cpu-driver NAME] [--gpu-drivers A,B]\n"
    "         [--gpu-index-order minor|pcibusid] [--gres-type TYPE] [--cluster NAME]\n"
    "Prints per node what select/k8s_cons_tres makes of its ResourceSlices:\n"
    "sockets, NUMA nodes and their CPUs, L3 groups, each GPU's NUMA node and\n"
    "where that came from, what Slurm jobs cannot get and why, warnings, and\n"
    "the matching slurm.conf NodeName= and gres.conf lines. --slices/--claims\n"
    "take `kubectl get resourceslices -o json` and `kubectl get resourceclaims\n"
    "-A -o json` output. Drivers default as in k8s_cons_tres.conf (CPUDriver=\n"
    "dra.cpu, GPUDrivers=gpu.nvidia.com). --config reads the plugin's own\n"
    "k8s_cons_tres.conf (drivers, Kubeconfig=, NodeDiscovery=, NodeSelector=,\n"
    "NodeFeatures=); each node's mode then says whether it is an EXTERNAL\n"
    "Slurm node the plugin creates, and with what definition, or needs a\n"
    "slurmd. --nodes takes `kubectl get nodes -l SELECTOR -o json` output:\n"
    "the nodes NodeSelector matches, as under NodeDiscovery=external.\n"
    "A claim shows as a Slurm job's only when it is the plugin's own: in\n"
    "ClaimNamespace= with the plugin's labels for --cluster (default: ClusterLabel=\n"
    "of --config); without a cluster every claim shows as a pod's.\n"
    "\n"
    "       k8s-cons-tres-inspect --topology [--config FILE] [--topology-from SPEC]\n"
    "         [--topology-name NAME] (--kubeconfig FILE [--context NAME] | --nodes FILE...)\n"
    "         [--node NAME]...\n"
    "Prints Slurm's topology.conf lines (topology/tree, then topology/block) and\n"
    "topology.yaml entries for the Kubernetes nodes (NodeSelector= of --config\n"
    "when it sets NodeDiscovery=external, else all), from their labels as SPEC\n"
    "(a preset: aws, gke, oci, slinky, topograph; or LEVEL:SOURCE,...) or\n"
    "TopologyFrom= of --config maps them; NAME (default TopologyName=, else k8s)\n"
    "names the topology.yaml entries NAME-block and NAME-tree. Nodes left out\n"
    "are listed on stderr with the reason.\n";

std::vector<std::string> split_commas(const std::string &s) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t end = s.find(',', pos);
        if (end == std::string::npos)
            end = s.size();
        if (end > pos)
            out.push_back(s.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

struct Args {
    std::string kubeconfig, context;
    std::vector<std::string> slice_files, claim_files, node_files, nodes;
    bool json = false;
    inspect::ReportOptions opts;
    std::string config_kubeconfig;  // Kubeconfig= of --config
    // --topology: the network topology files instead of the node report.
    bool topology = false;
    std::optional<TopologySpec> topology_from;  // --topology-from, else TopologyFrom= of --config
    std::string topology_name = "k8s";         // --topology-name, else TopologyName= of --config
    std::string node_selector;                 // NodeSelector= of --config under NodeDiscovery=external
    std::string error;  // a bad option value, said instead of the usage
};

// Takes the values after a multi-file flag up to the next "--" option.
size_t take_files(int argc, char **argv, int i, std::vector<std::string> &out) {
    size_t n = 0;
    while (i + 1 + static_cast<int>(n) < argc &&
           std::strncmp(argv[i + 1 + n], "--", 2) != 0) {
        out.push_back(argv[i + 1 + n]);
        ++n;
    }
    return n;
}

// The plugin's settings from its k8s_cons_tres.conf (or its defaults).
void apply(const PluginConfig &c, Args &a) {
    a.opts.inventory.cpu_driver = c.cpu_driver;
    a.opts.inventory.gpu_drivers = c.gpu_drivers;
    a.opts.inventory.gres_order = c.gres_by_pci_bus ? GresOrder::PciBusId : GresOrder::Minor;
    a.config_kubeconfig = c.kubeconfig;
    a.opts.owner.claim_namespace = c.claim_namespace;
    a.opts.owner.cluster_label = c.cluster_label;
    if (c.node_discovery)
        a.opts.discovery = inspect::Discovery{c.node_selector, c.node_features, {}};
    a.node_selector = c.node_discovery ? c.node_selector : "";
    if (c.topology_from)
        a.topology_from = c.topology_from;
    if (!c.topology_name.empty())
        a.topology_name = c.topology_name;
}

// --config first, so that the other options override what it says.
bool read_config(int argc, char **argv, Args &a) {
    apply(PluginConfig{}, a);
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--config") != 0)
            continue;
        const ConfigResult r = load_plugin_config(argv[i + 1]);
        if (!r.config) {
            std::fprintf(stderr, "k8s-cons-tres-inspect: %s\n", r.error.c_str());
            return false;
        }
        apply(*r.config, a);
    }
    return true;
}

bool parse(int argc, char **argv, Args &a) {
    for (int i = 1; i < argc; ++i) {
        const std::string f = argv[i];
        const bool has = i + 1 < argc;
        if (f == "--config" && has)
            ++i;  // read_config's
        else if (f == "--kubeconfig" && has)
            a.kubeconfig = argv[++i];
        else if (f == "--context" && has)
            a.context = argv[++i];
        else if (f == "--slices" || f == "--claims" || f == "--nodes") {
            size_t n = take_files(argc, argv, i,
                                  f == "--slices"   ? a.slice_files
                                  : f == "--claims" ? a.claim_files
                                                    : a.node_files);
            if (!n)
                return false;
            i += static_cast<int>(n);
        } else if (f == "--node" && has)
            a.nodes.push_back(argv[++i]);
        else if (f == "--json")
            a.json = true;
        else if (f == "--cpu-driver" && has)
            a.opts.inventory.cpu_driver = argv[++i];
        else if (f == "--gpu-drivers" && has)
            a.opts.inventory.gpu_drivers = split_commas(argv[++i]);
        else if (f == "--gpu-index-order" && has) {
            const std::string o = argv[++i];
            if (o != "minor" && o != "pcibusid")
                return false;
            a.opts.inventory.gres_order = o == "minor" ? GresOrder::Minor : GresOrder::PciBusId;
        } else if (f == "--gres-type" && has)
            a.opts.gres_type = argv[++i];
        else if (f == "--cluster" && has)
            a.opts.owner.cluster_label = argv[++i];
        else if (f == "--topology")
            a.topology = true;
        else if (f == "--topology-from" && has) {
            TopologySpecResult r = parse_topology_from(argv[++i]);
            if (!r.spec) {
                a.error = "--topology-from: " + r.error;
                return false;
            }
            a.topology_from = std::move(r.spec);
        } else if (f == "--topology-name" && has)
            a.topology_name = argv[++i];
        else
            return false;
    }
    if (a.topology) {
        // Only Nodes are read: from the API or from files.
        if (a.kubeconfig.empty() && a.node_files.empty())
            a.kubeconfig = a.config_kubeconfig;
        if (!a.topology_from) {
            a.error = "--topology needs --topology-from SPEC or TopologyFrom= in --config";
            return false;
        }
        return a.kubeconfig.empty() != a.node_files.empty() && a.slice_files.empty() && a.claim_files.empty();
    }
    // Kubeconfig= of --config is the source when nothing else is named.
    if (a.kubeconfig.empty() && a.slice_files.empty())
        a.kubeconfig = a.config_kubeconfig;
    // Node files stand for what NodeSelector matched: discovery is on.
    if (!a.node_files.empty() && !a.opts.discovery)
        a.opts.discovery = inspect::Discovery{};
    return a.kubeconfig.empty() != a.slice_files.empty() &&
           (a.kubeconfig.empty() || (a.claim_files.empty() && a.node_files.empty()));
}

// --topology: the Nodes' labels only, as topology.conf and topology.yaml.
int topology(const Args &a) {
    const TopologyKeys keys = keys_of(*a.topology_from);
    std::vector<k8s::KubeNode> nodes;
    try {
        if (!a.kubeconfig.empty())
            nodes = inspect::kube_nodes_from_api(a.kubeconfig, a.context, a.node_selector, keys);
        for (const std::string &f : a.node_files)
            for (k8s::KubeNode &n : inspect::kube_nodes_from_file(f, keys))
                nodes.push_back(std::move(n));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "k8s-cons-tres-inspect: %s\n", e.what());
        return 1;
    }
    if (!a.nodes.empty())
        std::erase_if(nodes, [&](const k8s::KubeNode &n) {
            return std::find(a.nodes.begin(), a.nodes.end(), n.name) == a.nodes.end();
        });
    const inspect::TopologyReport r = inspect::topology_report(nodes, *a.topology_from, a.topology_name);
    std::fwrite(r.out.data(), 1, r.out.size(), stdout);
    std::fwrite(r.err.data(), 1, r.err.size(), stderr);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Args a;
    if (!read_config(argc, argv, a))
        return 2;
    if (!parse(argc, argv, a)) {
        if (a.error.empty())
            std::fputs(kUsage, stderr);
        else
            std::fprintf(stderr, "k8s-cons-tres-inspect: %s\n", a.error.c_str());
        return 2;
    }
    if (a.topology)
        return topology(a);
    std::vector<ResourceSlice> slices;
    std::vector<ClaimHolding> claims;
    std::vector<KubeNodeState> nodes;
    try {
        if (!a.kubeconfig.empty())
            inspect::fetch_from_api(a.kubeconfig, a.context, &slices, &claims,
                                    a.opts.discovery ? a.opts.discovery->node_selector : "",
                                    a.opts.discovery ? &nodes : nullptr);
        for (const std::string &f : a.node_files)
            for (KubeNodeState &n : inspect::nodes_from_file(f))
                nodes.push_back(std::move(n));
        for (const std::string &f : a.slice_files)
            for (ResourceSlice &s : inspect::slices_from_file(f))
                slices.push_back(std::move(s));
        for (const std::string &f : a.claim_files)
            for (ClaimHolding &c : inspect::claims_from_file(f))
                claims.push_back(std::move(c));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "k8s-cons-tres-inspect: %s\n", e.what());
        return 1;
    }
    if (a.opts.discovery)
        for (KubeNodeState &n : nodes)
            a.opts.discovery->nodes[n.name] = std::move(n);
    inspect::Report r = inspect::build_report(slices, claims, a.opts);
    if (!a.nodes.empty())
        std::erase_if(r.nodes, [&](const inspect::NodeReport &n) {
            return std::find(a.nodes.begin(), a.nodes.end(), n.name) == a.nodes.end();
        });
    const std::string out = a.json ? inspect::report_json(r) : inspect::report_text(r);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}
