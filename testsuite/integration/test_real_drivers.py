# SPDX-License-Identifier: GPL-2.0-or-later
"""A cluster from recorded slices of released drivers (testsuite/cluster up
--slices/--claims): dra.cpu v0.2.0 in individual mode with pcie roots and in
its default grouped mode, NVIDIA's DRA driver v25.12.0 (no GPU NUMA
attribute, so affinity comes from pcieRoot), device taints and DynamicMIG.
slurm.conf and gres.conf are what k8s-cons-tres-inspect derives; the tests
check jobs against that derivation. Reserved CPUs are not covered here: the
core does not yet accept a node publishing fewer CPUs than slurm.conf says."""
import json
import re

import pytest

from harness.alignment import job_allocations
from harness.cluster import Cluster, find_inspect, inspect_recorded, new_run_dir
from harness.jobs import sbatch, show_job, wait_job
from harness.kube import job_claims
from harness.wait import wait_for
from conftest import FIXTURES

RECORDED = FIXTURES / "recorded"
SLICES = [str(RECORDED / "slices.json")]
CLAIMS = [str(RECORDED / "claims.json")]
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def report():
    return {n["name"]: n for n in inspect_recorded(SLICES, CLAIMS)["nodes"]}


@pytest.fixture(scope="module")
def rec_cluster():
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.up("", slices=SLICES, claims=CLAIMS)
        yield c
    finally:
        c.down()


@pytest.fixture
def jobs(rec_cluster):
    """Job ids a test submits; cancelled after it, so tests start on idle nodes."""
    ids = []
    yield ids
    if ids:
        rec_cluster.run("scancel", *map(str, ids), check=False)
        for j in ids:
            wait_job(rec_cluster, j)


def numa_of_core(node: dict) -> dict:
    return {core: m["id"] for m in node["numa_nodes"] for core in m["slurm_cores"]}


def gpu_jobs_on(cluster, jobs, node: str, count: int, running: int) -> dict:
    """Submits `count` one-GPU jobs of one core to `node`; waits until
    `running` run and the rest wait for resources; job -> allocation."""
    for _ in range(count):
        jobs.append(sbatch(cluster, "-w", node, "-o", "/dev/null", "-c2", "--gres=gpu:1",
                           "--wrap", "sleep 120"))

    def settled():
        states = [show_job(cluster, j) for j in jobs]
        run = [j for j, s in zip(jobs, states) if s.get("JobState") == "RUNNING"]
        waiting = [s for s in states if s.get("JobState") == "PENDING" and s.get("Reason") == "Resources"]
        return len(run) == running and len(waiting) == count - running and run
    run = wait_for(settled, timeout=60, what=f"{running} of {count} GPU jobs on {node} to run",
                   on_timeout=lambda: [show_job(cluster, j) for j in jobs])
    return {j: job_allocations(cluster, j)[0] for j in run}


def wait_gpus_held(cluster, node: str, idx: str):
    """The plugin has applied the slices: these GPUs are kept from Slurm."""
    wait_for(lambda: f"IDX:{idx}" in cluster.run("scontrol", "-d", "show", "node", node).stdout,
             timeout=30, what=f"GPUs {idx} of {node} to be kept from Slurm")


def test_slurm_and_gres_conf_follow_what_inspect_derives(rec_cluster, report):
    conf = (rec_cluster.run_dir / "etc" / "slurm.conf").read_text()
    for name, n in report.items():
        assert re.search(rf"NodeName={name} .*Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 "
                         rf".*Gres=gpu:dra:{len(n['gpus'])} ", conf), name
    gres = (rec_cluster.run_dir / "etc" / "gres.conf").read_text().splitlines()
    n1 = [line for line in gres if line.startswith("NodeName=rec-n1 ")]
    # NVIDIA v25.12 publishes no NUMA: gpu-2 is on NUMA 1 through its pcieRoot
    assert report["rec-n1"]["gpus"][2]["affinity_source"] == "pcie-root"
    assert n1[2].endswith("nvidia2 Cores=4-7")
    # grouped dra.cpu publishes no pcieRoot lists: affinity unknown, no Cores=
    n3 = [line for line in gres if line.startswith("NodeName=rec-n3 ")]
    assert len(n3) == 2 and not any("Cores=" in line for line in n3)
    # the recorded nodes agree with their slices: none is drained
    assert all(s.rstrip("*") in ("idle", "mix", "alloc") for s in rec_cluster.node_states().values())


def test_inspect_reads_the_api_server_as_it_reads_the_files(rec_cluster, report):
    """--kubeconfig with the plugin's own least-privilege credentials."""
    out = rec_cluster.run(str(find_inspect()), "--json", "--kubeconfig",
                          str(rec_cluster.run_dir / "etc" / "plugin.kubeconfig")).stdout
    live = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert sorted(live) == sorted(report)
    for name, n in report.items():
        for key in ("sockets", "numa_nodes", "l3_groups", "gpus", "slurm_conf", "gres_conf"):
            assert live[name][key] == n[key], (name, key)
        pods = [u for u in live[name]["unavailable"] if not u["reason"].startswith("Slurm job")]
        assert pods == n["unavailable"], name


def test_gpu_jobs_land_on_their_gpus_numa_nodes_and_a_tainted_gpu_is_never_used(
        rec_cluster, report, jobs):
    node = report["rec-n1"]
    wait_gpus_held(rec_cluster, "rec-n1", "1")  # gpu-1: taint xid=79 NoSchedule
    allocs = gpu_jobs_on(rec_cluster, jobs, "rec-n1", 4, 3)
    numa = numa_of_core(node)
    tpc = node["threads_per_core"]
    used = set()
    for j, a in allocs.items():
        (g,) = a.gpu_idx
        used.add(g)
        cpu_numas = {numa[c // tpc] for c in a.cpu_ids}
        assert cpu_numas == {node["gpus"][g]["numa"]}, f"job {j}: CPUs on NUMA {cpu_numas}, GPU {g}"
    # gpu-3's taint has effect None: it is used
    assert used == {0, 2, 3}


def test_a_gpu_whose_mig_device_a_pod_holds_is_never_used(rec_cluster, report, jobs):
    node = report["rec-n2"]
    held = {u["device"] for u in node["unavailable"]}
    assert held == {"gpu-2", "cpudev008", "cpudev009"}
    wait_gpus_held(rec_cluster, "rec-n2", "2")
    allocs = gpu_jobs_on(rec_cluster, jobs, "rec-n2", 4, 3)
    assert {a.gpu_idx[0] for a in allocs.values()} == {0, 1, 3}
    # the pod's CPUs 4 and 12 are Slurm core 4 (siblings N and N+8)
    pod_core = 4
    for j, a in allocs.items():
        assert pod_core not in {c // node["threads_per_core"] for c in a.cpu_ids}, f"job {j}"


def test_grouped_claims_reserve_per_group_what_slurm_uses(rec_cluster, report, jobs):
    node = report["rec-n3"]
    assert node["cpu_mode"] == "grouped-numa"
    jobs.append(sbatch(rec_cluster, "-w", "rec-n3", "-o", "/dev/null", "-c12", "--wrap", "sleep 120"))
    wait_job(rec_cluster, jobs[0], states={"RUNNING"})
    (a,) = job_allocations(rec_cluster, jobs[0])
    numa = numa_of_core(node)
    per_numa = {}
    for c in a.cpu_ids:
        n = numa[c // node["threads_per_core"]]
        per_numa[n] = per_numa.get(n, 0) + 1
    assert len(per_numa) == 2, "12 CPUs span both NUMA nodes of 8"
    (claim,) = wait_for(lambda: job_claims(rec_cluster, jobs[0]), timeout=30, what="the job's claim")
    requests = {r["name"]: r["exactly"] for r in claim["spec"]["devices"]["requests"]}
    consumed = {}
    for r in claim["status"]["allocation"]["devices"]["results"]:
        assert r["driver"] == "dra.cpu"
        assert UUID_RE.match(r["shareID"]), r
        q = r["consumedCapacity"]["dra.cpu/cpu"]
        spec = requests[r["request"]]
        assert spec["count"] == 1 and spec["capacity"]["requests"] == {"dra.cpu/cpu": q}, (r, spec)
        consumed[int(r["device"].removeprefix("cpudevnuma"))] = int(q)
    assert len(requests) == len(consumed)
    assert consumed == per_numa


def test_what_the_plugin_cannot_use_is_logged_once_per_node(rec_cluster):
    """rec-n3's GPUs have no CPU affinity: slurmctld's log says so at debug
    level for that node, once, not with every view."""
    log = rec_cluster.run_dir / "log" / "slurmctld.log"
    line = "node rec-n3: device gpu-0 (and 1 more): CPU affinity unknown"
    wait_for(lambda: line in log.read_text(), timeout=30, what="the unusable attributes logged")
    # later views of the same slices (jobs' claims change every node's) log nothing new
    assert log.read_text().count(line) == 1
