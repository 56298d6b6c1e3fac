// SPDX-License-Identifier: GPL-2.0-or-later
// Network topology from Kubernetes node labels: TopologyFrom= specs and
// presets, each node's position, Slurm-safe names, and the topology.conf
// and topology.yaml made from them.
#include "core/hostlist.h"
#include "core/network_position.h"
#include "core/plugin_config.h"
#include "core/topology_conf.h"

#include <catch2/catch.hpp>

#include <cctype>
#include <cstdio>
#include <set>

using namespace k8s_cons_tres;

namespace {

TopologySpec spec(const std::string &text) {
    TopologySpecResult r = parse_topology_from(text);
    INFO(r.error);
    REQUIRE(r.spec);
    return *r.spec;
}

std::string parse_error(const std::string &text) {
    TopologySpecResult r = parse_topology_from(text);
    CHECK_FALSE(r.spec);
    return r.error;
}

using Strings = std::vector<std::string>;

const char *const kGkeBlock = "cloud.google.com/gce-topology-block";
const char *const kGkeSubblock = "cloud.google.com/gce-topology-subblock";
const char *const kGkeHost = "cloud.google.com/gce-topology-host";

// 16 GKE nodes in 4 sub-blocks (Slurm's blocks, leaf switches) of 4, two
// sub-blocks to a GKE block (the switch above). Name order and network
// order differ on purpose: gpu01-04 and gpu09-12 share blk-1.
std::vector<PositionedNode> sixteen_nodes() {
    const TopologySpec gke = spec("gke");
    const struct { const char *subblock, *block; } where[4] = {
        {"sb-c", "blk-1"}, {"sb-a", "blk-2"}, {"sb-d", "blk-1"}, {"sb-b", "blk-2"}};
    std::vector<PositionedNode> nodes;
    for (int i = 16; i >= 1; --i) {  // given in reverse: the output sorts
        char name[8];
        std::snprintf(name, sizeof name, "gpu%02d", i);
        const auto &w = where[(i - 1) / 4];
        nodes.push_back({name, position_of(gke, {{kGkeBlock, w.block}, {kGkeSubblock, w.subblock}, {kGkeHost, name}}, {})});
    }
    nodes.push_back({"cpu01", position_of(gke, {{"kubernetes.io/hostname", "cpu01"}}, {})});
    return nodes;
}

}  // namespace

TEST_CASE("preset aws: layer-3 (closest to the instance) is the block and leaf, layer-1 the top") {
    const TopologySpec s = spec("aws");
    CHECK(s.preset == "aws");
    CHECK(keys_of(s).labels == Strings{"topology.k8s.aws/network-node-layer-3", "topology.k8s.aws/network-node-layer-2",
                                       "topology.k8s.aws/network-node-layer-1"});
    CHECK(keys_of(s).annotations.empty());
    const NetworkPosition p = position_of(s,
                                          {{"topology.k8s.aws/network-node-layer-1", "nn-e50490a237cb0f01a"},
                                           {"topology.k8s.aws/network-node-layer-2", "nn-1d1d1d1d1d1d1d1d1"},
                                           {"topology.k8s.aws/network-node-layer-3", "nn-3c3c3c3c3c3c3c3c3"},
                                           {"topology.k8s.aws/network-node-layer-4", "nn-4444"}},
                                          {});
    CHECK(p.block == "nn-3c3c3c3c3c3c3c3c3");
    CHECK(p.switches == Strings{"nn-3c3c3c3c3c3c3c3c3", "nn-1d1d1d1d1d1d1d1d1", "nn-e50490a237cb0f01a"});
    CHECK(p.why_no_block.empty());
    CHECK(p.why_no_switches.empty());
}

TEST_CASE("preset gke: the sub-block is the block and leaf switch, the GKE block above it, the host unused") {
    const TopologySpec s = spec("GKE");  // preset names are case-insensitive
    CHECK(s.preset == "gke");
    CHECK(keys_of(s).labels == Strings{kGkeSubblock, kGkeBlock});
    const NetworkPosition p = position_of(s, {{kGkeHost, "h7"}, {kGkeBlock, "9b6c"}, {kGkeSubblock, "4f1a"}}, {});
    CHECK(p.block == "4f1a");
    CHECK(p.switches == Strings{"4f1a", "9b6c"});
}

TEST_CASE("preset oci: the rack is the block and leaf switch, the network block above it") {
    const TopologySpec s = spec("oci");
    CHECK(keys_of(s).labels == Strings{"oci.oraclecloud.com/host.rack_id", "oci.oraclecloud.com/host.network_block_id"});
    const NetworkPosition p = position_of(
        s, {{"oci.oraclecloud.com/host.network_block_id", "7xmzl4p4wba"}, {"oci.oraclecloud.com/host.rack_id", "1163795a865"}},
        {});
    CHECK(p.block == "1163795a865");
    CHECK(p.switches == Strings{"1163795a865", "7xmzl4p4wba"});
}

TEST_CASE("preset topograph: tier-0 is the leaf, tiers go outward, the accelerator domain is the block") {
    const TopologySpec s = spec("topograph");
    CHECK(keys_of(s).labels == Strings{"accelerator.topograph.run/domain", "fabric.topograph.run/tier-0",
                                       "fabric.topograph.run/tier-1", "fabric.topograph.run/tier-2",
                                       "fabric.topograph.run/tier-3"});
    const KeyValues labels = {{"fabric.topograph.run/tier-1", "S-2c5eab0306555424"},
                              {"fabric.topograph.run/tier-0", "S-2c5eab036832a42e"},
                              {"accelerator.topograph.run/domain", "7f3c2a10-5b4e-4d6a-9c1e-2b8f0e6d4a91.1"}};
    const NetworkPosition p = position_of(s, labels, {});
    CHECK(p.block == "7f3c2a10-5b4e-4d6a-9c1e-2b8f0e6d4a91.1");
    // No tier-2 or tier-3: a two-tier fabric ends at tier-1.
    CHECK(p.switches == Strings{"S-2c5eab036832a42e", "S-2c5eab0306555424"});
    CHECK(p.why_no_switches.empty());
    // Without the domain (no NVLink) the node is in the tree, in no block.
    const NetworkPosition no_domain = position_of(s, {labels[0], labels[1]}, {});
    CHECK(no_domain.block.empty());
    CHECK(no_domain.why_no_block == "no label accelerator.topograph.run/domain");
    CHECK(no_domain.switches.size() == 2);
}

TEST_CASE("preset slinky: the annotation's Topology= form, a tree unit's path root first") {
    const TopologySpec s = spec("slinky");
    CHECK(keys_of(s).labels.empty());
    CHECK(keys_of(s).annotations == Strings{kSlinkyTopologyAnnotation});
    const NetworkPosition p = position_of(s, {}, {{kSlinkyTopologyAnnotation, "topo-switch:s1,topo-block:b1"}});
    CHECK(p.block == "b1");
    CHECK(p.switches == Strings{"s1"});
    // A path of switches, root first as Slurm takes it; other topologies ignored.
    const NetworkPosition path =
        position_of(s, {}, {{kSlinkyTopologyAnnotation, "topo-ring:ring1:2, topo-switch:sw_root:s1:s2 ,topo-block:b3"}});
    CHECK(path.switches == Strings{"s2", "s1", "sw_root"});
    CHECK(path.block == "b3");
    // Named topologies (not Slinky's example names) through the list form.
    const TopologySpec named = spec("block:slinky:nvl,switch:slinky:ib");
    const NetworkPosition q = position_of(named, {}, {{kSlinkyTopologyAnnotation, "ib:spine:leaf7,nvl:domain3"}});
    CHECK(q.block == "domain3");
    CHECK(q.switches == Strings{"leaf7", "spine"});
    // The label with the annotation's key is not the annotation.
    const NetworkPosition label_only = position_of(s, {{kSlinkyTopologyAnnotation, "topo-block:b1"}}, {});
    CHECK(label_only.empty());
    CHECK(label_only.why_no_block == "no annotation topology.slinky.slurm.net/spec");
    const NetworkPosition no_block = position_of(s, {}, {{kSlinkyTopologyAnnotation, "topo-switch:s1"}});
    CHECK(no_block.why_no_block == "annotation topology.slinky.slurm.net/spec names no topology topo-block");
    const NetworkPosition two_blocks = position_of(s, {}, {{kSlinkyTopologyAnnotation, "topo-block:b1:b2"}});
    CHECK(two_blocks.block.empty());
    CHECK_THAT(two_blocks.why_no_block, Catch::Contains("more than one block"));
}

TEST_CASE("a list spec: LEVEL:SOURCE entries, labels and annotations, switches leaf first") {
    const TopologySpec s =
        spec(" block:cloud.google.com/gce-topology-block , Switch:topology.k8s.aws/network-node-layer-3,"
             "switch:annotation:example.com/spine");
    CHECK(s.preset.empty());
    REQUIRE(s.entries.size() == 3);
    CHECK(s.entries[0] == TopologyEntry{TopologyLevel::Block, {TopologySource::Kind::Label, kGkeBlock}});
    CHECK(s.entries[1] ==
          TopologyEntry{TopologyLevel::Switch, {TopologySource::Kind::Label, "topology.k8s.aws/network-node-layer-3"}});
    CHECK(s.entries[2] == TopologyEntry{TopologyLevel::Switch, {TopologySource::Kind::Annotation, "example.com/spine"}});
    CHECK(s.text() ==
          "block:cloud.google.com/gce-topology-block,switch:topology.k8s.aws/network-node-layer-3,"
          "switch:annotation:example.com/spine");
    CHECK(spec(s.text()) == s);
    CHECK(keys_of(s).labels == Strings{kGkeBlock, "topology.k8s.aws/network-node-layer-3"});
    CHECK(keys_of(s).annotations == Strings{"example.com/spine"});

    const NetworkPosition p = position_of(s, {{kGkeBlock, "b9"}, {"topology.k8s.aws/network-node-layer-3", "leaf2"}},
                                          {{"example.com/spine", "spine1"}});
    CHECK(p == NetworkPosition{"b9", {"leaf2", "spine1"}, "", ""});
    // A block level alone: no switch path, and no reason for it either.
    const NetworkPosition only_block = position_of(spec("block:rack"), {{"rack", "r1"}}, {});
    CHECK(only_block == NetworkPosition{"r1", {}, "", ""});
}

TEST_CASE("TopologyFrom= errors say what is wrong with which entry") {
    CHECK_THAT(parse_error(""), Catch::Contains("aws, gke, oci, slinky, topograph"));
    CHECK_THAT(parse_error("azure"), Catch::Contains("'azure'") && Catch::Contains("aws, gke, oci, slinky, topograph"));
    CHECK_THAT(parse_error("rack:example.com/rack"), Catch::Contains("level 'rack' is neither block nor switch"));
    CHECK_THAT(parse_error("block:example.com/my rack"), Catch::Contains("is not a label key"));
    CHECK_THAT(parse_error("block:Example.com/rack"), Catch::Contains("is not a label key"));
    CHECK_THAT(parse_error("block:annotation:-bad"), Catch::Contains("is not an annotation key"));
    CHECK_THAT(parse_error("block:slinky:"), Catch::Contains("slinky: takes the name of a Slurm topology"));
    CHECK_THAT(parse_error("block:label:rack"), Catch::Contains("neither a label key, annotation:KEY nor slinky:TOPOLOGY"));
    CHECK_THAT(parse_error("block:a,block:b"), Catch::Contains("more than one block level"));
    CHECK_THAT(parse_error("switch:a,switch:b,switch:a"), Catch::Contains("switch level 'a' is named twice"));
    CHECK_THAT(parse_error("switch:slinky:topo-switch,switch:leaf"), Catch::Contains("takes no other switch level"));
    CHECK_THAT(parse_error("switch:a,,switch:b"), Catch::Contains("empty entry"));
    CHECK_THAT(parse_error("switch:a,"), Catch::Contains("empty entry"));
    CHECK_THAT(parse_error("aws,block:rack"), Catch::Contains("preset 'aws' stands alone"));
}

TEST_CASE("TopologyFrom= and TopologyName= in k8s_cons_tres.conf") {
    const std::string base = "Kubeconfig=/etc/slurm/kc\n";
    ConfigResult none = parse_plugin_config(base, "k.conf");
    REQUIRE(none.config);
    CHECK_FALSE(none.config->topology_from);
    CHECK(none.config->topology_name.empty());

    ConfigResult ok = parse_plugin_config(base + "TopologyFrom=gke\ntopologyname=topo-gke\n", "k.conf");
    REQUIRE(ok.config);
    REQUIRE(ok.config->topology_from);
    CHECK(ok.config->topology_from->preset == "gke");
    CHECK(ok.config->topology_name == "topo-gke");

    ConfigResult list = parse_plugin_config(base + "TopologyFrom=block:example.com/rack # racks\n", "k.conf");
    REQUIRE(list.config);
    CHECK(list.config->topology_from->text() == "block:example.com/rack");

    ConfigResult bad = parse_plugin_config(base + "TopologyFrom=azure\n", "k.conf");
    CHECK_FALSE(bad.config);
    CHECK_THAT(bad.error, Catch::StartsWith("k.conf:2: bad value for TopologyFrom='azure': ") &&
                              Catch::Contains("aws, gke, oci, slinky, topograph"));
    ConfigResult bad_entry = parse_plugin_config(base + "TopologyFrom=block:a,rack:b\n", "k.conf");
    CHECK_THAT(bad_entry.error, Catch::Contains("level 'rack' is neither block nor switch"));
    ConfigResult bad_name = parse_plugin_config(base + "TopologyName=topo:1\n", "k.conf");
    CHECK_THAT(bad_name.error, Catch::Contains("k.conf:2: bad value for TopologyName='topo:1': ") &&
                                   Catch::Contains("not a topology name"));
}

TEST_CASE("a node without the labels has an empty position and says why") {
    const NetworkPosition p = position_of(spec("gke"), {{"kubernetes.io/hostname", "cpu01"}}, {});
    CHECK(p.empty());
    CHECK(p.why_no_block == "no label cloud.google.com/gce-topology-subblock");
    CHECK(p.why_no_switches == "no label cloud.google.com/gce-topology-subblock");

    const TopologySpec aws = spec("aws");
    // A gap: layer-2 missing between two present layers.
    const NetworkPosition gap = position_of(aws,
                                            {{"topology.k8s.aws/network-node-layer-3", "nn-3"},
                                             {"topology.k8s.aws/network-node-layer-1", "nn-1"}},
                                            {});
    CHECK(gap.block == "nn-3");
    CHECK(gap.switches.empty());
    CHECK(gap.why_no_switches ==
          "no label topology.k8s.aws/network-node-layer-2 but label topology.k8s.aws/network-node-layer-1 "
          "(further out) is set");
    // No leaf, but levels above it: no path either.
    const NetworkPosition no_leaf = position_of(aws, {{"topology.k8s.aws/network-node-layer-2", "nn-2"}}, {});
    CHECK(no_leaf.switches.empty());
    CHECK_THAT(no_leaf.why_no_switches, Catch::StartsWith("no label topology.k8s.aws/network-node-layer-3 but"));
    // The top missing: a shallower path, no reason.
    const NetworkPosition shallow = position_of(aws,
                                                {{"topology.k8s.aws/network-node-layer-3", "nn-3"},
                                                 {"topology.k8s.aws/network-node-layer-2", "nn-2"}},
                                                {});
    CHECK(shallow.switches == Strings{"nn-3", "nn-2"});
    CHECK(shallow.why_no_switches.empty());
    // Empty and overlong values do not count.
    const NetworkPosition empty_value = position_of(spec("block:rack"), {{"rack", ""}}, {});
    CHECK(empty_value.why_no_block == "label rack is empty");
    const NetworkPosition long_value =
        position_of(spec("block:annotation:rack"), {}, {{"rack", std::string(kMaxTopologyValue + 1, 'r')}});
    CHECK(long_value.why_no_block == "annotation rack is longer than 1024 characters");
}

TEST_CASE("Slurm names: safe values are themselves, others map deterministically and stay distinct") {
    CHECK(slurm_topology_name("nn-e50490a237cb0f01a") == "nn-e50490a237cb0f01a");
    CHECK(slurm_topology_name("S-2c5eab036832a42e") == "S-2c5eab036832a42e");
    CHECK(slurm_topology_name("rack_1.a") == "rack_1.a");

    const std::string slash = slurm_topology_name("rack/1");
    CHECK_THAT(slash, Catch::Matches("rack_1--[0-9a-f]{12}"));
    CHECK(slurm_topology_name("rack/1") == slash);  // the same every time

    // Values that clean up alike, and values that already look cleaned up.
    const Strings values = {"rack/1",  "rack:1",  "rack 1", "rack_1", "rack_1--000000000000", slash, "-rack1",
                            "rack1",   "",        ".",      std::string(64, 'a'), std::string(63, 'a'),
                            std::string(70, 'a') + "b", std::string(70, 'a') + "c", "ocid1.computelocalblock.oc1.iad.anuwcljrg5pyaeyc/x"};
    std::set<std::string> names;
    for (const std::string &v : values) {
        const std::string n = slurm_topology_name(v);
        INFO(v << " -> " << n);
        CHECK(!n.empty());
        CHECK(n.size() <= 63);
        CHECK(std::isalnum(static_cast<unsigned char>(n.front())));
        CHECK(n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == std::string::npos);
        names.insert(n);
    }
    CHECK(names.size() == values.size());
    CHECK(slurm_topology_name(std::string(63, 'a')) == std::string(63, 'a'));
    CHECK(slurm_topology_name("rack_1--000000000000") != "rack_1--000000000000");
}

TEST_CASE("hostlists: ranges of one width, everything else listed") {
    CHECK(hostlist_of({"gpu03", "gpu01", "gpu02", "gpu04"}) == "gpu[01-04]");
    CHECK(hostlist_of({"n10", "n01", "n02", "n03", "n05", "n9", "login", "n10"}) == "login,n[01-03,05,10],n9");
    CHECK(hostlist_of({"ip-10-0-0-1.ec2.internal", "ip-10-0-0-2.ec2.internal"}) ==
          "ip-10-0-0-1.ec2.internal,ip-10-0-0-2.ec2.internal");
    CHECK(hostlist_of({"7007", "7008"}) == "7007,7008");
    CHECK(hostlist_of({"sb-a", "sb-b"}) == "sb-a,sb-b");
    CHECK(hostlist_of({}).empty());
}

TEST_CASE("topology.conf for 16 nodes in 4 blocks under 2 switches, exactly") {
    const std::vector<PositionedNode> nodes = sixteen_nodes();
    const TopologyOutput tree = topology_conf_lines(nodes);
    CHECK(tree.lines == Strings{
                            "SwitchName=sb-a Nodes=gpu[05-08]",
                            "SwitchName=sb-b Nodes=gpu[13-16]",
                            "SwitchName=sb-c Nodes=gpu[01-04]",
                            "SwitchName=sb-d Nodes=gpu[09-12]",
                            "SwitchName=blk-1 Switches=sb-c,sb-d",
                            "SwitchName=blk-2 Switches=sb-a,sb-b",
                        });
    CHECK(tree.left_out == std::vector<LeftOut>{{"cpu01", "no label cloud.google.com/gce-topology-subblock"}});
    REQUIRE(tree.warnings.size() == 1);
    CHECK(tree.warnings[0] ==
          "the tree has 2 top switches (blk-[1-2]): Slurm runs no job over nodes under different ones; if they "
          "are connected, add SwitchName=root Switches=blk-[1-2]");

    // Blocks under the same GKE block next to each other, so that Slurm
    // joins sb-c with sb-d and sb-a with sb-b into its larger blocks.
    const TopologyOutput blocks = block_conf_lines(nodes);
    CHECK(blocks.lines == Strings{
                              "BlockName=sb-c Nodes=gpu[01-04]",
                              "BlockName=sb-d Nodes=gpu[09-12]",
                              "BlockName=sb-a Nodes=gpu[05-08]",
                              "BlockName=sb-b Nodes=gpu[13-16]",
                          });
    CHECK(blocks.left_out == std::vector<LeftOut>{{"cpu01", "no label cloud.google.com/gce-topology-subblock"}});
    CHECK(blocks.warnings.empty());  // equal blocks: Slurm's default base fits
}

TEST_CASE("topology.yaml: a block and a tree topology, as Slurm 25.05+ reads them") {
    const TopologyOutput y = topology_yaml(sixteen_nodes(), "k8s");
    std::string text;
    for (const std::string &l : y.lines) text += l + "\n";
    CHECK(text ==
          "- topology: k8s-block\n"
          "  cluster_default: false\n"
          "  block:\n"
          "    blocks:\n"
          "      - block: sb-c\n"
          "        nodes: gpu[01-04]\n"
          "      - block: sb-d\n"
          "        nodes: gpu[09-12]\n"
          "      - block: sb-a\n"
          "        nodes: gpu[05-08]\n"
          "      - block: sb-b\n"
          "        nodes: gpu[13-16]\n"
          "- topology: k8s-tree\n"
          "  cluster_default: false\n"
          "  tree:\n"
          "    switches:\n"
          "      - switch: sb-a\n"
          "        nodes: gpu[05-08]\n"
          "      - switch: sb-b\n"
          "        nodes: gpu[13-16]\n"
          "      - switch: sb-c\n"
          "        nodes: gpu[01-04]\n"
          "      - switch: sb-d\n"
          "        nodes: gpu[09-12]\n"
          "      - switch: blk-1\n"
          "        children: sb-c,sb-d\n"
          "      - switch: blk-2\n"
          "        children: sb-a,sb-b\n");
    CHECK(y.left_out == std::vector<LeftOut>{{"cpu01", "block: no label cloud.google.com/gce-topology-subblock"},
                                             {"cpu01", "tree: no label cloud.google.com/gce-topology-subblock"}});
    CHECK(y.warnings.size() == 1);  // the tree's two tops

    // Names YAML would read as something else are quoted.
    const TopologySpec rack = spec("block:rack,switch:rack");
    const TopologyOutput q = topology_yaml({{"10-0-0-1", position_of(rack, {{"rack", "true"}}, {})},
                                            {"n1", position_of(rack, {{"rack", "7007"}}, {})}},
                                           "k8s");
    CHECK(q.lines == Strings{
                         "- topology: k8s-block",
                         "  cluster_default: false",
                         "  block:",
                         "    blocks:",
                         "      - block: \"7007\"",
                         "        nodes: n1",
                         "      - block: \"true\"",
                         "        nodes: \"10-0-0-1\"",
                         "- topology: k8s-tree",
                         "  cluster_default: false",
                         "  tree:",
                         "    switches:",
                         "      - switch: \"7007\"",
                         "        nodes: n1",
                         "      - switch: \"true\"",
                         "        nodes: \"10-0-0-1\"",
                     });
    CHECK(topology_yaml({}, "k8s").lines.empty());
}

TEST_CASE("nodes that contradict the tree are left out; uneven blocks get BlockSizes advice") {
    const TopologySpec s = spec("block:rack,switch:rack,switch:spine");
    const std::vector<PositionedNode> nodes = {
        {"n1", position_of(s, {{"rack", "r1"}, {"spine", "sp1"}}, {})},
        {"n2", position_of(s, {{"rack", "r1"}, {"spine", "sp1"}}, {})},
        {"n3", position_of(s, {{"rack", "r1"}, {"spine", "sp2"}}, {})},  // r1 is under sp1
        {"n4", position_of(s, {{"rack", "sp1"}, {"spine", "sp9"}}, {})},  // sp1 is no leaf
        {"n5", position_of(s, {{"rack", "r2"}, {"spine", "sp1"}}, {})},
    };
    const TopologyOutput tree = topology_conf_lines(nodes);
    CHECK(tree.lines == Strings{"SwitchName=r1 Nodes=n[1-2]", "SwitchName=r2 Nodes=n5", "SwitchName=sp1 Switches=r[1-2]"});
    CHECK(tree.left_out ==
          std::vector<LeftOut>{{"n3", "switch r1 is under sp2 here, but under sp1 for node n1"},
                               {"n4", "switch sp1 is at level 0 here (0: the leaf), but at level 1 for node n1"}});
    CHECK(tree.warnings.empty());  // one top switch

    // The first block (r1: n1, n2, n3) is bigger than the smallest (r2: n5).
    const TopologyOutput blocks = block_conf_lines(nodes);
    CHECK(blocks.lines == Strings{"BlockName=r1 Nodes=n[1-3]", "BlockName=r2 Nodes=n5", "BlockName=sp1 Nodes=n4"});
    REQUIRE(blocks.warnings.size() == 1);
    CHECK_THAT(blocks.warnings[0], Catch::Contains("first block's 3 as the base block size") &&
                                       Catch::Contains("BlockSizes=1,2,4,8,16"));
}
