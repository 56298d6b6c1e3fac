# SPDX-License-Identifier: GPL-2.0-or-later
"""The fault matrix on a harness cluster: a stream of short jobs, faults of
the test API server and of slurmctld injected at random (seeded) points of
it, and two observers that sample Slurm and the API server at a fixed small
interval and check, at every observed moment:

(a) no running job is on a CPU or GPU a pod holds (pod-held: the devices of
    every claim that is not the plugin's own, as the API server says when
    it answers; the last good view is kept during faults);
(b) outside faults, every (job, node) Slurm runs has a claim of the plugin,
    and every claim of the plugin is for a (job, node) Slurm runs, each
    within CLAIM_BOUND seconds of the later of the job's start (or end) and
    the end of the last fault (the latency is measured);
(c) at the end, every job the stream submitted completed (exit 0:0), except
    jobs that were in flight when slurmctld was killed with SIGKILL and new
    jobs that got the id of a job such a kill made slurmctld forget.

Only the timing is random; what is checked is fixed."""
import json
import re
import signal
import ssl
import threading
import time
import urllib.request

from .kube import CLAIM_LABEL_CLUSTER, CLAIM_LABEL_JOB, claim_devices, cpu_ids_of_slices, faults, reset_faults
from .alignment import parse_id_list

CLAIM_LABEL_NODE = "k8s-cons-tres.slurm.io/node"
MANAGED_BY = "app.kubernetes.io/managed-by"
CLAIM_NS = "slurm"

# How long after a fault ends (or after a job starts or ends) a claim may be
# missing or left over. Generous on purpose: the assertion must not depend
# on how busy the shared machine is.
CLAIM_BOUND = 60.0
SAMPLE_INTERVAL = 0.5

JOB_SHAPES = (
    ("-c2",),
    ("-c6",),
    ("-c4", "--gres=gpu:1"),
    ("-c8", "--gres=gpu:2"),
    ("-N2", "--ntasks-per-node=1", "-c2"),
)

FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"}
# States in which a job sits on its devices (for check a).
ON_DEVICES = {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING"}


# ---------------------------------------------------------------- parsing
def expand_hostlist(text: str) -> list:
    """Slurm hostlists as scontrol prints them: "a1,b[1-3,5],c"."""
    out, parts, cur, depth = [], [], "", 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    for p in parts:
        m = re.fullmatch(r"(.*?)\[([^\]]+)\](.*)", p)
        if not m:
            out.append(p)
            continue
        prefix, ranges, suffix = m.groups()
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            width = len(lo)
            for n in range(int(lo), int(hi or lo) + 1):
                out.append(f"{prefix}{n:0{width}d}{suffix}")
    return out


def parse_jobs(text: str) -> dict:
    """`scontrol -d -o show job` (every job) as {job id: {"state", "exit",
    "reason", "allocs": [(node, cpu ids, gpu indices)]}}."""
    jobs = {}
    for line in text.splitlines():
        m = re.match(r"\s*JobId=(\d+)\s", line)
        if not m:
            continue
        job = int(m.group(1))
        state = re.search(r"\bJobState=(\S+)", line)
        exitc = re.search(r"\bExitCode=(\S+)", line)
        reason = re.search(r"\bReason=(\S+)", line)
        run = re.search(r"\bRunTime=(?:(\d+)-)?(\d+):(\d+):(\d+)", line)
        allocs = []
        for nm in re.finditer(r"\bNodes=(\S+) CPU_IDs=(\S+) Mem=\S+ GRES=(\S*)", line):
            gpus = []
            g = re.search(r"IDX:([0-9,\-]+)", nm.group(3))
            if g:
                gpus = parse_id_list(g.group(1))
            for node in expand_hostlist(nm.group(1)):
                allocs.append((node, parse_id_list(nm.group(2)), gpus))
        jobs[job] = {"state": state.group(1) if state else "?",
                     "exit": exitc.group(1) if exitc else "?",
                     "reason": reason.group(1) if reason else "",
                     "run_time": (int(run.group(1) or 0) * 86400 + int(run.group(2)) * 3600 +
                                  int(run.group(3)) * 60 + int(run.group(4))) if run else 0,
                     "allocs": allocs}
    return jobs


# ---------------------------------------------------------------- API view
class ApiReader:
    """GET of every ResourceClaim and the dra.cpu slices straight from the
    test API server with the admin token (cheaper than kubectl on 2 cores);
    any failure (refused, hung, 429, 500, slow) is None."""

    def __init__(self, cluster, timeout=6.0):
        d = cluster.apiserver_dir
        self.url = cluster.apiserver()["url"]
        self.token = json.loads((d / "tokens.json").read_text())["admin"]
        self.ctx = ssl.create_default_context(cafile=str(d / "ca.crt"))
        self.timeout = timeout

    def get(self, path):
        req = urllib.request.Request(self.url + path,
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.ctx) as r:
                return json.loads(r.read())
        except Exception:
            return None

    def claims(self):
        body = self.get("/apis/resource.k8s.io/v1/resourceclaims")
        return None if body is None else body.get("items", [])

    def cpu_ids(self):
        body = self.get("/apis/resource.k8s.io/v1/resourceslices")
        return None if body is None else cpu_ids_of_slices(body.get("items", []))


def is_plugin_claim(claim, cluster_name) -> bool:
    meta = claim.get("metadata", {})
    labels = meta.get("labels") or {}
    return (meta.get("namespace") == CLAIM_NS and CLAIM_LABEL_JOB in labels
            and labels.get(CLAIM_LABEL_CLUSTER) == cluster_name and MANAGED_BY in labels)


# ---------------------------------------------------------------- the run
class Matrix:
    """Shared state of the observers, the job stream and the fault driver."""

    def __init__(self, cluster, seed, rng, log=print):
        self.c = cluster
        self.seed = seed
        self.rng = rng                      # faults: kinds, points, lengths
        self.job_rng = None                 # shapes and sleeps (seeded too)
        self.log = log
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.stream_stop = threading.Event()
        self.ctld_down = threading.Event()  # no submissions meanwhile
        self.t0 = time.monotonic()
        self.cluster_name = re.search(r"^ClusterName=(\S+)", cluster.slurm_conf.read_text(),
                                      re.M).group(1)
        self.api = ApiReader(cluster)
        self.cpu_ids = None
        # what is observed
        self.fault_active = None            # kind while a fault is on
        self.fault_started = None           # when it began
        self.starts_in_fault = []           # (episode, s since it began, job): jobs first seen running meanwhile
        self.last_clear = self.t0           # end of the last fault
        self.pod_held = {}                  # node -> (cpus, gpus), last good view
        self.pod_view_at = None
        self.slurm = None                   # (time, jobs) latest snapshot
        self.first_running = {}             # job -> time first seen on devices
        self.first_ended = {}               # job -> time first seen not running
        self.running_keys = set()           # (job, node) RUNNING in the latest snapshot
        self.missing_since = {}             # (job, node) -> start of the claim debt
        self.orphan_since = {}              # (job, node) -> start of the orphan debt
        self.violations = []
        self.violation_jobs = []  # per violation: the job of a (b) one, else None
        self.violated_keys = set()
        self.latencies = {"after_fault": [], "normal": []}
        self.orphan_latencies = []
        self.last_eval = None               # Slurm snapshot time the last (b) check used
        self.samples = {"slurm": 0, "slurm_failed": 0, "api": 0, "api_failed": 0,
                        "allocations_checked": 0}
        self.claimed_seen = set()           # (job, node) seen running with its claim
        self.ran_during_fault = set()       # (job, node) on devices while a fault was on
        # the job stream
        self.submitted = {}                 # job -> {"shape", "sleep", "at", "episode"}
        self.lost_ids = []                  # job ids reused after a kill -9 lost them
        self.submit_errors = 0
        self.excused = set()                # in flight when slurmctld got SIGKILL
        self.reused = set()                 # ids slurmctld gave again after a kill lost their job
        self.duplicate_drains = []          # (t, node) resumed after a "Duplicate jobid" drain
        self.final_seen = {}                # job -> time first seen in a final state
        self.episodes = []

    def now(self):
        return time.monotonic() - self.t0

    def violation(self, what, key=None):
        with self.lock:
            if key is not None:
                if key in self.violated_keys:
                    return
                self.violated_keys.add(key)
            self.violations.append(f"t={self.now():.1f}s {what}")
            self.violation_jobs.append(key[1][0] if key and key[0] == "b" else None)
        self.log(f"VIOLATION t={self.now():.1f}s {what}")

    # ---- observers ------------------------------------------------------
    def slurm_sampler(self):
        while not self.stop.is_set():
            t_next = time.monotonic() + SAMPLE_INTERVAL
            res = None
            try:
                res = self.c.run("scontrol", "-d", "-o", "show", "job", check=False, timeout=20)
            except Exception:
                pass
            now = time.monotonic()
            if res is None or res.returncode != 0:
                with self.lock:
                    self.samples["slurm_failed"] += 1
            else:
                self.on_slurm(now, parse_jobs(res.stdout))
            self.resume_duplicate_jobid_drains()
            self.stop.wait(max(0.0, t_next - time.monotonic()))

    def resume_duplicate_jobid_drains(self):
        """A kill -9 that loses slurmctld's latest state makes it give a
        running job's id to a new job; slurmd refuses that launch and
        slurmctld drains the node "Duplicate jobid" (Slurm's own doing, not
        the plugin's). An admin resumes such a node; so does the matrix,
        and the report counts it with the kill's casualties."""
        try:
            res = self.c.run("sinfo", "-N", "-h", "-o", "%N|%T|%E", check=False, timeout=20)
        except Exception:
            return
        for line in res.stdout.splitlines():
            node, state, reason = (line.split("|", 2) + ["", ""])[:3]
            if "drain" in state and reason.startswith("Duplicate jobid"):
                self.c.run("scontrol", "update", f"nodename={node}", "state=resume", check=False, timeout=20)
                with self.lock:
                    self.duplicate_drains.append((round(self.now(), 1), node))
                self.log(f"t={self.now():6.1f}s {node} drained by slurmd for a duplicate job id "
                         "(an id a kill -9 lost was given again): resumed")

    def on_slurm(self, now, jobs):
        bad = []
        with self.lock:
            self.samples["slurm"] += 1
            self.slurm = (now, jobs)
            keys = set()
            for job, j in jobs.items():
                if j["state"] in FINAL:
                    self.final_seen.setdefault(job, now)
                if j["state"] in ON_DEVICES:
                    if job not in self.first_running and self.fault_active:
                        self.starts_in_fault.append((len(self.episodes) - 1, now - self.fault_started, job))
                    self.first_running.setdefault(job, now)
                    self.samples["allocations_checked"] += len(j["allocs"])
                    for node, cpus, gpus in j["allocs"]:
                        held_cpus, held_gpus = self.pod_held.get(node, (set(), set()))
                        c = held_cpus & set(cpus)
                        g = held_gpus & set(gpus)
                        if c or g:
                            bad.append((job, node, sorted(c), sorted(g)))
                        if j["state"] == "RUNNING":
                            keys.add((job, node))
                        if self.fault_active:
                            self.ran_during_fault.add((job, node))
                elif job in self.first_running:
                    self.first_ended.setdefault(job, now)
            self.running_keys = keys
        for job, node, c, g in bad:
            self.violation(f"(a) job {job} on pod-held devices on {node}: cpus {c} gpus {g} "
                           f"(fault: {self.fault_active})", key=("a", job, node))

    def api_sampler(self):
        while not self.stop.is_set():
            t_next = time.monotonic() + SAMPLE_INTERVAL
            if self.cpu_ids is None:
                self.cpu_ids = self.api.cpu_ids()
            claims = self.api.claims() if self.cpu_ids is not None else None
            now = time.monotonic()
            if claims is None:
                with self.lock:
                    self.samples["api_failed"] += 1
            else:
                self.on_api(now, claims)
            self.stop.wait(max(0.0, t_next - time.monotonic()))

    def on_api(self, now, claims):
        held, mine = {}, set()
        for cl in claims:
            if is_plugin_claim(cl, self.cluster_name):
                labels = cl["metadata"]["labels"]
                try:
                    mine.add((int(labels[CLAIM_LABEL_JOB]), labels.get(CLAIM_LABEL_NODE, "?")))
                except ValueError:
                    pass
                continue
            node, cpus, gpus = claim_devices(cl, self.cpu_ids)
            if node:
                h = held.setdefault(node, (set(), set()))
                h[0].update(cpus)
                h[1].update(gpus)
        late = []
        with self.lock:
            self.samples["api"] += 1
            self.pod_held = held
            self.pod_view_at = now
            if self.fault_active or self.slurm is None or now - self.slurm[0] > 5:
                # no claim can be written during a fault; debts start at its end
                self.missing_since.clear()
                self.orphan_since.clear()
                return
            running = self.running_keys
            self.last_eval = self.slurm[0]
            self.claimed_seen |= running & mine
            # (b) claims of running jobs
            for key in running - mine:
                if key not in self.missing_since:
                    start = max(self.last_clear, self.first_running.get(key[0], now))
                    self.missing_since[key] = start
            for key in list(self.missing_since):
                if key in mine:
                    start = self.missing_since.pop(key)
                    kind = "after_fault" if key in self.ran_during_fault else "normal"
                    self.latencies[kind].append(now - start)
                elif key not in running:
                    del self.missing_since[key]   # ended first: nothing owed
                elif now - self.missing_since[key] > CLAIM_BOUND:
                    late.append(("missing", key, now - self.missing_since[key]))
            # (b) no orphaned claim
            for key in mine - running:
                if key not in self.orphan_since:
                    ended = self.first_ended.get(key[0], now)
                    self.orphan_since[key] = max(self.last_clear, min(ended, now))
            for key in list(self.orphan_since):
                if key not in mine or key in running:
                    start = self.orphan_since.pop(key)
                    if key not in mine and key[0] in self.first_ended:
                        self.orphan_latencies.append(now - start)
                elif now - self.orphan_since[key] > CLAIM_BOUND:
                    late.append(("orphan", key, now - self.orphan_since[key]))
        for what, key, age in late:
            if what == "missing":
                self.violation(f"(b) running job {key[0]} has no claim on {key[1]} for {age:.0f}s "
                               f"(last fault ended t={self.last_clear - self.t0:.1f}s)", key=("b", key))
            else:
                self.violation(f"(b) orphaned claim of job {key[0]} on {key[1]} for {age:.0f}s "
                               f"(job state {self.job_state(key[0])})", key=("o", key))

    def job_state(self, job):
        with self.lock:
            j = self.slurm[1].get(job) if self.slurm else None
        return j["state"] if j else "unknown to slurmctld"

    def recovered(self):
        """True once a check after the last fault found nothing owed from
        before its end: every job running then (and still running) has its
        claims and no claim of a job that ended before is left. Debts of
        jobs that started or ended since are the sampler's business."""
        with self.lock:
            if self.fault_active is not None or self.last_eval is None or self.last_eval <= self.last_clear:
                return False
            return not any(start <= self.last_clear for start in self.missing_since.values()) and \
                not any(start <= self.last_clear for start in self.orphan_since.values())

    def started_since(self, t):
        """A job went on its devices after monotonic time t: Kubernetes
        nodes take jobs again."""
        with self.lock:
            return any(v > t for v in self.first_running.values())

    def settled(self):
        """Nothing owed at all (used at the end, when no job runs)."""
        with self.lock:
            return (self.fault_active is None and self.last_eval is not None and
                    self.last_eval > self.last_clear and not self.missing_since and
                    not self.orphan_since)

    # ---- the job stream ---------------------------------------------------
    def stream(self):
        rng = self.job_rng
        while not self.stream_stop.is_set():
            self.stream_stop.wait(rng.uniform(0.3, 1.1))
            if self.stream_stop.is_set():
                break
            shape = rng.choice(JOB_SHAPES)
            # mostly short (they start and end during a fault), some
            # longer (they run through one and need their claims after it)
            sleep = rng.choice((1, 2, 3, 4, 5, 8, 12))
            if self.ctld_down.is_set():
                continue
            try:
                res = self.c.run("sbatch", "--parsable", "-o", "/dev/null", *shape,
                                 "--wrap", f"sleep {sleep}", check=False, timeout=30)
            except Exception:
                res = None
            if res is None or res.returncode != 0:
                with self.lock:
                    self.submit_errors += 1
                    down = self.ctld_down.is_set() or self.fault_active == "ctld-kill9"
                if not down:
                    self.violation(f"(c) sbatch {' '.join(shape)} refused outside a slurmctld kill: "
                                   f"{(res.stderr or res.stdout).strip() if res else 'timeout'}")
                continue
            job = int(res.stdout.strip().split(";")[0])
            with self.lock:
                if job in self.submitted:
                    # a kill -9 lost that job and slurmctld gave its id again
                    self.lost_ids.append(job)
                    if job not in self.excused:
                        self.violations.append(f"t={self.now():.1f}s (c) job {job} vanished "
                                               "and its id was reused, but it was not in flight at a kill")
                        self.violation_jobs.append(None)
                    for k in ((job, n) for (j, n) in list(self.ran_during_fault) if j == job):
                        self.ran_during_fault.discard(k)
                    self.first_running.pop(job, None)
                    self.first_ended.pop(job, None)
                    self.final_seen.pop(job, None)
                    # The new job with that id is the kill's casualty too:
                    # a slurmd that ran the lost one refuses to launch it
                    # ("Job N already running, do not launch second copy")
                    # and slurmctld holds it (launch failed requeued held).
                    self.reused.add(job)
                self.submitted[job] = {"shape": " ".join(shape), "sleep": sleep, "at": self.now(),
                                       "episode": len(self.episodes)}

    # ---- faults -------------------------------------------------------------
    def begin_fault(self, kind):
        with self.lock:
            self.fault_active = kind
            self.fault_started = time.monotonic()
            self.ran_during_fault |= self.running_keys
            self.missing_since.clear()
            self.orphan_since.clear()

    def end_fault(self):
        with self.lock:
            self.fault_active = None
            self.last_clear = time.monotonic()

    def inject(self, kind, duration, ep):
        """Turns one fault on, holds it for `duration` s, turns it off."""
        c, rng = self.c, self.rng
        if kind == "ctld-kill9":
            with self.lock:
                # Jobs slurmctld may lose or fail by dying now: every job not
                # seen finished well before (its state save may be seconds
                # behind; generous, so that no run counts a job it reverted).
                cutoff = time.monotonic() - 30
                self.excused |= {j for j in self.submitted
                                 if not (j in self.final_seen and self.final_seen[j] < cutoff)}
            self.ctld_down.set()
            self.begin_fault(kind)
            c.stop_slurmctld(sig=signal.SIGKILL)
            time.sleep(duration)          # slurmctld stays down this long: the fault itself
            c.start_slurmctld()
            self.ctld_down.clear()
            self.end_fault()
            return
        self.begin_fault(kind)
        if kind == "refuse":
            ep["params"] = {"refuse": True, "dropWatches": True}
        elif kind == "hang":
            ep["params"] = {"hang": True, "dropWatches": True}
        elif kind == "slow":
            ep["params"] = {"delayMs": rng.randrange(1000, 4001, 250), "dropWatches": True}
        elif kind == "429":
            ep["params"] = {"status": 429, "retryAfter": rng.choice((1, 2, 3)), "dropWatches": True}
        elif kind == "500":
            ep["params"] = {"status": 500, "dropWatches": True}
        elif kind == "410":
            ep["params"] = {"expiredAsHttp": True, "expireBefore": "all", "dropWatches": True}
        else:
            raise ValueError(kind)
        faults(c, **ep["params"])
        end = time.monotonic() + duration
        if kind == "410":
            # keep expiring: every watch resumed from an old version gets
            # HTTP 410 and its informer relists, again and again
            relists = 0
            while time.monotonic() < end:
                time.sleep(min(rng.uniform(0.8, 2.0), max(0.0, end - time.monotonic())))
                if time.monotonic() < end:
                    faults(c, expiredAsHttp=True, expireBefore="all", dropWatches=True)
                    relists += 1
            ep["params"]["reexpired"] = relists
        else:
            time.sleep(duration)          # the fault's length (random, bounded), not a wait for a state
        reset_faults(c)
        self.end_fault()

    def annotate(self):
        """Per episode, from what the samplers saw: the last job that
        started on a Kubernetes node while the fault was on (s after it
        began)."""
        for i, ep in enumerate(self.episodes):
            during = [d for e, d, job in self.starts_in_fault if e == i]
            ep["last_start_in_fault"] = round(max(during), 1) if during else None

    def table(self):
        kinds = {}
        for ep in self.episodes:
            k = kinds.setdefault(ep["kind"], {"injected": 0, "seconds": [], "recovery": [],
                                              "last_start_in_fault": [], "first_start_after": []})
            k["injected"] += 1
            k["seconds"].append(round(ep["duration"], 1))
            k["recovery"].append(ep["converged_after"])
            k["last_start_in_fault"].append(ep.get("last_start_in_fault"))
            k["first_start_after"].append(ep.get("jobs_resumed_after"))
        return kinds


OUTAGES = ("refuse", "hang", "500", "429")   # no data reaches the informers


def late_starts(m, stale_after):
    """Jobs first seen running on a Kubernetes node more than StaleAfter
    (plus a sample) after an outage began: the failure policy
    (doc/architecture.md) says none should start then. Measured, not
    asserted."""
    return [(m.episodes[e]["kind"], round(d, 1), job) for e, d, job in m.starts_in_fault
            if m.episodes[e]["kind"] in OUTAGES and d > stale_after + SAMPLE_INTERVAL]


def format_report(m, elapsed, jobs_total, final_states, casualties, stale_after):
    lines = [f"fault matrix: seed {m.seed}, {len(m.episodes)} faults, {jobs_total} jobs, "
             f"{len(m.violations)} violations, {elapsed:.0f}s"]
    def fmt(values):
        return ", ".join("-" if v is None else f"{v:.1f}" for v in values)
    lines.append(f"{'fault':<11} {'injected':>8}  {'held (s)':<12} {'claims caught up (s)':<21} "
                 f"{'last job start in fault (s)':<28} {'first job start after (s)':<26}")
    for kind, k in m.table().items():
        lines.append(f"{kind:<11} {k['injected']:>8}  {fmt(k['seconds']):<12} {fmt(k['recovery']):<21} "
                     f"{fmt(k['last_start_in_fault']):<28} {fmt(k['first_start_after']):<26}")
    aft = m.latencies["after_fault"]
    nor = m.latencies["normal"]
    lines.append(f"claim latency after a fault: worst {max(aft, default=0):.1f}s over {len(aft)} (job, node)s; "
                 f"in normal operation: worst {max(nor, default=0):.1f}s over {len(nor)}")
    lines.append(f"orphaned claims cleared: {len(m.orphan_latencies)}, worst {max(m.orphan_latencies, default=0):.1f}s")
    lines.append(f"job final states: {final_states}; in flight at a kill -9: {len(m.excused)}, of which "
                 f"lost or not completed: {len(casualties)} (ids given again: {len(m.lost_ids)}); "
                 f"sbatch refused while slurmctld was down: {m.submit_errors}")
    for job, what in casualties:
        lines.append(f"  kill -9 casualty: job {job}: {what}")
    for t, node in m.duplicate_drains:
        lines.append(f"  kill -9 casualty: {node} drained by slurmd for a duplicate job id at t={t}s, resumed")
    late = late_starts(m, stale_after)
    lines.append(f"jobs started on Kubernetes nodes more than StaleAfter={stale_after}s into an API server "
                 f"outage: {len(late)}" + (f", latest {max(d for _, d, _ in late):.1f}s after it began "
                                          f"({', '.join(f'{k} job {j} at {d}s' for k, d, j in late[:6])})"
                                          if late else ""))
    lines.append(f"samples: {m.samples}; (job, node)s seen running with their claim: {len(m.claimed_seen)}")
    for v in m.violations:
        lines.append("  " + v)
    return "\n".join(lines)
