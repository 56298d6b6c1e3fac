# SPDX-License-Identifier: GPL-2.0-or-later
"""What the test API server starts with, from a cluster fixture: each node's
ResourceSlices exactly as the dra.cpu and gpu.nvidia.com drivers publish them
(made by the core's fixture generator from the node's hwloc topology), and
the ResourceClaims that pods already hold (held_by_pods), allocated."""
import json
import subprocess
import uuid
from pathlib import Path

import yaml

from . import fixture as fixture_mod

CPU_DRIVER = "dra.cpu"
GPU_DRIVER = "gpu.nvidia.com"
MODE_ARG = {"individual": "individual", "grouped": "numa"}


def node_slices(generator: str, node) -> list:
    cmd = [generator, "--synthetic", node.topology, "--node", node.name,
           "--mode", MODE_ARG[node.cpu_mode]]
    for gpu in node.gpus:
        cmd += ["--gpu", f"{gpu.numa}:{gpu.pcie_root}"]
    if node.reserved_cpus:
        cmd += ["--reserved-cpus", ",".join(str(c) for c in node.reserved_cpus)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    doc = json.loads(out)
    return doc["items"] if isinstance(doc, dict) else doc


def _attr(device: dict, name: str):
    value = device.get("attributes", {}).get(name, {})
    return next(iter(value.values()), None) if value else None


def _node_selector(node: str) -> dict:
    return {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}


def _cpu_results(node, slices, cpus) -> tuple:
    """Results (and opaque config) holding exactly these CPU ids."""
    devices = [d for s in slices if s["spec"]["driver"] == CPU_DRIVER for d in s["spec"]["devices"]]
    if node.cpu_mode == "individual":
        by_id = {_attr(d, f"{CPU_DRIVER}/cpuID"): d["name"] for d in devices}
        missing = [c for c in cpus if c not in by_id]
        if missing:
            raise fixture_mod.FixtureError(f"{node.name}: no dra.cpu device for CPU ids {missing}")
        return [{"request": "cpu", "driver": CPU_DRIVER, "pool": node.name, "device": by_id[c]}
                for c in cpus], []
    # grouped by NUMA node: the share of each NUMA group, pinned by cpuset
    results = []
    for d in devices:
        numa = _attr(d, "resource.kubernetes.io/numaNode")
        in_numa = set(int(x) for x in fixture_mod._calc(node.topology, f"numa:{numa}", "--intersect", "pu").split(","))
        mine = [c for c in cpus if c in in_numa]
        if mine:
            results.append({"request": "cpu", "driver": CPU_DRIVER, "pool": node.name, "device": d["name"],
                            "shareID": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{node.name}/{d['name']}/{cpus}")),
                            "consumedCapacity": {f"{CPU_DRIVER}/cpu": str(len(mine))}})
    from .alignment import format_id_list
    config = [{"source": "FromClaim", "requests": ["cpu"],
               "opaque": {"driver": CPU_DRIVER, "parameters": {
                   "apiVersion": "v1alpha1", "cpuConfig": {"cpuset": format_id_list(cpus)}}}}]
    return results, config


def held_claim(node, slices, holding) -> dict:
    requests, results, config = [], [], []
    if holding.cpus:
        requests.append({"name": "cpu", "exactly": {"deviceClassName": CPU_DRIVER,
                                                    "allocationMode": "ExactCount",
                                                    "count": len(holding.cpus)}})
        results, config = _cpu_results(node, slices, list(holding.cpus))
    if holding.gpus:
        requests.append({"name": "gpu", "exactly": {"deviceClassName": GPU_DRIVER,
                                                    "allocationMode": "ExactCount",
                                                    "count": len(holding.gpus)}})
        results += [{"request": "gpu", "driver": GPU_DRIVER, "pool": node.name, "device": g}
                    for g in holding.gpus]
    pod = f"{holding.name}-pod"
    allocation = {"devices": {"results": results}, "nodeSelector": _node_selector(node.name)}
    if config:
        allocation["devices"]["config"] = config
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": holding.name, "namespace": holding.namespace},
            "spec": {"devices": {"requests": requests}},
            "status": {"allocation": allocation,
                       "reservedFor": [{"resource": "pods", "name": pod,
                                        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, pod))}]}}


def shipped_objects() -> list:
    """What etc/kubernetes ships besides RBAC that the plugin's writes need:
    the holder pods' PriorityClass (the server refuses pods naming a
    missing one, as kube-apiserver's Priority admission does)."""
    path = Path(__file__).resolve().parents[2] / "etc" / "kubernetes" / "base" / "priorityclass.yaml"
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def seed_objects(fx, generator: str) -> list:
    slices_by_node = {n.name: node_slices(generator, n) for n in fx.nodes if n.kubernetes}
    namespaces = sorted({h.namespace for h in fx.held_by_pods} | {"slurm"})
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]
    items += shipped_objects()
    for name in sorted(slices_by_node):
        items += slices_by_node[name]
    for h in fx.held_by_pods:
        items.append(held_claim(fx.node(h.node), slices_by_node[h.node], h))
    # Nodes with labels or annotations are seeded; the server registers the
    # rest itself.
    items += [{"apiVersion": "v1", "kind": "Node", "metadata": {
                  "name": n.name, "labels": dict(n.labels),
                  **({"annotations": dict(n.annotations)} if n.annotations else {})}}
              for n in fx.nodes if n.kubernetes and (n.labels or n.annotations)]
    return items


# ---- recorded objects (testsuite/cluster up --slices/--claims) -------------

def _items(path: str, kind: str) -> list:
    """The objects of one `kubectl get ... -o json` file (a List or one object)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise fixture_mod.FixtureError(f"{path}: {e}") from e
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else doc
    items = items if isinstance(items, list) else [items]
    out = []
    for item in items:
        if item.get("kind", kind) != kind:
            raise fixture_mod.FixtureError(f"{path}: {item.get('kind')} where a {kind} was expected")
        meta = item.get("metadata", {})
        # what the server assigned (uid, resourceVersion, ...) is assigned anew
        kept = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
        obj = {"apiVersion": item.get("apiVersion", "resource.k8s.io/v1"), "kind": kind,
               "metadata": kept, "spec": item.get("spec", {})}
        if "status" in item:
            obj["status"] = item["status"]
        out.append(obj)
    return out


def seed_recorded(slice_files, claim_files) -> list:
    """Seed objects from recorded slices and the claims pods hold."""
    slices = [o for f in slice_files for o in _items(f, "ResourceSlice")]
    claims = [o for f in claim_files for o in _items(f, "ResourceClaim")]
    namespaces = sorted({c["metadata"].get("namespace", "default") for c in claims} | {"slurm"})
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]
    return items + shipped_objects() + slices + claims
