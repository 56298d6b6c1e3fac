# SPDX-License-Identifier: GPL-2.0-or-later
"""Network topology for slurmd nodes through generated files (issue 37):
`k8s-cons-tres-inspect --topology` makes topology.conf lines of the
Kubernetes Nodes' labels as TopologyFrom= maps them; installed as an
admin would, slurmctld's topology/tree loads them and packs multi-node
jobs under the fewest switches. fixtures/network.json: GKE's labels,
blocks blk-a (odd-numbered nodes) and blk-b (even) of two sub-blocks each
(TopologyFrom=gke makes each sub-block a leaf switch under its block's
switch), so that by name and slurm.conf order the nodes alternate between
the blocks, and net-x1 without labels."""
from pathlib import Path

import pytest

from harness import scenarios
from harness.alignment import expand_nodes
from harness.cluster import running
from harness.jobs import sbatch, show_job, wait_job
from harness.fixture import load

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "network.json"
BLOCK = "cloud.google.com/gce-topology-block"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"


@pytest.fixture(scope="module")
def cluster():
    # as testsuite/cluster up --conf TopologyFrom=gke --topology tree
    with running(FIXTURE, plugin_extra="TopologyFrom=gke\n", topology="tree") as c:
        yield c


@pytest.fixture(autouse=True)
def no_jobs_left(cluster):
    yield
    scenarios.end_all_jobs(cluster)


def labels():
    return {n.name: dict(n.labels) for n in load(str(FIXTURE)).nodes}


def switches(cluster) -> dict:
    """scontrol show topology: switch -> (nodes, child switches)."""
    out = {}
    for line in cluster.run("scontrol", "show", "topology").stdout.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" in fields:
            out[fields["SwitchName"]] = (expand(cluster, fields.get("Nodes")),
                                         expand(cluster, fields.get("Switches")))
    return out


def expand(cluster, hostlist) -> set:
    return set(expand_nodes(cluster, hostlist)) if hostlist and hostlist != "(null)" else set()


def job_nodes(cluster, job) -> set:
    return expand(cluster, show_job(cluster, job)["NodeList"])


def test_slurm_has_the_switches_the_labels_name(cluster):
    sw = switches(cluster)
    for node, lab in labels().items():
        if not lab:   # net-x1: in no switch, and inspect said why
            assert all(node not in nodes for nodes, _ in sw.values())
            continue
        leaf = lab[SUBBLOCK]
        assert node in sw[leaf][0], (node, sw)
        assert node in sw[lab[BLOCK]][0]     # below its block's switch
        assert leaf in sw[lab[BLOCK]][1]     # which is the leaf's parent
    err = (cluster.run_dir / "log" / "inspect-topology.err").read_text()
    assert f"node net-x1 is not in the tree: no label {SUBBLOCK}" in err


def test_four_node_jobs_land_in_one_block_each(cluster):
    lab = labels()
    first = sbatch(cluster, "-N", "4", "--exclusive", "--wrap", "sleep 300")
    wait_job(cluster, first, {"RUNNING"}, timeout=60)
    second = sbatch(cluster, "-N", "4", "--exclusive", "--wrap", "sleep 300")
    wait_job(cluster, second, {"RUNNING"}, timeout=60)
    blocks = []
    for job in (first, second):
        nodes = job_nodes(cluster, job)
        assert len(nodes) == 4
        # the nodes alternate between the blocks: without the topology
        # plugin each job spans both
        assert len({lab[n].get(BLOCK) for n in nodes}) == 1, (job, nodes)
        blocks.append(lab[next(iter(nodes))][BLOCK])
    assert sorted(blocks) == ["blk-a", "blk-b"]
