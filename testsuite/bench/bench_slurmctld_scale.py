#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A real slurmctld at scale (a benchmark, not a test): Slurm 26.05.3 with
N Kubernetes nodes as EXTERNAL nodes and no slurmd, and a backlog of
external jobs of mixed shapes, each cancelled once it started.

Two sides, alternating (A B A B, --pairs times):
  cons_tres      select/cons_tres; the same N nodes as EXTERNAL nodes,
                 created by scontrol with the lines discovery writes (one
                 GRES record per GPU with its device file, as a slurmd's
                 gres.conf gives a real GPU node). --baseline static puts
                 them in slurm.conf instead: one record of 8 GPUs without
                 files and no GPU index (slurmctld reads a node's gres.conf
                 lines from its slurmd, which they lack), so its GPU
                 alignment cannot be read there
  k8s_cons_tres  select/k8s_cons_tres with NodeDiscovery=external: the nodes
                 are discovered from the test API server's synthetic slices
                 (--synthetic-nodes N: 128 CPUs in 2 sockets = 2 NUMA nodes,
                 8 GPUs, 4 per NUMA node); claims and holder pods written
                 (--no-node-agents: nobody plays kubelet, holder pods stay
                 Pending)
The test API server runs on both sides, at niceness 10 (--api-nice): it
stands in for a kube-apiserver on machines of its own, so it yields the two
cores to slurmctld rather than share them as an equal.

Each run: bring the cluster up, wait until slurmctld has the N nodes and
has placed one probe job (cancelled at once; the plugin places none before
its first complete view of Kubernetes: ready_s), reset sdiag, then stream
the jobs (sbatch --external, one process each, two at a
time, the shapes in turn), keeping at most --window (500) submitted and not
yet started, and cancel running jobs (scancel --ctld --state=RUNNING, one
RPC, 4 times a second) until sdiag counts every job started. Measured: jobs
started per second from the first submission; CPU time per job
started of slurmctld and of the test API server with its node agents
(which share the machine's cores with slurmctld here, and run elsewhere in
a real cluster); how busy the machine's cores were over the stream (all
processes, /proc/stat; 1.0 = CPU-bound); sdiag main and backfill cycle
mean and max, slurmctld's peak RSS (VmHWM), the
claim writes (creates and deletes of ResourceClaims and holder pods at the
API server) per second, and placement quality from scontrol -d show job:
the share of the stream's single-node jobs whose CPUs span the fewest NUMA
nodes possible, and the share of GPU jobs whose CPUs are all on their GPUs'
NUMA nodes. Slurm drops a job's GPU indices when it ends, so the latter is
read from a sample after the stream: jobs/10 (at most one per node) GPU
jobs of the stream's GPU shapes, read while they run.

    testsuite/bench/bench_slurmctld_scale.py [--nodes 1000,15000] [--jobs 20000]
        [--pairs 3] [--window 500] [--slurm 26.05.3] [--no-node-agents] [--keep] [--log FILE]
        [--baseline created|static] [--only SELECT] [--state-cache DIR|none] [--api-nice N]

Each side makes its nodes once per node count, before the first pair and
not measured (scontrol create, or discovery; the time it took is printed);
every measured run then starts slurmctld from the node table that saved
(--state-cache), as a restarted slurmctld would, so that pairs at 15,000
nodes do not each pay Slurm's quadratic node creation, and both sides'
nodes come from state alike. --state-cache none makes the nodes in every
run instead.

K8S_BENCH_PERF=PREFIX records slurmctld with `perf record` over each
stream into PREFIX.SELECT.NODES (`perf report -i FILE --no-children`).
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from harness import k8s_seed, slurm_release  # noqa: E402
from harness.cluster import Cluster, find_plugin, new_run_dir  # noqa: E402
from harness.ports import free_ports  # noqa: E402
from harness.jobs import sbatch, wait_job  # noqa: E402
from harness.kube import job_claims  # noqa: E402
from harness.wait import wait_for  # noqa: E402
from bench_throughput import sdiag, spread  # noqa: E402  (this directory)

# The test API server's niceness in measured runs: a kube-apiserver runs on
# machines of its own, not on slurmctld's cores (--api-nice).
API_NICE = 10

# The synthetic node (testsuite/apiserver/ktas/synthetic.py) as Slurm sees it.
SOCKETS, CORES, THREADS, GPUS = 2, 32, 2, 8
GPU_TYPE = "nvidia_a100_sxm4_80gb"  # what discovery names the synthetic GPUs
MEMORY_MB = 64000
# What both baselines' node lines say of the hardware.
HARDWARE = (f"CPUs={SOCKETS * CORES * THREADS} Sockets={SOCKETS} CoresPerSocket={CORES} "
            f"ThreadsPerCore={THREADS} RealMemory={MEMORY_MB}")

# name, sbatch options, nodes, CPUs per node, GPUs per node
SHAPES = [
    ("cpu8", ["-n1", "-c8"], 1, 8, 0),
    ("cpu40", ["-n1", "-c40"], 1, 40, 0),
    ("gpu1", ["-n1", "-c8", "--gpus=1"], 1, 8, 1),
    ("gpu4", ["-n1", "-c16", "--gpus=4"], 1, 16, 4),
    ("multi", ["-N2", "--ntasks-per-node=1", "-c8"], 2, 8, 0),
]


def names(n: int) -> str:
    return f"node[00000-{n - 1:05d}]"


def api_stats(c) -> dict:
    url = c.apiserver()["controlUrl"] + "/_test/stats"
    return json.loads(urllib.request.urlopen(url, timeout=30).read())["requests"]


def writes(stats: dict) -> int:
    return sum(v for k, v in stats.items()
               if k.split()[0] in ("create", "delete") and k.split()[-1] in ("resourceclaims", "pods"))


def peak_rss_mib(c) -> float:
    pid = c._pids()["slurmctld"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int, tid: str = None) -> float:
    """CPU seconds (user + system) a process (or one of its threads) has
    used so far."""
    stat = f"/proc/{pid}/task/{tid}/stat" if tid else f"/proc/{pid}/stat"
    fields = Path(stat).read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict:
    """CPU seconds so far of each of a process's threads, summed by name
    (slurmctld names its threads: rpcmgr, sched, bckfl, the plugin's ...)."""
    out = {}
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (t / "comm").read_text().strip()
            out[name] = out.get(name, 0.0) + cpu_s(pid, t.name)
        except (OSError, ValueError):
            pass  # the thread ended meanwhile
    return out


def machine_ticks() -> tuple:
    """(busy, total) CPU ticks of the whole machine so far (/proc/stat):
    whether the stream was bound by the cores all processes share."""
    t = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = t[3] + t[4]  # idle, iowait
    return sum(t) - idle, sum(t)


def cpu_now(c) -> dict:
    """CPU seconds so far of slurmctld and of the test API server (with the
    node agents, which run in its process)."""
    pids = c._pids()
    return {k: cpu_s(pids[k]) for k in ("slurmctld", "apiserver") if k in pids}


def node_line(i: int) -> str:
    """The node as discovery creates it (core/external_nodes.cc): one GRES
    record per GPU, each with its device file, as a slurmd's gres.conf
    (File=/dev/nvidia[0-7]) gives a real GPU node."""
    gres_conf = "+".join(f"name=gpu,type={GPU_TYPE},count=1,file=/dev/k8s_cons_tres/gpu{g}" for g in range(GPUS))
    return (f"NodeName=node{i:05d} NodeAddr=127.0.0.1 State=EXTERNAL {HARDWARE} "
            f"Features=k8s,{GPU_TYPE} Gres=gpu:{GPU_TYPE}:{GPUS} GresConf=\"{gres_conf}\"")


def create_nodes(c, nodes: int):
    """cons_tres's nodes, created one `scontrol create` at a time as
    discovery does (25.11 and later take one GPU node per call)."""
    env = c.env()
    for i in range(nodes):
        subprocess.run(["scontrol", "create", node_line(i)], env=env, check=True,
                       capture_output=True, timeout=120)


def configure(c, select: str, nodes: int, jobs: int, slurm: str, agents: bool, baseline: str = "created",
              api_nice: int = API_NICE):
    c.run_dir.mkdir(parents=True, exist_ok=True)
    plugin = find_plugin_for(select, slurm)
    port = free_ports(1)[0]
    c.state_file.write_text(json.dumps({"select": select, "slurm": slurm, "nodes": [],
                                        "slurmctld_port": port}))
    keep = ("SlurmctldDebug", "MinJobAge")
    lines = [ln for ln in c.base_config(select, plugin, port) if ln.split("=")[0] not in keep]
    lines += ["SlurmctldDebug=info",  # debug logging would measure the log
              "MinJobAge=86400",      # every job's record stays for the placement figures
              f"MaxJobCount={max(10000, 2 * jobs)}"]
    gres = []
    if select == "k8s_cons_tres" or baseline == "created":
        lines += [f"MaxNodeCount={nodes + 16}", "NodeSet=k8s Feature=k8s",
                  "PartitionName=main Nodes=k8s Default=YES MaxTime=INFINITE State=UP"]
    else:
        lines += [f"NodeName={names(nodes)} State=EXTERNAL {HARDWARE} "
                  f"Features=k8s,{GPU_TYPE} Gres=gpu:{GPU_TYPE}:{GPUS}",
                  f"PartitionName=main Nodes={names(nodes)} Default=YES MaxTime=INFINITE State=UP"]
    lines, gres = c.release.configs(lines, gres)
    (c.run_dir / "etc" / "slurm.conf").write_text("\n".join(lines) + "\n")
    (c.run_dir / "etc" / "gres.conf").write_text("\n".join(gres) + "\n")

    c.node_agents = agents
    c.external = select == "k8s_cons_tres"
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "slurm"}}]
    items += k8s_seed.shipped_objects()
    c.spawn_apiserver(items, "--synthetic-nodes", str(nodes), timeout=600, nice=api_nice)
    if select == "k8s_cons_tres":
        kubeconfig = c.least_privilege_kubeconfig()
        c.plugin_conf.write_text(
            f"Kubeconfig={kubeconfig}\nClaimNamespace=slurm\nKubernetesNodes=ALL\n"
            "NodeDiscovery=external\nNodeFeatures=k8s\nDebugLevel=info\n")


def place_probe(c, timeout: float = 900):
    """One job placed and cancelled before the clock starts, so that the
    stream measures a controller ready to place jobs: the plugin keeps
    Kubernetes nodes out until its first complete view (fail closed), which
    the stand-in API server, listing every node's slices on the two cores
    slurmctld uses, gives it only after tens of seconds here. The probe's
    name is none of SHAPES, so the placement figures leave it out."""
    job = sbatch(c, "--external", "-p", "main", "-J", "probe", "-n1", "-c1")
    wait_job(c, job, states={"RUNNING"}, timeout=timeout)
    c.run("scancel", "--ctld", str(job), check=False, timeout=120)


def find_plugin_for(select: str, slurm: str):
    return find_plugin(slurm_release.get(slurm)) if select == "k8s_cons_tres" else None


def node_count(c) -> int:
    out = c.run("sinfo", "-h", "-N", "-o", "%N", check=False, timeout=120).stdout
    return len(set(out.split()))


class Stream:
    """Submits `jobs` external jobs of the mixed shapes in turn (sbatch, one
    process each, `workers` at a time), keeping at most `window` of them
    submitted and not yet started; `started` is fed by the caller."""

    def __init__(self, c, jobs: int, window: int, workers: int = 2):
        self.c, self.jobs, self.window = c, jobs, window
        self.env = c.env()
        self.lock = threading.Lock()
        self.submitted = self.started = 0
        self.error = None
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(workers)]

    def start(self):
        for t in self.threads:
            t.start()

    def _work(self):
        while self.error is None:
            with self.lock:
                if self.submitted >= self.jobs:
                    return
                if self.submitted - self.started >= self.window:
                    i = None
                else:
                    i = self.submitted
                    self.submitted += 1
            if i is None:
                time.sleep(0.02)
                continue
            name, opts, *_ = SHAPES[i % len(SHAPES)]
            res = subprocess.run(["sbatch", "--external", "-p", "main", "-J", name, *opts],
                                 env=self.env, capture_output=True, text=True, timeout=120)
            if res.returncode != 0:
                self.error = f"sbatch of job {i} ({name}) failed: {res.stderr.strip()}"


def numa_of(ids: set, layout: str) -> set:
    """Slurm's CPU ids -> NUMA nodes (= sockets here). scontrol numbers a
    discovered node's CPUs core by core (core * threads + thread: "abstract")
    and a slurm.conf EXTERNAL node's as Linux does, siblings one core count
    apart ("machine": core + thread * cores)."""
    per_thread = SOCKETS * CORES
    core = (lambda x: x // THREADS) if layout == "abstract" else (lambda x: x % per_thread)
    return {core(x) // CORES for x in ids}


def layout_of(jobs: list) -> str:
    """Which numbering a run's whole-core allocations show: in the machine
    one a core's CPUs are x and x+64, always; in the abstract one x and x^1
    (which machine-numbered runs of even length satisfy too)."""
    machine = sum(all((x + SOCKETS * CORES) % (SOCKETS * CORES * THREADS) in ids for x in ids) for ids in jobs)
    return "machine" if jobs and machine >= 0.9 * len(jobs) else "abstract"


def id_list(text: str) -> list:
    out = []
    for part in text.split(","):
        if part:
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    return out


def placement(c, running_only=False) -> dict:
    """Placement quality over the run's jobs, from scontrol -d: every job's
    CPUs; GPU indices only while a job runs (Slurm drops them at its end)."""
    out = c.run("scontrol", "-d", "show", "job", timeout=600).stdout
    shapes = {s[0]: s for s in SHAPES}
    jobs = []  # (CPUs per node, GPUs, CPU ids, GPU indices or None)
    for block in out.split("\n\n"):
        m = re.search(r"JobName=(\S+)", block)
        if not m or m.group(1) not in shapes:
            continue
        if running_only and "JobState=RUNNING" not in block:
            continue
        _, _, nnodes, cpus, gpus = shapes[m.group(1)]
        per_node = re.findall(r"Nodes=(\S+) CPU_IDs=(\S+) Mem=\S+ GRES=(\S*)", block)
        if nnodes != 1 or len(per_node) != 1:
            continue
        _, cpu_ids, gres = per_node[0]
        idx = re.search(r"IDX:([0-9,-]+)", gres)
        jobs.append((cpus, gpus, set(id_list(cpu_ids)), id_list(idx.group(1)) if idx else None))
    layout = layout_of([ids for _, _, ids, _ in jobs])
    single_best = gpu = gpu_aligned = 0
    for cpus, gpus, ids, idx in jobs:
        numa = numa_of(ids, layout)
        single_best += len(numa) == math.ceil(cpus / (CORES * THREADS))
        if gpus and idx is not None:  # no index: nothing to align with
            gpu += 1
            gpu_aligned += numa <= {g // (GPUS // SOCKETS) for g in idx}
    return {"single_jobs": len(jobs), "fewest_numa": single_best / len(jobs) if jobs else float("nan"),
            "gpu_jobs": gpu, "gpu_aligned": gpu_aligned / gpu if gpu else float("nan"), "cpu_ids": layout}


def gpu_sample(c, count: int) -> dict:
    """GPU alignment of `count` GPU jobs of the stream's GPU shapes, started
    after the stream and read while they run."""
    gpu_shapes = [s for s in SHAPES if s[4]]
    env = c.env()
    for i in range(count):
        name, opts, *_ = gpu_shapes[i % len(gpu_shapes)]
        subprocess.run(["sbatch", "--external", "-p", "main", "-J", name, *opts], env=env,
                       check=True, capture_output=True, timeout=120)
    wait_for(lambda: not c.run("squeue", "-h", "-t", "PD", "-o", "%i", timeout=120).stdout.strip(),
             timeout=1800, interval=1, what=f"{count} GPU jobs to start")
    q = placement(c, running_only=True)
    c.run("scancel", "--ctld", "--state=RUNNING", check=False, timeout=120)
    return {"gpu_jobs": q["gpu_jobs"], "gpu_aligned": q["gpu_aligned"]}


def start_perf(c, select: str, nodes: int):
    """With K8S_BENCH_PERF=PREFIX: `perf record` of slurmctld over the
    stream into PREFIX.SELECT.NODES (call graphs from DWARF: Slurm builds
    without frame pointers). A profile, not a figure: it slows the run."""
    prefix = os.environ.get("K8S_BENCH_PERF")
    if not prefix:
        return None
    out = f"{prefix}.{select}.{nodes}"
    return subprocess.Popen(["perf", "record", "-q", "-F", "49", "--call-graph", "dwarf,16384", "-o", out,
                             "-p", str(c._pids()["slurmctld"])], stdout=subprocess.DEVNULL)


def stop_perf(proc):
    if proc is not None:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)


def nodes_from(select: str, baseline: str) -> str:
    """Where a side's nodes come from: the plugin discovers its own."""
    return "discovered" if select == "k8s_cons_tres" else baseline


def state_of(state_cache: Path, select: str, baseline: str, nodes: int):
    """Where a side's saved node table is kept; None for slurm.conf's nodes
    (nothing to make) or without a cache."""
    where = nodes_from(select, baseline)
    if not state_cache or where == "static":
        return None
    return state_cache / f"{select}-{where}-{nodes}"


def prepare(select: str, nodes: int, slurm: str, agents: bool, baseline: str, state_cache: Path):
    """Makes a side's nodes once (scontrol create, or discovery) and keeps
    slurmctld's node table, unless kept already; returns the seconds it
    took, None when there was nothing to do. Not a measured run."""
    cached = state_of(state_cache, select, baseline, nodes)
    if not cached or (cached / "node_state").is_file():
        return None
    c = Cluster(new_run_dir(f"k8s-cons-tres-scale-{select}-"))
    try:
        configure(c, select, nodes, 0, slurm, agents, baseline)
        t0 = time.monotonic()
        c.start_slurmctld()
        if select == "cons_tres":
            create_nodes(c, nodes)
        wait_for(lambda: node_count(c) >= nodes, timeout=3600, interval=1,
                 what=f"slurmctld to have {nodes} nodes", on_timeout=lambda: c.tail("log/slurmctld.log"))
        took = time.monotonic() - t0
        c.stop_slurmctld()  # saves its state on the way out
        cached.mkdir(parents=True, exist_ok=True)
        shutil.copy2(c.run_dir / "state" / "node_state", cached / "node_state")
        return took
    finally:
        c.down()


def run(select: str, nodes: int, jobs: int, window: int, slurm: str, agents: bool, keep: bool,
        baseline: str = "created", state_cache: Path = None, api_nice: int = API_NICE) -> dict:
    c = Cluster(new_run_dir(f"k8s-cons-tres-scale-{select}-"))
    # slurmctld's node table as prepare() kept it: the created or discovered
    # nodes come back from state (as after any restart) instead of being
    # made again, which Slurm does in quadratic time (about 12-25 minutes
    # at 15,000 nodes). No job is kept.
    cached = state_of(state_cache, select, baseline, nodes)
    restored = bool(cached and (cached / "node_state").is_file())
    try:
        configure(c, select, nodes, jobs, slurm, agents, baseline, api_nice)
        if restored:
            shutil.copy2(cached / "node_state", c.run_dir / "state" / "node_state")
        t_up = time.monotonic()
        c.start_slurmctld()
        if select == "cons_tres" and baseline == "created" and not restored:
            create_nodes(c, nodes)
        wait_for(lambda: node_count(c) >= nodes, timeout=3600, interval=1,
                 what=f"slurmctld to have {nodes} nodes", on_timeout=lambda: c.tail("log/slurmctld.log"))
        nodes_s = time.monotonic() - t_up
        place_probe(c)
        ready_s = time.monotonic() - t_up
        c.run("sdiag", "--reset")
        before = api_stats(c)
        stream = Stream(c, jobs, window)
        cpu0 = cpu_now(c)
        threads0 = thread_cpu(c._pids()["slurmctld"])
        ticks0 = machine_ticks()
        t0 = time.monotonic()
        stream.start()
        prof = start_perf(c, select, nodes)
        last, last_change = -1, time.monotonic()
        while True:
            c.run("scancel", "--ctld", "--state=RUNNING", check=False, timeout=120)
            started = stream.started = sdiag(c, timeout=120)["started"]
            if stream.error:
                raise RuntimeError(f"{select}: {stream.error}")
            if started >= jobs:
                break
            if started != last:
                last, last_change = started, time.monotonic()
            elif time.monotonic() - last_change > 300:
                raise RuntimeError(f"{select}: no job started for 300 s ({started} of {jobs}):\n"
                                   + c.tail("log/slurmctld.log"))
            time.sleep(0.25)
        elapsed = time.monotonic() - t0
        cpu1 = cpu_now(c)
        threads1 = thread_cpu(c._pids()["slurmctld"])
        ticks1 = machine_ticks()
        stop_perf(prof)
        diag = sdiag(c, timeout=120)
        c.run("scancel", "--ctld", "--state=RUNNING", check=False, timeout=120)
        result = {"select": select, "nodes_from": nodes_from(select, baseline), "nodes": nodes, "jobs": jobs, "nodes_s": nodes_s,
                  "ready_s": ready_s, "api_nice": api_nice,
                  "nodes_from_state": restored,
                  "seconds": elapsed, "jobs_per_s": jobs / elapsed, **diag,
                  "peak_rss_mib": peak_rss_mib(c),
                  # what each job cost slurmctld, and the API server on the same cores
                  "ctld_cpu_ms_per_job": 1000 * (cpu1["slurmctld"] - cpu0["slurmctld"]) / jobs,
                  "api_cpu_ms_per_job": 1000 * (cpu1["apiserver"] - cpu0["apiserver"]) / jobs,
                  # share of all the machine's cores busy (everything: slurmctld, the
                  # API server, sbatch, this script), 1.0 = CPU-bound
                  "machine_busy": (ticks1[0] - ticks0[0]) / max(1, ticks1[1] - ticks0[1]),
                  # slurmctld's threads by name, over the stream
                  "ctld_threads_ms_per_job": {k: round(1000 * (v - threads0.get(k, 0.0)) / jobs, 2)
                                              for k, v in sorted(threads1.items())
                                              if v - threads0.get(k, 0.0) >= 0.01}}
        if select == "k8s_cons_tres":
            # every claim and holder pod of the stream written and deleted:
            # none left, and the writes have stopped
            seen = {"writes": -1, "since": time.monotonic()}

            def drained():
                w = writes(api_stats(c))
                if w != seen["writes"]:
                    seen.update(writes=w, since=time.monotonic())
                return not job_claims(c) and time.monotonic() - seen["since"] >= 5
            wait_for(drained, timeout=1800, interval=1, what="the claims of every job to be deleted")
            t_claims = seen["since"] - t0
            result["claim_writes"] = seen["writes"] - writes(before)
            result["claim_writes_per_s"] = result["claim_writes"] / t_claims
            log = (c.run_dir / "log" / "slurmctld.log").read_text(errors="replace")
            result["claim_writes_failed"] = log.count("failed after")
        q = placement(c)
        result.update(single_jobs=q["single_jobs"], fewest_numa=q["fewest_numa"], cpu_ids=q["cpu_ids"])
        result.update(gpu_sample(c, min(jobs // 10, nodes) or 1))
        return result
    finally:
        if not keep:
            c.down()
        else:
            print(f"kept {c.run_dir}", file=sys.stderr)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", default="15000", help="node counts, comma separated (a trend)")
    p.add_argument("--jobs", type=int, default=20000)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--window", type=int, default=500, help="jobs submitted and not yet started, at most")
    p.add_argument("--slurm", default="26.05.3")
    p.add_argument("--no-node-agents", dest="agents", action="store_false")
    p.add_argument("--keep", action="store_true", help="leave the clusters up")
    p.add_argument("--json", action="store_true")
    p.add_argument("--log", type=Path, help="append each run's figures to this file (JSON lines) as it ends")
    p.add_argument("--baseline", choices=("created", "static"), default="created",
                   help="cons_tres's nodes: created by scontrol as discovery creates them, one GRES "
                   "record per GPU (default), or in slurm.conf, one record of 8 GPUs without files")
    p.add_argument("--state-cache", type=Path,
                   help="keep each side's node table here after its first run and start later runs "
                   "of the same side and node count from it (default: a directory of this invocation; "
                   "'none': every run makes its nodes)")
    p.add_argument("--api-nice", type=int, default=API_NICE,
                   help="niceness of the test API server (default %(default)s): it stands in for a "
                   "kube-apiserver on other machines, so it yields this machine's cores to slurmctld; "
                   "0 runs it beside slurmctld as an equal")
    p.add_argument("--only", choices=("cons_tres", "k8s_cons_tres"),
                   help="one run of that side alone, its figures as JSON (to profile it; no ratio)")
    args = p.parse_args()
    counts = [int(x) for x in args.nodes.split(",")]
    tmp = None
    if args.state_cache is None:
        tmp = tempfile.TemporaryDirectory(prefix="k8s-cons-tres-scale-state-")
        args.state_cache = Path(tmp.name)
    elif str(args.state_cache) == "none":
        args.state_cache = None
    if args.only:
        for n in counts:
            prepare(args.only, n, args.slurm, args.agents, args.baseline, args.state_cache)
            print(json.dumps(run(args.only, n, args.jobs, args.window, args.slurm, args.agents, args.keep,
                                 args.baseline, args.state_cache, args.api_nice)))
        return 0
    results = []
    for n in counts:
        # both sides' nodes made once, before the first pair (not measured)
        for select, baseline in (("cons_tres", args.baseline), ("k8s_cons_tres", "created")):
            took = prepare(select, n, args.slurm, args.agents, baseline, args.state_cache)
            if took is not None:
                print(f"{n} nodes: {select}'s nodes made in {took:.0f} s", file=sys.stderr, flush=True)
                if args.log:
                    with args.log.open("a") as f:
                        f.write(json.dumps({"prepare": select, "nodes_from": nodes_from(select, baseline),
                                            "nodes": n, "nodes_s": took}) + "\n")
        for i in range(args.pairs):
            base = run("cons_tres", n, args.jobs, args.window, args.slurm, args.agents, args.keep, args.baseline,
                       args.state_cache, args.api_nice)
            ours = run("k8s_cons_tres", n, args.jobs, args.window, args.slurm, args.agents, args.keep,
                       state_cache=args.state_cache, api_nice=args.api_nice)
            print(f"{n} nodes, pair {i + 1}/{args.pairs}: cons_tres {base['jobs_per_s']:.1f} jobs/s, "
                  f"k8s_cons_tres {ours['jobs_per_s']:.1f} jobs/s", file=sys.stderr, flush=True)
            results.append((n, base, ours))
            if args.log:
                with args.log.open("a") as f:
                    for r in (base, ours):
                        f.write(json.dumps(r) + "\n")
    if args.json:
        print(json.dumps([{"nodes": n, "cons_tres": b, "k8s_cons_tres": o} for n, b, o in results], indent=1))
        return 0
    keys = ["jobs_per_s", "ctld_cpu_ms_per_job", "api_cpu_ms_per_job", "main_mean_us", "main_max_us", "bf_mean_us", "bf_max_us", "peak_rss_mib",
            "machine_busy",
            "fewest_numa", "gpu_aligned", "nodes_s", "ready_s"]
    for n in counts:
        pairs = [(b, o) for m, b, o in results if m == n]
        print(f"\n{n} nodes, {args.jobs} jobs per run, {len(pairs)} pairs (A B A B), median [min-max]")
        print(f"| {'metric':<14} | {'cons_tres':>22} | {'k8s_cons_tres':>22} | {'ratio per pair':>22} |")
        print(f"|{'-' * 16}|{'-' * 24}|{'-' * 24}|{'-' * 24}|")
        for k in keys:
            ratios = [o[k] / b[k] if b[k] and b[k] == b[k] else float("nan") for b, o in pairs]
            print(f"| {k:<14} | {spread([b[k] for b, _ in pairs]):>22} | "
                  f"{spread([o[k] for _, o in pairs]):>22} | {spread(ratios):>22} |")
        print(f"claim writes per second (k8s_cons_tres): {spread([o['claim_writes_per_s'] for _, o in pairs])}; "
              f"failed: {sum(o['claim_writes_failed'] for _, o in pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
