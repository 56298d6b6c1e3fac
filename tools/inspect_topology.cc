// SPDX-License-Identifier: GPL-2.0-or-later
#include "tools/inspect_topology.h"

#include "core/topology_conf.h"

namespace k8s_cons_tres::inspect {
namespace {

void section(std::string &out, const std::string &title, const std::vector<std::string> &lines,
             const std::string &none) {
    out += "\n# " + title + "\n";
    if (lines.empty()) out += "# (none: " + none + ")\n";
    for (const std::string &l : lines) out += l + "\n";
}

void notes(std::string &err, const TopologyOutput &o, const std::string &where) {
    for (const LeftOut &l : o.left_out) err += "node " + l.node + " is not in " + where + ": " + l.reason + "\n";
    for (const std::string &w : o.warnings) err += "warning: " + w + "\n";
}

}  // namespace

TopologyReport topology_report(const std::vector<k8s::KubeNode> &nodes, const TopologySpec &spec,
                               const std::string &name) {
    std::vector<PositionedNode> positioned;
    for (const k8s::KubeNode &n : nodes)
        positioned.push_back({n.name, position_of(spec, n.topologyLabels, n.topologyAnnotations)});
    const TopologyOutput tree = topology_conf_lines(positioned);
    const TopologyOutput blocks = block_conf_lines(positioned);
    const TopologyOutput yaml = topology_yaml(positioned, name);

    TopologyReport r;
    r.out = "# Network topology of " + std::to_string(nodes.size()) + " Kubernetes node" +
            (nodes.size() == 1 ? "" : "s") + " from TopologyFrom=" + spec.text() + "\n";
    section(r.out, "topology.conf for topology/tree (every Slurm release):", tree.lines, "no node has a switch path");
    section(r.out, "topology.conf for topology/block (Slurm 23.11 and later), instead of the tree lines:",
            blocks.lines, "no node has a block");
    section(r.out, "topology.yaml entries (Slurm 25.05 and later; with topology.yaml, topology.conf is ignored):",
            yaml.lines, "no node has a position");
    notes(r.err, tree, "the tree");
    notes(r.err, blocks, "a block");
    return r;
}

}  // namespace k8s_cons_tres::inspect
