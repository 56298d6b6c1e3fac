// SPDX-License-Identifier: GPL-2.0-or-later
// Slurm's network topology files from the nodes' positions
// (network_position.h): topology.conf for topology/tree (SwitchName= lines,
// every release), for topology/block (BlockName= lines, 23.11 and later),
// and topology.yaml (25.05 and later) holding a block and a tree topology.
// Nothing is written anywhere: k8s-cons-tres-inspect prints them for the
// administrator to install.
#pragma once

#include "core/network_position.h"

#include <string>
#include <vector>

namespace k8s_cons_tres {

struct PositionedNode {
    std::string name;  // the Slurm node name
    NetworkPosition position;
};

struct LeftOut {
    std::string node, reason;
    bool operator==(const LeftOut &) const = default;
};

struct TopologyOutput {
    std::vector<std::string> lines;
    // Nodes that have a position of this kind in the spec but are not in
    // the output, and why: no such position, or one that contradicts the
    // nodes before them (in name order).
    std::vector<LeftOut> left_out;
    std::vector<std::string> warnings;  // things Slurm will do with it
};

// topology/tree: one SwitchName= line per switch, leaf switches first
// ("SwitchName=s1 Nodes=n[01-04]"), then each level up listing its children
// ("SwitchName=spine1 Switches=s[1-2]"). A switch has one parent and one
// level; a node whose path says otherwise is left out. No root is made up:
// several top switches are separate fabrics to Slurm (a warning says so).
TopologyOutput topology_conf_lines(const std::vector<PositionedNode> &nodes);

// topology/block: "BlockName=b1 Nodes=n[01-04]", blocks that share their
// switches next to each other (Slurm joins neighbouring blocks into bigger
// ones), else in name order. BlockSizes= is left out: Slurm then takes the
// node count of the first block as the base block size; uneven blocks get a
// warning with the line that fits them.
TopologyOutput block_conf_lines(const std::vector<PositionedNode> &nodes);

// topology.yaml entries: "NAME-block" (topology/block) and "NAME-tree"
// (topology/tree), each only when some node has such a position, neither
// the cluster default (partitions name theirs with Topology=). A fragment
// of the file's list: no "---".
TopologyOutput topology_yaml(const std::vector<PositionedNode> &nodes, const std::string &name);

}  // namespace k8s_cons_tres
