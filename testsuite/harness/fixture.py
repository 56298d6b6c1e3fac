# SPDX-License-Identifier: GPL-2.0-or-later
"""Cluster fixtures: nodes as hwloc synthetic topologies, their GPUs, and what
Kubernetes pods already hold. The format is documented in doc/testing.md
("Fixture format").

Topology questions (how many sockets, which cores sit in a NUMA node) are
answered by hwloc itself (hwloc-calc), never by parsing the string here.
"""
import json
import re
import subprocess
from dataclasses import dataclass, field, replace
from functools import lru_cache

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
CPU_MODES = ("individual", "grouped")


class FixtureError(ValueError):
    pass


@lru_cache(maxsize=None)
def _calc(topology: str, *args: str) -> str:
    try:
        out = subprocess.run(["hwloc-calc", "-i", topology, *args],
                             check=True, capture_output=True, text=True, timeout=30)
    except FileNotFoundError as e:
        raise FixtureError("hwloc-calc not found: apt-get install hwloc") from e
    except subprocess.CalledProcessError as e:
        raise FixtureError(f"hwloc rejects topology {topology!r}: {e.stderr.strip()}") from e
    return out.stdout.strip()


def _count(topology: str, kind: str) -> int:
    return int(_calc(topology, "--number-of", kind, "all"))


@dataclass(frozen=True)
class Gpu:
    numa: int
    pcie_root: str


@dataclass(frozen=True)
class Node:
    name: str
    topology: str
    cpu_mode: str
    gpus: tuple
    kubernetes: bool = True  # false: a plain Slurm node, no slices
    slurm_topology: str = ""  # what slurm.conf says, when it differs
    reserved_cpus: tuple = ()  # CPUs the dra.cpu driver reserves (--reserved-cpus)
    # A Kubernetes node that keeps its slurm.conf line and slurmd when the
    # cluster discovers the others as EXTERNAL nodes (a mixed cluster).
    slurmd: bool = False
    labels: tuple = ()  # its Node object's labels, (key, value) pairs
    annotations: tuple = ()  # and annotations, (key, value) pairs

    @property
    def slurm(self) -> "Node":
        """The node as slurm.conf describes it."""
        if not self.slurm_topology:
            return self
        return replace(self, topology=self.slurm_topology, slurm_topology="")

    @property
    def sockets(self) -> int:
        return _count(self.topology, "package")

    @property
    def cores(self) -> int:
        return _count(self.topology, "core")

    @property
    def cpus(self) -> int:
        return _count(self.topology, "pu")

    @property
    def numa_nodes(self) -> int:
        return _count(self.topology, "numa")

    @property
    def cores_per_socket(self) -> int:
        return self.cores // self.sockets

    @property
    def threads_per_core(self) -> int:
        return self.cpus // self.cores

    def cores_of_numa(self, numa: int) -> list:
        """Core logical indexes in NUMA node `numa`: Slurm's abstract core
        numbering (socket * cores_per_socket + core) for these topologies."""
        text = _calc(self.topology, f"numa:{numa}", "--intersect", "core")
        return [int(x) for x in text.split(",") if x != ""]


@dataclass(frozen=True)
class PodHolding:
    namespace: str
    name: str
    node: str
    cpus: tuple
    gpus: tuple


@dataclass(frozen=True)
class Fixture:
    name: str
    gpu_type: str
    nodes: tuple
    held_by_pods: tuple = field(default=())
    # NodeSelector= of a cluster that discovers its Kubernetes nodes
    # (--external); "" selects every node.
    node_selector: str = ""

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def _require(obj: dict, key: str, where: str):
    if key not in obj:
        raise FixtureError(f"{where}: missing key '{key}'")
    return obj[key]


def _labels(labels, where: str, what: str = "labels") -> tuple:
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                               for k, v in labels.items()):
        raise FixtureError(f"{where}: {what} must map strings to strings")
    return tuple(sorted(labels.items()))


def parse(data: dict, source: str = "fixture") -> Fixture:
    nodes = []
    for i, n in enumerate(_require(data, "nodes", source)):
        where = f"{source}: nodes[{i}]"
        name = _require(n, "name", where)
        if not NAME_RE.match(name):
            raise FixtureError(f"{where}: node name {name!r} is not a DNS label")
        mode = n.get("cpu_mode", "individual")
        if mode not in CPU_MODES:
            raise FixtureError(f"{where}: cpu_mode {mode!r} is not one of {CPU_MODES}")
        gpus = tuple(Gpu(int(_require(g, "numa", f"{where}.gpus[{j}]")),
                         str(_require(g, "pcie_root", f"{where}.gpus[{j}]")))
                     for j, g in enumerate(n.get("gpus", [])))
        node = Node(name, _require(n, "topology", where), mode, gpus, bool(n.get("kubernetes", True)),
                    n.get("slurm_topology", ""), tuple(int(c) for c in n.get("reserved_cpus", [])),
                    bool(n.get("slurmd", False)), _labels(n.get("labels", {}), where),
                    _labels(n.get("annotations", {}), where, "annotations"))
        if node.cores % node.sockets:
            raise FixtureError(f"{where}: cores are not evenly spread over sockets")
        for g in gpus:
            if not 0 <= g.numa < node.numa_nodes:
                raise FixtureError(f"{where}: GPU on NUMA node {g.numa}, but the topology has {node.numa_nodes}")
        nodes.append(node)
    names = {n.name for n in nodes}
    if len(names) != len(nodes):
        raise FixtureError(f"{source}: duplicate node names")
    held = []
    for i, h in enumerate(data.get("held_by_pods", [])):
        where = f"{source}: held_by_pods[{i}]"
        node = _require(h, "node", where)
        if node not in names:
            raise FixtureError(f"{where}: unknown node {node!r}")
        if not next(n for n in nodes if n.name == node).kubernetes:
            raise FixtureError(f"{where}: node {node!r} is not a Kubernetes node")
        held.append(PodHolding(_require(h, "namespace", where), _require(h, "name", where), node,
                               tuple(h.get("cpus", [])), tuple(h.get("gpus", []))))
    return Fixture(data.get("name", "fixture"), data.get("gpu_type", "gpu"), tuple(nodes), tuple(held),
                   str(data.get("node_selector", "")))


def load(path: str) -> Fixture:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise FixtureError(f"{path}: {e}") from e
    return parse(data, path)


# ---- clusters from recorded slices (testsuite/cluster up --slices) ---------

@dataclass(frozen=True)
class RecordedGpu:
    numa: int          # NUMA id, -1 when the plugin cannot tell
    device: str
    cores: tuple       # Slurm core indices of its NUMA node (gres.conf Cores=)


@dataclass(frozen=True)
class RecordedNode:
    """A node as k8s-cons-tres-inspect derives it from recorded slices; the
    same interface as Node where the harness writes slurm.conf/gres.conf."""
    name: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    gpus: tuple
    numa_cores: tuple  # ((numa id, (Slurm core indices)), ...)
    kubernetes: bool = True

    @property
    def slurm(self) -> "RecordedNode":
        return self

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def cpus(self) -> int:
        return self.cores * self.threads_per_core

    def cores_of_numa(self, numa: int) -> list:
        return list(dict(self.numa_cores).get(numa, ()))


@dataclass(frozen=True)
class Recorded:
    """Nodes and API objects from recorded slices and claims (kubectl -o json)."""
    name: str
    gpu_type: str
    nodes: tuple
    seed_items: tuple
    held_by_pods: tuple = field(default=())
    # NodeSelector= of a cluster that discovers its Kubernetes nodes
    # (--external); "" selects every node.
    node_selector: str = ""

    def node(self, name: str) -> RecordedNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def from_inspect(report: dict, seed_items: list, gpu_type: str = "dra") -> Recorded:
    """The nodes of `k8s-cons-tres-inspect --json` output."""
    nodes = []
    for n in report["nodes"]:
        if not n.get("sockets"):
            raise FixtureError(f"node {n['name']}: no CPU slices the plugin can read: {n.get('invalid')}")
        if not NAME_RE.match(n["name"]):
            raise FixtureError(f"node {n['name']!r} is not a DNS label")
        gpus = tuple(RecordedGpu(-1 if g["numa"] is None else int(g["numa"]), g["device"],
                                 tuple(g["slurm_cores"])) for g in n["gpus"])
        numa_cores = tuple((m["id"], tuple(m["slurm_cores"])) for m in n["numa_nodes"])
        nodes.append(RecordedNode(n["name"], n["sockets"], n["cores_per_socket"],
                                  n["threads_per_core"], gpus, numa_cores))
    if not nodes:
        raise FixtureError("the recorded slices describe no node")
    return Recorded("recorded", gpu_type, tuple(nodes), tuple(seed_items))
