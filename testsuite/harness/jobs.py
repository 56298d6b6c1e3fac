# SPDX-License-Identifier: GPL-2.0-or-later
"""Submitting jobs to a harness cluster and reading them back."""
import re

from .wait import wait_for

FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}


def sbatch(cluster, *args) -> int:
    res = cluster.run("sbatch", "--parsable", *args)
    return int(res.stdout.strip().split(";")[0])


def show_job(cluster, job_id: int, detail: bool = False) -> dict:
    """scontrol show job as a dict (the one-line form); {} once Slurm forgot it."""
    cmd = ["scontrol"] + (["-d"] if detail else []) + ["show", "job", "-o", str(job_id)]
    res = cluster.run(*cmd, check=False, timeout=20)
    if res.returncode != 0:
        return {}
    fields = {}
    for line in res.stdout.splitlines():
        for key, value in re.findall(r"(\S+?)=(\S*)", line):
            fields.setdefault(key, value)
    return fields


def wait_job(cluster, job_id: int, states=FINAL_STATES, timeout: float = 60) -> dict:
    def reached():
        job = show_job(cluster, job_id)
        return job if job.get("JobState") in states else None
    return wait_for(reached, timeout=timeout, what=f"job {job_id} to reach {sorted(states)}",
                    on_timeout=lambda: f"{show_job(cluster, job_id)}\n" + cluster.tail("log/slurmctld.log"))


def process_alive(pid: int) -> bool:
    """A job's process (on loopback, this machine's) runs, not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def job_pid(cluster, pidfile, timeout: float = 30) -> int:
    """The pid a job wrote to `pidfile` (`echo $$ > FILE` in its script)."""
    return int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=timeout,
                        what=f"the job's process id in {pidfile}"))
