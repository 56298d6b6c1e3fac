# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the jobs of one expect test ran, and how two runs compare.

Two sources, both taken per test:

* `scontrol -d show job` after the test (MinJobAge keeps finished jobs): per
  job its nodes and per node `CPU_IDs` (GRES indices only while the job
  still runs);
* slurmctld's log lines that start a job ("sched: Allocate JobId=N
  NodeList=...", backfill's "_start_job: Started JobId=N in P on NODES",
  srun/salloc's "_slurm_rpc_allocate_resources JobId=N NodeList=..."):
  the nodes each job started on, which also covers jobs a test resized.

Jobs are numbered per test in job id order (#1 is the test's first job), so
two runs compare even when their absolute job ids differ.
"""
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from harness.alignment import parse_id_list
from harness.faults_matrix import expand_hostlist

JOB_ID_RE = re.compile(r"^JobId=(\d+)")
DETAIL_RE = re.compile(r"^\s+Nodes=(\S+) CPU_IDs=(\S+)(?:.*?GRES=(\S*))?")
ALLOC_RES = [
    re.compile(r"sched: Allocate JobId=(\d+)(?:\+\d+)? NodeList=(\S+)"),
    re.compile(r"sched: _slurm_rpc_allocate_resources JobId=(\d+) NodeList=(\S+)"),
    re.compile(r"sched: _slurm_rpc_allocate_het_job JobId=(\d+) NodeList=(\S+)"),
    re.compile(r"_start_job: Started JobId=(\d+)(?:\+\d+)? in \S+ on (\S+)"),
]
STAMP_RE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\]")
DONE_RE = re.compile(r"_job_complete: JobId=(\d+) done")
# slurmctld gives a node no new job until the epilog of the one that ended
# there reports back (COMPLETING; tens of ms on loopback): a job placed this
# soon after may be sent elsewhere under either select.
COMPLETING_S = 0.5
# A test that cancels a job right after submitting it (test38.18: sbatch,
# scontrol show job, scancel) may find it still pending or already started,
# under either select. A job cancelled while pending longer than this was
# waiting for resources, which is a difference.
CANCEL_RACE_S = 5
TIME_RE = re.compile(r"\b(SubmitTime|EndTime)=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")


@dataclass
class Job:
    job_id: int
    name: str = ""
    state: str = ""
    nodes: str = ""
    # node -> (cpu ids, gpu indices)
    per_node: dict = field(default_factory=dict)
    # what it asked for (ReqTRES, TresPer*), shown when it differs
    req: str = ""
    # SubmitTime and EndTime, epoch seconds (None: unknown or not yet)
    submitted: float = None
    ended: float = None


def parse_show_job(text: str, hostnames) -> dict:
    """`scontrol -d show job` into {job_id: Job}; hostnames expands a
    Slurm hostlist."""
    jobs = {}
    cur = None
    for line in text.splitlines():
        m = JOB_ID_RE.match(line)
        if m:
            cur = Job(int(m.group(1)))
            jobs[cur.job_id] = cur
            n = re.search(r"JobName=(.*)$", line)
            cur.name = n.group(1) if n else ""
            continue
        if cur is None:
            continue
        m = re.search(r"\bJobState=(\S+)", line)
        if m:
            cur.state = m.group(1)
        m = re.match(r"^\s+NodeList=(\S+)", line)
        if m:
            cur.nodes = m.group(1)
        for m in TIME_RE.finditer(line):
            t = datetime.fromisoformat(m.group(2)).timestamp()
            if m.group(1) == "SubmitTime":
                cur.submitted = t
            else:
                cur.ended = t
        for m in re.finditer(r"\b(ReqTRES|TresPer\w+)=(\S+)", line):
            cur.req = " ".join(filter(None, (cur.req, f"{m.group(1)}={m.group(2)}")))
        m = DETAIL_RE.match(line)
        if m:
            gpus = []
            if m.group(3):
                g = re.search(r"IDX:([0-9,\-]+)", m.group(3))
                if g:
                    gpus = parse_id_list(g.group(1))
            for node in hostnames(m.group(1)):
                cur.per_node[node] = (parse_id_list(m.group(2)), gpus)
    return jobs


def _allocation(line: str):
    """(job_id, nodelist) when the log line starts a job, else None."""
    for rx in ALLOC_RES:
        m = rx.search(line)
        if m:
            return int(m.group(1)), m.group(2)
    return None


def allocations_in_log(text: str) -> list:
    """[(job_id, nodelist)] in the order slurmctld logged them."""
    return [a for a in map(_allocation, text.splitlines()) if a]


def relative(pairs, base: int) -> list:
    return [(job_id - base + 1, nodes) for job_id, nodes in pairs]


def timed_events(text: str, base: int = 1) -> list:
    """[(seconds, "alloc" or "done", job number, nodelist)] of the jobs from
    `base` on, from slurmctld's time-stamped log lines: a job started, a job
    ended."""
    out = []
    for line in text.splitlines():
        m = STAMP_RE.match(line)
        if not m:
            continue
        t = datetime.fromisoformat(m.group(1)).timestamp()
        d = DONE_RE.search(line)
        a = None if d else _allocation(line)
        hit = (int(d.group(1)), "done", "") if d else (a[0], "alloc", a[1]) if a else None
        if hit and hit[0] >= base:
            out.append((t, hit[1], hit[0] - base + 1, hit[2]))
    return out


def _left_just_before(events: list, rel: int, avoided: set) -> bool:
    """Whether, in one attempt, a job ended on one of `avoided` at most
    COMPLETING_S before job `rel` started."""
    start = next((t for t, k, j, _ in events if k == "alloc" and j == rel), None)
    if start is None or not avoided:
        return False
    nodes_of = {}
    for _, k, j, n in events:
        if k == "alloc":
            nodes_of.setdefault(j, set(expand_hostlist(n)))
    return any(k == "done" and j != rel and 0 <= start - t <= COMPLETING_S and nodes_of.get(j, set()) & avoided
               for t, k, j, _ in events)


def completion_races(a: dict, b: dict) -> set:
    """The job numbers that started on other nodes under the two selects
    because, under one of them, a node the other gave the job had just been
    left by a job that ended there (still completing): test39.10's srun
    loop sends every other job elsewhere that way, under either select."""
    la, lb = dict(a["log"]), dict(b["log"])
    out = set()
    for rel in set(la) & set(lb):
        if la[rel] == lb[rel]:
            continue
        na, nb = set(expand_hostlist(la[rel])), set(expand_hostlist(lb[rel]))
        if _left_just_before(a.get("events", []), rel, nb - na) or \
                _left_just_before(b.get("events", []), rel, na - nb):
            out.add(rel)
    return out


def cancelled_before_start(x: Job, y: Job) -> bool:
    """Whether the two runs of one job differ only in whether the test's
    cancel came before the job started: under one select it never had nodes
    and was cancelled within CANCEL_RACE_S of its submission; under the
    other it started, and may have ended any way (test38.18's
    `sbatch --wrap=hostname` is often done before the scancel comes)."""
    if (not x.per_node) == (not y.per_node):
        return False
    pending = y if x.per_node else x
    return pending.state == "CANCELLED" and pending.submitted is not None and pending.ended is not None \
        and 0 <= pending.ended - pending.submitted <= CANCEL_RACE_S


def spread(fx_node, cpu_ids) -> tuple:
    """(NUMA nodes, sockets) the CPUs span on a fixture node. Slurm's CPU id
    is core * threads_per_core + thread; cores are numbered socket-major."""
    tpc = fx_node.threads_per_core
    core_numa = {}
    for numa in range(fx_node.numa_nodes):
        for core in fx_node.cores_of_numa(numa):
            core_numa[core] = numa
    cores = {c // tpc for c in cpu_ids}
    numas = {core_numa.get(c, -1) for c in cores}
    sockets = {c // fx_node.cores_per_socket for c in cores}
    return len(numas), len(sockets)


def compare_test(fx, a: dict, b: dict) -> dict:
    """Compare one test's placements of run a (cons_tres) and run b (the
    plugin). a and b: {"jobs": [Job...] in id order, "log": [(rel, nodes)]}.

    Returns {"node_diffs": [...], "cpu_worse": [...], "cpu_better": n,
    "notes": [...]}: node_diffs are real differences (a job on other
    nodes, or a different sequence of started node lists); cpu_worse lists
    jobs whose CPUs span more NUMA nodes or sockets under the plugin."""
    out = {"node_diffs": [], "node_diff_jobs": [], "cpu_worse": [], "cpu_better": 0, "compared": 0,
           "notes": []}
    races = completion_races(a, b)
    # the node list each job started on (a resized job's first one), by job number
    la, lb = dict(a["log"]), dict(b["log"])
    for rel in sorted(set(la) & set(lb)):
        if la[rel] != lb[rel] and rel in races:
            out["notes"].append(f"job #{rel} started on {la[rel]} under cons_tres, on {lb[rel]} under "
                                f"k8s_cons_tres: a completion race, not compared (a job had just ended "
                                f"on the node it did not get)")
        elif la[rel] != lb[rel]:
            out["node_diffs"].append(f"job #{rel} started on {la[rel]} under cons_tres, "
                                     f"on {lb[rel]} under k8s_cons_tres (slurmctld log)")
            out["node_diff_jobs"].append(rel)
    ja, jb = a["jobs"], b["jobs"]
    if len(ja) != len(jb):
        out["notes"].append(f"{len(ja)} jobs under cons_tres, {len(jb)} under k8s_cons_tres")
    for i, (x, y) in enumerate(zip(ja, jb), 1):
        if x.name != y.name:
            out["notes"].append(f"job #{i}: names differ ({x.name!r} / {y.name!r}); not compared")
            continue
        if set(x.per_node) != set(y.per_node) and x.job_id in races:
            continue  # noted above, from the log
        if set(x.per_node) != set(y.per_node) and cancelled_before_start(x, y):
            out["notes"].append(f"job #{i} ({x.name}): cancelled by the test while pending under one select, "
                                f"after it started under the other; a cancel race, not compared")
            continue
        if set(x.per_node) != set(y.per_node):
            out["node_diffs"].append(f"job #{i} ({x.name}): cons_tres {x.nodes or '-'} "
                                     f"[{fmt_nodes(x)}], k8s_cons_tres {y.nodes or '-'} [{fmt_nodes(y)}]")
            out["node_diff_jobs"].append(i)
            continue
        for node in sorted(x.per_node):
            out["compared"] += 1
            ca, cb = x.per_node[node][0], y.per_node[node][0]
            if len(ca) != len(cb):
                out["notes"].append(f"job #{i} ({x.name}) on {node}: {len(ca)} CPUs under cons_tres, "
                                    f"{len(cb)} under k8s_cons_tres")
            sa, sb = spread(fx.node(node), ca), spread(fx.node(node), cb)
            if sb[0] > sa[0] or sb[1] > sa[1]:
                out["cpu_worse"].append(
                    f"job #{i} ({x.name}) on {node}: CPUs {fmt(ca)} span {sa[0]} NUMA/{sa[1]} sockets "
                    f"under cons_tres, {fmt(cb)} span {sb[0]}/{sb[1]} under k8s_cons_tres")
            elif sb < sa:
                out["cpu_better"] += 1
    return out


def timing_ties(a1: dict, a2: dict, b1: dict, b2: dict) -> set:
    """The job numbers whose nodes are a tie Slurm broke by timing, from two
    attempts of one test under cons_tres (a1, a2) and under the plugin (b1,
    b2). Either
    * cons_tres itself started the job on different nodes in its two
      attempts, and in each attempt the plugin started it on nodes cons_tres
      chose in one of them; or
    * in each attempt where the job differs, the plugin started it on nodes
      where cons_tres, in this test, started a job of the same name, and
      both selects put most jobs of that name on the same nodes (a test
      that runs its jobs back to back, as test39.7's loop of srun --gpus
      does, sends the next job elsewhere whenever the node of the one
      before is still completing, under either select; the request may
      differ, as the loop's --cpus-per-gpu does).
    Anything else stays a difference."""
    ties = set()
    logs = [dict(r["log"]) for r in (a1, a2, b1, b2)]
    for rel in set.intersection(*(set(x) for x in logs)):
        ca1, ca2, cb1, cb2 = (x[rel] for x in logs)
        if ca1 != ca2 and {cb1, cb2} <= {ca1, ca2}:
            ties.add(rel)
    jobs = [r["jobs"] for r in (a1, a2, b1, b2)]
    for i, js in enumerate(zip(*jobs), 1):
        if len({j.name for j in js}) != 1:
            continue
        na1, na2, nb1, nb2 = (frozenset(j.per_node) for j in js)
        if na1 != na2 and {nb1, nb2} <= {na1, na2}:
            ties.add(i)
    return ties | _shape_ties(a1, a2, b1, b2)


def _usual(jobs, key) -> set:
    """The node sets (key(job)) most of the jobs got."""
    counts = Counter(key(j) for j in jobs)
    top = max(counts.values(), default=0)
    return {k for k, v in counts.items() if v == top}


def _by_name(*results) -> dict:
    """The jobs of some attempts, by job name."""
    out = {}
    for r in results:
        for j in r["jobs"]:
            out.setdefault(j.name, []).append(j)
    return out


def _shape_ties(a1: dict, a2: dict, b1: dict, b2: dict) -> set:
    views = (lambda j: frozenset(j.per_node), lambda j: j.nodes)  # scontrol's, the log's
    names, plugin = _by_name(a1, a2), _by_name(b1, b2)
    alike = {n for n in names
             if all(_usual(names[n], v) & _usual(plugin.get(n, []), v) for v in views)}
    explained, unexplained = set(), set()
    for a, b in ((a1, b1), (a2, b2)):
        ja, jb = a["jobs"], b["jobs"]
        by_num = dict(enumerate(ja, 1))
        for i, (x, y) in enumerate(zip(ja, jb), 1):
            if frozenset(x.per_node) == frozenset(y.per_node):
                continue
            ok = x.name == y.name and x.name in alike and \
                frozenset(y.per_node) in {frozenset(j.per_node) for j in names[x.name]}
            (explained if ok else unexplained).add(i)
        la, lb = dict(a["log"]), dict(b["log"])
        for rel in set(la) & set(lb):
            if la[rel] == lb[rel]:
                continue
            x = by_num.get(rel)
            ok = x is not None and x.name in alike and lb[rel] in {j.nodes for j in names[x.name]}
            (explained if ok else unexplained).add(rel)
    return explained - unexplained


def fmt(ids) -> str:
    from harness.alignment import format_id_list
    return format_id_list(ids) or "-"


def fmt_nodes(job: Job) -> str:
    return " ".join(f"{n}:{fmt(c)}" + (f"/gpu{fmt(g)}" if g else "")
                    for n, (c, g) in sorted(job.per_node.items()))
