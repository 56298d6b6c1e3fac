#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What the launch gate adds to an interactive job: `srun -n1 true` from
submission to its exit, under plain select/cons_tres and under
select/k8s_cons_tres (LaunchGate=claims, a claim and a holder pod written
for every job, the node agents playing kubelet), on the local harness (a
benchmark, not a test).

Both clusters run at once from the same fixture; batches of --per sruns
alternate between them, cons_tres then the plugin, --pairs times (the
machine is shared and noisy). Printed: each side's per-srun p50 and p99 over
all its runs (median [min-max] of the per-batch values) and the per-pair
ratio of the p50s. --api-delay-ms makes the test API server answer every
request that much later, as a real one does (5-20 ms a write).

    testsuite/bench/bench_srun.py [--per 20] [--pairs 3] [--slurm VERSION] [--api-delay-ms D]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from harness.cluster import Cluster, new_run_dir  # noqa: E402
from harness.wait import wait_for  # noqa: E402


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def batch(c, n):
    """n sruns one after the other on one node; each one's seconds."""
    out = []
    for _ in range(n):
        t = time.monotonic()
        c.run("srun", "-n1", "-c2", "true", timeout=120)
        out.append(time.monotonic() - t)
    return out


def spread(values, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--per", type=int, default=20, help="sruns per batch")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--slurm", default=None)
    p.add_argument("--api-delay-ms", type=int, default=0)
    p.add_argument("--fixture", default=str(HERE.parent / "fixtures" / "demo.json"))
    a = p.parse_args()
    clusters = {}
    try:
        for select in ("cons_tres", "k8s_cons_tres"):
            c = Cluster(new_run_dir(f"k8s-cons-tres-bench-srun-{select}-"))
            c.api_delay_ms = a.api_delay_ms
            clusters[select] = c
            c.up(a.fixture, select=select, slurm=a.slurm)
        log = clusters["k8s_cons_tres"].run_dir / "log" / "slurmctld.log"
        wait_for(lambda: "inventory" in log.read_text(), timeout=60, what="the first inventory")
        for c in clusters.values():
            c.run("scontrol", "setdebug", "info")
            batch(c, 2)  # warm: the first job after start pays for other things
        runs = {s: [] for s in clusters}
        for i in range(a.pairs):
            for s, c in clusters.items():
                runs[s].append(batch(c, a.per))
            print(f"pair {i + 1}/{a.pairs}: " + ", ".join(
                f"{s} p50 {statistics.median(runs[s][-1]) * 1000:.0f} ms" for s in clusters),
                file=sys.stderr, flush=True)
    finally:
        for c in clusters.values():
            c.down()
    print("| srun -n1 -c2 true, ms | cons_tres | k8s_cons_tres | ratio per pair |")
    print("|---|---|---|---|")
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        base = [pct(b, q) * 1000 for b in runs["cons_tres"]]
        ours = [pct(b, q) * 1000 for b in runs["k8s_cons_tres"]]
        ratios = [o / b for b, o in zip(base, ours)]
        print(f"| {name} | {spread(base)} | {spread(ours)} | {spread(ratios, '{:.1f}')} |")
    print(f"\nSlurm {a.slurm or 'installed'}; {a.per} sruns per batch, {a.pairs} pairs (A B A B); "
          f"API answers {a.api_delay_ms} ms late; median [min-max] of the batches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
