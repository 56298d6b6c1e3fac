# SPDX-License-Identifier: GPL-2.0-or-later
"""DeviceTaintRules (resource.k8s.io v1beta2 in Kubernetes 1.36, v1alpha3 in
1.33-1.35, each behind a feature gate): an admin's taint on devices outside
the slices. The plugin reads them where the API server serves them and
treats them as kube-scheduler does, like a taint the driver put into the
slice: NoSchedule and NoExecute keep the device from new Slurm jobs, None
does not, and a rule that goes gives the device back. Where the API server
does not serve them, none apply and nothing waits for them."""
import json
from pathlib import Path

import pytest

from harness.alignment import gres_used_idx
from harness.cluster import Cluster, find_inspect, new_run_dir
from harness.jobs import sbatch, show_job, wait_job
from harness.kube import kubectl, pod_held
from harness.wait import wait_for

FIXTURE = "demo.json"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _gpu_slices(c):
    return {s["spec"]["nodeName"]: s
            for s in json.loads(kubectl(c, "get", "resourceslices", "-o", "json").stdout)["items"]
            if s["spec"]["driver"] == "gpu.nvidia.com" and s["spec"].get("nodeName")}


def _free_gpus(c):
    """(node, its GPU slice's pool, GPU indices no pod holds) of the
    Kubernetes node with the most such GPUs."""
    held = pod_held(c)
    best = None
    for node, sl in sorted(_gpu_slices(c).items()):
        free = sorted(int(d["name"].split("-")[1]) for d in sl["spec"]["devices"]
                      if int(d["name"].split("-")[1]) not in held.get(node, (set(), set()))[1])
        if best is None or len(free) > len(best[2]):
            best = (node, sl["spec"]["pool"]["name"], free)
    assert best and best[2], "a Kubernetes node with a GPU no pod holds"
    return best


def _rule(c, tmp_path, name, selector, effect, version="v1beta2"):
    doc = {"apiVersion": f"resource.k8s.io/{version}", "kind": "DeviceTaintRule",
           "metadata": {"name": name},
           "spec": {"deviceSelector": selector,
                    "taint": {"key": "example.com/maintenance", "effect": effect}}}
    path = tmp_path / f"{name}-{effect}.json"
    path.write_text(json.dumps(doc))
    kubectl(c, "apply", "-f", str(path))


def _pending_for_resources(c, job):
    j = show_job(c, job)
    return j.get("JobState") == "PENDING" and j.get("Reason") in ("Resources", "Priority") and j


def test_a_device_taint_rule_keeps_a_gpu_from_new_jobs_until_it_goes(cluster_factory, tmp_path):
    c = cluster_factory(FIXTURE)
    c.wait_k8s_in_sync()
    node, pool, free = _free_gpus(c)
    gpu = free[0]
    assert gpu not in gres_used_idx(c, node)
    selector = {"driver": "gpu.nvidia.com", "pool": pool, "device": f"gpu-{gpu}"}

    _rule(c, tmp_path, "maint", selector, "NoSchedule")
    wait_for(lambda: gpu in gres_used_idx(c, node), timeout=30,
             what=f"GPU {gpu} of {node}, tainted NoSchedule, to be kept from Slurm")
    # k8s-cons-tres-inspect, with the plugin's own credentials, says why
    out = c.run(str(find_inspect()), "--json", "--kubeconfig", str(c.run_dir / "etc" / "plugin.kubeconfig")).stdout
    unavailable = {n["name"]: n["unavailable"] for n in json.loads(out)["nodes"]}[node]
    assert any(u["reason"] == "taint example.com/maintenance=NoSchedule" for u in unavailable), unavailable
    # A job wanting every GPU of the node no pod holds cannot start.
    job = sbatch(c, "-w", node, "-o", "/dev/null", f"--gres=gpu:{len(free)}", "--wrap", "sleep 60")
    wait_for(lambda: _pending_for_resources(c, job), timeout=30, what=f"job {job} to wait for resources")

    # effect None is informational: the GPU comes back and the job starts on it
    _rule(c, tmp_path, "maint", selector, "None")
    wait_job(c, job, states={"RUNNING"}, timeout=60)
    c.run("scancel", str(job))
    wait_job(c, job, states={"CANCELLED"})

    # NoExecute keeps it out too; deleting the rule gives it back
    _rule(c, tmp_path, "maint", selector, "NoExecute")
    wait_for(lambda: gpu in gres_used_idx(c, node), timeout=60,
             what=f"GPU {gpu} of {node}, tainted NoExecute, to be kept from Slurm")
    kubectl(c, "delete", "devicetaintrule", "maint")
    wait_for(lambda: gpu not in gres_used_idx(c, node), timeout=30,
             what=f"GPU {gpu} of {node} to be Slurm's again once the rule is gone")


@pytest.mark.parametrize("served", ["v1alpha3", "off"])
def test_rules_are_read_at_the_version_served_and_not_waited_for_where_none_is(served, tmp_path):
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    c.device_taint_rules = served
    try:
        c.up(str(FIXTURES / FIXTURE))
        c.wait_k8s_in_sync()
        log = c.run_dir / "log" / "slurmctld.log"
        node, pool, free = _free_gpus(c)
        gpu = free[0]
        if served == "off":
            wait_for(lambda: "devicetaintrules: not served by the API server" in log.read_text(), timeout=30,
                     what="the plugin to log that DeviceTaintRules are not served")
            job = sbatch(c, "-w", node, "-o", "/dev/null", "--gres=gpu:1", "--wrap", "sleep 60")
            wait_job(c, job, states={"RUNNING"}, timeout=60)
            return
        wait_for(lambda: "devicetaintrules: served at /apis/resource.k8s.io/v1alpha3/devicetaintrules"
                 in log.read_text(), timeout=30, what="the plugin to read DeviceTaintRules at v1alpha3")
        _rule(c, tmp_path, "maint", {"driver": "gpu.nvidia.com", "pool": pool, "device": f"gpu-{gpu}"},
              "NoSchedule", version="v1alpha3")
        wait_for(lambda: gpu in gres_used_idx(c, node), timeout=30,
                 what=f"GPU {gpu} of {node}, tainted through v1alpha3, to be kept from Slurm")
    finally:
        c.down()
