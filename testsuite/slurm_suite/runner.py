# SPDX-License-Identifier: GPL-2.0-or-later
"""One run of SchedMD's expect tests on one harness cluster.

The cluster is the harness's (testsuite/harness/cluster.py) with the
settings the tests need on top (SLURM_CONF_CHANGES). SchedMD's
testsuite/expect is copied into the run directory, patched
(check_config_select.patch, the only change to SchedMD's files) and given a
globals.local pointing at the installed Debian Slurm; each test then runs
as `expect testX.Y` with SLURM_CONF set to the cluster's slurm.conf.
"""
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import cluster as cluster_mod
from harness.faults_matrix import expand_hostlist
from harness.cluster import Cluster
from harness.wait import WaitTimeout, wait_for

from . import placement

HERE = Path(__file__).resolve().parent
PATCH = HERE / "check_config_select.patch"


def patch_for(release) -> Path:
    """The same one change for each release's globals (the procedure moved
    and lost its cray branch by 24.11): check_config_select-MAJOR.MINOR.patch
    where a release needs its own, else the 22.05 one."""
    if release is None:
        return PATCH
    own = HERE / f"check_config_select-{'.'.join(release.version.split('.')[:2])}.patch"
    return own if own.is_file() else PATCH

# On top of the harness's slurm.conf (value None: the line is removed).
SLURM_CONF_CHANGES = {
    # test17.34 (--core-spec) and test17.40 (--thread-spec) skip without it
    "AllowSpecResourcesUsage": "yes",
    # salloc runs its command where salloc runs, as SchedMD's tests expect
    # (with use_interactive_step it would start a step through srun --pty)
    "LaunchParameters": None,
}


class SuiteCluster(Cluster):
    def _write_config(self, fx, select, plugin, ports):
        super()._write_config(fx, select, plugin, ports)
        conf = self.slurm_conf
        lines = conf.read_text().splitlines()
        keys = {line.split("=", 1)[0]: i for i, line in enumerate(lines) if "=" in line}
        drop = set()
        first_node = next(i for i, line in enumerate(lines) if line.startswith("NodeName="))
        extra = []
        for key, value in SLURM_CONF_CHANGES.items():
            if key in keys:
                if value is None:
                    drop.add(keys[key])
                else:
                    lines[keys[key]] = f"{key}={value}"
            elif value is not None:
                extra.append(f"{key}={value}")
        lines = [line for i, line in enumerate(lines) if i not in drop]
        first_node -= sum(1 for i in drop if i < first_node)
        lines[first_node:first_node] = extra
        conf.write_text("\n".join(lines) + "\n")


def _find_generator_in(build_dirs):
    """The harness finds the fixture generator in ./build or in-tree; this
    suite may run from another build directory (the plugin's)."""
    orig = cluster_mod.find_built

    def find_built(rel, what):
        for d in build_dirs:
            p = Path(d) / rel
            if p.is_file():
                return p
        return orig(rel, what)
    cluster_mod.find_built = find_built


def build_dirs_of(plugin: Path) -> list:
    dirs = []
    if os.environ.get("K8S_CONS_TRES_BUILDDIR"):
        dirs.append(Path(os.environ["K8S_CONS_TRES_BUILDDIR"]))
    if plugin.parent.name == ".libs":
        dirs.append(plugin.parent.parent)
    return dirs


@dataclass
class TestResult:
    name: str
    result: str  # PASS FAIL SKIP TIMEOUT
    seconds: float
    message: str = ""
    jobs: list = field(default_factory=list)
    log_allocs: list = field(default_factory=list)
    log_events: list = field(default_factory=list)  # placement.timed_events
    log_excerpt: str = ""


def classify(rc: int, output: str) -> tuple:
    msg = ""
    # "[time] Fatal   <message> (fail@globals:...)", "[time] Warning <message> (skip@globals:...)"
    m = re.findall(r"^\[[^]]*\] \w+\s+(.*?) \((?:fail|skip)@globals", output, re.M)
    if m:
        msg = m[-1].strip()
    if rc == 0:
        return "PASS", msg
    if rc == 255 or rc == -1:
        return "SKIP", msg
    return "FAIL", msg


class SuiteRun:
    def __init__(self, select: str, fixture: Path, plugin: Path, slurm_src: Path,
                 timeout: float, log=print, release=None, expect_release=None):
        self.select = select
        # the release whose testsuite/expect slurm_src holds (None: the one run)
        self.expect_release = expect_release
        # the Slurm release run (harness.slurm_release), or None: the installed one
        self.release = release
        self.prefix = release.prefix if release else Path("/usr")
        self.fixture = fixture
        self.plugin = plugin
        self.slurm_src = slurm_src
        self.timeout = timeout
        self.log = log
        # short: slurmstepd's socket under the spool must stay below 108 bytes
        self.run_dir = cluster_mod.new_run_dir(prefix="ks-", dir="/tmp")
        self.cluster = SuiteCluster(self.run_dir)
        self.expect_dir = self.run_dir / "expect"
        self.results = {}
        self._max_job_id = 0
        self.fx = None
        # what went wrong between tests (a cons_tres run with any is not cached)
        self.warnings = []

    # ---- setup ------------------------------------------------------------
    def prepare_expect(self):
        src = self.slurm_src / "testsuite" / "expect"
        shutil.copytree(src, self.expect_dir, symlinks=True)
        # the only change to SchedMD's files: check_config_select cons_tres
        # also accepts select/k8s_cons_tres
        patch = patch_for(self.expect_release or self.release)
        res = subprocess.run(["patch", "-p3", "--no-backup-if-mismatch", "-i", str(patch)],
                             cwd=self.expect_dir, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"{patch.name} does not apply to {src}/globals: "
                               f"{res.stdout}{res.stderr}")
        (self.expect_dir / "globals.local").write_text(
            f"# written by testsuite/slurm-suite: Slurm in {self.prefix}\n"
            f"set slurm_dir \"{self.prefix}\"\n"
            f"set build_dir \"{self.slurm_src}\"\n"
            f"set src_dir \"{self.slurm_src}\"\n"
            "set testsuite_colorize false\n"
            f"set testsuite_shared_dir \"{self.expect_dir}\"\n")
        (self.run_dir / "testsuite.conf").write_text(
            f"SlurmSourceDir={self.slurm_src}\nSlurmBuildDir={self.slurm_src}\n"
            f"SlurmInstallDir={self.prefix}\n"
            f"SlurmConfigDir={self.cluster.slurm_conf.parent}\n")
        (self.run_dir / "results").mkdir(exist_ok=True)

    def up(self):
        from harness import fixture as fixture_mod
        self.fx = fixture_mod.load(str(self.fixture))
        _find_generator_in(build_dirs_of(self.plugin))
        self.prepare_expect()
        self.cluster.up(str(self.fixture), select=self.select, plugin=self.plugin,
                        slurm=self.release.version if self.release else None)
        self.wait_ready()

    def wait_ready(self):
        """Every node idle and, under the plugin, every Kubernetes node known
        to it: a probe step on each node (run the same way under both)."""
        for node in (n.name for n in self.fx.nodes):
            self.cluster.run("srun", "-w", node, "-n1", "-t1", "--quiet", "-J", "suite-probe", "true",
                             timeout=180)
        self._max_job_id = max(self._job_ids_in(self._ctld_log_text()), default=0)

    def down(self):
        self.cluster.down()

    # ---- per test ---------------------------------------------------------
    def _ctld_log(self) -> Path:
        return self.run_dir / "log" / "slurmctld.log"

    def _ctld_log_text(self, start: int = 0) -> str:
        with open(self._ctld_log(), "rb") as f:
            f.seek(start)
            return f.read().decode(errors="replace")

    @staticmethod
    def _job_ids_in(text: str):
        return {int(x) for x in re.findall(r"JobId=(\d+)", text)}

    @staticmethod
    def _hostnames(hostlist: str) -> list:
        # in Python, not `scontrol show hostnames`: one per job of every
        # test was a few thousand scontrol runs per suite, on a machine the
        # eight clusters already keep busy
        return expand_hostlist(hostlist)

    def run_test(self, name: str, rerun: bool = False) -> TestResult:
        self.between_tests()
        start_off = self._ctld_log().stat().st_size
        base = self._max_job_id + 1
        out_path = self.run_dir / "results" / f"{name}{'.rerun' if rerun else ''}.log"
        env = self.cluster.env()
        env.pop("SLURM_TESTSUITE_CONF", None)
        env["SLURM_TESTSUITE_CONF"] = str(self.run_dir / "testsuite.conf")
        t0 = time.monotonic()
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(["expect", name], cwd=self.expect_dir, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=self.timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
                rc, timed_out = -9, True
        secs = time.monotonic() - t0
        output = out_path.read_text(errors="replace")
        result, msg = classify(rc, output)
        if timed_out:
            result, msg = "TIMEOUT", f"killed after {self.timeout:.0f}s"
        # where the test's jobs ran (before anything left is cancelled)
        text = self.cluster.run("scontrol", "-d", "show", "job", check=False, timeout=30).stdout
        jobs = placement.parse_show_job(text, self._hostnames)
        seg = self._ctld_log_text(start_off)
        ids = self._job_ids_in(seg) | {j for j in jobs if j >= base}
        self._max_job_id = max([self._max_job_id, *ids])
        mine = [jobs[j] for j in sorted(jobs) if j >= base]
        for j in mine:
            j.job_id -= base - 1
        allocs = placement.relative([(j, n) for j, n in placement.allocations_in_log(seg) if j >= base],
                                    base)
        r = TestResult(name, result, secs, msg, mine, allocs,
                       "\n".join(line for line in seg.splitlines()
                                 if re.search(r"Allocate|Started|error", line))[-6000:])
        r.log_events = placement.timed_events(seg, base)
        self.results[name] = r
        return r

    def warn(self, what):
        self.warnings.append(str(what))
        self.log(f"  [{self.select}] warning: {what}")

    def between_tests(self):
        """Leave the cluster as a fresh one for the next test: no jobs, no
        reservations, every node idle (the same steps under both selects)."""
        c = self.cluster
        c.run("scancel", "--user", "root", check=False, timeout=30)
        for line in c.run("scontrol", "show", "reservation", check=False, timeout=20).stdout.splitlines():
            m = re.match(r"ReservationName=(\S+)", line)
            if m:
                c.run("scontrol", "delete", f"reservation={m.group(1)}", check=False, timeout=20)

        def quiet():
            out = c.run("squeue", "-h", "-t", "R,CG,S,CF,PD", "-o", "%i", check=False, timeout=20).stdout
            return not out.strip()
        try:
            wait_for(quiet, timeout=90, interval=0.5, what="jobs of the previous test to end")
        except WaitTimeout as e:
            self.warn(e)
        states = c.node_states()
        # plnd: idle, but planned for a (by now cancelled) job by backfill
        bad = [n for n, s in states.items()
               if s.rstrip("*~#$@+-") not in ("idle", "plnd", "mix", "alloc", "comp")]
        if bad:
            c.run("scontrol", "update", f"nodename={','.join(bad)}", "state=resume", check=False, timeout=20)
        try:
            wait_for(lambda: all(s.rstrip("*") in ("idle", "plnd") for s in c.node_states().values()),
                     timeout=90, interval=0.5, what="every node idle")
        except WaitTimeout as e:
            self.warn(e)
        # The tests count only "idle" nodes (get_nodes_by_state): test39.5
        # sized its jobs by 2 GPUs instead of 3 when node5 was still plnd.
        # Backfill clears plnd at its next cycle (bf_interval, 30 s), which
        # the cancels above trigger.
        t0 = time.monotonic()
        try:
            wait_for(lambda: all(s.rstrip("*") == "idle" for s in c.node_states().values()),
                     timeout=45, interval=0.5, what="no node planned by backfill")
        except WaitTimeout as e:
            self.warn(e)
        if time.monotonic() - t0 > 2:
            self.log(f"  [{self.select}] waited {time.monotonic() - t0:.0f}s for backfill to clear plnd nodes")

    def to_json(self) -> dict:
        return results_json(self.results)

    def save(self, path: Path):
        path.write_text(json.dumps({"select": self.select, "run_dir": str(self.run_dir),
                                    "tests": self.to_json()}, indent=1))


def results_json(results: dict) -> dict:
    """{test: TestResult} as --json shows them."""
    return {name: {"result": r.result, "seconds": round(r.seconds, 1), "message": r.message,
                   "jobs": [{"n": j.job_id, "name": j.name, "state": j.state, "nodes": j.nodes, "req": j.req,
                             "per_node": {k: [placement.fmt(v[0]), placement.fmt(v[1])]
                                          for k, v in j.per_node.items()}} for j in r.jobs],
                   "log_allocs": r.log_allocs, "log_events": r.log_events}
            for name, r in results.items()}
