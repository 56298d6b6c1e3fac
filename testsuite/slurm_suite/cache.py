# SPDX-License-Identifier: GPL-2.0-or-later
"""cons_tres's side of testsuite/slurm-suite, cached between runs.

What cons_tres does in SchedMD's tests does not depend on this project's
plugin code where its cluster does not load the plugin (the private
releases): only on the Slurm build, the expect tests, the patch and the
suite's own code and configuration. Its per-test results and recorded
placements are kept under <cache>/slurm-suite/ (<cache> as for the Slurm
builds: $K8S_CONS_TRES_CACHE, else $XDG_CACHE_HOME/k8s-cons-tres, else
~/.cache/k8s-cons-tres), one JSON file per release and key. The key is a
checksum of everything that decides them (key_inputs): when any of it
changes, cons_tres runs again. On the installed 22.05.8 the cons_tres
cluster loads the plugin too (22.05 loads every select plugin of PluginDir),
so there the plugin, the fixture generator and the test API server are in
the key as well.

K8S_SLURM_SUITE_FRESH=1 (or --fresh) runs cons_tres whatever the cache
holds and stores its results anew; K8S_SLURM_SUITE_CACHE=0 neither reads
nor writes the cache.
"""
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import cluster as cluster_mod
from harness import slurm_release

from .placement import Job
from .runner import HERE, TestResult, build_dirs_of, results_json

# Bump when what an entry holds, or how a run is recorded, changes meaning.
FORMAT = 1
FRESH_ENV = "K8S_SLURM_SUITE_FRESH"
CACHE_ENV = "K8S_SLURM_SUITE_CACHE"
# Entries kept per release (the most recently used): other branches' keys.
KEEP = 4
TESTSUITE = HERE.parent
TOP = TESTSUITE.parent
# The suite's own code and configuration: the runner, the rules, the patches,
# the harness that writes slurm.conf and gres.conf and waits on the cluster,
# the fixture, the test API server every cluster starts, and the RBAC
# manifests the harness reads to start it.
SUITE_FILES = ("testsuite/slurm-suite", "testsuite/slurm_suite", "testsuite/harness",
               "testsuite/fixtures/parity.json", "testsuite/apiserver",
               "etc/rbac.yaml", "etc/rbac-node-discovery.yaml")
# Slurm's programs a cluster of the installed release runs from PATH.
SLURM_PROGRAMS = ("slurmctld", "slurmd", "slurmstepd", "sbatch", "srun", "salloc", "scontrol", "squeue",
                  "sinfo", "scancel", "sacct", "sacctmgr", "sattach", "sbcast", "sstat", "sprio", "sshare",
                  "sdiag", "strigger", "sreport", "scrontab")
# Variables the commands read (SLURM_CONF and SLURM_TESTSUITE_CONF are set per run).
ENV_PREFIXES = ("SLURM_", "SALLOC_", "SBATCH_", "SRUN_", "SQUEUE_", "SINFO_", "SCONTROL_", "SCANCEL_",
                "SACCT", "SSTAT_")
ENV_SET_PER_RUN = ("SLURM_CONF", "SLURM_TESTSUITE_CONF")


def root() -> Path:
    return slurm_release.cache_dir() / "slurm-suite"


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "1") != "0"


def fresh() -> bool:
    return os.environ.get(FRESH_ENV, "0") not in ("", "0")


# ---- checksums ---------------------------------------------------------------
def file_digest(path) -> str:
    p = Path(path)
    if p.is_symlink():
        return "link:" + os.readlink(p)
    if not p.is_file():
        return "missing"
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() + (" x" if os.access(p, os.X_OK) else "")


def tree_digest(top) -> str:
    """Every file under top, by relative path: its content and executable
    bit, or a symlink's target ("missing" when top is not there; compiled
    Python is left out)."""
    top = Path(top)
    if top.is_file() or top.is_symlink():
        return file_digest(top)
    if not top.is_dir():
        return "missing"
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        for name in list(dirnames):
            if name == "__pycache__":
                dirnames.remove(name)
            elif (d / name).is_symlink():  # os.walk does not follow it: its target is what counts
                dirnames.remove(name)
                filenames.append(name)
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".pyc"):
                continue
            rel = (d / name).relative_to(top).as_posix()
            h.update(f"{rel}\0{file_digest(d / name)}\n".encode())
    return h.hexdigest()


def _packages() -> list:
    """Installed Debian packages of Slurm, expect and Tcl, with versions."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package} ${Version} ${Architecture}\n"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ["no dpkg-query"]
    out_lines = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].startswith("i") and (
                "slurm" in parts[1] or parts[1] == "expect" or parts[1].startswith("tcl")):
            out_lines.append(" ".join(parts[1:]))
    return sorted(out_lines)


def build_identity(release) -> dict:
    """The Slurm build a cluster of `release` runs: a private build's stamp
    (version, tarball checksum, configure line; not how long it took) and
    the content of its bin, sbin and lib; for the installed release the
    programs on PATH, the plugin directory and libslurm."""
    if release.private:
        stamp = release.dir / "stamp"
        lines = stamp.read_text().splitlines() if stamp.is_file() else ["no stamp"]
        return {"prefix": str(release.prefix),
                "stamp": [line for line in lines if not line.startswith("seconds ")],
                "files": {d: tree_digest(release.prefix / d) for d in ("bin", "sbin", "lib")}}
    path = os.environ.get("PATH", "") + ":/usr/sbin"
    progs = {}
    for name in SLURM_PROGRAMS:
        found = shutil.which(name, path=path)
        progs[name] = f"{os.path.realpath(found)} {file_digest(os.path.realpath(found))}" if found else "missing"
    plugin_dir = cluster_mod._installed_plugin_dir()
    return {"programs": progs, "plugin_dir": f"{plugin_dir} {tree_digest(plugin_dir)}",
            "libslurm": {p.name: file_digest(p) for p in sorted(plugin_dir.parent.glob("libslurm*.so*"))}}


def source_identity(src: Path) -> dict:
    """The Slurm source whose testsuite/expect runs (copied whole into each
    run) and which the tests' globals.local names as build and source
    directory (headers and config.h for the programs some tests compile)."""
    src = Path(src)
    return {"path": str(src), "expect": tree_digest(src / "testsuite" / "expect"),
            "META": file_digest(src / "META"), "config.h": file_digest(src / "config.h"),
            "slurm/": tree_digest(src / "slurm")}


def plugin_identity(plugin: Path) -> dict:
    """What a cons_tres cluster that loads the plugin (the installed
    release's) has of this project's build: the plugin and the fixture
    generator that seeds its test API server."""
    generator = None
    for d in build_dirs_of(plugin):
        if (Path(d) / cluster_mod.GENERATOR).is_file():
            generator = Path(d) / cluster_mod.GENERATOR
            break
    if generator is None:
        try:
            generator = cluster_mod.find_built(cluster_mod.GENERATOR, "the fixture generator")
        except cluster_mod.ClusterError:
            generator = None
    # a libtool wrapper script runs the program in .libs/
    gen = f"{file_digest(generator)} {file_digest(generator.parent / '.libs' / generator.name)}" \
        if generator else "missing"
    return {"plugin": file_digest(os.path.realpath(plugin)), "generator": gen}


def _tools() -> dict:
    try:
        expect = subprocess.run(["expect", "-v"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        expect = "missing"
    return {"expect": expect, "python": sys.version.split()[0]}


def key_inputs(release, src: Path, patch: Path, tests: list, timeout: float, plugin=None,
               top: Path = TOP) -> dict:
    """Everything that decides cons_tres's results in this suite. `release`:
    the slurm_release.Release the clusters run; `src`: the source tree whose
    testsuite/expect runs; `patch`: the patch applied to its globals;
    `plugin`: the plugin file, when cons_tres's cluster loads it."""
    loads = cluster_mod.loads_plugin("cons_tres", release)
    return {
        "format": FORMAT,
        "slurm": release.version,
        "build": build_identity(release),
        "source": source_identity(src),
        "patch": f"{Path(patch).name} {file_digest(patch)}",
        "tests": list(tests),
        "timeout": float(timeout),
        "suite": {rel: tree_digest(top / rel) for rel in SUITE_FILES},
        "plugin": plugin_identity(Path(plugin)) if loads and plugin else ("loaded, unknown" if loads else "not loaded"),
        "packages": _packages(),
        "tools": _tools(),
        "env": {k: v for k, v in sorted(os.environ.items())
                if k.startswith(ENV_PREFIXES) and k not in ENV_SET_PER_RUN},
    }


def key_of(inputs: dict) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:24]


# ---- entries -----------------------------------------------------------------
def result_to_json(r: TestResult) -> dict:
    return dataclasses.asdict(r)


def result_from_json(d: dict) -> TestResult:
    jobs = [Job(**{**j, "per_node": {n: (list(c), list(g)) for n, (c, g) in j["per_node"].items()}})
            for j in d["jobs"]]
    return TestResult(**{**d, "jobs": jobs, "log_allocs": [tuple(x) for x in d["log_allocs"]],
                         "log_events": [tuple(x) for x in d["log_events"]]})


def entry_path(version: str, key: str) -> Path:
    return root() / f"cons_tres-{version}-{key}.json"


class CachedRun:
    """cons_tres's side from the cache: what the comparison reads of a
    runner.SuiteRun (results in job order, the fixture, elapsed)."""
    select = "cons_tres"
    cached = True

    def __init__(self, key: str, path: Path, entry: dict, fx):
        self.key = key
        self.path = path
        self.results = {t: result_from_json(r) for t, r in entry["results"].items()}
        self.elapsed = entry["elapsed"]
        self.run_dir = entry["run_dir"]
        self.created = entry["created"]
        self.fx = fx
        self.warnings = []

    def down(self):
        pass

    def to_json(self) -> dict:
        return results_json(self.results)


def load(version: str, key: str, tests: list, fx):
    """(CachedRun or None, why not)."""
    path = entry_path(version, key)
    try:
        entry = json.loads(path.read_text())
    except FileNotFoundError:
        return None, "no entry"
    except (OSError, ValueError) as e:
        return None, f"unreadable entry {path}: {e}"
    if entry.get("format") != FORMAT or entry.get("key") != key or entry.get("tests") != list(tests) \
            or set(entry.get("results", {})) != set(tests):
        return None, f"entry {path} does not match this run"
    try:
        run = CachedRun(key, path, entry, fx)
    except (KeyError, TypeError, ValueError) as e:
        return None, f"entry {path} does not parse: {e}"
    try:
        os.utime(path)  # most recently used: pruned last
    except OSError:
        pass
    return run, ""


def store(version: str, key: str, inputs: dict, tests: list, results: dict, elapsed: float, run_dir) -> Path:
    """Write the entry atomically (a temporary file in the same directory,
    renamed over), then drop this release's least recently used ones
    beyond KEEP."""
    d = root()
    d.mkdir(parents=True, exist_ok=True)
    entry = {"format": FORMAT, "key": key, "slurm": version, "select": "cons_tres",
             "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "elapsed": round(elapsed, 1),
             "run_dir": str(run_dir), "tests": list(tests),
             "results": {t: result_to_json(results[t]) for t in tests}, "inputs": inputs}
    path = entry_path(version, key)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600: readable as the Slurm builds beside it are
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    prune(version)
    return path


def prune(version: str, keep: int = KEEP):
    entries = sorted(root().glob(f"cons_tres-{version}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in entries[keep:]:
        try:
            p.unlink()
        except OSError:
            pass


def why_not_storable(results: dict, tests: list, warnings: list, clean: set, listed) -> str:
    """Why a fresh cons_tres run may not be cached ("" when it may). Only a
    run that ended normally, where every test either agreed with the plugin
    in its first attempt or differs as a known difference, and where
    cons_tres's result is PASS or listed as failing or skipping under both
    (listed(test, result)): a timing accident under cons_tres (salloc not
    answering, a node still completing) kept in the cache would be compared
    with every later run."""
    missing = [t for t in tests if t not in results]
    if missing:
        return f"not every test ran ({', '.join(missing)})"
    if warnings:
        return f"the cluster warned between tests ({warnings[0]})"
    odd = [f"{t} {results[t].result}" for t in tests
           if results[t].result != "PASS" and (results[t].result == "TIMEOUT" or not listed(t, results[t].result))]
    if odd:
        return "results not listed as failing under both: " + ", ".join(odd)
    differed = [t for t in tests if t not in clean]
    if differed:
        return "differed from the plugin's in the first attempt: " + ", ".join(differed)
    return ""
