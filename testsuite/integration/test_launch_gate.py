# SPDX-License-Identifier: GPL-2.0-or-later
"""The launch gate (LaunchGate=claims, the default): a job placed on a
Kubernetes node stays CONFIGURING, its script not started, until Kubernetes
shows its claim allocated; a pod claim that took one of its devices in that
window sends it back to the queue and keeps the device; a job still gated
after LaunchGateTimeout is requeued; a restart while gated holds the job
again. Writes are held back with the test API server's faults (403 on
creating ResourceClaims, as RBAC or an admission webhook would refuse)."""
import datetime
import json
import signal
import time

import pytest

from harness import slurm_release
from harness.cluster import Cluster, new_run_dir
from harness.jobs import sbatch, show_job, wait_job
from harness.kube import faults, holder_pods, job_claims, kubectl, reset_faults
from harness.wait import wait_for
from conftest import FIXTURES, release_unavailable

DENY_CLAIMS = {"status": 403, "resource": "resourceclaims", "verb": "create"}


@pytest.fixture
def gated():
    """mixed.json (kube-a: a pod holds CPUs 0-1 and gpu-1) on a release,
    with more k8s_cons_tres.conf lines."""
    started = []

    def make(version=None, extra=""):
        release = slurm_release.get(version)
        if release.private and not release.built():
            release_unavailable(release.version, release.not_built_reason())
        c = Cluster(new_run_dir("k8s-cons-tres-gate-"))
        started.append(c)
        c.plugin_extra = extra
        c.up(str(FIXTURES / "mixed.json"), slurm=version)
        return c

    yield make
    for c in started:
        c.down()


def pod_gpu_claim(c, tmp_path, name):
    """A pod's claim for one GPU, not allocated yet (waiting for kube-scheduler)."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "gpu.nvidia.com", "count": 1}}]}}}
    (tmp_path / f"{name}.json").write_text(json.dumps(claim))
    kubectl(c, "create", "-f", str(tmp_path / f"{name}.json"))


def allocate_gpu(c, name, node, device):
    """kube-scheduler's allocation of that claim: `device` on `node`."""
    status = {"status": {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": node,
                                 "device": device}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}
    kubectl(c, "patch", "resourceclaim", name, "-n", "default", "--subresource=status",
            "--type=merge", "-p", json.dumps(status))


def held(c, job, out, seconds=3):
    """The job stays CONFIGURING with the gate's reason, its script not run."""
    wait_job(c, job, states={"CONFIGURING"}, timeout=60)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        j = show_job(c, job)
        assert j.get("JobState") == "CONFIGURING", j
        assert j.get("Reason", "").startswith("k8s_cons_tres:"), j
        assert not out.exists(), "the job's script ran before its claim was allocated"
        time.sleep(0.5)


@pytest.mark.parametrize("version", slurm_release.PLUGIN_RELEASES)
def test_a_job_starts_only_once_its_claim_shows_allocated(gated, version):
    c = gated(version)
    out = c.run_dir / "gated.out"
    faults(c, **DENY_CLAIMS)
    job = sbatch(c, "-w", "kube-a", "-c2", "--gres=gpu:1", "-o", str(out), "--wrap", "echo ran; sleep 300")
    held(c, job, out)
    assert not job_claims(c, job)
    reset_faults(c)
    wait_job(c, job, states={"RUNNING"}, timeout=60)
    (claim,) = job_claims(c, job)
    assert claim.get("status", {}).get("allocation"), claim
    wait_for(lambda: out.exists() and "ran" in out.read_text(), timeout=30, what="the job's script to run")
    log = (c.run_dir / "log" / "slurmctld.log").read_text()
    assert f"JobId={job}: Kubernetes shows its devices allocated" in log
    # a job on the plain node is never held
    plain = sbatch(c, "-w", "plain-c", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    faults(c, **DENY_CLAIMS)
    wait_job(c, plain, states={"RUNNING"}, timeout=30)
    reset_faults(c)


# The shared gate code on the oldest and the newest release (the PrEp
# callback of each release is tested above).
@pytest.mark.parametrize("version", [slurm_release.INSTALLED, "26.05.3"])
def test_an_api_server_stopped_right_after_a_submit_holds_the_job_until_its_claims_are_written(gated, version):
    """The API server refuses every connection (and drops the watches) for
    5 s right after the job was placed: it stays CONFIGURING, its script not
    run, and starts once the server is back and shows its claim, not
    requeued. (Claim creates are refused until the job is placed, so that
    the outage, not a fast write, comes first.)"""
    c = gated(version, "LaunchGateTimeout=120\n")
    out = c.run_dir / "outage.out"
    faults(c, **DENY_CLAIMS)
    job = sbatch(c, "-w", "kube-a", "-c2", "--gres=gpu:1", "-o", str(out), "--wrap", "echo ran; sleep 300")
    wait_job(c, job, states={"CONFIGURING"}, timeout=60)
    faults(c, refuse=True, dropWatches=True)
    held(c, job, out, seconds=5)
    reset_faults(c)
    j = wait_job(c, job, states={"RUNNING"}, timeout=90)
    assert j.get("Restarts", "0") == "0", j
    (claim,) = job_claims(c, job)
    assert claim.get("status", {}).get("allocation"), claim
    wait_for(lambda: out.exists() and "ran" in out.read_text(), timeout=30, what="the job's script to run")


@pytest.mark.parametrize("version", slurm_release.PLUGIN_RELEASES)
def test_a_job_still_gated_after_the_timeout_is_requeued(gated, version):
    c = gated(version, "LaunchGateTimeout=5\n")
    out = c.run_dir / "late.out"
    faults(c, **DENY_CLAIMS)
    job = sbatch(c, "-w", "kube-a", "-c2", "-o", str(out), "--wrap", "echo ran; sleep 300")
    wait_job(c, job, states={"CONFIGURING"}, timeout=60)
    j = wait_job(c, job, states={"PENDING"}, timeout=60)
    assert int(j.get("Restarts", "0")) >= 1, j
    assert not out.exists(), "a job that timed out at the gate ran"
    log = (c.run_dir / "log" / "slurmctld.log").read_text()
    assert f"JobId={job}: Kubernetes did not show its devices allocated within 5s" in log
    reset_faults(c)
    # its nodes are free again, and nothing of it stays in Kubernetes
    wait_for(lambda: c.node_states()["kube-a"].startswith("idle"), timeout=60, what="kube-a to be idle")
    wait_for(lambda: not job_claims(c, job), timeout=30, what="the requeued job's claims to go")


@pytest.mark.parametrize("version", [slurm_release.INSTALLED, "26.05.3"])
def test_a_job_sent_back_once_too_often_is_held_until_released(gated, version):
    """LaunchGateRequeues=0: the first timeout at the gate requeues the job
    and holds it (priority 0, the gate's reason), so it is not placed again
    on a node Kubernetes keeps failing; released, it runs."""
    c = gated(version, "LaunchGateTimeout=5\nLaunchGateRequeues=0\n")
    out = c.run_dir / "held.out"
    faults(c, **DENY_CLAIMS)
    job = sbatch(c, "-w", "kube-a", "-c2", "-o", str(out), "--wrap", "echo ran; sleep 300")
    wait_job(c, job, states={"CONFIGURING"}, timeout=60)
    j = wait_for(lambda: (j := show_job(c, job)).get("JobState") == "PENDING" and j.get("Priority") == "0" and j,
                 timeout=60, what=f"job {job} requeued and held")
    assert j.get("Reason", "").startswith("k8s_cons_tres:_held_after_1_launch_gate_failures"), j
    assert not out.exists(), "a job that failed the gate ran"
    log = (c.run_dir / "log" / "slurmctld.log").read_text()
    assert f"JobId={job} held after 1 launch gate failures in a row (LaunchGateRequeues=0)" in log
    reset_faults(c)
    # held: nothing places it, even with Kubernetes fine again
    wait_for(lambda: c.node_states()["kube-a"].startswith("idle"), timeout=60, what="kube-a to be idle")
    assert show_job(c, job).get("JobState") == "PENDING"
    c.run("scontrol", "release", str(job))
    c.run("scontrol", "update", f"JobId={job}", "StartTime=now")  # past the requeue's delay
    wait_job(c, job, states={"RUNNING"}, timeout=90)
    wait_for(lambda: out.exists() and "ran" in out.read_text(), timeout=30, what="the job's script to run")


@pytest.mark.parametrize("version", [slurm_release.INSTALLED, "26.05.3"])
def test_a_pod_claim_in_the_window_keeps_the_device_and_requeues_the_job(gated, version, tmp_path):
    c = gated(version)
    # A pod's claim waits for kube-scheduler (not allocated yet) ...
    pod_gpu_claim(c, tmp_path, "racer")
    faults(c, **DENY_CLAIMS)
    job = sbatch(c, "-w", "kube-a", "-c2", "--gres=gpu:1", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(c, job, states={"CONFIGURING"}, timeout=60)
    detail = c.run("scontrol", "-d", "show", "job", str(job)).stdout
    assert "IDX:0" in detail, detail  # gpu-1 is web-0's
    # ... and gets gpu-0, the job's, before the job's claim is written.
    allocate_gpu(c, "racer", "kube-a", "gpu-0")
    assert show_job(c, job).get("JobState") == "CONFIGURING"
    reset_faults(c)
    j = wait_job(c, job, states={"PENDING"}, timeout=60)
    assert int(j.get("Restarts", "0")) >= 1, j
    log = (c.run_dir / "log" / "slurmctld.log").read_text()
    line = next((ln for ln in log.splitlines() if f"JobId={job} must not start" in ln), None)
    assert line and "default/racer" in line and "kube-a" in line, line
    # the pod's owner is told as well: a Warning Event on its claim naming the job
    def told():
        events = json.loads(kubectl(c, "get", "events", "-n", "default", "-o", "json").stdout)["items"]
        return [e for e in events if e["involvedObject"].get("kind") == "ResourceClaim"
                and e["involvedObject"].get("name") == "racer"
                and e.get("reason") == "DeviceOfStartingSlurmJob"]
    event = wait_for(told, timeout=30, what="an Event on the pod's claim")[0]
    assert event["type"] == "Warning", event
    assert f"Slurm job {job} " in event["message"] and "kube-a" in event["message"], event
    # the pod keeps its device, the job's claim goes
    racer = json.loads(kubectl(c, "get", "resourceclaim", "racer", "-n", "default", "-o", "json").stdout)
    assert racer["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    wait_for(lambda: not job_claims(c, job), timeout=30, what="the job's claim to be deleted")
    # and the job runs elsewhere, on a device no pod holds
    c.run("scontrol", "update", f"jobid={job}", "ReqNodeList=kube-b", "StartTime=now")
    wait_job(c, job, states={"RUNNING"}, timeout=60)
    assert show_job(c, job)["NodeList"] == "kube-b"


def test_a_job_gated_across_a_slurmctld_restart_is_held_again(gated):
    c = gated()
    out = c.run_dir / "restart.out"
    faults(c, **DENY_CLAIMS)
    job = sbatch(c, "-w", "kube-a", "-c2", "-o", str(out), "--wrap", "echo ran; sleep 300")
    wait_job(c, job, states={"CONFIGURING"}, timeout=60)
    c.stop_slurmctld()
    c.start_slurmctld()
    held(c, job, out)
    reset_faults(c)
    wait_job(c, job, states={"RUNNING"}, timeout=90)
    wait_for(lambda: out.exists() and "ran" in out.read_text(), timeout=30, what="the job's script to run")
    assert job_claims(c, job)


def _logged_at(log, text) -> float:
    """When slurmctld logged the last line containing text (its log's
    local-time stamp), as seconds since the epoch; 0 if not yet."""
    at = 0.0
    for line in log.read_text().splitlines():
        if text in line and line.startswith("["):
            at = datetime.datetime.fromisoformat(line[1:line.index("]")]).timestamp()
    return at


def test_a_job_the_gate_let_start_is_saved_and_not_launched_again_after_a_crash(gated):
    """The gate ends a job's configuration off the paths on which slurmctld
    saves job state, so the plugin has the job state saved once it opens.
    A slurmctld killed after that recovers the job RUNNING: no second gate
    and no second launch of its script. (Without that save, on 26.05.3 a
    backup handing control back, which takes Slurm 30 s there, left the
    primary the save made while the job was gated: the primary gated it
    again, launched its script on top of the running one, and Slurm held
    the job as a launch failure.)"""
    c = gated()
    out = c.run_dir / "crash.out"
    log = c.run_dir / "log" / "slurmctld.log"
    state = c.run_dir / "state" / "job_state"
    faults(c, **DENY_CLAIMS)  # gated long enough for slurmctld's own save
    job = sbatch(c, "-w", "kube-a", "-c2", "-o", str(out), "--wrap", "echo ran; sleep 300")
    wait_job(c, job, states={"CONFIGURING"}, timeout=60)
    armed = wait_for(lambda: _logged_at(log, f"JobId={job} held at the launch gate"), timeout=30,
                     what="the gate's arming in the log")
    wait_for(lambda: state.exists() and state.stat().st_mtime > armed, timeout=20,
             what="slurmctld to save the gated job")
    reset_faults(c)
    wait_job(c, job, states={"RUNNING"}, timeout=90)
    opened = wait_for(lambda: _logged_at(log, f"JobId={job}: Kubernetes shows its devices allocated"),
                      timeout=30, what="the gate's opening in the log")
    wait_for(lambda: state.stat().st_mtime > opened, timeout=20,
             what="the job state to be saved after the gate let the job start")
    wait_for(lambda: out.exists() and "ran" in out.read_text(), timeout=30, what="the job's script to run")
    mark = len(log.read_text())
    c.stop_slurmctld(sig=signal.SIGKILL)
    c.start_slurmctld()
    j = show_job(c, job)
    assert j.get("JobState") == "RUNNING" and j.get("Restarts") == "0", j
    after = log.read_text()[mark:]
    assert f"Recovered JobId={job}" in after
    assert f"JobId={job} held at the launch gate" not in after, "the recovered job was gated again"
    assert out.read_text().count("ran") == 1, out.read_text()


def test_launch_gate_off_starts_at_once(gated):
    c = gated(extra="LaunchGate=off\n")
    faults(c, **DENY_CLAIMS)
    job = sbatch(c, "-w", "kube-a", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(c, job, states={"RUNNING"}, timeout=30)
    assert not job_claims(c, job)
    reset_faults(c)


def test_kubernetes_nodes_take_no_new_job_while_claim_writes_are_refused(gated):
    """Being able to write counts as freshness: with claim creates refused
    (an RBAC or webhook denial) the Kubernetes nodes take no new job, plain
    nodes still do, and all recovers once writes go through."""
    c = gated()
    log = c.run_dir / "log" / "slurmctld.log"
    faults(c, **DENY_CLAIMS)
    first = sbatch(c, "-w", "kube-a", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(c, first, states={"CONFIGURING"}, timeout=60)
    wait_for(lambda: "claims cannot be written: a claim write was refused" in log.read_text(), timeout=30,
             what="the plugin to take the refusal as staleness")
    second = sbatch(c, "-w", "kube-b", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    plain = sbatch(c, "-w", "plain-c", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(c, plain, states={"RUNNING"}, timeout=30)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        assert show_job(c, second).get("JobState") == "PENDING", show_job(c, second)
        time.sleep(0.5)
    reset_faults(c)
    wait_job(c, first, states={"RUNNING"}, timeout=60)
    wait_job(c, second, states={"RUNNING"}, timeout=60)
    assert job_claims(c, first) and job_claims(c, second)


def test_a_pod_claim_on_a_running_jobs_device_is_told_and_fences_the_node(gated, tmp_path):
    """Never a silent union: a pod claim that names a device a running job
    holds (a scheduler with a stale view, a hand-written claim) is logged
    with both objects, listed in the view file, and the node takes no new
    job until it goes; the running job is left alone."""
    c = gated()
    log = c.run_dir / "log" / "slurmctld.log"
    job = sbatch(c, "-w", "kube-a", "-c2", "--gres=gpu:1", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(c, job, states={"RUNNING"}, timeout=60)
    pod_gpu_claim(c, tmp_path, "late")
    allocate_gpu(c, "late", "kube-a", "gpu-0")
    told = f"overlap on kube-a: pod claim default/late holds a device of Slurm job {job}"
    wait_for(lambda: told in log.read_text(), timeout=30, what="the overlap to be logged")
    view = c.run_dir / "state" / "k8s_cons_tres_view.json"

    def listed():
        try:
            nodes = json.loads(view.read_text())["nodes"]
        except (OSError, ValueError):
            return False
        return any(n["node"] == "kube-a" and n.get("overlaps") for n in nodes)
    wait_for(listed, timeout=30, what="the view file to list the overlap")
    second = sbatch(c, "-w", "kube-a", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        assert show_job(c, second).get("JobState") == "PENDING", show_job(c, second)
        assert show_job(c, job).get("JobState") == "RUNNING", show_job(c, job)
        time.sleep(0.5)
    kubectl(c, "delete", "resourceclaim", "late", "-n", "default")
    wait_job(c, second, states={"RUNNING"}, timeout=60)


def test_launch_gate_prepared_also_waits_for_the_running_holder_pod(gated):
    """LaunchGate=prepared: the claims alone are not enough; the job starts
    once its holder pod runs (kubelet and the drivers prepared the claims:
    the node agents play them). With holder pod creates refused, the job
    waits with its claim allocated."""
    c = gated(extra="LaunchGate=prepared\n")
    out = c.run_dir / "prepared.out"
    faults(c, status=403, resource="pods", verb="create")
    job = sbatch(c, "-w", "kube-a", "-c2", "-o", str(out), "--wrap", "echo ran; sleep 300")
    wait_for(lambda: job_claims(c, job) and job_claims(c, job)[0].get("status", {}).get("allocation"),
             timeout=60, what="the job's claim, allocated")
    held(c, job, out)
    assert "holder_pod" in show_job(c, job).get("Reason", ""), show_job(c, job)  # scontrol: spaces as _
    reset_faults(c)
    wait_job(c, job, states={"RUNNING"}, timeout=60)
    pods = holder_pods(c, job)
    assert pods and pods[0]["status"].get("phase") == "Running", pods
