# SPDX-License-Identifier: GPL-2.0-or-later
"""One slurmctld with all three node modes (doc/architecture.md, "Three node modes"): a
plain Slurm node, a Kubernetes node with its slurmd and slurm.conf line, and
Kubernetes nodes that node discovery makes EXTERNAL nodes (selected by the
label slurm-bridge's external nodes carry). Discovery leaves the slurm.conf
nodes alone, batch jobs run on the slurmd nodes, external jobs on the
external ones, on both Kubernetes kinds pod-held devices stay out and claims
hold what the job got, and k8s-cons-tres-inspect, reading the plugin's own
k8s_cons_tres.conf, names each node's mode. On 25.11.7 and 26.05.3; skipped
when they are not built, unless K8S_REQUIRE_SLURM_RELEASES=1."""
import json
import re

import pytest

from harness.alignment import running_allocations
from harness.cluster import Cluster, find_inspect, new_run_dir
from harness.jobs import wait_job
from harness.kube import cpu_ids_by_device, job_claimed, kubectl, pod_held
from harness.wait import wait_for
from conftest import FIXTURES
from test_releases_plugin import require

RELEASES = ["25.11.7", "26.05.3"]


@pytest.fixture(scope="module", params=RELEASES)
def mixed(request):
    require(request.param)
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.up(str(FIXTURES / "mixed_external.json"), slurm=request.param, external=True)
        yield c
    finally:
        c.down()


def state(c, node) -> str:
    m = re.search(r"\bState=(\S+)", c.run("scontrol", "show", "node", node).stdout)
    return m.group(1) if m else ""


def submit(c, *args) -> int:
    return int(c.run("sbatch", "--parsable", *args).stdout.strip().split(";")[0])


def test_three_node_modes_in_one_slurmctld(mixed):
    c = mixed
    names = c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()
    assert sorted(names) == ["k8s-e1", "k8s-e2", "kube-sd", "plain-1"], names
    assert "EXTERNAL" in state(c, "k8s-e1") and "EXTERNAL" in state(c, "k8s-e2")
    # discovery did not touch the slurm.conf nodes, though kube-sd publishes slices
    for n in ("plain-1", "kube-sd"):
        assert "EXTERNAL" not in state(c, n), state(c, n)
        assert "k8s_cons_tres" not in c.run("scontrol", "show", "node", n).stdout

    held = pod_held(c)
    plain = submit(c, "-w", "plain-1", "-c", "2", "--mem=100", "--wrap", "sleep 300")
    batch = submit(c, "-w", "kube-sd", "-c", "4", "--gres=gpu:1", "--mem=100", "--wrap", "sleep 300")
    ext = submit(c, "--external", "-w", "k8s-e1", "-c", "4", "--gres=gpu:1", "--mem=100")
    for j in (plain, batch, ext):
        wait_job(c, j, states={"RUNNING"})
    allocs = running_allocations(c, [plain, batch, ext])
    cpu_ids = cpu_ids_by_device(c)
    for j, node in ((batch, "kube-sd"), (ext, "k8s-e1")):
        a, = allocs[j]
        assert a.node == node
        cpus, gpus = held[node]
        assert not set(a.cpu_ids) & cpus and not set(a.gpu_idx) & gpus, f"job {j} got pod-held devices"
        want = {node: (sorted(a.cpu_ids), sorted(a.gpu_idx))}
        wait_for(lambda: {n: (sorted(x), sorted(y)) for n, (x, y) in job_claimed(c, j, cpu_ids).items()} == want,
                 timeout=30, what=f"the claims of job {j} to hold exactly its devices")
    assert not job_claimed(c, plain, cpu_ids), "a job on a plain node got claims"
    c.run("scancel", str(plain), str(batch), str(ext))
    for j in (plain, batch, ext):
        wait_job(c, j)
    wait_for(lambda: not job_claimed(c, batch, cpu_ids) and not job_claimed(c, ext, cpu_ids), timeout=30,
             what="the ended jobs' claims to go")


def test_inspect_names_each_nodes_mode_as_the_plugin_runs_it(mixed):
    """--config: the plugin's own file (its kubeconfig, NodeDiscovery and
    NodeSelector); the node definitions it prints are the ones slurmctld got."""
    c = mixed
    out = c.run(str(find_inspect()), "--json", "--config", str(c.plugin_conf)).stdout
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert sorted(nodes) == ["k8s-e1", "k8s-e2", "kube-sd"], "plain-1 publishes no slices"
    sd = nodes["kube-sd"]
    assert sd["mode"] == "slurmd" and "not matched by NodeSelector=" in sd["mode_note"], sd["mode_note"]
    assert sd["external_node"] is None and sd["slurm_conf"].startswith("NodeName=kube-sd ")
    for name in ("k8s-e1", "k8s-e2"):
        n = nodes[name]
        assert n["mode"] == "external" and "no slurmd" in n["mode_note"], n["mode_note"]
        assert n["slurm_conf"] == "" and n["gres_conf"] == []
        made = dict(kv.split("=", 1) for kv in n["external_node"].split() if "=" in kv)
        have = c.run("scontrol", "show", "node", name).stdout
        for key, shown in (("CPUs", "CPUTot"), ("Sockets", "Sockets"), ("CoresPerSocket", "CoresPerSocket"),
                           ("ThreadsPerCore", "ThreadsPerCore"), ("RealMemory", "RealMemory")):
            assert re.search(rf"\b{shown}={made[key]}\b", have), (name, key, made[key])
        assert sorted(made["Features"].split(",")) == sorted(
            re.search(r"AvailableFeatures=(\S+)", have).group(1).split(","))
        assert re.search(rf"\bGres={re.escape(made['Gres'])}", have), (made["Gres"], have)
    # a cordoned node says so; uncordoned, it is back
    kubectl(c, "cordon", "k8s-e2")
    try:
        wait_for(lambda: "DRAIN" in state(c, "k8s-e2"), timeout=60, what="k8s-e2 drained on cordon")
        out = c.run(str(find_inspect()), "--config", str(c.plugin_conf), "--node", "k8s-e2").stdout
        assert "mode: external; " in out and "cordoned in Kubernetes" in out, out
    finally:
        kubectl(c, "uncordon", "k8s-e2")
    wait_for(lambda: "DRAIN" not in state(c, "k8s-e2"), timeout=60, what="k8s-e2 resumed after uncordon")
