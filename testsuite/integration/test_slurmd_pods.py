# SPDX-License-Identifier: GPL-2.0-or-later
"""slurmd in the shipped DaemonSet's pods (issue 38): the Kubernetes nodes'
slurmds come from etc/kubernetes/components/slurmd applied with kubectl,
and the test API server's node agents run each pod's container as kubelet
would (ktas/containers.py): command and environment from the pod spec,
slurm.conf from the ConfigMap, what the container starts (the steps) ends
with it.  The slurmd pods hold no device, so the node's shared pool keeps
every CPU that no job and no pod's claim holds; each job's devices are
held by its own claims and holder pod."""
import os
from pathlib import Path

import pytest

from harness import node_agent as na
from harness import scenarios, slurmd_pods
from harness.cluster import proc_env, running
from harness.jobs import job_pid, sbatch, show_job, wait_job
from harness.kube import holder_pods, kubectl
from harness.wait import wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IN_PODS = ["kube-a", "kube-b", "kube-m"]   # mixed.json's Kubernetes nodes


@pytest.fixture(scope="module")
def cluster():
    with running(FIXTURES / "mixed.json", slurmd_in_pods=True) as c:
        yield c


@pytest.fixture(autouse=True)
def no_jobs_left(cluster):
    yield
    scenarios.end_all_jobs(cluster)


def ppid(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def shim_of(pid):
    """The container shim (ktas/shim.py) above `pid`, with the pod
    directory it runs in, or (None, None)."""
    while pid > 1:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if len(cmd) > 2 and cmd[1].endswith(b"ktas/shim.py"):
                return pid, cmd[2].decode()
            pid = ppid(pid)
        except (OSError, IndexError, ValueError):
            break
    return None, None


def run_seconds(job) -> int:
    """scontrol's RunTime ([D-]HH:MM:SS) in seconds."""
    days, _, hms = job.get("RunTime", "0").rpartition("-")
    secs = 0
    for part in hms.split(":"):
        secs = secs * 60 + int(part)
    return secs + 86400 * int(days or 0)


def slurmd_pod(cluster, node):
    pods = slurmd_pods.pods(cluster).get(node, [])
    assert len(pods) == 1, pods
    return pods[0]


def test_each_kubernetes_node_runs_slurmd_in_a_daemonset_pod_that_holds_no_device(cluster):
    pods = slurmd_pods.pods(cluster)
    assert sorted(pods) == IN_PODS   # not plain-c: its slurmd is the host's
    for node in IN_PODS:
        (pod,) = pods[node]
        assert [o["kind"] for o in pod["metadata"]["ownerReferences"]] == ["DaemonSet"]
        spec = pod["spec"]
        assert spec["nodeName"] == node and spec["hostNetwork"]
        assert not spec.get("resourceClaims")
        for c in spec["containers"]:
            assert set(c.get("resources", {}).get("requests", {})) <= {"cpu", "memory"}
            assert not c.get("resources", {}).get("claims")
        assert slurmd_pods.ready(pod)
        # The node's slurmd is the pod's container: below its shim, named
        # from spec.nodeName, reading the ConfigMap's slurm.conf.
        pid = slurmd_pods.slurmd_pid(cluster, node)
        shim, pod_dir = shim_of(pid)
        assert shim and pod_dir.endswith(f"_{pod['metadata']['uid']}"), (pid, pod_dir)
        env = proc_env(pid)
        assert env["SLURM_NODENAME"] == node
        assert env["SLURM_CONF"] == f"{pod_dir}/volumes/config/slurm.conf"
        assert Path(env["SLURM_CONF"]).read_text() == cluster.slurm_conf.read_text()
    assert shim_of(slurmd_pods.slurmd_pid(cluster, "plain-c")) == (None, None)
    # No device for slurmd: each node's shared pool is every CPU no claim
    # holds, and the slurmd pod runs on that pool with no GPU.
    for node in IN_PODS:
        view = na.wait_synced(cluster, node)
        key = f"slurmd/{slurmd_pod(cluster, node)['metadata']['name']}"
        assert view["pods"][key]["claims"] == [] and view["pods"][key]["phase"] == "Running"
        assert all(p["pod"] != key for p in view["prepared"].values())
        published = set(na.parse_id_list(view["publishedCpus"]))
        held = set().union(*(set(na.parse_id_list(p["cpus"] or "")) for p in view["prepared"].values()))
        assert published and na.shared_cpus(cluster, node) == published - held
        assert set(na.parse_id_list(view["pods"][key]["cpuset"])) == published - held
        gpus_held = set().union(*(set(p["gpus"]) for p in view["prepared"].values()))
        assert set(view["gpus"]["free"]) == set(view["gpus"]["published"]) - gpus_held


def test_a_job_runs_through_the_pod_slurmd_with_its_devices_held_by_its_holder_pod(cluster, tmp_path):
    pidfile = tmp_path / "pid"
    job = sbatch(cluster, "-w", "kube-a", "-n", "2", "--gres=gpu:1",
                 "--wrap", f"echo $$ > {pidfile}; exec sleep 300")
    wait_job(cluster, job, {"RUNNING"}, timeout=30)
    pid = job_pid(cluster, pidfile)
    # the batch step is below the pod's container, as in its cgroup
    pod = slurmd_pod(cluster, "kube-a")
    assert shim_of(pid)[1].endswith(f"_{pod['metadata']['uid']}")
    holder = wait_for(lambda: [p for p in holder_pods(cluster, job)
                               if (p.get("status") or {}).get("phase") == "Running"],
                      timeout=30, what=f"job {job}'s holder pod Running")
    assert holder[0]["spec"]["nodeName"] == "kube-a"
    view = na.wait_view(cluster, "kube-a", lambda v: any(
        p["pod"] == f"slurm/{holder[0]['metadata']['name']}" for p in v["prepared"].values()))
    job_cpus = set().union(*(set(na.parse_id_list(p["cpus"] or "")) for p in view["prepared"].values()
                             if p["pod"] == f"slurm/{holder[0]['metadata']['name']}"))
    assert len(job_cpus) >= 2
    published = set(na.parse_id_list(view["publishedCpus"]))
    others = set().union(*(set(na.parse_id_list(p["cpus"] or "")) for p in view["prepared"].values()
                           if p["pod"] != f"slurm/{holder[0]['metadata']['name']}"))
    shared = published - others - job_cpus
    assert set(na.parse_id_list(view["sharedCpus"])) == shared
    key = f"slurmd/{pod['metadata']['name']}"
    assert set(na.parse_id_list(view["pods"][key]["cpuset"])) == shared
    job_gpus = set().union(*(set(p["gpus"]) for p in view["prepared"].values()
                             if p["pod"] == f"slurm/{holder[0]['metadata']['name']}"))
    assert len(job_gpus) == 1 and not job_gpus & set(view["gpus"]["free"])
    assert not view["doubleBooked"]
    cluster.run("scancel", str(job))
    wait_job(cluster, job)
    wait_for(lambda: not holder_pods(cluster, job), timeout=30, what=f"job {job}'s holder pod to go")


def test_deleting_a_slurmd_pod_ends_its_steps_and_the_daemonset_brings_the_node_back(cluster, tmp_path):
    """What Slurm does: the new slurmd registers without the job, so
    slurmctld ends the batch job it no longer finds on its batch host as
    a node failure (NODE_FAIL: "Job terminated due to failure of one or
    more allocated nodes", squeue(1)); --no-requeue keeps it from being
    requeued. The node returns to service at once.

    slurmctld purges a batch job missing from its node only once the job
    has run BatchStartTimeout + min(MessageTimeout, 10) s (20 s here,
    _purge_missing_jobs); a younger one waits for the node's next
    registration, minutes later. So the job runs that long first, as any
    job caught by a pod roll would have."""
    pidfile = tmp_path / "pid"
    job = sbatch(cluster, "-N", "2", "-w", "kube-a,kube-b", "--no-requeue",
                 "--wrap", f"echo $$ > {pidfile}; srun sleep 300")
    wait_job(cluster, job, {"RUNNING"}, timeout=30)
    batch = show_job(cluster, job)["BatchHost"]
    pid = job_pid(cluster, pidfile)
    wait_for(lambda: run_seconds(show_job(cluster, job)) > 22, timeout=60,
             what=f"job {job} to have run 22 s")
    old = slurmd_pod(cluster, batch)
    old_slurmd = slurmd_pods.slurmd_pid(cluster, batch)
    kubectl(cluster, "delete", "pod", "-n", slurmd_pods.NAMESPACE, old["metadata"]["name"],
            "--wait=false")
    # The container ends, and with it everything it started: the step.
    wait_for(lambda: not os.path.exists(f"/proc/{old_slurmd}") and not os.path.exists(f"/proc/{pid}"),
             timeout=30, what="the old slurmd and the batch step to end")
    new = slurmd_pods.wait_ready(cluster, [batch], timeout=60, exclude={old["metadata"]["uid"]})[batch]
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    end = wait_job(cluster, job, timeout=90)
    assert end["JobState"] == "NODE_FAIL", end
    cluster.wait_nodes_idle([batch])
    wait_for(lambda: cluster.node_states().get(batch, "").rstrip("*") == "idle", timeout=60,
             what=f"{batch} idle again")
    wait_for(lambda: not holder_pods(cluster, job), timeout=30, what=f"job {job}'s holder pods to go")
    # and it takes jobs again, through the new pod's slurmd
    again = sbatch(cluster, "-w", batch, "--wrap", "true")
    assert wait_job(cluster, again, timeout=60)["JobState"] == "COMPLETED"
    assert shim_of(slurmd_pods.slurmd_pid(cluster, batch))[1].endswith(f"_{new['metadata']['uid']}")


def test_a_pod_is_replaced_only_when_deleted_and_a_drained_node_loses_no_job(cluster, tmp_path):
    """The component's OnDelete strategy: a template change replaces no
    pod on its own. The roll README gives: drain the node in Slurm, let
    its jobs end, delete the pod, resume the node."""
    node = "kube-b"
    before = {n: p[0]["metadata"]["uid"] for n, p in slurmd_pods.pods(cluster).items()}
    kubectl(cluster, "set", "env", "daemonset/slurmd", "-n", slurmd_pods.NAMESPACE, "ROLLED=1")

    def observed():
        ds = slurmd_pods.daemonset(cluster)
        return ds["status"].get("observedGeneration") == ds["metadata"]["generation"] and ds
    ds = wait_for(observed, timeout=30, what="the DaemonSet controller to see the new template")
    assert ds["status"].get("updatedNumberScheduled", 0) == 0
    assert {n: p[0]["metadata"]["uid"] for n, p in slurmd_pods.pods(cluster).items()} == before

    release = tmp_path / "release"
    job = sbatch(cluster, "-w", node, "--wrap", f"while [ ! -e {release} ]; do sleep 0.2; done")
    wait_job(cluster, job, {"RUNNING"}, timeout=30)
    cluster.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=slurmd pod roll")
    release.touch()
    assert wait_job(cluster, job, timeout=30)["JobState"] == "COMPLETED"
    wait_for(lambda: cluster.node_states().get(node, "").rstrip("*") == "drain", timeout=30,
             what=f"{node} drained")
    old = slurmd_pod(cluster, node)
    kubectl(cluster, "delete", "pod", "-n", slurmd_pods.NAMESPACE, old["metadata"]["name"])
    new = slurmd_pods.wait_ready(cluster, [node], timeout=60, exclude={old["metadata"]["uid"]})[node]

    def new_slurmd():
        pid = slurmd_pods.slurmd_pid(cluster, node)
        return pid if pid and (shim_of(pid)[1] or "").endswith(f"_{new['metadata']['uid']}") else None
    pid = wait_for(new_slurmd, timeout=30, what=f"the new pod's slurmd on {node}")
    assert proc_env(pid).get("ROLLED") == "1"   # the new template's pod
    cluster.run("scontrol", "update", f"NodeName={node}", "State=RESUME")
    cluster.wait_nodes_idle([node])
    again = sbatch(cluster, "-w", node, "--wrap", "true")
    assert wait_job(cluster, again, timeout=60)["JobState"] == "COMPLETED"
    assert show_job(cluster, job)["JobState"] == "COMPLETED"
