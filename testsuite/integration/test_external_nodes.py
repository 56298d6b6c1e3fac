# SPDX-License-Identifier: GPL-2.0-or-later
"""Kubernetes nodes as Slurm EXTERNAL nodes (NodeDiscovery=external, Slurm
25.05+): no slurmd and no slurm.conf line for them. The plugin creates each
from its Node object and slices (topology, memory, GPUs with their index),
external jobs (`sbatch --external`) land on them with what pods hold kept
out, and Kubernetes' view of the node follows: cordon and NotReady drain it,
their end resumes it, a Node gone deletes it; slurm-bridge's pods' claims
count as their jobs'. Runs on 25.11.7 and 26.05.3 (the releases with
EXTERNAL nodes and GresConf); skipped, saying how to build them, when they
are not built, unless K8S_REQUIRE_SLURM_RELEASES=1."""
import re

import pytest

import json

from harness.alignment import gres_used_idx, running_allocations
from harness.cluster import Cluster, new_run_dir
from harness.jobs import show_job, wait_job
from harness.kube import cpu_ids_by_device, get_json, job_claims, kubectl, pod_held
from harness.wait import wait_for
from conftest import FIXTURES
from test_releases_plugin import require

RELEASES = ["25.11.7", "26.05.3"]
KUBE_NODES = ["k8s-n1", "k8s-n2", "k8s-n3", "k8s-n4"]


@pytest.fixture(scope="module", params=RELEASES)
def ext_cluster(request):
    require(request.param)
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        # slurm-bridge writes the claims of jobs whose AdminComment names its
        # pods; every other external job still gets the plugin's
        c.plugin_extra = "ExternalJobClaims=bridge\n"
        c.up(str(FIXTURES / "demo.json"), slurm=request.param, external=True)
        yield c
    finally:
        c.down()


def node(c, name) -> str:
    return c.run("scontrol", "show", "node", name, check=False).stdout


def field(text, key) -> str:
    m = re.search(rf"\b{key}=(\S*)", text)
    return m.group(1) if m else ""


def external_job(c, *args) -> int:
    out = c.run("sbatch", "--external", "--parsable", *args).stdout.strip()
    return int(out.split(";")[0])


def end_jobs(c):
    c.run("scancel", "--user", "root", check=False)
    wait_for(lambda: not c.run("squeue", "-h", check=False).stdout.strip(), timeout=60,
             what="all jobs to end")


def test_nodes_appear_with_their_slices_topology_and_gpus(ext_cluster):
    c = ext_cluster
    for name in KUBE_NODES:
        text = node(c, name)
        assert "EXTERNAL" in field(text, "State"), text
        assert field(text, "CPUTot") == "64", text
        assert field(text, "Sockets") == "2" and field(text, "CoresPerSocket") == "16", text
        assert field(text, "ThreadsPerCore") == "2", text
        assert field(text, "RealMemory") == "64000", text
        assert re.search(r"\bGres=gpu:[a-z0-9_]+:8\b", text), text
        assert "k8s" in field(text, "AvailableFeatures").split(","), text
        # its address is the Node's InternalIP, so slurmctld never looks the
        # name up (it resolves a dynamic node's address for every job)
        ips = [a["address"] for a in get_json(c, "node", name)["status"]["addresses"]
               if a["type"] == "InternalIP"]
        assert ips and field(text, "NodeAddr") == ips[0], text
    # no slurmd was started for them, and none was created twice
    assert not [n for n in c._pids() if n.startswith("slurmd.")]
    names = c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()
    assert sorted(set(names)) == KUBE_NODES and len(names) == len(KUBE_NODES)


def test_external_jobs_avoid_pod_held_devices_and_get_claims(ext_cluster):
    c = ext_cluster
    held = pod_held(c)
    jobs = [external_job(c, "-w", n, "-c", "4", "--gres=gpu:1", "--mem=100") for n in KUBE_NODES]
    for j in jobs:
        wait_job(c, j, states={"RUNNING"})
    allocs = running_allocations(c, jobs)
    for j in jobs:
        for a in allocs[j]:
            cpus, gpus = held.get(a.node, (set(), set()))
            assert not set(a.cpu_ids) & set(cpus), f"job {j} on {a.node} got pod-held CPUs"
            assert not set(a.gpu_idx) & set(gpus), f"job {j} on {a.node} got pod-held GPUs"
        wait_for(lambda: job_claims(c, j), timeout=30, what=f"claims of external job {j}")
    end_jobs(c)
    wait_for(lambda: not job_claims(c), timeout=30, what="claims of ended external jobs to go")
    log = (c.run_dir / "log" / "slurmctld.log").read_text(errors="replace")
    assert "Unable to resolve" not in log, "slurmctld looked up a discovered node's name"


def test_cordon_and_not_ready_drain_and_their_end_resumes(ext_cluster):
    c = ext_cluster
    kubectl(c, "cordon", "k8s-n3")
    wait_for(lambda: "cordoned in Kubernetes" in field(node(c, "k8s-n3"), "Reason") + node(c, "k8s-n3"),
             timeout=30, what="k8s-n3 drained for the cordon")
    assert "DRAIN" in field(node(c, "k8s-n3"), "State")
    kubectl(c, "uncordon", "k8s-n3")
    wait_for(lambda: "DRAIN" not in field(node(c, "k8s-n3"), "State"), timeout=30,
             what="k8s-n3 resumed after uncordon")
    ready = c.apiserver()["controlUrl"] + "/_test/nodes/k8s-n4/ready"
    _post(ready, {"status": "False"})
    wait_for(lambda: "not Ready" in node(c, "k8s-n4"), timeout=30, what="k8s-n4 drained when NotReady")
    _post(ready, {"status": "True"})
    wait_for(lambda: "DRAIN" not in field(node(c, "k8s-n4"), "State"), timeout=30,
             what="k8s-n4 resumed when Ready again")


def test_a_slice_shape_change_drains_a_busy_node_and_recreates_it_once_idle(ext_cluster):
    c = ext_cluster
    j = external_job(c, "-w", "k8s-n4", "-c", "2")
    wait_job(c, j, states={"RUNNING"})
    # the GPU driver publishes one GPU fewer (a GPU failed or was taken out)
    sl = next(s for s in get_json(c, "resourceslices")["items"]
              if s["spec"]["nodeName"] == "k8s-n4" and s["spec"]["driver"] == "gpu.nvidia.com")
    sl["spec"]["devices"] = [d for d in sl["spec"]["devices"] if d["name"] != "gpu-7"]
    kubectl(c, "replace", "-f", "-", input=json.dumps(sl))
    wait_for(lambda: "recreated once idle" in node(c, "k8s-n4"), timeout=30,
             what="busy k8s-n4 drained until it is idle", on_timeout=lambda: node(c, "k8s-n4"))
    assert "DRAIN" in field(node(c, "k8s-n4"), "State")
    assert show_job(c, j)["JobState"] == "RUNNING"  # the running job is left alone
    c.run("scancel", str(j))
    wait_job(c, j)
    wait_for(lambda: re.search(r"\bGres=gpu:[a-z0-9_]+:7\b", node(c, "k8s-n4")) and
             "DRAIN" not in field(node(c, "k8s-n4"), "State"), timeout=60,
             what="k8s-n4 recreated with 7 GPUs", on_timeout=lambda: node(c, "k8s-n4"))
    names = c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()
    assert names.count("k8s-n4") == 1, names


def test_a_node_gone_from_kubernetes_is_deleted_and_restart_rediscovers(ext_cluster):
    c = ext_cluster
    kubectl(c, "delete", "node", "k8s-n2")
    wait_for(lambda: "k8s-n2" not in c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split(), timeout=30,
             what="k8s-n2 deleted from Slurm")
    # slurmctld restarts: nodes come back from its state, none twice
    c.stop_slurmctld()
    c.start_slurmctld()
    wait_for(lambda: sorted(c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()) ==
             ["k8s-n1", "k8s-n3", "k8s-n4"], timeout=60, what="the three remaining nodes after restart")
    j = external_job(c, "-w", "k8s-n1", "-c", "2")
    wait_job(c, j, states={"RUNNING"})
    assert show_job(c, j)["NodeList"] == "k8s-n1"
    # the GPUs pods hold are marked by index again on the restored nodes
    # (their GRES come back from slurmctld's state, not from a create)
    held = pod_held(c)
    for n in ("k8s-n1", "k8s-n3", "k8s-n4"):
        gpus = set(held.get(n, (set(), set()))[1])
        wait_for(lambda: gpus <= gres_used_idx(c, n), timeout=30, what=f"{n}'s pod-held GPUs {gpus} marked")
    g = external_job(c, "-w", "k8s-n1", "-c", "2", "--gres=gpu:2")
    wait_job(c, g, states={"RUNNING"})
    (alloc,) = running_allocations(c, [g])[g]
    assert not set(alloc.gpu_idx) & set(held["k8s-n1"][1]), f"a job got pod-held GPUs after the restart: {alloc}"
    log = (c.run_dir / "log" / "slurmctld.log").read_text(errors="replace")
    assert "cannot be marked by index" not in log
    end_jobs(c)


@pytest.mark.parametrize("release", RELEASES)
def test_discovered_nodes_are_kubernetes_nodes_whatever_the_list_says(release):
    """KubernetesNodes names only k8s-n1: the nodes discovery made are
    Kubernetes nodes all the same (EXTERNAL with the marker feature), so the
    GPUs a pod holds on k8s-n2 stay out. Before, an unlisted discovered node
    counted as plain and a job got every GPU on it."""
    require(release)
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.kubernetes_nodes = "k8s-n1"
        c.up(str(FIXTURES / "demo.json"), slurm=release, external=True)
        wait_for(lambda: "k8s-n2" in c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split(), timeout=60,
                 what="k8s-n2 discovered")
        held = wait_for(lambda: pod_held(c).get("k8s-n2"), timeout=30, what="k8s-n2's pod-held devices")
        assert held[1], held  # the fixture's pod holds GPUs there
        j = external_job(c, "-w", "k8s-n2", "-c", "2", "--gres=gpu:6", "--mem=100")
        wait_job(c, j, states={"RUNNING"})
        (alloc,) = running_allocations(c, [j])[j]
        assert not set(alloc.gpu_idx) & set(held[1]), f"job {j} got pod-held GPUs: {alloc}"
        end_jobs(c)
        every = external_job(c, "-w", "k8s-n2", "-c", "2", "--gres=gpu:8", "--mem=100")
        wait_for(lambda: show_job(c, every).get("Reason") not in (None, "None"), timeout=30,
                 what="the 8-GPU job to be held back")
        assert show_job(c, every).get("JobState") == "PENDING", show_job(c, every)
    finally:
        c.down()


BRIDGE_JOB_LABEL = "scheduler.slinky.slurm.net/slurm-jobid"


def bridge_pod(c, name, job, node) -> str:
    """A pod as slurm-bridge labels it for its Slurm job; returns its uid."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "labels": {BRIDGE_JOB_LABEL: str(job)}},
           "spec": {"nodeName": node, "containers": [{"name": "main", "image": "pause"}]}}
    kubectl(c, "create", "-f", "-", input=json.dumps(pod))
    return get_json(c, "pod", name, "-n", "default")["metadata"]["uid"]


def bridge_claim(c, pod, uid, node, cpu_devices, gpus) -> str:
    """The claim slurm-bridge writes in PreBind: owned by the pod, then its
    status patched with the devices, the node and the pod as consumer."""
    name = f"{pod}-extended-resources-t3st"
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": "default",
                          "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                          "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid,
                                               "controller": True, "blockOwnerDeletion": True}]},
             "spec": {"devices": {"requests": [
                 {"name": name, "exactly": {"deviceClassName": cls, "count": n}}
                 for name, cls, n in (("cpu", "dra.cpu", len(cpu_devices)), ("gpu", "gpu.nvidia.com", len(gpus)))
                 if n]}}}
    kubectl(c, "create", "-f", "-", input=json.dumps(claim))
    results = [{"request": "cpu", "driver": "dra.cpu", "pool": node, "device": d} for d in cpu_devices]
    results += [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": f"gpu-{g}"} for g in gpus]
    status = {"status": {
        "allocation": {"devices": {"results": results},
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
        "reservedFor": [{"resource": "pods", "name": pod, "uid": uid}]}}
    kubectl(c, "patch", "resourceclaim", name, "-n", "default", "--subresource=status",
            "--type=strategic", "-p", json.dumps(status))
    return name


def view_holdings(c, node) -> list:
    path = c.run_dir / "state" / "k8s_cons_tres_view.json"
    try:
        view = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return next((n.get("held", []) for n in view["nodes"] if n["node"] == node), [])


def test_slurm_bridge_claims_are_their_running_jobs_and_free_nothing(ext_cluster):
    c = ext_cluster
    node_name = "k8s-n1"
    # slurm-bridge's job: external, its AdminComment naming the pod
    j = external_job(c, "--hold", "-w", node_name, "-c", "2", "--gres=gpu:1", "--mem=100")
    c.run("scontrol", "update", f"jobid={j}", 'AdminComment={"pods":["default/train-0"]}')
    c.run("scontrol", "release", str(j))
    wait_job(c, j, states={"RUNNING"})
    wait_for(lambda: f"job {j}: external job of slurm-bridge's pods" in c.tail("log/slurmctld.log", 400),
             timeout=30, what="the plugin to leave the job's claims to slurm-bridge")
    assert not job_claims(c, j), "ExternalJobClaims=bridge: the plugin wrote claims for slurm-bridge's job"
    alloc, = running_allocations(c, [j])[j]
    by_cpu = {cpu: dev for (n, dev), cpu in cpu_ids_by_device(c).items() if n == node_name}
    cpu_devices = [by_cpu[i] for i in alloc.cpu_ids]
    held_gpus = pod_held(c).get(node_name, (set(), set()))[1]
    spare = next(g for g in range(8) if g not in held_gpus and g not in alloc.gpu_idx)

    # slurm-bridge's pod and claim for it: exactly the job's devices
    claim = bridge_claim(c, "train-0", bridge_pod(c, "train-0", j, node_name), node_name,
                         cpu_devices, alloc.gpu_idx)
    # a tenant's spoof: a pod labelled with the same job, claiming a GPU
    # Slurm did not give the job
    spoof = bridge_claim(c, "spoof", bridge_pod(c, "spoof", j, node_name), node_name, [], [spare])
    wait_for(lambda: {(h.get("slurm_job"), h.get("bridge_claim")) for h in view_holdings(c, node_name)} >=
             {(j, f"default/{claim}"), (j, f"default/{spoof}")},
             timeout=30, what="both claims seen as slurm-bridge's for the job")
    # the spoof freed nothing: its GPU is kept from Slurm like any pod's
    wait_for(lambda: spare in gres_used_idx(c, node_name), timeout=30,
             what=f"GPU {spare} of the spoofed claim kept out")

    # the job ends, its pod still runs: its GPU is the pod's now
    c.run("scancel", str(j))
    wait_job(c, j)
    wait_for(lambda: set(alloc.gpu_idx) | {spare} <= gres_used_idx(c, node_name), timeout=30,
             what="the ended job's GPU kept out while slurm-bridge's claim holds it")
    for name in (claim, spoof):
        kubectl(c, "delete", "resourceclaim", name, "-n", "default")
    kubectl(c, "delete", "pod", "train-0", "spoof", "-n", "default")
    wait_for(lambda: not (set(alloc.gpu_idx) | {spare}) & gres_used_idx(c, node_name), timeout=30,
             what="the GPUs back to Slurm once the claims are gone")


def _post(url, body):
    import json
    import urllib.request
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def test_without_the_discovery_rbac_no_node_is_made_until_it_is_applied():
    """etc/rbac.yaml alone does not let the plugin read Nodes (that is
    etc/rbac-node-discovery.yaml's, for sites with NodeDiscovery=external):
    with it missing, the plugin says Forbidden for /api/v1/nodes with the
    fix, reads slices and claims all the same, and makes no node (fail
    closed: without Node objects there is no cordon or Ready to trust);
    once the rules are granted its informer's retry lists the Nodes and
    the nodes appear."""
    require("26.05.3")
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.external = True
        c.grant_discovery = False
        fx = c.prepare(str(FIXTURES / "demo.json"), slurm="26.05.3")
        c.start_apiserver(fx)
        c.start_slurmctld()
        log = c.run_dir / "log" / "slurmctld.log"
        text = lambda: log.read_text(errors="replace") if log.exists() else ""  # noqa: E731
        forbidden = re.compile(r"select/k8s_cons_tres: nodes: LIST /api/v1/nodes .* Forbidden: the "
                               r"credentials lack RBAC permission; fix: grant")
        wait_for(lambda: re.search(r"select/k8s_cons_tres: inventory \d+: 4 nodes", text()), timeout=60,
                 what="the slices and claims to be read")
        # Two refusals: the informer has retried, and discovery (once a
        # second) has had its rounds in between.
        wait_for(lambda: len(forbidden.findall(text())) >= 2, timeout=90,
                 what="the plugin to log twice that it may not read Nodes")
        assert "creating EXTERNAL node" not in text()
        nodes = c.run("sinfo", "-h", "-N", "-o", "%N", check=False).stdout.split()
        assert not [n for n in nodes if n in KUBE_NODES], nodes

        c.grant_plugin_rules(discovery=True)
        wait_for(lambda: set(KUBE_NODES) <= set(c.run("sinfo", "-h", "-N", "-o", "%N",
                                                      check=False).stdout.split()),
                 timeout=90, what="the Kubernetes nodes to be discovered once the rules are granted")
    finally:
        c.down()
