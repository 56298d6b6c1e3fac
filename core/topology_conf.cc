// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/topology_conf.h"

#include "core/hostlist.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>
#include <tuple>

namespace k8s_cons_tres {
namespace {

std::vector<const PositionedNode *> by_name(const std::vector<PositionedNode> &nodes) {
    std::vector<const PositionedNode *> out;
    for (const PositionedNode &n : nodes) out.push_back(&n);
    std::sort(out.begin(), out.end(), [](const PositionedNode *a, const PositionedNode *b) { return a->name < b->name; });
    return out;
}

struct Switch {
    size_t level = 0;      // 0: a leaf switch, with nodes
    std::string parent;    // "" at the top
    std::string first;     // the node that placed it, for messages
    std::vector<std::string> nodes, children;
};

struct Tree {
    std::map<std::string, Switch> switches;
    std::vector<LeftOut> left_out;
};

// Why a node's path contradicts the switches placed so far, "" if it fits.
std::string contradiction(const Tree &t, const std::vector<std::string> &path) {
    for (size_t i = 0; i < path.size(); ++i) {
        const std::string parent = i + 1 < path.size() ? path[i + 1] : "";
        for (size_t j = 0; j < i; ++j)
            if (path[j] == path[i]) return "switch " + path[i] + " is twice in its path";
        auto it = t.switches.find(path[i]);
        if (it == t.switches.end()) continue;
        const Switch &s = it->second;
        if (s.level != i)
            return "switch " + path[i] + " is at level " + std::to_string(i) + " here (0: the leaf), but at level " +
                   std::to_string(s.level) + " for node " + s.first;
        if (s.parent != parent)
            return "switch " + path[i] + " is under " + (parent.empty() ? "no switch" : parent) + " here, but under " +
                   (s.parent.empty() ? "no switch" : s.parent) + " for node " + s.first;
    }
    return "";
}

Tree build_tree(const std::vector<PositionedNode> &nodes) {
    Tree t;
    for (const PositionedNode *n : by_name(nodes)) {
        const std::vector<std::string> &path = n->position.switches;
        if (path.empty()) {
            if (!n->position.why_no_switches.empty()) t.left_out.push_back({n->name, n->position.why_no_switches});
            continue;
        }
        if (std::string why = contradiction(t, path); !why.empty()) {
            t.left_out.push_back({n->name, why});
            continue;
        }
        for (size_t i = 0; i < path.size(); ++i) {
            auto [it, added] = t.switches.try_emplace(path[i]);
            Switch &s = it->second;
            if (added) {
                s.level = i;
                s.parent = i + 1 < path.size() ? path[i + 1] : "";
                s.first = n->name;
            }
            if (i == 0)
                s.nodes.push_back(n->name);
            else if (std::find(s.children.begin(), s.children.end(), path[i - 1]) == s.children.end())
                s.children.push_back(path[i - 1]);
        }
    }
    return t;
}

// Switches leaf level first, by name within a level.
std::vector<std::pair<std::string, const Switch *>> switch_order(const Tree &t) {
    std::vector<std::pair<std::string, const Switch *>> out;
    for (const auto &[name, s] : t.switches) out.emplace_back(name, &s);
    std::stable_sort(out.begin(), out.end(),
                     [](const auto &a, const auto &b) { return a.second->level < b.second->level; });
    return out;
}

std::vector<std::string> tree_warnings(const Tree &t) {
    std::vector<std::string> tops;
    for (const auto &[name, s] : t.switches)
        if (s.parent.empty()) tops.push_back(name);
    if (tops.size() < 2) return {};
    const std::string list = hostlist_of(tops);
    return {"the tree has " + std::to_string(tops.size()) + " top switches (" + list +
            "): Slurm runs no job over nodes under different ones; if they are connected, add "
            "SwitchName=root Switches=" + list};
}

struct Block {
    std::string name;
    std::vector<std::string> nodes;
    std::vector<std::string> path;  // its first node's switches, root first
};

struct Blocks {
    std::vector<Block> blocks;  // in file order
    std::vector<LeftOut> left_out;
};

Blocks build_blocks(const std::vector<PositionedNode> &nodes) {
    Blocks b;
    std::map<std::string, size_t> index;
    for (const PositionedNode *n : by_name(nodes)) {
        if (n->position.block.empty()) {
            if (!n->position.why_no_block.empty()) b.left_out.push_back({n->name, n->position.why_no_block});
            continue;
        }
        auto [it, added] = index.try_emplace(n->position.block, b.blocks.size());
        if (added) {
            Block blk;
            blk.name = n->position.block;
            blk.path.assign(n->position.switches.rbegin(), n->position.switches.rend());
            b.blocks.push_back(std::move(blk));
        }
        b.blocks[it->second].nodes.push_back(n->name);
    }
    // Slurm joins neighbouring blocks into larger ones: blocks under the
    // same switches go next to each other.
    std::sort(b.blocks.begin(), b.blocks.end(),
              [](const Block &x, const Block &y) { return std::tie(x.path, x.name) < std::tie(y.path, y.name); });
    return b;
}

std::vector<std::string> block_warnings(const Blocks &b) {
    if (b.blocks.empty()) return {};
    size_t smallest = b.blocks.front().nodes.size();
    for (const Block &blk : b.blocks) smallest = std::min(smallest, blk.nodes.size());
    const size_t first = b.blocks.front().nodes.size();
    if (first == smallest) return {};
    const std::string s = std::to_string(smallest);
    const std::string sizes = s + "," + std::to_string(2 * smallest) + "," + std::to_string(4 * smallest) + "," +
                              std::to_string(8 * smallest) + "," + std::to_string(16 * smallest);
    return {"blocks have from " + s + " nodes up: without BlockSizes= Slurm takes the first block's " +
            std::to_string(first) + " as the base block size, which every block needs; BlockSizes=" + sizes +
            " (topology.yaml: block_sizes) keeps Slurm's default levels on the smallest block"};
}

// A YAML scalar: plain when it can only read as this string, else quoted.
std::string yaml_scalar(const std::string &s) {
    static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"};
    std::string l = s;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
    bool plain = !s.empty() && std::isalpha(static_cast<unsigned char>(s.front())) &&
                 std::find(std::begin(words), std::end(words), l) == std::end(words);
    for (char c : s)
        plain = plain && (std::isalnum(static_cast<unsigned char>(c)) ||
                          std::string_view("-_.[],").find(c) != std::string_view::npos);
    if (plain) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') q += '\\';
        q += c;
    }
    return q + "\"";
}

void prefixed(std::vector<LeftOut> &out, const std::vector<LeftOut> &from, const std::string &prefix) {
    for (const LeftOut &l : from) out.push_back({l.node, prefix + l.reason});
}

}  // namespace

TopologyOutput topology_conf_lines(const std::vector<PositionedNode> &nodes) {
    const Tree t = build_tree(nodes);
    TopologyOutput out;
    for (const auto &[name, s] : switch_order(t))
        out.lines.push_back("SwitchName=" + name +
                            (s->level == 0 ? " Nodes=" + hostlist_of(s->nodes) : " Switches=" + hostlist_of(s->children)));
    out.left_out = t.left_out;
    out.warnings = tree_warnings(t);
    return out;
}

TopologyOutput block_conf_lines(const std::vector<PositionedNode> &nodes) {
    const Blocks b = build_blocks(nodes);
    TopologyOutput out;
    for (const Block &blk : b.blocks) out.lines.push_back("BlockName=" + blk.name + " Nodes=" + hostlist_of(blk.nodes));
    out.left_out = b.left_out;
    out.warnings = block_warnings(b);
    return out;
}

namespace {

// The head of one topology.yaml entry: its name, never the cluster's
// default (the admin chooses that), its plugin's map and the list in it.
void yaml_head(std::vector<std::string> &lines, const std::string &name, const char *plugin, const char *list) {
    lines.push_back("- topology: " + yaml_scalar(name));
    lines.push_back("  cluster_default: false");
    lines.push_back(std::string("  ") + plugin + ":");
    lines.push_back(std::string("    ") + list + ":");
}

}  // namespace

TopologyOutput topology_yaml(const std::vector<PositionedNode> &nodes, const std::string &name) {
    TopologyOutput out;
    const Blocks b = build_blocks(nodes);
    if (!b.blocks.empty()) {
        yaml_head(out.lines, name + "-block", "block", "blocks");
        for (const Block &blk : b.blocks) {
            out.lines.push_back("      - block: " + yaml_scalar(blk.name));
            out.lines.push_back("        nodes: " + yaml_scalar(hostlist_of(blk.nodes)));
        }
    }
    const Tree t = build_tree(nodes);
    if (!t.switches.empty()) {
        yaml_head(out.lines, name + "-tree", "tree", "switches");
        for (const auto &[sw, s] : switch_order(t)) {
            out.lines.push_back("      - switch: " + yaml_scalar(sw));
            out.lines.push_back(s->level == 0 ? "        nodes: " + yaml_scalar(hostlist_of(s->nodes))
                                              : "        children: " + yaml_scalar(hostlist_of(s->children)));
        }
    }
    prefixed(out.left_out, b.left_out, "block: ");
    prefixed(out.left_out, t.left_out, "tree: ");
    for (const std::string &w : block_warnings(b)) out.warnings.push_back(w);
    for (const std::string &w : tree_warnings(t)) out.warnings.push_back(w);
    return out;
}

}  // namespace k8s_cons_tres
