#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Each function's inclusive share of one thread's samples in a `perf
record --call-graph` file (as slurmctld-scale writes with
K8S_BENCH_PERF=PREFIX): the share of that thread's samples whose call chain
holds the function at least once. With --ms (the thread's CPU per job from
the same run's record, e.g. ctld_threads_ms_per_job.sched_agent) the
shares are also given as milliseconds per job.

    testsuite/bench/perf_share.py FILE [--thread sched_agent] [--ms MS]
        [--top N] [FUNCTION ...]

Without FUNCTIONs it lists the top N (default 40) functions.
"""
import argparse
import collections
import subprocess
import sys


def samples(path: str, thread: str):
    """The call chains (function names, leaf first) of `thread`'s samples."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm,ip,sym"], check=True,
                         capture_output=True, text=True).stdout
    chain, comm = None, None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(("\t", " ")):
            if chain is not None and comm == thread:
                yield chain
            comm, chain = line.split()[0], []
        elif chain is not None:
            parts = line.split(None, 1)
            chain.append(parts[1].rsplit(" (", 1)[0] if len(parts) > 1 else "[unknown]")
    if chain is not None and comm == thread:
        yield chain


def shares(chains) -> tuple:
    """(number of samples, Counter of function -> samples it is in)."""
    n, inclusive = 0, collections.Counter()
    for chain in chains:
        n += 1
        inclusive.update(set(chain))
    return n, inclusive


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("functions", nargs="*")
    ap.add_argument("--thread", default="sched_agent")
    ap.add_argument("--ms", type=float, help="the thread's CPU ms per job in the same run")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_intermixed_args(argv)
    n, inclusive = shares(samples(a.file, a.thread))
    if not n:
        print(f"perf_share: no samples of thread {a.thread} in {a.file}", file=sys.stderr)
        return 1
    rows = [(f, inclusive[f]) for f in a.functions] if a.functions else inclusive.most_common(a.top)
    print(f"{n} samples of {a.thread}")
    for f, c in rows:
        ms = f" {c / n * a.ms:8.2f} ms/job" if a.ms else ""
        print(f"{100 * c / n:6.1f}%{ms}  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
