// SPDX-License-Identifier: GPL-2.0-or-later
// Where a Kubernetes node sits in the network, from its labels or
// annotations (TopologyFrom= of k8s_cons_tres.conf), in Slurm's terms: the
// block of topology/block and the switch path of topology/tree. Pure
// functions: no Slurm, no HTTP. topology_conf.h turns positions into files.
//
// TopologyFrom= is a preset name or a comma-separated list of LEVEL:SOURCE:
//   LEVEL   block (at most one entry) or switch (listed from the leaf switch,
//           the one the node is plugged into, outward to the root)
//   SOURCE  a Node label key; annotation:KEY for a Node annotation; or
//           slinky:TOPOLOGY, the unit of Slurm topology TOPOLOGY in the
//           Slinky annotation topology.slinky.slurm.net/spec, whose value is
//           Slurm's dynamic-node Topology= form (topo-switch:s1,topo-block:b1;
//           a tree unit may be a path from the root, topo-switch:root:s1).
// Label keys hold no ':', so the three forms never overlap.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace k8s_cons_tres {

inline constexpr const char *kSlinkyTopologyAnnotation = "topology.slinky.slurm.net/spec";

enum class TopologyLevel { Block, Switch };

struct TopologySource {
    enum class Kind { Label, Annotation, Slinky };
    Kind kind = Kind::Label;
    std::string key;  // the label or annotation key; Slinky: the topology name
    bool operator==(const TopologySource &) const = default;
};

struct TopologyEntry {
    TopologyLevel level = TopologyLevel::Block;
    TopologySource source;
    bool operator==(const TopologyEntry &) const = default;
};

struct TopologySpec {
    std::string preset;                  // the preset's name, "" for a list
    std::vector<TopologyEntry> entries;  // as given; switch entries leaf first
    bool operator==(const TopologySpec &) const = default;
    // How it was written: the preset's name, or the list.
    std::string text() const;
};

struct TopologySpecResult {
    std::optional<TopologySpec> spec;  // set on success
    std::string error;                 // what is wrong, on failure
};

// Parses a TopologyFrom= value. The error says what is wrong with which
// entry; the config loader prefixes file, line and key.
TopologySpecResult parse_topology_from(const std::string &text);

// The presets, by name: aws, gke, oci, slinky, topograph.
const std::vector<std::pair<std::string, std::string>> &topology_presets();

// The label and annotation keys a spec reads: all a Node needs to keep.
struct TopologyKeys {
    std::vector<std::string> labels, annotations;
    bool empty() const { return labels.empty() && annotations.empty(); }
};
TopologyKeys keys_of(const TopologySpec &spec);

// A Node's labels or annotations (only the keys that matter).
using KeyValues = std::vector<std::pair<std::string, std::string>>;

// Values longer than this count as unusable (a label value has at most 63).
inline constexpr size_t kMaxTopologyValue = 1024;

struct NetworkPosition {
    std::string block;                  // Slurm block name, "" for none
    std::vector<std::string> switches;  // Slurm switch names, leaf first
    // Why there is no block or no switch path ("" when the spec names no
    // such level, or it is there).
    std::string why_no_block, why_no_switches;
    bool empty() const { return block.empty() && switches.empty(); }
    bool operator==(const NetworkPosition &) const = default;
};

// The node's position. A missing block key leaves the block out; switches
// are those present from the leaf outward (a shallower fabric ends early),
// and none when the leaf is missing or a level between two present ones is.
NetworkPosition position_of(const TopologySpec &spec, const KeyValues &labels,
                            const KeyValues &annotations);

// The Slurm switch or block name of a value. A value of letters, digits,
// '-', '_' and '.' that starts with a letter or digit, has at most 63
// characters and does not end like a mapped name is its own name. Any other
// value maps to itself with every other character replaced by '_' (and an
// 'x' put first when it then starts with no letter or digit), cut to 49
// characters, then "--" and 12 hexadecimal digits of a hash (FNV-1a) of the
// whole value: so distinct values stay distinct (but for a 48-bit hash
// collision) and the same value always maps to the same name, whatever
// other nodes there are (discovered nodes must find their block again).
std::string slurm_topology_name(std::string_view value);

}  // namespace k8s_cons_tres
