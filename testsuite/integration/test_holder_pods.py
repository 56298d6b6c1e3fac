# SPDX-License-Identifier: GPL-2.0-or-later
"""Holder pods: kubelet enforces Slurm's allocations. Every running job has,
on each Kubernetes node it uses, a pod that consumes its claims; the test API
server's node agents (kubelet + the DRA drivers) prepare the claims for that
pod only, so the job's CPUs leave the node's shared pool and its GPUs are
prepared for it. Pods go before their claims; deleted ones come back;
slurmctld's restart reconciles them like claims."""
import json
import random
import signal
import threading
import time
import ssl
import urllib.parse
import urllib.request

import pytest

from harness import node_agent as na
from harness.jobs import job_pid, process_alive, sbatch, show_job, wait_job
from harness import scenarios
from harness.kube import CLAIM_LABEL_JOB, api_stats, claim_devices, cpu_ids_by_device, job_claims, kubectl
from harness.kube import holder_pods as job_pods
from harness.wait import wait_for

NS = "slurm"
BOUND = 20  # s from a job's start to its holder pod Running (the claim bound's scale)


@pytest.fixture(scope="module")
def cluster(k8s_cluster):
    return k8s_cluster  # conftest's demo cluster, one for this module


@pytest.fixture(autouse=True)
def no_jobs_left(cluster):
    yield
    scenarios.end_all_jobs(cluster)


def running_pods(cluster, job, count):
    pods = job_pods(cluster, job)
    if len(pods) == count and all(p.get("status", {}).get("phase") == "Running" for p in pods):
        return pods
    return None


def wait_running_pods(cluster, job, count=1):
    return wait_for(lambda: running_pods(cluster, job, count), timeout=BOUND,
                    what=f"{count} Running holder pod(s) of job {job}",
                    on_timeout=lambda: kubectl(cluster, "get", "pods", "-n", NS, "-o", "wide", check=False).stdout)


def job_devices(cluster, job) -> dict:
    """node -> (Linux CPU ids, GPU device names) the job's claims hold."""
    ids = cpu_ids_by_device(cluster)
    out = {}
    for c in job_claims(cluster, job):
        node, cpus, _ = claim_devices(c, ids)
        gpus = {r["device"] for r in c["status"]["allocation"]["devices"]["results"] if r["driver"] != "dra.cpu"}
        have = out.setdefault(node, (set(), set()))
        have[0].update(cpus)
        have[1].update(gpus)
    return out


def check_enforced(cluster, job, pod):
    """What kubelet enforces for one holder pod, from its node's agent."""
    node = pod["spec"]["nodeName"]
    cpus, gpus = job_devices(cluster, job)[node]
    view = na.view(cluster, node)
    mine = {k: p for k, p in view["prepared"].items() if p["podUid"] == pod["metadata"]["uid"]}
    claims = {f"{NS}/{r['resourceClaimName']}" for r in pod["spec"]["resourceClaims"]}
    assert set(mine) == claims, view["prepared"]
    assert not cpus & set(na.parse_id_list(view["sharedCpus"] or "")), "job CPUs in the shared pool"
    assert cpus == set().union(*(set(na.parse_id_list(p["cpus"] or "")) for p in mine.values()))
    assert gpus == set().union(*(set(p["gpus"]) for p in mine.values()))
    others = [p for k, p in view["prepared"].items() if k not in mine]
    assert not gpus & set().union(*(set(p["gpus"]) for p in others)), "a job GPU prepared for another pod"


def test_a_job_gets_a_running_holder_pod_that_holds_its_devices(cluster):
    j = sbatch(cluster, "-w", "k8s-n1", "-c4", "--gres=gpu:1", "--mem=1000", "-o", "/dev/null",
               "--wrap", "sleep 300")
    wait_job(cluster, j, states={"RUNNING"})
    pod, = wait_running_pods(cluster, j)
    claims = sorted(c["metadata"]["name"] for c in job_claims(cluster, j))
    spec = pod["spec"]
    assert spec["nodeName"] == "k8s-n1"
    assert sorted(r["resourceClaimName"] for r in spec["resourceClaims"]) == claims
    ctr, = spec["containers"]
    assert sorted(c["name"] for c in ctr["resources"]["claims"]) == sorted(r["name"] for r in spec["resourceClaims"])
    cpus, _ = job_devices(cluster, j)["k8s-n1"]
    assert ctr["resources"]["requests"] == {"cpu": str(len(cpus)), "memory": "1000Mi"}
    assert spec["priorityClassName"] == "slurm-k8s-cons-tres-holder"
    assert {"operator": "Exists"} in spec["tolerations"]
    labels = pod["metadata"]["labels"]
    assert labels[CLAIM_LABEL_JOB] == str(j) and labels["k8s-cons-tres.slurm.io/node"] == "k8s-n1"
    assert labels["k8s-cons-tres.slurm.io/user"] == "root"
    for c in job_claims(cluster, j):
        assert c["status"]["reservedFor"] == [{"resource": "pods", "name": pod["metadata"]["name"],
                                               "uid": pod["metadata"]["uid"]}]
    check_enforced(cluster, j, pod)

    # an ordinary pod on the node runs on the shared pool: none of the job's CPUs
    plain = na.create_pod_on(cluster, "default", f"plain-{j}", "k8s-n1")
    try:
        running = na.wait_pod_phase(cluster, "default", plain["metadata"]["name"], "Running")
        cpuset = set(na.parse_id_list(na.view(cluster, "k8s-n1")["pods"][f"default/{plain['metadata']['name']}"]["cpuset"]))
        assert cpuset and not cpuset & cpus
        assert running["spec"]["nodeName"] == "k8s-n1"
    finally:
        na.delete_pod(cluster, "default", plain["metadata"]["name"], grace=0)

    # the admin's view: kubectl shows the job's pod on its node
    wide = kubectl(cluster, "get", "pods", "-n", NS, "-o", "wide").stdout
    row = next(ln for ln in wide.splitlines() if pod["metadata"]["name"] in ln)
    assert "Running" in row and "k8s-n1" in row


def _watch_deletions(cluster, kind_path, rv, out, stop):
    """DELETED events of one collection from resourceVersion rv, in order."""
    url, token, ca, _ = na._endpoints(cluster)
    ctx = ssl.create_default_context(cafile=ca)
    q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv, "timeoutSeconds": "60"})
    req = urllib.request.Request(f"{url}{kind_path}?{q}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=70, context=ctx) as resp:
        for line in resp:
            if stop.is_set():
                return
            ev = json.loads(line)
            if ev["type"] == "DELETED":
                out.append((int(ev["object"]["metadata"]["resourceVersion"]), ev["object"]["kind"],
                            ev["object"]["metadata"]["name"]))


@pytest.mark.parametrize("how", ["end", "cancel", "requeue-hold"])
def test_the_pod_goes_first_then_its_claims(cluster, how):
    j = sbatch(cluster, "-N2", "--ntasks-per-node=1", "-c2", "-o", "/dev/null", "--wrap",
               "sleep 4" if how == "end" else "sleep 300")
    wait_job(cluster, j, states={"RUNNING"})
    pods = wait_running_pods(cluster, j, 2)
    claims = {c["metadata"]["name"] for c in job_claims(cluster, j)}
    rv = na.control(cluster, "/_test/info")["resourceVersion"]
    seen, stop = [], threading.Event()
    threads = [threading.Thread(target=_watch_deletions, args=(cluster, path, rv, seen, stop), daemon=True)
               for path in (f"/api/v1/namespaces/{NS}/pods", f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims")]
    for t in threads:
        t.start()
    try:
        if how == "cancel":
            cluster.run("scancel", str(j))
        elif how == "requeue-hold":
            cluster.run("scontrol", "requeuehold", str(j))
        wanted = {p["metadata"]["name"] for p in pods} | claims
        wait_for(lambda: wanted <= {name for _, _, name in seen}, timeout=60,
                 what="the job's pods and claims to be deleted", on_timeout=lambda: str(sorted(seen)))
    finally:
        stop.set()
    for pod in pods:
        node = pod["spec"]["nodeName"]
        pod_rv = next(rv for rv, kind, name in seen if kind == "Pod" and name == pod["metadata"]["name"])
        for c in job_claims_named(claims, node):
            claim_rv = next(rv for rv, kind, name in seen if kind == "ResourceClaim" and name == c)
            assert pod_rv < claim_rv, f"claim {c} deleted before pod {pod['metadata']['name']}"
    if how == "requeue-hold":
        # the pods and claims went once its node ended it (COMPLETING over)
        wait_for(lambda: show_job(cluster, j)["JobState"] == "PENDING", timeout=60,
                 what=f"job {j} held, pending again")
        assert not job_pods(cluster, j)


def test_a_cancelled_jobs_devices_stay_held_until_its_steps_are_gone(cluster):
    """slurmctld releases a cancelled job before its nodes have killed its
    steps: a step that ignores SIGTERM runs on until SIGKILL, KillWait (5 s
    here) later, and the node stays COMPLETING meanwhile. Its holder pod and
    claims stay until the node has ended the job: no sample sees them gone
    while the step's process lives."""
    pidfile = cluster.run_dir / f"stubborn-{time.monotonic_ns()}.pid"
    j = sbatch(cluster, "-w", "k8s-n2", "-c2", "-o", "/dev/null", "--wrap",
               f"echo $$ > {pidfile}; trap '' TERM; exec sleep 300")
    wait_job(cluster, j, states={"RUNNING"})
    wait_running_pods(cluster, j, 1)
    pid = job_pid(cluster, pidfile)
    cluster.run("scancel", str(j))
    seen_alive_after_cancel = []

    def gone():
        # objects first, then the process: gone objects with a live step
        # after them is the window this closes
        claims, pods = job_claims(cluster, j), job_pods(cluster, j)
        if process_alive(pid):
            seen_alive_after_cancel.append(bool(claims) and bool(pods))
            assert claims and pods, "the cancelled job's claim or holder pod went while its step still ran"
            return False
        return not claims and not pods
    wait_for(gone, timeout=60, what=f"job {j}'s claim and pod to go once its step is gone",
             on_timeout=lambda: kubectl(cluster, "get", "pods,resourceclaims", "-n", NS, check=False).stdout)
    # the step did outlive the cancel (else this tested nothing)
    assert seen_alive_after_cancel, "the step ended at once; KillWait should have kept it"
    pidfile.unlink(missing_ok=True)


def job_claims_named(claims, node):
    # claim names are slurm-<cluster>-<job>-<node>-<part>
    return [c for c in claims if f"-{node}-" in c]


def plugin_requests(cluster):
    """Requests on claims and pods other than lists and watches (the
    test's own reads are lists)."""
    counts = api_stats(cluster)["requests"]
    return {k: n for k, n in counts.items()
            if k.split()[0] in ("create", "get", "update", "patch", "delete")
            and k.split()[1].split("/")[0] in ("resourceclaims", "pods")}


def test_a_job_start_costs_three_requests_and_its_end_two(cluster):
    """Start: claim POST and pod POST at once, then one claim status PUT
    carrying both the allocation and reservedFor naming the pod (as
    kube-scheduler writes them), no GET, no second PUT. End: the pod's
    DELETE (grace 0: its answer says it is gone), then the claim's. Three
    jobs, each counted alone."""
    for _ in range(3):
        api_stats(cluster, reset=True)
        j = sbatch(cluster, "-w", "k8s-n2", "-c2", "--gres=gpu:1", "-o", "/dev/null", "--wrap", "sleep 300")
        wait_job(cluster, j, states={"RUNNING"})
        pod, = wait_running_pods(cluster, j)
        claim, = job_claims(cluster, j)
        reserved = claim["status"]["reservedFor"]
        assert [(r["resource"], r["name"], r["uid"]) for r in reserved] == \
            [("pods", pod["metadata"]["name"], pod["metadata"]["uid"])], reserved
        start = plugin_requests(cluster)
        assert sum(start.values()) <= 3, start
        api_stats(cluster, reset=True)
        cluster.run("scancel", str(j))
        wait_for(lambda: not job_pods(cluster, j) and not job_claims(cluster, j), timeout=BOUND,
                 what=f"job {j}'s pod and claim to go")
        end = plugin_requests(cluster)
        assert sum(end.values()) <= 2, end


def test_a_deleted_holder_pod_is_recreated(cluster):
    j = sbatch(cluster, "-w", "k8s-n2", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(cluster, j, states={"RUNNING"})
    pod, = wait_running_pods(cluster, j)
    kubectl(cluster, "delete", "pod", "-n", NS, pod["metadata"]["name"], "--grace-period=0", "--force")
    again = wait_for(lambda: (p := running_pods(cluster, j, 1)) and p[0]["metadata"]["uid"] != pod["metadata"]["uid"]
                     and p, timeout=BOUND + 10, what="the holder pod to be made again")[0]
    wait_for(lambda: all(c["status"].get("reservedFor", [{}])[0].get("uid") == again["metadata"]["uid"]
                         for c in job_claims(cluster, j)), timeout=BOUND, what="the claims reserved for the new pod")
    na.wait_view(cluster, "k8s-n2", lambda v: any(p["podUid"] == again["metadata"]["uid"] for p in v["prepared"].values()),
                 what="the claims prepared for the new pod")
    check_enforced(cluster, j, again)


def test_a_shrinking_job_keeps_the_pod_of_the_node_it_keeps(cluster):
    j = sbatch(cluster, "-N2", "--ntasks-per-node=1", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(cluster, j, states={"RUNNING"})
    before = {p["spec"]["nodeName"]: p["metadata"]["uid"] for p in wait_running_pods(cluster, j, 2)}
    keep = sorted(before)[0]  # NodeList=: 25.11+ refuse NumNodes= on a running job
    cluster.run("scontrol", "update", f"jobid={j}", f"nodelist={keep}")
    after = wait_for(lambda: running_pods(cluster, j, 1), timeout=BOUND + 10, what="one holder pod left")
    kept = after[0]["spec"]["nodeName"]
    assert kept == keep
    assert after[0]["metadata"]["uid"] == before[kept], "the kept node's pod was replaced"
    wait_for(lambda: {c["metadata"]["labels"]["k8s-cons-tres.slurm.io/node"] for c in job_claims(cluster, j)} == {kept},
             timeout=BOUND, what="only the kept node's claims")
    check_enforced(cluster, j, after[0])


def test_node_failure_takes_the_pod_then_the_claims(cluster):
    j = sbatch(cluster, "-w", "k8s-n4", "-c4", "--no-requeue", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(cluster, j, states={"RUNNING"})
    wait_running_pods(cluster, j)
    cluster.run("scontrol", "update", "nodename=k8s-n4", "state=down", "reason=test node failure")
    try:
        wait_job(cluster, j, states={"NODE_FAIL", "FAILED", "CANCELLED"})
        wait_for(lambda: not job_pods(cluster, j) and not job_claims(cluster, j), timeout=60,
                 what="the failed node's pod and claims to go")
    finally:
        cluster.run("scontrol", "update", "nodename=k8s-n4", "state=resume", check=False)
        wait_for(lambda: cluster.node_states().get("k8s-n4", "").startswith("idle"), timeout=60, what="k8s-n4 back")


def test_reconciliation_after_slurmctld_kill9(cluster):
    """While slurmctld is down its job's pod is deleted and a pod of a job
    that does not exist appears: after the restart the first is made again,
    the second deleted, and the running job's other pod left alone."""
    j = sbatch(cluster, "-N2", "--ntasks-per-node=1", "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    wait_job(cluster, j, states={"RUNNING"})
    pods = wait_running_pods(cluster, j, 2)
    gone, kept = pods
    stray_labels = dict(kept["metadata"]["labels"], **{CLAIM_LABEL_JOB: "999999"})
    # slurmctld must have saved the running job before it dies
    state = cluster.run_dir / "state" / "job_state"
    saved = state.stat().st_mtime if state.exists() else 0
    cluster.run("scontrol", "reconfigure")
    wait_for(lambda: state.exists() and state.stat().st_mtime > saved, timeout=60,
             what="slurmctld to save its job state")
    cluster.stop_slurmctld(sig=signal.SIGKILL)
    na.delete_pod(cluster, NS, gone["metadata"]["name"], grace=0)
    stray = na.create_pod(cluster, NS, na.holder_pod(f"slurm-stray-{j}", kept["spec"]["nodeName"], [],
                                                      labels=stray_labels))
    cluster.start_slurmctld()
    wait_for(lambda: na.get_pod(cluster, NS, stray["metadata"]["name"]) is None, timeout=60,
             what="the stray pod of a job that does not exist to be deleted")
    now = wait_running_pods(cluster, j, 2)
    uids = {p["spec"]["nodeName"]: p["metadata"]["uid"] for p in now}
    assert uids[kept["spec"]["nodeName"]] == kept["metadata"]["uid"], "the running job's pod was deleted"
    assert uids[gone["spec"]["nodeName"]] != gone["metadata"]["uid"]
    for p in now:
        check_enforced(cluster, j, p)


SHAPES = [("-c2",), ("-c4", "--gres=gpu:1"), ("-c6",), ("-c8", "--gres=gpu:2"),
          ("-N2", "--ntasks-per-node=1", "-c2")]


@pytest.mark.slow  # a minute or more (run-tests --quick leaves it out)
def test_enforced_at_every_moment_of_a_random_stream(cluster):
    """A random stream of jobs while ordinary pods come and go: at every
    sample, a job running for longer than BOUND has its holder pods Running,
    its CPUs outside the shared pool and its GPUs prepared for it alone, and
    no ordinary pod's cpuset has one of its CPUs."""
    seed = random.SystemRandom().randrange(1, 2**31)
    print(f"\nholder pod stream seed {seed}", flush=True)
    rng = random.Random(seed)
    nodes = ["k8s-n1", "k8s-n2", "k8s-n3", "k8s-n4"]
    stop = threading.Event()
    problems, samples = [], [0]
    started = {}  # job -> first seen RUNNING (monotonic)

    def sampler():
        while not stop.is_set():
            out = cluster.run("squeue", "-h", "-t", "R", "-o", "%i", check=False).stdout.split()
            now = time.monotonic()
            for jid in map(int, out):
                started.setdefault(jid, now)
            old = [jid for jid in map(int, out) if now - started[jid] > BOUND]
            if old:
                try:
                    views = {n: na.view(cluster, n) for n in nodes}
                    pods = {}
                    for p in job_pods(cluster):
                        pods.setdefault(p["metadata"]["labels"][CLAIM_LABEL_JOB], []).append(p)
                    found = []  # (job, problem): kept only if the job still runs after every read
                    for jid in old:
                        devices = job_devices(cluster, jid)
                        mine = pods.get(str(jid), [])
                        if {p["spec"]["nodeName"] for p in mine if p["status"].get("phase") == "Running"} != set(devices):
                            found.append((jid, f"job {jid}: holder pods {[(p['spec']['nodeName'], p['status'].get('phase')) for p in mine]} "
                                                f"for nodes {sorted(devices)}"))
                            continue
                        for node, (cpus, gpus) in devices.items():
                            v = views[node]
                            uid = next(p["metadata"]["uid"] for p in mine if p["spec"]["nodeName"] == node)
                            if cpus & set(na.parse_id_list(v["sharedCpus"] or "")):
                                found.append((jid, f"job {jid}: CPUs {sorted(cpus & set(na.parse_id_list(v['sharedCpus'])))} in {node}'s shared pool"))
                            for key, prep in v["prepared"].items():
                                if set(prep["gpus"]) & gpus and prep["podUid"] != uid:
                                    found.append((jid, f"job {jid}: GPU {sorted(set(prep['gpus']) & gpus)} prepared for {prep['pod']}"))
                            for name, pod in v["pods"].items():
                                if name.startswith("default/") and pod.get("phase") == "Running" and \
                                        set(na.parse_id_list(pod.get("cpuset") or "")) & cpus:
                                    found.append((jid, f"job {jid}: ordinary pod {name} runs on its CPUs on {node}"))
                    # a job that ended while it was read has its pods and claims going: not a finding
                    still = set(map(int, cluster.run("squeue", "-h", "-t", "R", "-o", "%i", check=False).stdout.split()))
                    problems.extend(p for jid, p in found if jid in still)
                    samples[0] += 1
                except Exception as e:  # a job or pod that ended between reads
                    if not stop.is_set() and "not found" not in str(e):
                        problems.append(f"sampler: {e!r}")
            stop.wait(0.5)

    t = threading.Thread(target=sampler, daemon=True)
    t.start()
    plain = []
    try:
        deadline = time.monotonic() + 60
        n = 0
        while time.monotonic() < deadline:
            shape = rng.choice(SHAPES)
            sbatch(cluster, *shape, "-o", "/dev/null", "--wrap", f"sleep {rng.randint(25, 40)}")
            if rng.random() < 0.5:
                name = f"plain-{n}"
                na.create_pod_on(cluster, "default", name, rng.choice(nodes))
                plain.append(name)
            if plain and rng.random() < 0.3:
                na.delete_pod(cluster, "default", plain.pop(rng.randrange(len(plain))), grace=0)
            n += 1
            stop.wait(rng.uniform(1, 3))
        wait_for(lambda: not cluster.run("squeue", "-h", check=False).stdout.strip(), timeout=240,
                 what="the stream's jobs to end")
    finally:
        stop.set()
        t.join(timeout=30)
        for name in plain:
            na.delete_pod(cluster, "default", name, grace=0)
    print(f"{n} jobs, {samples[0]} samples with a job past the bound", flush=True)
    assert samples[0] > 10, "too few samples to say anything"
    assert not problems, f"seed {seed}: " + "\n".join(problems[:20])
