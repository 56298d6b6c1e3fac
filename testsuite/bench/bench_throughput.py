#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Job throughput of select/k8s_cons_tres against plain select/cons_tres, on
the local harness, same job stream, same run (a benchmark, not a test).

For each select plugin: bring a cluster up from the fixture (with the test
API server and its pods in both runs), submit the same stream of short jobs
as one job array, wait until all have completed, and read sdiag. Prints jobs
per second to completion, the main and backfill scheduler cycle times, the
ResourceClaims written and deleted, and the ratios k8s_cons_tres/cons_tres.

    testsuite/bench/bench_throughput.py [--jobs 2000] [--fixture FILE]
"""
import argparse
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from harness.cluster import Cluster, new_run_dir  # noqa: E402
from harness.kube import job_claims  # noqa: E402
from harness.wait import wait_for  # noqa: E402


def sdiag(cluster) -> dict:
    out = cluster.run("sdiag").stdout
    main, _, bf = out.partition("Backfilling stats")
    def grab(text, key):
        m = re.search(rf"{key}:\s+(\d+)", text)
        return int(m.group(1)) if m else 0
    return {"main_last_us": grab(main, "Last cycle"), "main_max_us": grab(main, "Max cycle"),
            "main_mean_us": grab(main, "Mean cycle"), "bf_last_us": grab(bf, "Last cycle"),
            "bf_max_us": grab(bf, "Max cycle"), "bf_mean_us": grab(bf, "Mean cycle"),
            "bf_cycles": grab(bf, "Total cycles")}


def pending_or_running(cluster) -> int:
    out = cluster.run("squeue", "-h", "-r", "-t", "PD,R,CG,CF", "-o", "%i", check=False).stdout
    return len(out.split())


def run(select: str, fixture: str, jobs: int) -> dict:
    c = Cluster(new_run_dir(f"k8s-cons-tres-bench-{select}-"))
    try:
        c.up(fixture, select=select)
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
        return result
    finally:
        c.down()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--fixture", default=str(HERE.parent / "fixtures" / "demo.json"))
    args = p.parse_args()
    base = run("cons_tres", args.fixture, args.jobs)
    ours = run("k8s_cons_tres", args.fixture, args.jobs)
    keys = ["seconds", "jobs_per_s", "main_mean_us", "main_max_us", "bf_mean_us", "bf_max_us"]
    print(f"| {'metric':<14} | {'cons_tres':>12} | {'k8s_cons_tres':>14} | {'ratio':>7} |")
    print(f"|{'-' * 16}|{'-' * 14}|{'-' * 16}|{'-' * 9}|")
    for k in keys:
        ratio = ours[k] / base[k] if base[k] else float("nan")
        print(f"| {k:<14} | {base[k]:>12.1f} | {ours[k]:>14.1f} | {ratio:>7.2f} |")
    print(f"\n{args.jobs} jobs (-c2, one array) per run; claim writes that failed: {ours.get('claims_failed', 0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
