# SPDX-License-Identifier: GPL-2.0-or-later
"""Which Slurm release a harness cluster runs, and what differs per release.

22.05.8 is the installed Debian Slurm. The others are private builds that
build-aux/slurm-release.sh caches under <cache>/slurm-VERSION/prefix
(<cache> is $K8S_CONS_TRES_CACHE, else $XDG_CACHE_HOME/k8s-cons-tres, else
~/.cache/k8s-cons-tres). A cluster of such a release runs that prefix's
slurmctld and slurmd, and its commands come first on PATH: a client must
speak its slurmctld's protocol.

The plugin loads into the release it was built for only, and is built for
the releases in PLUGIN_RELEASES (an adapter per ABI family: 22.05,
23.11-24.11 and 25.05-26.05). Which build a cluster of a private release loads
(Release.find_plugin):
  $K8S_CONS_TRES_PLUGIN_<VERSION>  (dots as underscores, e.g.
                                    K8S_CONS_TRES_PLUGIN_26_05_3=/src/build-s2605/.libs/select_k8s_cons_tres.so)
  $K8S_CONS_TRES_PLUGIN            when its build directory was configured
                                    for that release
  else the newest build directory of this tree configured for it
  (`mkdir build-slurm-26.05.3 && cd build-slurm-26.05.3 &&
   ../configure --with-slurm=26.05.3 && make`; any build* directory whose
  Makefile says SLURM_VERSION = 26.05.3 counts).

Everything release-specific in the harness lives here; cluster.py only asks.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

from .alignment import format_id_list, parse_id_list

INSTALLED = "22.05.8"
PRIVATE = ("24.11.5", "25.11.7", "26.05.3")  # as `build-aux/slurm-release.sh --list`
RELEASES = (INSTALLED,) + PRIVATE
# Releases with an ABI family adapter in plugin/ (configure refuses others).
PLUGIN_RELEASES = (INSTALLED, "24.11.5", "25.11.7", "26.05.3")
PLUGIN_NAME = "select_k8s_cons_tres.so"
TOP = Path(__file__).resolve().parents[2]


class SlurmReleaseError(RuntimeError):
    pass


def plugin_env_var(version: str) -> str:
    return "K8S_CONS_TRES_PLUGIN_" + version.replace(".", "_")


def built_for(plugin: Path):
    """The Slurm release a plugin build was configured for (SLURM_VERSION in
    the Makefile of the build directory holding .libs/), None if unknown
    (an installed plugin)."""
    plugin = Path(plugin)
    if plugin.parent.name != ".libs":
        return None
    try:
        text = (plugin.parent.parent / "Makefile").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"^SLURM_VERSION = (\S+)$", text, re.M)
    return m.group(1) if m else None


def required(version: str) -> bool:
    """Whether a test that needs `version` fails, not skips, when it is not
    built: $K8S_REQUIRE_SLURM_RELEASES is 1 (every release: CI, and
    run-tests once it built them all) or lists it (space or comma
    separated: the releases run-tests built when it could not have them
    all)."""
    want = os.environ.get("K8S_REQUIRE_SLURM_RELEASES", "")
    return want == "1" or version in want.replace(",", " ").split()


def cache_dir() -> Path:
    """Where build-aux/slurm-release.sh caches its builds (the same rule)."""
    if os.environ.get("K8S_CONS_TRES_CACHE"):
        return Path(os.environ["K8S_CONS_TRES_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "k8s-cons-tres"


class Release:
    def __init__(self, version: str):
        if version not in RELEASES:
            raise SlurmReleaseError(f"unknown Slurm release {version!r}: one of {', '.join(RELEASES)}")
        self.version = version
        self.private = version != INSTALLED
        self.dir = cache_dir() / f"slurm-{version}" if self.private else None
        self.prefix = self.dir / "prefix" if self.private else Path("/usr")

    def __repr__(self):
        return f"Release({self.version!r})"

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "bin"

    @property
    def plugin_dir(self) -> Path:
        return self.prefix / "lib" / "slurm"

    @property
    def loads_our_plugin(self) -> bool:
        """select_k8s_cons_tres.so can be built for this release."""
        return self.version in PLUGIN_RELEASES

    def find_plugin(self):
        """This private release's plugin build (see the module's doc), or
        None; plugin_not_built_reason() says what to do then."""
        env = os.environ.get(plugin_env_var(self.version))
        if env:
            if not Path(env).is_file():
                raise SlurmReleaseError(f"{plugin_env_var(self.version)}={env}: no such file")
            return Path(env)
        env = os.environ.get("K8S_CONS_TRES_PLUGIN")
        if env and Path(env).is_file() and built_for(Path(env)) == self.version:
            return Path(env)
        builds = [p for p in TOP.glob(f"build*/.libs/{PLUGIN_NAME}") if built_for(p) == self.version]
        return max(builds, key=lambda p: p.stat().st_mtime) if builds else None

    def plugin_not_built_reason(self) -> str:
        if not self.loads_our_plugin:
            return (f"select/k8s_cons_tres has no adapter for Slurm {self.version}'s ABI family "
                    f"(built for {', '.join(PLUGIN_RELEASES)})")
        return (f"select_k8s_cons_tres.so is not built for Slurm {self.version}: mkdir "
                f"build-slurm-{self.version} && cd build-slurm-{self.version} && ../configure "
                f"--with-slurm={self.version} && make -j2 (or set {plugin_env_var(self.version)})")

    def built(self) -> bool:
        if not self.private:
            return shutil.which("slurmctld", path=os.environ.get("PATH", "") + ":/usr/sbin") is not None
        # The stamp is written last: without it the build did not finish.
        return (self.dir / "stamp").is_file() and (self.prefix / "sbin" / "slurmctld").is_file()

    def not_built_reason(self) -> str:
        if not self.private:
            return "slurmctld is not installed: run build-aux/install-deps.sh"
        missing = self.sources_missing()
        if missing:
            return f"Slurm {self.version} is not built, and its sources are not here: {missing}"
        return (f"Slurm {self.version} is not built: run build-aux/slurm-release.sh {self.version} "
                f"(a few minutes, cached in {self.dir})")

    def sources_missing(self):
        """None when build-aux/slurm-release.sh can build this release here
        (or has), else its message saying how to provide the sources (a
        clone without the vendored tarballs beside it)."""
        if not self.private:
            return None
        res = subprocess.run([str(TOP / "build-aux" / "slurm-release.sh"), "--cache", str(cache_dir()),
                              "--check", self.version], capture_output=True, text=True, timeout=60)
        if res.returncode == 3:
            return " ".join(line.removeprefix("slurm-release: ").strip()
                            for line in res.stderr.splitlines())
        return None

    def require_built(self):
        if not self.built():
            raise SlurmReleaseError(self.not_built_reason())

    def check_select(self, select: str):
        if select != "cons_tres" and not self.loads_our_plugin:
            raise SlurmReleaseError(f"select/{select} cannot load into Slurm {self.version} yet "
                                    f"(the plugin is built for {', '.join(PLUGIN_RELEASES)}): "
                                    "use select/cons_tres")

    def check_external(self):
        """EXTERNAL nodes exist since Slurm 25.05."""
        if tuple(int(x) for x in self.version.split(".")[:2]) < (25, 5):
            raise SlurmReleaseError(f"Slurm {self.version} has no EXTERNAL nodes (25.05 and later): "
                                    "use --slurm 25.11.7 or 26.05.3")

    def daemon(self, name: str) -> str:
        """slurmctld/slurmd: the installed one as found on PATH (as before),
        else the private build's."""
        return str(self.prefix / "sbin" / name) if self.private else name

    def env(self, env: dict) -> dict:
        """The environment of the daemons and commands: a private build's
        bin and sbin first (the installed release leaves PATH alone)."""
        if self.private:
            env["PATH"] = f"{self.bin_dir}:{self.prefix / 'sbin'}:{env.get('PATH', '')}"
        return env

    def export_path(self) -> str:
        return f"export PATH={self.bin_dir}:$PATH"

    def configs(self, slurm_lines: list, gres_lines: list) -> tuple:
        """The harness's slurm.conf and gres.conf lines (written for 22.05.8)
        as this release wants them."""
        if not self.private:
            return slurm_lines, gres_lines
        return self._slurm_conf(slurm_lines), _cores_to_sockets(slurm_lines, gres_lines)

    def _slurm_conf(self, lines: list) -> list:
        out = []
        for line in lines:
            key, _, value = line.partition("=")
            if key == "PluginDir":
                # The run's own directory (our plugin, if any, built for
                # this release) and this release's plugins, never the
                # installed 22.05.8 ones.
                line = f"PluginDir={value.split(':')[0]}:{self.plugin_dir}"
            elif key in _NONE_PLUGINS and value.endswith("/none"):
                # These releases have no such plugin; an absent key means none
                # (read_config.c still maps */none to unset: do not rely on it).
                continue
            out.append(line)
        return out


# Keys whose */none plugin 22.05 ships and 24.11 and later do not
# (auth/none, cred/none and MpiDefault=none are still there).
_NONE_PLUGINS = ("SwitchType", "TaskPlugin", "JobCompType", "AccountingStorageType",
                 "JobAcctGatherType")


def get(version=None) -> Release:
    """The release `version` names (None: $K8S_SLURM_RELEASE, else the
    installed 22.05.8): run-tests runs the whole suite once more under
    K8S_SLURM_RELEASE=26.05.3."""
    return Release(version or os.environ.get("K8S_SLURM_RELEASE") or INSTALLED)


def _cores_to_sockets(slurm_lines: list, gres_lines: list) -> list:
    """gres.conf Cores= widened to whole sockets: in 24.11 and later a GRES whose
    cores do not fill whole sockets puts its node in state INVAL ("doesn't
    match socket boundaries"); 22.05 takes any core list (a NUMA node's)."""
    per_socket = {}
    for line in slurm_lines:
        m = re.match(r"NodeName=(\S+) .*\bCoresPerSocket=(\d+)", line)
        if m:
            per_socket[m.group(1)] = int(m.group(2))
    out = []
    for line in gres_lines:
        node = re.match(r"NodeName=(\S+)", line)
        cores = re.search(r"\bCores=(\S+)", line)
        if node and cores and node.group(1) in per_socket:
            n = per_socket[node.group(1)]
            sockets = {c // n for c in parse_id_list(cores.group(1))}
            whole = [s * n + i for s in sockets for i in range(n)]
            line = line[:cores.start(1)] + format_id_list(whole) + line[cores.end(1):]
        out.append(line)
    return out
