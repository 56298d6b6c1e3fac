# SPDX-License-Identifier: GPL-2.0-or-later
"""select/k8s_cons_tres in the Slurm releases beyond the installed 22.05.8
that it is built for (the 23.11-24.11 ABI family: 24.11.5; the 25.05-26.05
family: 25.11.7, 26.05.3), each through that release's own slurmctld, slurmd
and commands: the build exports exactly what the release's loader looks up,
jobs on every node, what pods hold (CPUs and GPUs) never given to a job,
claims and holder pods equal to Slurm's allocation, the admin view file,
reconciliation after slurmctld's kill -9 and restart, and the failure policy
(API server down: Kubernetes nodes take no new job; back: they do).

The plugin build a release loads: $K8S_CONS_TRES_PLUGIN_<VERSION> (dots as
underscores: K8S_CONS_TRES_PLUGIN_26_05_3=<build>/.libs/select_k8s_cons_tres.so),
else the newest build* directory of this tree configured
--with-slurm=VERSION (e.g. build-slurm-26.05.3; harness/slurm_release.py).
A release whose Slurm or plugin is not built is skipped, saying how to build
it, unless K8S_REQUIRE_SLURM_RELEASES=1 (run-tests, which builds both) makes
that a failure.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from harness import scenarios, slurm_release
from harness.alignment import gres_used_idx, running_allocations
from harness.cluster import Cluster, new_run_dir
from harness.jobs import sbatch, show_job, wait_job
from harness.kube import holder_pods, job_claims, pod_held
from harness.wait import wait_for
from conftest import FIXTURES, release_unavailable

RELEASES = [v for v in slurm_release.PLUGIN_RELEASES if v != slurm_release.INSTALLED]


def require(version) -> slurm_release.Release:
    """The release, with its Slurm and a plugin build for it; else skip (or
    fail where K8S_REQUIRE_SLURM_RELEASES requires it) saying how to build
    them."""
    release = slurm_release.get(version)
    reason = None
    if not release.built():
        reason = release.not_built_reason()
    else:
        try:
            if not release.find_plugin():
                reason = release.plugin_not_built_reason()
        except slurm_release.SlurmReleaseError as e:
            reason = str(e)
    if reason:
        release_unavailable(version, reason)
    return release


@pytest.mark.parametrize("version", RELEASES)
def test_plugin_exports_what_the_release_loader_looks_up(version):
    """check-plugin-exports.sh against the release's own source tree
    (node_select_syms[]) and its libslurmfull and slurmctld."""
    release = require(version)
    plugin = release.find_plugin()
    env = dict(os.environ, SLURM_SRC=str(release.dir / "src"), SLURM_PREFIX=str(release.prefix))
    res = subprocess.run([str(slurm_release.TOP / "testsuite" / "check-plugin-exports.sh"), str(plugin)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "PASS" in res.stdout, res.stdout


@pytest.fixture(scope="module", params=RELEASES)
def release_cluster(request):
    """The demo fixture (pods hold some CPUs and GPUs) under the plugin, in
    one release."""
    require(request.param)
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    try:
        c.up(str(FIXTURES / "demo.json"), slurm=request.param)
        yield c
    finally:
        c.down()


@pytest.fixture
def no_jobs_left(release_cluster):
    """The test starts and ends with no job, no job claim, no holder pod."""
    yield release_cluster
    scenarios.end_all_jobs(release_cluster)


def test_runs_jobs_on_every_node(no_jobs_left):
    c = no_jobs_left
    version = c.release.version
    for name, pid in c._pids().items():
        if name.startswith("slurm"):
            exe = Path(os.readlink(f"/proc/{pid}/exe"))
            assert exe.parent == (c.release.prefix / "sbin").resolve(), f"{name} runs {exe}"
    config = c.run("scontrol", "show", "config").stdout
    assert re.search(rf"^SLURM_VERSION\s+=\s+{re.escape(version)}$", config, re.M), config
    assert re.search(r"^SelectType\s+=\s+select/k8s_cons_tres$", config, re.M), config
    # CR_Core: 25.05+ slurmctld takes it only from a select plugin with
    # cons_tres's id (24.11: from any but select/linear's id)
    assert re.search(r"^SelectTypeParameters\s+=\s+CR_CORE_MEMORY$", config, re.M), config
    log = (c.run_dir / "log" / "slurmctld.log").read_text()
    assert "select/k8s_cons_tres: starting in slurmctld" in log

    nodes = c.state()["nodes"]
    jobs = {node: sbatch(c, "-w", node, "-c2", "--gres=gpu:1", "-o", str(c.run_dir / f"{node}.out"),
                         "--wrap", "echo $SLURMD_NODENAME gpu=$CUDA_VISIBLE_DEVICES")
            for node in nodes}
    for node, job_id in jobs.items():
        job = wait_job(c, job_id, timeout=90)
        assert job["JobState"] == "COMPLETED" and job["NodeList"] == node, job
        out = (c.run_dir / f"{node}.out").read_text().split()
        assert out[0] == node and re.fullmatch(r"gpu=\d", out[1]), out
    res = c.run("srun", f"-N{len(nodes)}", "bash", "-c", "echo $SLURMD_NODENAME", timeout=120)
    assert sorted(res.stdout.split()) == sorted(nodes), res.stdout


def test_pod_held_cpus_and_gpus_never_go_to_jobs(no_jobs_left):
    c = no_jobs_left
    held = pod_held(c)
    # Without update_node_config the pods' GPUs are marked by the plugin's
    # agent once each slurmd has registered: scontrol shows them as used.
    for node, (_, gpus) in held.items():
        wait_for(lambda node=node, gpus=gpus: gpus <= gres_used_idx(c, node), timeout=30,
                 what=f"the GPUs pods hold on {node} ({sorted(gpus)}) to be kept from Slurm")
    jobs = scenarios.pod_held_never_given(c, count=20, running=10)
    assert any(a.gpu_idx for allocs in running_allocations(c, jobs).values() for a in allocs), \
        "no running job has a GPU: the GPU exclusion went untested"
    # All 8 GPUs of a node where a pod holds one: waits, is not rejected.
    whole = sbatch(c, "-w", "k8s-n1", "-o", "/dev/null", "--gres=gpu:8", "--wrap", "sleep 1")
    wait_for(lambda: show_job(c, whole).get("Reason") not in (None, "None"), timeout=30,
             what="the 8-GPU job to be held back")
    assert show_job(c, whole)["JobState"] == "PENDING", show_job(c, whole)


def test_claims_and_holder_pods_equal_slurms_allocation(no_jobs_left):
    c = no_jobs_left
    for j in scenarios.claims_equal_allocations(c):
        nodes = {cl["metadata"]["labels"]["k8s-cons-tres.slurm.io/node"] for cl in job_claims(c, j)}
        wait_for(lambda j=j, n=len(nodes): len(pods := holder_pods(c, j)) == n and
                 all(p.get("status", {}).get("phase") == "Running" for p in pods),
                 timeout=30, what=f"one Running holder pod per node of job {j} ({sorted(nodes)})")


def test_admin_view_file_shows_free_and_held_devices(no_jobs_left):
    scenarios.admin_view_file(no_jobs_left)


def test_core_reservations_with_a_plain_scontrol(no_jobs_left):
    """24.11's scontrol checks no select plugin id and 25.05+ load the
    plugin with cons_tres's: CoreCnt= needs no client shim from 24.11 on."""
    c = no_jobs_left
    scenarios.reserved_cores_kept(c, lambda *args: c.run("scontrol", *args))


@pytest.mark.parametrize("version", RELEASES)
def test_slurmctld_kill_9_and_restart_reconciles_claims(cluster_factory, tmp_path, version):
    require(version)
    scenarios.kill_9_restart_reconciles(cluster_factory("demo.json", slurm=version), tmp_path)


@pytest.mark.slow  # a minute or more (run-tests --quick leaves it out)
@pytest.mark.parametrize("version", RELEASES)
def test_api_server_down_then_back(cluster_factory, version):
    require(version)
    scenarios.api_server_down_then_back(cluster_factory("mixed.json", slurm=version))
