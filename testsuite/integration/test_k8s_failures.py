# SPDX-License-Identifier: GPL-2.0-or-later
"""When things go wrong: the API server goes away and comes back, slurmctld is
killed and restarted with jobs running. Nothing double-booked, no claim lost,
no claim left behind."""
import json
import os
import re
import signal
import time

import pytest

from harness import scenarios
from harness.jobs import job_pid, process_alive, sbatch, show_job, wait_job
from harness.kube import holder_pods, job_claims, kubectl
from harness.wait import wait_for


def running_on(cluster, job):
    return show_job(cluster, job).get("JobState") == "RUNNING"


@pytest.mark.slow  # a minute or more (run-tests --quick leaves it out)
def test_api_server_down_then_back(cluster_factory):
    scenarios.api_server_down_then_back(cluster_factory("mixed.json"))


def test_slurmctld_kill_9_and_restart_reconciles_claims(cluster_factory, tmp_path):
    scenarios.kill_9_restart_reconciles(cluster_factory("demo.json"), tmp_path)


def test_node_whose_slices_disagree_is_drained_with_the_difference(cluster_factory):
    c = cluster_factory("mixed.json")

    def reason():
        out = c.run("sinfo", "-h", "-N", "-n", "kube-m", "-o", "%t|%E").stdout.strip()
        return out if out.startswith("drain") else None

    out = wait_for(reason, timeout=60, what="kube-m to be drained")
    assert "k8s_cons_tres:" in out and "disagrees with its ResourceSlices" in out, out
    assert "slurm 6, slices 4" in out or "cores" in out, out
    # the others are fine
    states = c.node_states()
    assert states["kube-a"].startswith("idle") and states["plain-c"].startswith("idle"), states


def _cpu_slice(c, node):
    for s in json.loads(kubectl(c, "get", "resourceslices", "-o", "json").stdout)["items"]:
        if s["spec"]["nodeName"] == node and s["spec"]["driver"] == "dra.cpu":
            return s
    raise AssertionError(f"no dra.cpu slice for {node}")


def _publish(c, tmp_path, sl):
    """Replace a slice as its driver would, keeping name and pool."""
    for k in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        sl["metadata"].pop(k, None)
    path = tmp_path / f"{sl['metadata']['name']}.json"
    path.write_text(json.dumps(sl))
    kubectl(c, "replace", "-f", str(path))


def _state(c, node):
    return c.run("sinfo", "-h", "-N", "-n", node, "-o", "%t|%E").stdout.strip()


def test_a_driver_restart_is_no_mismatch_and_a_drained_node_comes_back(cluster_factory, tmp_path):
    """Slices that shrink for a while make the node unavailable, not
    drained; a lasting disagreement drains it; when the slices agree again
    the plugin resumes the node it drained itself."""
    c = cluster_factory("mixed.json")
    node, grace = "kube-a", 10  # the harness's StaleAfter
    full = _cpu_slice(c, node)
    half = json.loads(json.dumps(full))
    half["spec"]["devices"] = [d for d in full["spec"]["devices"]
                               if d["attributes"]["dra.cpu/socketID"]["int"] == 0]
    log = c.run_dir / "log" / "slurmctld.log"

    # a restart: socket 1's CPUs vanish, then come back within the grace
    _publish(c, tmp_path, json.loads(json.dumps(half)))
    wait_for(lambda: f"{node} unavailable" in log.read_text(), timeout=30,
             what="the plugin to keep the shrunk node out")
    _publish(c, tmp_path, json.loads(json.dumps(full)))
    job = sbatch(c, "-w", node, "-o", "/dev/null", "-c2", "--wrap", "sleep 30")
    wait_job(c, job, states={"RUNNING"})
    # watch it for longer than the grace: never drained
    deadline = time.monotonic() + grace + 5
    while time.monotonic() < deadline:
        assert not _state(c, node).startswith("drain"), _state(c, node)
        time.sleep(0.5)
    c.run("scancel", str(job))

    # a lasting disagreement drains, with the difference as reason ...
    _publish(c, tmp_path, json.loads(json.dumps(half)))
    drained = wait_for(lambda: (s := _state(c, node)).startswith("drain") and s, timeout=60,
                       what=f"{node} to be drained")
    assert "k8s_cons_tres:" in drained and "sockets" in drained, drained
    # ... and agreement resumes it
    _publish(c, tmp_path, json.loads(json.dumps(full)))
    wait_for(lambda: _state(c, node).startswith("idle"), timeout=60, what=f"{node} to be resumed")
    assert "resuming kube-a" in log.read_text()


def _leases(c):
    return json.loads(kubectl(c, "get", "leases", "-n", "slurm", "-o", "json").stdout)["items"]


def test_a_controller_without_the_lease_writes_no_claim(cluster_factory):
    """Split brain: another controller holds the claim namespace's Lease and
    keeps renewing it. This slurmctld writes no claim meanwhile, and its
    Kubernetes nodes take no job; once that lease lapses it takes it over,
    the job starts and its claim is written."""
    import threading
    c = cluster_factory("mixed.json")
    log = c.run_dir / "log" / "slurmctld.log"
    lease = wait_for(lambda: (items := _leases(c)) and items[0], timeout=30, what="the plugin's Lease")
    name = lease["metadata"]["name"]
    assert lease["spec"]["holderIdentity"], lease

    stop = threading.Event()

    def other_controller():
        """Takes the lease and renews it every second, like a second
        slurmctld that believes it is in charge."""
        while not stop.is_set():
            kubectl(c, "patch", "lease", name, "-n", "slurm", "--type=merge", "-p", json.dumps(
                {"spec": {"holderIdentity": "other-controller",
                          "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())}}),
                check=False)
            stop.wait(1)

    renewer = threading.Thread(target=other_controller, daemon=True)
    renewer.start()
    try:
        wait_for(lambda: "does not hold Lease" in log.read_text(), timeout=30,
                 what="the plugin to see it lost the lease")
        # Not able to write, it places no job on a Kubernetes node at all
        wait_for(lambda: "claims cannot be written: this controller does not hold" in log.read_text(),
                 timeout=30, what="the plugin to stop Kubernetes nodes for want of the lease")
        job = sbatch(c, "-w", "kube-b", "-o", "/dev/null", "-c2", "--wrap", "sleep 300")
        deadline = time.monotonic() + 6  # three of its lease ticks
        while time.monotonic() < deadline:
            assert not job_claims(c, job), "a controller without the lease wrote a claim"
            assert show_job(c, job).get("JobState") == "PENDING", show_job(c, job)
            time.sleep(0.5)
    finally:
        stop.set()
        renewer.join(timeout=10)
    # the other controller is gone: its lease lapses, ours takes over
    wait_for(lambda: "took over from other-controller" in log.read_text(), timeout=60,
             what="the plugin to take the lapsed lease over")
    wait_for(lambda: job_claims(c, job), timeout=30, what="the missing claim to be written")
    wait_job(c, job, states={"RUNNING"})


def test_reconfigure_carries_the_lease_on(cluster_factory):
    """On 24.11+ "scontrol reconfigure" execs a new slurmctld, and the old
    one exits without giving its Lease up. The new one carries that Lease on
    (same holder, no transition) instead of waiting for it to lapse, which
    kept Kubernetes nodes from new jobs for about 15 s after every
    reconfigure. On 22.05 the process is not replaced and keeps it anyway."""
    c = cluster_factory("mixed.json")
    log = c.run_dir / "log" / "slurmctld.log"
    before = wait_for(lambda: (items := _leases(c)) and items[0]["spec"].get("holderIdentity") and items[0],
                      timeout=30, what="the plugin's Lease")["spec"]
    c.run("scontrol", "reconfigure")
    if c.release.version != "22.05.8":
        wait_for(lambda: "carries on Lease" in log.read_text(), timeout=60,
                 what="the new slurmctld to carry the Lease on")
    job = sbatch(c, "-w", "kube-b", "-o", "/dev/null", "-c2", "--wrap", "sleep 300")
    wait_for(lambda: job_claims(c, job), timeout=30, what="the job's claim")
    wait_job(c, job, states={"RUNNING"})
    after = _leases(c)[0]["spec"]
    assert (after["holderIdentity"], after["leaseTransitions"]) == \
        (before["holderIdentity"], before["leaseTransitions"]), (before, after)
    assert "whose lease expired" not in log.read_text()


def test_cpus_the_driver_reserves_are_no_mismatch_and_never_used(cluster_factory):
    """kube-b's dra.cpu driver reserves CPUs 0 and 1 (core 0): its slices
    publish 14 of slurm.conf's 16 CPUs. The node is not drained, jobs use
    the other 14, and one that needs all 16 waits."""
    from harness.alignment import job_allocations
    c = cluster_factory("mixed.json")
    assert c.node_states()["kube-b"].startswith("idle"), c.node_states()
    big = sbatch(c, "-w", "kube-b", "-N1", "-o", "/dev/null", "-n14", "--wrap", "sleep 120")
    wait_job(c, big, states={"RUNNING"})
    (alloc,) = job_allocations(c, big)
    assert not {0, 1} & set(alloc.cpu_ids), f"reserved CPUs given to job {big}: {alloc.cpu_ids}"
    c.run("scancel", str(big))
    wait_job(c, big, states={"CANCELLED"})
    whole = sbatch(c, "-w", "kube-b", "-N1", "-o", "/dev/null", "-n16", "--wrap", "sleep 120")
    wait_for(lambda: show_job(c, whole).get("Reason") not in (None, "None"), timeout=30,
             what="the 16-CPU job to be held back")
    assert show_job(c, whole).get("JobState") == "PENDING", show_job(c, whole)
    assert not c.run("sinfo", "-h", "-N", "-n", "kube-b", "-o", "%t").stdout.strip().startswith("drain")


def test_a_node_that_cannot_take_claims_gets_them_once_it_can(cluster_factory, tmp_path):
    """slurmctld restarts while kube-b's dra.cpu slice is gone (a driver
    restarting): its running job's missing claim cannot be written then,
    and is written once the slice is back."""
    import signal
    c = cluster_factory("mixed.json")
    job = sbatch(c, "-w", "kube-b", "-o", "/dev/null", "-c2", "--wrap", "sleep 300")
    wait_job(c, job, states={"RUNNING"})
    claim = wait_for(lambda: job_claims(c, job), timeout=30, what="the job's claim")[0]
    sl = _cpu_slice(c, "kube-b")
    state = c.run_dir / "state" / "job_state"
    saved = state.stat().st_mtime if state.exists() else 0
    wait_for(lambda: state.exists() and state.stat().st_mtime > saved, timeout=60,
             what="slurmctld to save its job state")
    c.stop_slurmctld(sig=signal.SIGKILL)
    kubectl(c, "delete", "resourceslice", sl["metadata"]["name"])
    kubectl(c, "delete", "resourceclaim", "-n", "slurm", claim["metadata"]["name"])
    c.start_slurmctld()
    assert running_on(c, job), show_job(c, job)
    log = c.run_dir / "log" / "slurmctld.log"
    wait_for(lambda: "slurmctld runs 1 jobs" in log.read_text(), timeout=60,
             what="slurmctld to tell the plugin its jobs")
    assert not job_claims(c, job), "no claim can be written while kube-b has no CPU slice"
    sl["metadata"] = {"name": sl["metadata"]["name"]}
    path = tmp_path / "slice.json"
    path.write_text(json.dumps(sl))
    kubectl(c, "create", "-f", str(path))
    wait_for(lambda: job_claims(c, job), timeout=60, what="the job's claim once kube-b is usable again")


def test_a_restart_that_lost_its_jobs_keeps_their_claims_until_slurm_killed_their_steps(cluster_factory):
    """slurmctld comes back without its job state while a job's batch step
    runs on a Kubernetes node whose slurmd cannot answer yet (stopped). That
    step keeps its devices: the job's claim and holder pod stay until the
    node's slurmd registers, Slurm kills the step it no longer knows, and
    KillWait has passed; then they go. At no sample are they gone while the
    step's process lives."""
    c = cluster_factory("demo.json")
    node = "k8s-n1"
    pidfile = c.run_dir / "orphan.pid"
    job = sbatch(c, "-w", node, "-o", "/dev/null", "-c2", "--wrap", f"echo $$ > {pidfile}; exec sleep 300")
    wait_job(c, job, states={"RUNNING"})
    wait_for(lambda: job_claims(c, job) and holder_pods(c, job), timeout=30, what="the job's claim and holder pod")
    pid = job_pid(c, pidfile)
    slurmd = c._pids()[f"slurmd.{node}"]
    log = c.run_dir / "log" / "slurmctld.log"

    c.stop_slurmctld(sig=signal.SIGKILL)
    for f in (c.run_dir / "state").glob("job_state*"):
        f.unlink()  # the state a restart can lose (test_ha.py meets Slurm doing so)
    os.kill(slurmd, signal.SIGSTOP)
    try:
        since = len(log.read_bytes())
        c.start_slurmctld()
        kept = wait_for(lambda: (t := log.read_bytes()[since:].decode(errors="replace"))
                        and "has not registered since slurmctld started" in t and t, timeout=60,
                        what="the plugin to keep the lost job's claim for its node's slurmd")
        assert "slurmctld runs 0 jobs" in kept, kept[-2000:]
        assert process_alive(pid), "the lost job's step should run on while its slurmd is stopped"
        assert job_claims(c, job) and holder_pods(c, job), "claim or holder pod deleted while the step runs"
    finally:
        os.kill(slurmd, signal.SIGCONT)

    def gone():
        # claims first, then the process: gone claims with a live step after
        # them is the double-booking window this closes
        claims, pods = job_claims(c, job), holder_pods(c, job)
        if not claims and not pods:
            assert not process_alive(pid), "the claim and holder pod went while the lost job's step still ran"
            return True
        return False
    wait_for(gone, timeout=120, what="the lost job's claim and holder pod to go once Slurm killed its step",
             on_timeout=lambda: c.tail("log/slurmctld.log"))
    text = log.read_bytes()[since:].decode(errors="replace")
    assert re.search(rf"Orphan .*{job}.* reported on node {node}", text), text[-3000:]
