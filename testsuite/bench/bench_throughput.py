#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Job throughput of select/k8s_cons_tres against plain select/cons_tres, on
the local harness, same job stream, same run (a benchmark, not a test).

For each select plugin: bring a cluster up from the fixture (with the test
API server and its pods in both runs), submit the same stream of short jobs
as one job array, wait until all have completed, and read sdiag. The two
alternate, cons_tres then k8s_cons_tres, --pairs times (the machine is
shared and noisy); printed per metric: the median [min-max] of each side's
runs and of the per-pair ratios k8s_cons_tres/cons_tres. Jobs per second to
completion, the main and backfill scheduler cycle times, and the claim
writes that failed. --slurm runs that release's daemons (the plugin built
for it: build-aux/release-plugin.sh VERSION). --api-delay-ms makes the test
API server answer every request that late (a real one takes 5-20 ms a
write); the plugin's runs then also report the launch gate's hold per job
(from the allocation to the gate opening, both in slurmctld's log), p50 and
p99.

    testsuite/bench/bench_throughput.py [--jobs 2000] [--pairs 3] [--slurm VERSION] [--fixture FILE]
                                        [--api-delay-ms D]
"""
import argparse
import datetime
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench_srun import pct  # noqa: E402
from harness.cluster import Cluster, new_run_dir  # noqa: E402
from harness.kube import job_claims  # noqa: E402
from harness.wait import wait_for  # noqa: E402


def sdiag(cluster, timeout=60) -> dict:
    """sdiag's counters and cycle times (also bench_slurmctld_scale's)."""
    out = cluster.run("sdiag", timeout=timeout).stdout
    main, _, bf = out.partition("Backfilling stats")
    def grab(text, key):
        m = re.search(rf"{key}:\s+(\d+)", text)
        return int(m.group(1)) if m else 0
    return {"started": grab(main, "Jobs started"), "main_cycles": grab(main, "Total cycles"),
            "main_last_us": grab(main, "Last cycle"), "main_max_us": grab(main, "Max cycle"),
            "main_mean_us": grab(main, "Mean cycle"), "bf_last_us": grab(bf, "Last cycle"),
            "bf_max_us": grab(bf, "Max cycle"), "bf_mean_us": grab(bf, "Mean cycle"),
            "bf_cycles": grab(bf, "Total cycles")}


def pending_or_running(cluster) -> int:
    out = cluster.run("squeue", "-h", "-r", "-t", "PD,R,CG,CF", "-o", "%i", check=False).stdout
    return len(out.split())


STAMP = r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] "
JOB = r"JobId=(\d+)(?:_\d+\((\d+)\))?"
ALLOCATED = re.compile(STAMP + r"(?:sched: Allocate|backfill: Started) " + JOB, re.M)
GATE_OPEN = re.compile(STAMP + r"select/k8s_cons_tres: " + JOB + r": Kubernetes shows its devices allocated", re.M)


def gate_holds(log: str) -> list:
    """Seconds each job waited at the launch gate: its allocation to the
    gate opening (info lines of slurmctld's log, ms resolution)."""
    def stamps(rx):
        out = {}
        for m in rx.finditer(log):
            out[m.group(3) or m.group(2)] = datetime.datetime.fromisoformat(m.group(1))
        return out
    allocated, opened = stamps(ALLOCATED), stamps(GATE_OPEN)
    return sorted((opened[j] - allocated[j]).total_seconds() for j in opened if j in allocated)


def run(select: str, fixture: str, jobs: int, slurm=None, api_delay_ms=0) -> dict:
    c = Cluster(new_run_dir(f"k8s-cons-tres-bench-{select}-"))
    c.api_delay_ms = api_delay_ms
    try:
        c.up(fixture, select=select, slurm=slurm)
        if select == "k8s_cons_tres":
            log = c.run_dir / "log" / "slurmctld.log"
            wait_for(lambda: "inventory" in log.read_text(), timeout=60, what="the first inventory")
        c.run("scontrol", "setdebug", "info")  # debug logging would measure the log
        c.run("sdiag", "--reset")
        start = time.monotonic()
        c.run("sbatch", "--array", f"0-{jobs - 1}", "-o", "/dev/null", "-c2", "--wrap", "true")
        wait_for(lambda: pending_or_running(c) == 0, timeout=3600, interval=0.5,
                 what=f"{jobs} jobs to complete")
        elapsed = time.monotonic() - start
        result = {"select": select, "jobs": jobs, "seconds": elapsed, "jobs_per_s": jobs / elapsed}
        result.update(sdiag(c))
        if select == "k8s_cons_tres":
            wait_for(lambda: not job_claims(c), timeout=300, interval=0.5, what="claims to be deleted")
            log = (c.run_dir / "log" / "slurmctld.log").read_text()
            result["claims_failed"] = log.count("failed after")
            holds = gate_holds(log)
            result["gated"] = len(holds)
            result["gate_p50_ms"] = pct(holds, 0.5) * 1000 if holds else float("nan")
            result["gate_p99_ms"] = pct(holds, 0.99) * 1000 if holds else float("nan")
        return result
    finally:
        c.down()


def spread(values) -> str:
    values = [v for v in values if v == v]  # no NaN
    if not values:
        return "-"
    f = (lambda v: f"{v:.0f}") if max(values) >= 100 else (lambda v: f"{v:.2f}")
    return f"{f(statistics.median(values))} [{f(min(values))}-{f(max(values))}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--pairs", type=int, default=3, help="cons_tres/k8s_cons_tres pairs, interleaved (>= 1)")
    p.add_argument("--slurm", default=None, help="the Slurm release (default: the installed one)")
    p.add_argument("--fixture", default=str(HERE.parent / "fixtures" / "demo.json"))
    p.add_argument("--api-delay-ms", type=int, default=0, help="every API answer this late")
    args = p.parse_args()
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    pairs = []
    for i in range(args.pairs):
        base = run("cons_tres", args.fixture, args.jobs, args.slurm, args.api_delay_ms)
        ours = run("k8s_cons_tres", args.fixture, args.jobs, args.slurm, args.api_delay_ms)
        print(f"pair {i + 1}/{args.pairs}: cons_tres {base['jobs_per_s']:.1f} jobs/s, "
              f"k8s_cons_tres {ours['jobs_per_s']:.1f} jobs/s", file=sys.stderr, flush=True)
        pairs.append((base, ours))
    keys = ["seconds", "jobs_per_s", "main_mean_us", "main_max_us", "bf_mean_us", "bf_max_us"]
    print(f"| {'metric':<14} | {'cons_tres':>22} | {'k8s_cons_tres':>22} | {'ratio per pair':>22} |")
    print(f"|{'-' * 16}|{'-' * 24}|{'-' * 24}|{'-' * 24}|")
    for k in keys:
        ratios = [o[k] / b[k] if b[k] else float("nan") for b, o in pairs]
        print(f"| {k:<14} | {spread([b[k] for b, _ in pairs]):>22} | "
              f"{spread([o[k] for _, o in pairs]):>22} | {spread(ratios):>22} |")
    failed = sum(o.get("claims_failed", 0) for _, o in pairs)
    release = args.slurm or "installed"
    print(f"\nSlurm {release}; {args.jobs} jobs (-c2, one array) per run, {args.pairs} pairs "
          f"(A B A B); median [min-max]; API answers {args.api_delay_ms} ms late; "
          f"claim writes that failed: {failed}")
    print(f"launch gate, allocation -> open, ms: p50 {spread([o['gate_p50_ms'] for _, o in pairs])}, "
          f"p99 {spread([o['gate_p99_ms'] for _, o in pairs])} "
          f"({spread([o['gated'] for _, o in pairs])} jobs gated per run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
