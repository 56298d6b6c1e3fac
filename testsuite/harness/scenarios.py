# SPDX-License-Identifier: GPL-2.0-or-later
"""Scenarios that the integration tests run in more than one Slurm release
(the installed 22.05.8 in test_k8s_sharing.py and test_k8s_failures.py, the
others in test_releases_plugin.py): each takes a running harness cluster
under select/k8s_cons_tres, drives it and asserts. Waits are bounded."""
import json
import random
import re
import signal

from .alignment import gres_used_idx, job_allocations, parse_id_list, running_allocations
from .jobs import sbatch, show_job, wait_job
from .kube import CLAIM_LABEL_JOB, cpu_ids_by_device, faults, holder_pods, job_claimed, job_claims, kubectl, \
    pod_held, reset_faults
from .wait import wait_for

# How long a job may take from sbatch to RUNNING (private releases start
# their first jobs somewhat slower than the installed one).
START = 90


def end_all_jobs(c):
    """Cancel every job; wait until none is left, nor any job claim or
    holder pod (pods go before their claims)."""
    c.run("scancel", "--user", "root", check=False)
    wait_for(lambda: not c.run("squeue", "-h", "-t", "PD,R,CG,S", check=False).stdout.strip(),
             timeout=60, what="all jobs to end")
    wait_for(lambda: not holder_pods(c) and not job_claims(c), timeout=60,
             what="holder pods and job claims to be deleted")


def pod_held_never_given(c, count=24, running=12, seed=7) -> list:
    """Demo fixture: a random job mix; no running job gets a CPU or GPU that
    a pod holds. Returns the job ids."""
    held = pod_held(c)
    assert held, "the demo fixture has pods holding devices"
    rng = random.Random(seed)
    jobs = []
    for _ in range(count):
        opts = rng.choice([["-c2"], ["-c6"], ["-c4", "--gres=gpu:1"], ["-c8", "--gres=gpu:2"], ["-c12"]])
        jobs.append(sbatch(c, "-o", "/dev/null", *opts, "--wrap", "sleep 60"))
    wait_for(lambda: all(show_job(c, j).get("JobState") in ("RUNNING", "PENDING") for j in jobs),
             timeout=60, what="jobs to be scheduled")
    wait_for(lambda: len(running_allocations(c, jobs)) >= running, timeout=START,
             what=f"at least {running} jobs running")
    for job, allocs in running_allocations(c, jobs).items():
        for a in allocs:
            cpus, gpus = held.get(a.node, (set(), set()))
            assert not cpus & set(a.cpu_ids), f"job {job} got pod-held CPUs on {a.node}"
            assert not gpus & set(a.gpu_idx), f"job {job} got pod-held GPUs on {a.node}"
    return jobs


def claims_equal_allocations(c) -> list:
    """Demo fixture: single- and multi-node jobs, with and without GPUs;
    each job's claims hold exactly the CPUs and GPUs Slurm allocated it, per
    node. Returns the job ids (running)."""
    jobs = [sbatch(c, "-o", "/dev/null", *opts, "--wrap", "sleep 60")
            for opts in (["-c4"], ["-c8", "--gres=gpu:2"], ["-w", "k8s-n4", "-c6", "--gres=gpu:1"],
                         ["-N2", "--ntasks-per-node=1", "-c4", "--gres=gpu:1"])]
    for j in jobs:
        wait_job(c, j, states={"RUNNING"}, timeout=START)
    cpu_ids = cpu_ids_by_device(c)
    for j in jobs:
        allocs = {a.node: a for a in job_allocations(c, j)}

        def claimed():
            per_node = job_claimed(c, j, cpu_ids)
            return per_node if set(per_node) == set(allocs) else None

        per_node = wait_for(claimed, timeout=30, what=f"claims of job {j}")
        for node, a in allocs.items():
            assert sorted(per_node[node][0]) == sorted(a.cpu_ids), f"job {j} CPUs on {node}"
            assert sorted(per_node[node][1]) == sorted(a.gpu_idx), f"job {j} GPUs on {node}"
    return jobs


def admin_view_file(c):
    """Demo fixture: the view file in StateSaveLocation shows, per node, what
    pods' claims and Slurm jobs hold."""
    view_file = c.run_dir / "state" / "k8s_cons_tres_view.json"
    j = sbatch(c, "-w", "k8s-n1", "-o", "/dev/null", "-c4", "--gres=gpu:1", "--wrap", "sleep 60")
    wait_job(c, j, states={"RUNNING"}, timeout=START)

    def node_view():
        try:
            view = json.loads(view_file.read_text())
        except (OSError, ValueError):
            return None
        n1 = next(n for n in view["nodes"] if n["node"] == "k8s-n1")
        return n1 if any(h.get("slurm_job") == j for h in n1["held"]) else None

    n1 = wait_for(node_view, timeout=30, what="the view file to show the job")
    assert {"kubernetes_claim": "ml-team/trainer-0-gpu", "cpus": "0-3", "gpus": "0"} in n1["held"]
    (a,) = job_allocations(c, j)
    mine = next(h for h in n1["held"] if h.get("slurm_job") == j)
    assert mine["gpus"] == ",".join(map(str, a.gpu_idx))
    assert n1["cpus"] == 64 and n1["gpus"] == 8


def api_server_down_then_back(c):
    """Mixed fixture: with the API server refusing, Kubernetes nodes take no
    new job and the plain node does; back, the waiting job starts and the
    claims catch up."""
    before = sbatch(c, "-w", "kube-b", "-o", "/dev/null", "-c2", "--wrap", "sleep 300")
    wait_job(c, before, states={"RUNNING"}, timeout=START)
    wait_for(lambda: job_claims(c, before), timeout=30, what="the first job's claim")

    log = c.run_dir / "log" / "slurmctld.log"
    # Only what is logged after the fault counts: a view that went stale
    # once before (a slow start on a loaded machine) says so earlier.
    since = len(log.read_bytes())
    faults(c, refuse=True, dropWatches=True)
    try:
        def stale_now():
            new = log.read_bytes()[since:].decode(errors="replace")
            return "view out of sync: inventory is" in new and "API server unreachable" in new
        wait_for(stale_now, timeout=60, what="the plugin to call its view stale")
        # Kubernetes nodes take no new work; the plain node does.
        k8s_job = sbatch(c, "-w", "kube-a", "-o", "/dev/null", "-c2", "--wrap", "sleep 300")
        plain_job = sbatch(c, "-w", "plain-c", "-o", "/dev/null", "-c2", "--gres=gpu:2", "--wrap", "sleep 300")
        wait_job(c, plain_job, states={"RUNNING"}, timeout=START)
        state = show_job(c, k8s_job, detail=True)
        assert state["JobState"] == "PENDING", state
        # A job that ends during the outage has its claim deleted later.
        c.run("scancel", str(before))
        wait_job(c, before, states={"CANCELLED"})
    finally:
        reset_faults(c)

    wait_job(c, k8s_job, states={"RUNNING"}, timeout=90)

    def in_sync_again():
        after = log.read_bytes()[since:].decode(errors="replace")
        return after.rfind("view in sync with the Kubernetes API server") > after.find("view out of sync: ")
    wait_for(in_sync_again, timeout=15, what="the log to say the view is in sync again")
    wait_for(lambda: job_claims(c, k8s_job), timeout=60, what="the new job's claim after recovery")
    wait_for(lambda: not job_claims(c, before), timeout=90, what="the ended job's claim to be deleted")
    assert not job_claims(c, plain_job), "a plain Slurm node gets no claim"


def kill_9_restart_reconciles(c, tmp_path):
    """Demo fixture: slurmctld is killed with SIGKILL (after saving its
    running jobs); meanwhile one job's claim is deleted and an orphan claim
    appears. After the restart the missing claim is written again, the
    orphan deleted, and every claim still equals Slurm's allocation."""
    jobs = [sbatch(c, "-w", node, "-o", "/dev/null", "-c4", "--gres=gpu:1", "--wrap", "sleep 300")
            for node in ("k8s-n1", "k8s-n3")]
    for j in jobs:
        wait_job(c, j, states={"RUNNING"}, timeout=START)
        wait_for(lambda j=j: job_claims(c, j), timeout=30, what=f"claim of job {j}")
    # slurmctld must have saved the running jobs before it dies: a change to
    # one of them after they run makes it save its job state again.
    state = c.run_dir / "state" / "job_state"
    saved = state.stat().st_mtime_ns if state.exists() else 0
    c.run("scontrol", "update", f"jobid={jobs[0]}", "comment=state-saved")
    wait_for(lambda: state.exists() and state.stat().st_mtime_ns > saved, timeout=60,
             what="slurmctld to save its job state")

    c.stop_slurmctld(sig=signal.SIGKILL)
    # While it is down: one job's claim goes missing, an orphan appears.
    lost = job_claims(c, jobs[0])[0]["metadata"]["name"]
    kubectl(c, "delete", "resourceclaim", "-n", "slurm", lost)
    orphan = job_claims(c, jobs[1])[0]
    orphan["metadata"] = {"name": "slurm-orphan-999999", "namespace": "slurm",
                          "labels": dict(orphan["metadata"]["labels"], **{CLAIM_LABEL_JOB: "999999"})}
    status = orphan.pop("status")
    (tmp_path / "orphan.json").write_text(json.dumps(orphan))
    kubectl(c, "create", "-f", str(tmp_path / "orphan.json"))
    kubectl(c, "patch", "resourceclaim", "slurm-orphan-999999", "-n", "slurm", "--subresource=status",
            "--type=merge", "-p", json.dumps({"status": {"allocation": status["allocation"]}}))

    log = c.run_dir / "log" / "slurmctld.log"
    since = len(log.read_bytes())
    c.start_slurmctld()
    for j in jobs:
        assert show_job(c, j).get("JobState") == "RUNNING", show_job(c, j)
    # The killed slurmctld ran on this host and its process is gone: its
    # Lease is taken at once, not waited out (15 s without claim writes).
    wait_for(lambda: "that slurmctld's process is gone" in log.read_bytes()[since:].decode(errors="replace"),
             timeout=30, what="the new slurmctld to take the dead one's Lease over")
    assert "whose lease expired" not in log.read_bytes()[since:].decode(errors="replace")
    # The pods' GPUs are kept from Slurm again once the slurmds registered
    # with the new slurmctld (and the jobs' GPUs are counted as before).
    for node, (_, gpus) in pod_held(c).items():
        wait_for(lambda node=node, gpus=gpus: gpus <= gres_used_idx(c, node), timeout=30,
                 what=f"the GPUs pods hold on {node} ({sorted(gpus)}) to be kept from Slurm after the restart")
    wait_for(lambda: job_claims(c, jobs[0]), timeout=60, what="the missing claim to be written again")
    wait_for(lambda: kubectl(c, "get", "resourceclaim", "-n", "slurm", "slurm-orphan-999999",
                             check=False).returncode != 0,
             timeout=60, what="the orphan claim to be deleted")
    assert job_claims(c, jobs[1]), "a running job's claim survives the restart"
    cpu_ids = cpu_ids_by_device(c)
    for j in jobs:
        (a,) = job_allocations(c, j)
        claimed = wait_for(lambda j=j: job_claimed(c, j, cpu_ids), timeout=30, what=f"claims of job {j}")
        assert sorted(claimed[a.node][0]) == sorted(a.cpu_ids), f"job {j} CPUs after the restart"
        assert sorted(claimed[a.node][1]) == sorted(a.gpu_idx), f"job {j} GPUs after the restart"


def reserved_cores_kept(c, scontrol, node="k8s-n3"):
    """A CoreCnt= reservation on a Kubernetes node of the demo fixture:
    jobs outside it, steered by the engine or not, never get its cores,
    and its own job runs. scontrol(*args) creates it (22.05 needs a client
    shim, test_parity.py)."""
    # Right after start-up the plugin may not be in sync yet, and slurmctld
    # then finds the node's cores busy ("Requested nodes are busy").
    c.wait_k8s_in_sync()
    scontrol("create", "reservation", "ReservationName=hold4", f"Nodes={node}",
             "CoreCnt=4", "StartTime=now", "Duration=30", "Users=root")
    try:
        text = c.run("scontrol", "show", "reservation", "hold4").stdout
        m = re.search(r"CoreIDs=(\S+)", text)
        assert m, f"the reservation holds cores: {text}"
        reserved = set(parse_id_list(m.group(1)))
        assert len(reserved) == 4
        tpc = 2  # demo nodes: Slurm CPU id = core * 2 + thread
        # small jobs are steered to the engine's best cores, which the
        # engine must pick around the reservation's
        jobs = [sbatch(c, "-w", node, "-o", "/dev/null", *opts, "--wrap", "sleep 60")
                for opts in (["-c2"], ["-c4"], ["-c2", "--gres=gpu:1"], ["-c8"], ["-c6"])]
        running = wait_for(lambda: {j: job_allocations(c, j) for j in jobs
                                    if show_job(c, j).get("JobState") == "RUNNING"} or None,
                           timeout=60, what="jobs running outside the reservation")
        for j, allocs in running.items():
            for a in allocs:
                cores = {cpu // tpc for cpu in a.cpu_ids}
                assert not cores & reserved, f"job {j} got reserved cores {sorted(cores & reserved)}"
        inside = sbatch(c, "-w", node, "--reservation=hold4", "-o", "/dev/null", "-n4", "--wrap", "sleep 60")
        wait_for(lambda: show_job(c, inside).get("JobState") == "RUNNING", timeout=60,
                 what="the reservation's own job to run")
    finally:
        c.run("scancel", "--user", "root", check=False)
        c.run("scontrol", "delete", "reservation", "hold4", check=False)
