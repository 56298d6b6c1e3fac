# SPDX-License-Identifier: GPL-2.0-or-later
"""Read a job's per-node allocation back from Slurm and say how it sits on the
node's topology (NUMA nodes spanned, GPUs on those NUMA nodes or not)."""
import re
from dataclasses import dataclass


def parse_id_list(text: str) -> list:
    """Slurm's "0-3,8,10-11" into [0, 1, 2, 3, 8, 10, 11]."""
    out = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def format_id_list(ids) -> str:
    """[0, 1, 2, 3, 8] into "0-3,8"."""
    ids = sorted(ids)
    parts, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass
class NodeAllocation:
    node: str
    cpu_ids: list
    gpu_idx: list


def job_allocations(cluster, job_id: int) -> list:
    """Per-node CPU_IDs and GPU indices from `scontrol -d show job`."""
    res = cluster.run("scontrol", "-d", "show", "job", str(job_id), check=False, timeout=20)
    allocs = []
    for line in res.stdout.splitlines():
        m = re.search(r"Nodes=(\S+) CPU_IDs=(\S+).*?GRES=(\S*)", line)
        if not m:
            continue
        gpus = []
        g = re.search(r"IDX:([0-9,\-]+)", m.group(3))
        if g:
            gpus = parse_id_list(g.group(1))
        for node in expand_nodes(cluster, m.group(1)):
            allocs.append(NodeAllocation(node, parse_id_list(m.group(2)), gpus))
    return allocs


def running_allocations(cluster, jobs) -> dict:
    """job -> its per-node allocations, for the jobs of `jobs` running now."""
    from .jobs import show_job
    return {j: job_allocations(cluster, j) for j in jobs
            if show_job(cluster, j).get("JobState") == "RUNNING"}


def gres_used_idx(cluster, node) -> set:
    """GPU indices `scontrol -d show node` counts as used (by jobs, and the
    plugin's for pods)."""
    out = cluster.run("scontrol", "-d", "show", "node", node, timeout=20).stdout
    m = re.search(r"GresUsed=\S*\(IDX:([0-9,\-]+)\)", out)
    return set(parse_id_list(m.group(1))) if m else set()


def expand_nodes(cluster, hostlist: str) -> list:
    return cluster.run("scontrol", "show", "hostnames", hostlist, timeout=20).stdout.split()


def describe(fx_node, alloc: NodeAllocation) -> dict:
    """NUMA nodes of the CPUs and of the GPUs; Slurm CPU ids are
    core * threads_per_core + thread on these nodes."""
    core_numa = {}
    for numa in range(fx_node.numa_nodes):
        for core in fx_node.cores_of_numa(numa):
            core_numa[core] = numa
    tpc = fx_node.threads_per_core
    cpu_numas = sorted({core_numa[c // tpc] for c in alloc.cpu_ids})
    gpu_numas = sorted({fx_node.gpus[i].numa for i in alloc.gpu_idx})
    return {"cpu_numas": cpu_numas, "gpu_numas": gpu_numas,
            "gpus_aligned": all(n in cpu_numas for n in gpu_numas)}


