# SPDX-License-Identifier: GPL-2.0-or-later
"""A real Slurm cluster on loopback: one slurmctld and one slurmd per fixture
node (multiple-slurmd, config_overrides, auth/none, fake GPU device nodes).

Everything lives in one run directory: configuration, state, logs, spool,
device nodes and the pid files of exactly the processes this harness started.
Ports are picked free at start, so several clusters can run side by side.
"""
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from . import fixture as fixture_mod
from . import k8s_seed
from . import slurm_release
from . import slurmd_pods
from .alignment import format_id_list
from .ports import free_ports
from .wait import wait_for

TOP = Path(__file__).resolve().parents[2]
RUN_MARK = "K8S_CONS_TRES_RUN"
PLUGIN_NAME = "select_k8s_cons_tres.so"
PREP_NAME = "prep_k8s_cons_tres.so"
SELECT_TYPES = ("k8s_cons_tres", "cons_tres")


class ClusterError(RuntimeError):
    pass


def no_clusters():
    """K8S_NO_CLUSTERS=1 (testsuite/run-tests --quick, which runs the tests
    not marked `cluster`): a test that gets here starts Slurm daemons
    although the marker says it does not, so it fails, saying so."""
    if os.environ.get("K8S_NO_CLUSTERS") == "1":
        raise ClusterError("K8S_NO_CLUSTERS=1: this test starts a Slurm cluster but is not marked "
                           "`cluster` (testsuite/integration/conftest.py marks what names Cluster, "
                           "HACluster or the demo, cluster or slurm-suite programs)")


def _installed_plugin_dir() -> Path:
    for d in ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib64/slurm", "/usr/lib/slurm"):
        if (Path(d) / "select_cons_tres.so").exists():
            return Path(d)
    raise ClusterError("cannot find Slurm's PluginDir (no select_cons_tres.so): apt-get install slurm-wlm-basic-plugins")


def find_plugin(release=None) -> Path:
    """The built plugin for `release` (default the installed 22.05.8): for
    the installed release $K8S_CONS_TRES_PLUGIN, else the newest build
    (./build or in-tree), else the installed one; for a private release see
    slurm_release.Release.find_plugin."""
    release = release or slurm_release.get()
    if release.private:
        try:
            found = release.find_plugin()
        except slurm_release.SlurmReleaseError as e:
            raise ClusterError(str(e)) from None
        if not found:
            raise ClusterError(release.plugin_not_built_reason())
        return found
    env = os.environ.get("K8S_CONS_TRES_PLUGIN")
    if env:
        if not Path(env).is_file():
            raise ClusterError(f"K8S_CONS_TRES_PLUGIN={env}: no such file")
        return Path(env)
    built = [p for p in (TOP / "build" / ".libs" / PLUGIN_NAME, TOP / ".libs" / PLUGIN_NAME) if p.is_file()]
    if built:
        return max(built, key=lambda p: p.stat().st_mtime)
    installed = _installed_plugin_dir() / PLUGIN_NAME
    if installed.is_file():
        return installed
    raise ClusterError("select_k8s_cons_tres.so is not built: run ./autogen.sh && ./configure && make "
                       "(or set K8S_CONS_TRES_PLUGIN)")


def find_prep(plugin) -> Path:
    """prep_k8s_cons_tres.so of the build `plugin` comes from (the launch
    gate's PrEp plugin is built beside it); that of ./build when the plugin
    is a copy elsewhere or built with a sanitizer: slurmd loads every PrEp
    plugin, and runs without the sanitizer's runtime preloaded."""
    for d in (Path(plugin).parent, TOP / "build" / ".libs"):
        p = d / PREP_NAME
        if p.is_file() and b"__asan_init" not in p.read_bytes() and b"__tsan_init" not in p.read_bytes():
            return p
    raise ClusterError(f"{PREP_NAME} is not built beside {plugin}: make prep_k8s_cons_tres.la there "
                       "(build-aux/build.sh builds it with the plugin)")


def loads_plugin(select: str, release) -> bool:
    """Whether a cluster of `select` on `release` has our plugin in its
    PluginDir. The installed 22.05 runs with it even under cons_tres (it
    loads every select plugin there, as 24.11 does); a private release
    under cons_tres runs without it."""
    return select == "k8s_cons_tres" or not release.private


def find_built(rel: str, what: str) -> Path:
    """A program built by make (newest of ./build and in-tree)."""
    built = [p for p in (TOP / "build" / rel, TOP / rel) if p.is_file()]
    if not built:
        raise ClusterError(f"{what} ({rel}) is not built: run build-aux/build.sh")
    return max(built, key=lambda p: p.stat().st_mtime)


def find_inspect() -> Path:
    """k8s-cons-tres-inspect of the build the plugin comes from:
    $K8S_CONS_TRES_BUILDDIR, the build holding $K8S_CONS_TRES_PLUGIN, the newest of
    ./build and in-tree, else the installed one."""
    rel = "tools/k8s-cons-tres-inspect"
    dirs = [os.environ.get("K8S_CONS_TRES_BUILDDIR", "")]
    plugin = os.environ.get("K8S_CONS_TRES_PLUGIN")
    if plugin and Path(plugin).parent.name == ".libs":
        dirs.append(str(Path(plugin).parent.parent))
    for d in dirs:
        if d and (Path(d) / rel).is_file():
            return Path(d) / rel
    try:
        return find_built(rel, "k8s-cons-tres-inspect")
    except ClusterError:
        installed = shutil.which("k8s-cons-tres-inspect")
        if installed:
            return Path(installed)
        raise


def inspect_recorded(slices, claims) -> dict:
    """What the plugin makes of recorded slices, as k8s-cons-tres-inspect --json says."""
    cmd = [str(find_inspect()), "--json", "--slices", *map(str, slices)]
    if claims:
        cmd += ["--claims", *map(str, claims)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise ClusterError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return json.loads(res.stdout)


APISERVER = TOP / "testsuite" / "apiserver" / "k8s_test_apiserver.py"
GENERATOR = "testsuite/fixtures/k8s_cons_tres_fixture_gen"


def rbac_rules(path: Path) -> list:
    """verbs/resources of every Role and ClusterRole in an RBAC manifest; a
    Role's rules hold in its namespace only, as in Kubernetes."""
    rules = []
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") in ("Role", "ClusterRole"):
            scope = {"namespaces": [doc["metadata"]["namespace"]]} if doc["kind"] == "Role" else {}
            rules += [{"verbs": r["verbs"], "resources": r["resources"], **scope} for r in doc["rules"]]
    return rules


def proc_env(pid: int) -> dict:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        k, _, v = item.partition(b"=")
        env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _stepd_of(pid: int, mark: str) -> bool:
    """A slurmstepd of this run. Its process title (slurmstepd: [1.batch])
    overwrites the environment that carried the run mark, so it is told by
    its open files: its node's log and spool are under the run directory.
    Without this, a stepd left retrying to reach a stopped slurmctld lives on
    (19 of them after one CI run) and may reach the next cluster on its port."""
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != "slurmstepd":
            return False
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for f in fds:
        try:
            if os.readlink(f).startswith(mark + "/"):
                return True
        except OSError:  # closed meanwhile
            pass
    return False


def marked_processes(run_dir: Path) -> list:
    """Pids of live processes started under this run (by us or by our slurmd)."""
    mark = str(run_dir)
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            if proc_env(int(p.name)).get(RUN_MARK) == mark or _stepd_of(int(p.name), mark):
                try:
                    if (p / "stat").read_text().split(")")[-1].split()[0] != "Z":
                        pids.append(int(p.name))
                except OSError:
                    pass
    return pids


class Cluster:
    def __init__(self, run_dir):
        self.run_dir = Path(run_dir).resolve()
        # Extra environment for every process of this cluster: the daemons,
        # the client commands run() starts and, through them, slurmstepd and
        # the jobs. Set it before up(). For a sanitizer-built plugin this
        # carries LD_PRELOAD of the runtime, which every process that loads
        # it needs: slurmctld, srun, sinfo and scontrol all load the select
        # plugin (see testsuite/integration/test_asan_plugin.py).
        self.extra_env = {}
        # A plugin file slurmd (and so its slurmstepd) loads instead of the
        # one in PluginDir, bind-mounted over it in slurmd's own mount
        # namespace; such a slurmd runs without extra_env, which is for the
        # plugin it does not load. Set before up(). slurm.conf stays one
        # file: no config hash mismatch.
        self.slurmd_plugin = None
        # Address the test API server listens on (its certificate names it
        # too). harness/ha.py sets a veth address so that a backup
        # slurmctld in another network namespace reaches the server.
        self.apiserver_host = "127.0.0.1"
        # The server's stand-in kubelet + DRA drivers per node (holder pods
        # run, devices are prepared): see testsuite/harness/node_agent.py.
        self.node_agents = True
        # The version the server serves DeviceTaintRules at ("v1beta2",
        # "v1alpha3") or "off". Set before up().
        self.device_taint_rules = "v1beta2"
        # Kubernetes nodes as Slurm EXTERNAL nodes discovered by the plugin
        # (Slurm 25.05+): no slurmd and no slurm.conf line for them. Set
        # before up(), or up(external=True).
        self.external = False
        # The Kubernetes nodes' slurmds run in the shipped DaemonSet's pods,
        # which the server's node agents run (harness/slurmd_pods.py). Set
        # before up().
        self.slurmd_in_pods = False
        # Slurm's topology plugin ("tree", "block" on 23.11+, None): the
        # topology.conf lines are what `k8s-cons-tres-inspect --topology`
        # makes of the Nodes' labels by the config's TopologyFrom=, as an
        # admin installs them. Set before up().
        self.topology = None
        # More k8s_cons_tres.conf lines, set before up().
        self.plugin_extra = ""
        # KubernetesNodes= instead of the fixture's Kubernetes nodes (None).
        self.kubernetes_nodes = None
        # The test API server's own latency (--delay-ms, --jitter-ms): a
        # real kube-apiserver takes 5-20 ms a write. Set before up().
        self.api_delay_ms = 0
        self.api_jitter_ms = 0
        # The plugin's token gets etc/rbac-node-discovery.yaml's rules too
        # (Nodes, slurm-bridge's pods): None grants them where the config
        # needs them (NodeDiscovery=external, ExternalJobClaims=bridge), as
        # an admin would; False never, True always.
        self.grant_discovery = None
        self._release = None  # see the release property

    @property
    def release(self) -> slurm_release.Release:
        """The Slurm release this cluster runs: the one given to up(), else
        the one cluster.json records, else the installed one."""
        if self._release is None:
            recorded = self.state().get("slurm") if self.state_file.exists() else None
            self._release = slurm_release.get(recorded)
        return self._release

    # ---- paths ------------------------------------------------------------
    @property
    def slurm_conf(self) -> Path:
        return self.run_dir / "etc" / "slurm.conf"

    @property
    def state_file(self) -> Path:
        return self.run_dir / "cluster.json"

    def state(self) -> dict:
        return json.loads(self.state_file.read_text())

    def env(self, extra: bool = True) -> dict:
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.slurm_conf)
        env[RUN_MARK] = str(self.run_dir)
        kube = self.run_dir / "apiserver" / "kubeconfig"
        if kube.exists():
            env["KUBECONFIG"] = str(kube)
        if extra:
            env.update(self.extra_env)
        return self.release.env(env)

    def run(self, *cmd, check=True, timeout=60, **kw) -> subprocess.CompletedProcess:
        # in the run directory: a batch job's default slurm-N.out lands
        # there, not in the checkout
        kw.setdefault("cwd", self.run_dir)
        res = subprocess.run(list(cmd), env=self.env(), capture_output=True, text=True,
                             timeout=timeout, **kw)
        if check and res.returncode != 0:
            raise ClusterError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
        return res

    # ---- configuration ------------------------------------------------------
    def base_config(self, select: str, plugin, ctld_port: int) -> list:
        """slurm.conf's lines but for nodes and partitions; makes the run
        directory's parts and puts the plugin (if any) into its PluginDir."""
        for d in ("etc", "state", "log", "run", "spool", "plugins", "dev"):
            (self.run_dir / d).mkdir(parents=True, exist_ok=True)
        # Our plugin first, then Slurm's own plugins.
        link = self.run_dir / "plugins" / PLUGIN_NAME
        prep_link = self.run_dir / "plugins" / PREP_NAME
        for old in (link, prep_link):
            if old.exists() or old.is_symlink():
                old.unlink()
        if plugin:  # none for a release our plugin cannot load into
            place_file(plugin, link)
        # The launch gate's PrEp plugin, built beside the select plugin: in
        # PluginDir for slurmctld and every slurmd, as an admin installs it.
        prep = find_prep(plugin) if plugin and select == "k8s_cons_tres" else None
        if prep:
            place_file(prep, prep_link)
        plugin_dir = f"{self.run_dir / 'plugins'}:{_installed_plugin_dir()}"
        cluster_name = "k8s" + self.run_dir.name.replace("_", "").replace("-", "")[-8:].lower()
        return [
            f"ClusterName={cluster_name}",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            "AuthType=auth/none",
            "CredType=cred/none",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"PluginDir={plugin_dir}",
            f"StateSaveLocation={self.run_dir / 'state'}",
            f"SlurmdSpoolDir={self.run_dir / 'spool'}/%n",
            f"SlurmctldPidFile={self.run_dir / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.run_dir / 'run'}/slurmd.%n.pid",
            f"SlurmctldLogFile={self.run_dir / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={self.run_dir / 'log'}/slurmd.%n.log",
            "SlurmctldDebug=debug",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=permit_job_expansion",
            f"SelectType=select/{select}",
            "SelectTypeParameters=CR_Core_Memory",
            "DefMemPerCPU=10",
            "GresTypes=gpu",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "MinJobAge=600",
            "MessageTimeout=20",
            "SlurmdTimeout=120",
            "InactiveLimit=0",
            "KillWait=5",
            "TreeWidth=65533",
            "MaxArraySize=20001",
            "LaunchParameters=use_interactive_step",
        ] + (["PrEpPlugins=script,k8s_cons_tres"] if prep else []) + \
            ([f"TopologyPlugin=topology/{self.topology}"] if self.topology else [])

    def _write_config(self, fx, select: str, plugin: Path, ports: list):
        etc = self.run_dir / "etc"
        ctld_port, node_ports = ports[0], ports[1:]
        lines = self.base_config(select, plugin, ctld_port)
        gres = []
        if self.external:
            # Kubernetes nodes come from node discovery (NodeDiscovery=external):
            # no NodeName line, no slurmd; a NodeSet by feature takes them in.
            lines.append(f"MaxNodeCount={len(fx.nodes) + 16}")
        for fnode, node, port in zip(fx.nodes, (n.slurm for n in fx.nodes), node_ports):
            if self.discovered(fnode):
                continue
            gpu_part = f" Gres=gpu:{fx.gpu_type}:{len(node.gpus)}" if node.gpus else ""
            lines.append(
                f"NodeName={node.name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} "
                f"Sockets={node.sockets} CoresPerSocket={node.cores_per_socket} "
                f"ThreadsPerCore={node.threads_per_core} RealMemory=64000{gpu_part} State=UNKNOWN")
            (self.run_dir / "spool" / node.name).mkdir(parents=True, exist_ok=True)
            devdir = self.run_dir / "dev" / node.name
            devdir.mkdir(parents=True, exist_ok=True)
            for i, gpu in enumerate(node.gpus):
                dev = devdir / f"nvidia{i}"
                if not dev.exists():
                    # slurmd insists on a character device; /dev/null's numbers do.
                    os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))
                cores = node.cores_of_numa(gpu.numa)  # none: affinity unknown (recorded slices)
                gres.append(f"NodeName={node.name} Name=gpu Type={fx.gpu_type} File={dev}" +
                            (f" Cores={format_id_list(cores)}" if cores else ""))
        names = ",".join(n.name for n in fx.nodes)
        if self.external:
            lines.append("NodeSet=k8s Feature=k8s")
            names = ",".join([n.name for n in fx.nodes if not self.discovered(n)] + ["k8s"])
        lines.append(f"PartitionName=main Nodes={names} Default=YES MaxTime=INFINITE State=UP")
        lines, gres = self.release.configs(lines, gres)
        (etc / "slurm.conf").write_text("\n".join(lines) + "\n")
        (etc / "gres.conf").write_text("\n".join(gres) + "\n")

    # ---- processes ----------------------------------------------------------
    def _spawn(self, name: str, cmd: list, env=None) -> int:
        if name.startswith("slurm"):
            no_clusters()
        log = open(self.run_dir / "log" / f"{name}.out", "ab")
        proc = subprocess.Popen(cmd, env=env or self.env(), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        (self.run_dir / "pids").mkdir(exist_ok=True)
        (self.run_dir / "pids" / f"{name}.pid").write_text(f"{proc.pid}\n")
        return proc.pid

    def _pids(self) -> dict:
        out = {}
        d = self.run_dir / "pids"
        if d.is_dir():
            for f in sorted(d.glob("*.pid")):
                try:
                    out[f.stem] = int(f.read_text().strip())
                except ValueError:
                    pass
        return out

    def _alive_ours(self, pid: int) -> bool:
        return proc_env(pid).get(RUN_MARK) == str(self.run_dir)

    def start_slurmctld(self):
        self._spawn("slurmctld", [self.release.daemon("slurmctld"), "-D"])
        wait_for(lambda: self.run("scontrol", "ping", check=False, timeout=20).stdout.find("UP") >= 0,
                 timeout=60, what="slurmctld to answer ping",
                 on_timeout=lambda: self.tail("log/slurmctld.log"))

    def stop_slurmctld(self, sig=signal.SIGTERM):
        pid = self._pids().get("slurmctld")
        if pid and self._alive_ours(pid):
            os.kill(pid, sig)
            wait_for(lambda: not self._alive_ours(pid), timeout=30, what="slurmctld to exit")

    def start_slurmd(self, node: str):
        cmd = [self.release.daemon("slurmd"), "-D", "-N", node]
        if not self.slurmd_plugin:
            self._spawn(f"slurmd.{node}", cmd)
            return
        # unshare and sh exec: the pid recorded is slurmd's own.
        self._spawn(f"slurmd.{node}", [
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh",
            str(self.slurmd_plugin), str(self.run_dir / "plugins" / PLUGIN_NAME), *cmd],
            env=self.env(extra=False))

    @property
    def apiserver_dir(self) -> Path:
        return self.run_dir / "apiserver"

    def start_apiserver(self, fx):
        """The test Kubernetes API server, seeded from the fixture, and the
        plugin's configuration pointing at it."""
        if isinstance(fx, fixture_mod.Recorded):
            items = list(fx.seed_items)
        else:
            items = k8s_seed.seed_objects(fx, str(find_built(GENERATOR, "the fixture generator")))
        self.spawn_apiserver(items)
        kubeconfig = self.least_privilege_kubeconfig()
        kube_nodes = [n.name for n in fx.nodes if n.kubernetes]
        base = (
            f"Kubeconfig={kubeconfig}\n"
            "ClaimNamespace=slurm\n"
            f"KubernetesNodes={self.kubernetes_nodes or (','.join(kube_nodes) if len(kube_nodes) < len(fx.nodes) else 'ALL')}\n"
            "StaleAfter=10\n"
            "DebugLevel=debug\n" +
            ("NodeDiscovery=external\nNodeFeatures=k8s\n" if self.external else "") +
            (f"NodeSelector={fx.node_selector}\n" if self.external and fx.node_selector else ""))
        # plugin_extra (--conf) replaces a key the harness sets, not repeats it
        extra = {line.partition("=")[0].strip().lower() for line in self.plugin_extra.splitlines()}
        base = "".join(line + "\n" for line in base.splitlines()
                       if line.partition("=")[0].strip().lower() not in extra)
        self.plugin_conf.write_text(base + self.plugin_extra)

    def spawn_apiserver(self, items: list, *args: str, timeout: float = 60, nice: int = 0):
        """The test API server, seeded with `items`, with more of its
        options (`args`), at niceness `nice`; returns once it listens."""
        seed = self.run_dir / "etc" / "k8s-seed.json"
        seed.write_text(json.dumps({"items": items}))
        info = self.apiserver_dir / "server.json"
        self._spawn("apiserver", [*(["nice", "-n", str(nice)] if nice else []),
                                  "/usr/bin/python3", str(APISERVER), "--dir", str(self.apiserver_dir),
                                  "--host", self.apiserver_host, "--port", "0", "--seed", str(seed),
                                  *(["--node-agents"] if self.node_agents else []),
                                  "--device-taint-rules", self.device_taint_rules,
                                  *(slurmd_pods.server_args(self, RUN_MARK) if self.slurmd_in_pods else []),
                                  *(["--delay-ms", str(self.api_delay_ms)] if self.api_delay_ms else []),
                                  *(["--jitter-ms", str(self.api_jitter_ms)] if self.api_jitter_ms else []),
                                  *args])
        wait_for(info.exists, timeout=timeout, what="the test API server to listen",
                 on_timeout=lambda: self.tail("log/apiserver.out"))

    def least_privilege_kubeconfig(self) -> Path:
        """The plugin talks to the API server with exactly the rights that
        etc/rbac.yaml grants (and etc/rbac-node-discovery.yaml, see
        grant_discovery), through a token file (as a projected token)."""
        token = secrets.token_hex(24)
        self._plugin_token = token
        grant = self.grant_discovery
        if grant is None:
            grant = self.external or "ExternalJobClaims=bridge" in self.plugin_extra
        self.grant_plugin_rules(discovery=grant)
        token_file = self.run_dir / "etc" / "plugin.token"
        token_file.write_text(token)
        token_file.chmod(0o600)
        path = self.run_dir / "etc" / "plugin.kubeconfig"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "slurm",
            "clusters": [{"name": "ktas", "cluster": {
                "server": self.apiserver()["url"],
                "certificate-authority": str(self.apiserver_dir / "ca.crt")}}],
            "users": [{"name": "slurm", "user": {"tokenFile": str(token_file)}}],
            "contexts": [{"name": "slurm", "context": {"cluster": "ktas", "user": "slurm",
                                                       "namespace": "slurm"}}]}))
        return path

    def grant_plugin_rules(self, discovery: bool):
        """(Re)sets what the plugin's token may do, as an admin applying or
        removing etc/rbac-node-discovery.yaml would."""
        rules = rbac_rules(TOP / "etc" / "rbac.yaml")
        if discovery:
            rules += rbac_rules(TOP / "etc" / "rbac-node-discovery.yaml")
        control = self.apiserver()["controlUrl"] + "/_test/tokens"
        body = json.dumps({"token": self._plugin_token,
                           "user": "system:serviceaccount:slurm:slurm-k8s-cons-tres",
                           "rules": rules}).encode()
        req = urllib.request.Request(control, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()

    def apiserver(self) -> dict:
        return json.loads((self.apiserver_dir / "server.json").read_text())

    def prepare(self, fixture_path: str, select: str = "k8s_cons_tres", plugin=None,
                slices=None, claims=None, slurm=None):
        """Write the run directory's configuration; start nothing. With
        `slices` (recorded files) the nodes are what k8s-cons-tres-inspect
        derives from them, and the fixture is not read. `slurm`: the release
        to run (slurm_release.RELEASES; default the installed one)."""
        if select not in SELECT_TYPES:
            raise ClusterError(f"--select must be one of {SELECT_TYPES}")
        no_clusters()
        try:
            self._release = slurm_release.get(slurm)
            self._release.check_select(select)
            if self.external:
                self._release.check_external()
            self._release.require_built()
        except slurm_release.SlurmReleaseError as e:
            raise ClusterError(str(e)) from None
        if slices:
            fx = fixture_mod.from_inspect(inspect_recorded(slices, claims or []),
                                          k8s_seed.seed_recorded(slices, claims or []))
            source = {"slices": [str(Path(f).resolve()) for f in slices],
                      "claims": [str(Path(f).resolve()) for f in claims or []]}
        else:
            fx = fixture_mod.load(fixture_path)
            source = {"fixture": str(Path(fixture_path).resolve())}
        if loads_plugin(select, self.release):
            plugin = Path(plugin) if plugin else find_plugin(self.release)
            built = slurm_release.built_for(plugin)
            if built and built != self.release.version:
                raise ClusterError(f"{plugin} is built for Slurm {built}, not {self.release.version}: "
                                   f"a select plugin loads only into its own release")
        else:
            plugin = None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(1 + len(fx.nodes))
        self._write_config(fx, select, plugin, ports)
        self.state_file.write_text(json.dumps({
            **source, "select": select, "slurm": self.release.version,
            "plugin": str(plugin) if plugin else None, "nodes": [n.name for n in fx.nodes],
            "slurmctld_port": ports[0]}, indent=1))
        return fx

    def discovered(self, fnode) -> bool:
        """An EXTERNAL node node discovery makes: no slurm.conf line, no slurmd."""
        return self.external and fnode.kubernetes and not getattr(fnode, "slurmd", False)

    def in_pod(self, fnode) -> bool:
        """A node whose slurmd runs in the DaemonSet's pod."""
        return self.slurmd_in_pods and fnode.kubernetes and not self.discovered(fnode)

    @property
    def plugin_conf(self) -> Path:
        return self.run_dir / "etc" / "k8s_cons_tres.conf"

    def up(self, fixture_path: str, select: str = "k8s_cons_tres", plugin=None, kubernetes=True,
           slices=None, claims=None, slurm=None, external=None):
        if external is not None:
            self.external = external
        if self.external and (select != "k8s_cons_tres" or not kubernetes):
            raise ClusterError("--external needs the plugin and the test API server: its nodes are discovered")
        if self.slurmd_in_pods and not (kubernetes and self.node_agents):
            raise ClusterError("--slurmd-in-pods needs the test API server's node agents: they run the pods")
        fx = self.prepare(fixture_path, select, plugin, slices, claims, slurm)
        try:
            if kubernetes:
                self.start_apiserver(fx)
            if self.topology:
                self.write_topology()
            self.start_slurmctld()
            in_pods = [n.name for n in fx.nodes if self.in_pod(n)]
            if in_pods:
                slurmd_pods.deploy(self, in_pods)
            for node in fx.nodes:
                if not self.discovered(node) and not self.in_pod(node):
                    self.start_slurmd(node.name)
            self.wait_nodes_idle([n.name for n in fx.nodes])
        except Exception:
            self.down()
            raise

    def write_topology(self):
        """topology.conf from the inspect command's lines for this plugin
        configuration (its TopologyFrom=), read with the admin's rights."""
        res = subprocess.run([str(find_inspect()), "--topology", "--config", str(self.plugin_conf),
                              "--kubeconfig", str(self.apiserver_dir / "kubeconfig")],
                             capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            raise ClusterError(f"k8s-cons-tres-inspect --topology failed: {res.stderr.strip()}")
        key = {"tree": "SwitchName=", "block": "BlockName="}[self.topology]
        lines = [line for line in res.stdout.splitlines() if line.startswith(key)]
        (self.run_dir / "etc" / "topology.conf").write_text("\n".join(lines) + "\n")
        (self.run_dir / "log" / "inspect-topology.err").write_text(res.stderr)

    def wait_k8s_in_sync(self, timeout=60):
        """Until the plugin's last word on its view is that it is in sync
        (before that, and while stale, Kubernetes nodes take no new jobs
        and slurmctld refuses core reservations on them)."""
        log = self.run_dir / "log" / "slurmctld.log"

        def in_sync():
            try:
                text = log.read_text(errors="replace")
            except OSError:
                return False
            return text.rfind("view in sync with the Kubernetes API server") > text.rfind("view out of sync: ")
        wait_for(in_sync, timeout=timeout, what="the plugin's view to be in sync",
                 on_timeout=lambda: self.tail("log/slurmctld.log"))

    def node_states(self) -> dict:
        res = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False, timeout=20)
        states = {}
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def wait_nodes_idle(self, nodes, timeout=90):
        def ready():
            st = self.node_states()
            # registered: idle or busy, or already drained by the plugin
            # (a node whose slices disagree with slurm.conf)
            return all(st.get(n, "").rstrip("*") in ("idle", "mix", "alloc", "drain", "drng")
                       for n in nodes)
        wait_for(ready, timeout=timeout, what=f"nodes {','.join(nodes)} to become idle",
                 on_timeout=lambda: f"sinfo: {self.node_states()}\n" + self.tail("log/slurmctld.log"))

    def down(self, timeout=30):
        pids = self._pids()
        deadline = time.monotonic() + timeout
        # slurmds first, while slurmctld still answers: a batch step that
        # was just cancelled reports its end and exits. Stopped together,
        # the step retries that report every 15 s and its slurmd waits for
        # it (the whole 30 s here after a test's final scancel).
        slurmds = [p for name, p in pids.items() if name.startswith("slurmd.")] + \
            [p for p in marked_processes(self.run_dir) if _comm(p) == "slurmd"]   # in pods
        for group, until in ((slurmds, min(deadline, time.monotonic() + 10)), (list(pids.values()), deadline)):
            for pid in group:
                if self._alive_ours(pid):
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
            while time.monotonic() < until and any(self._alive_ours(p) for p in group):
                time.sleep(0.1)
        # Whatever is left of this run (slurmstepd, job processes, a stuck
        # daemon) carries our run mark; nothing else is touched.
        for pid in marked_processes(self.run_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: not marked_processes(self.run_dir), timeout=15,
                 what="processes of this run to exit")
        for pid in pids.values():
            try:  # reap what we started ourselves (when up ran in this process)
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        d = self.run_dir / "pids"
        if d.is_dir():
            for f in d.glob("*.pid"):
                f.unlink()

    def status(self) -> dict:
        st = self.state() if self.state_file.exists() else {}
        procs = {name: (pid, self._alive_ours(pid)) for name, pid in self._pids().items()}
        return {"run_dir": str(self.run_dir), "config": st, "processes": procs,
                "nodes": self.node_states() if procs.get("slurmctld", (0, False))[1] else {}}

    def exports(self) -> str:
        env = self.env()
        out = [f"export SLURM_CONF={env['SLURM_CONF']}", f"export {RUN_MARK}={self.run_dir}",
               self.release.export_path()]
        if "KUBECONFIG" in env:
            out.append(f"export KUBECONFIG={env['KUBECONFIG']}")
        return "\n".join(out)

    def tail(self, rel: str, lines: int = 40) -> str:
        p = self.run_dir / rel
        try:
            return f"--- {p} ---\n" + "\n".join(p.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return f"--- {p}: not there ---"


@contextlib.contextmanager
def running(fixture_path, **settings):
    """A cluster of the fixture, up with these Cluster attributes set
    (slurmd_in_pods=True, topology="tree", plugin_extra=...), and down
    again afterwards."""
    c = Cluster(new_run_dir("k8s-cons-tres-test-"))
    for key, value in settings.items():
        if not hasattr(c, key):
            raise AttributeError(f"Cluster has no setting {key!r}")
        setattr(c, key, value)
    try:
        c.up(str(fixture_path))
        yield c
    finally:
        c.down()


# Every run directory this process made, so that a passing test session can
# take them away again: CI runs on a machine that keeps its /tmp, and a few
# hundred clusters a run once filled its disk.
_RUN_DIRS: list = []


def new_run_dir(prefix="k8s-cons-tres-", dir=None) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    _RUN_DIRS.append(d)
    return d


def remove_run_dirs() -> int:
    """Remove this process's run directories that no process runs in any
    more; returns how many went. K8S_KEEP_RUN_DIRS=1 keeps them all."""
    gone = 0
    if os.environ.get("K8S_KEEP_RUN_DIRS") == "1":
        return gone
    while _RUN_DIRS:
        d = _RUN_DIRS.pop()
        if d.exists() and not marked_processes(d.resolve()):
            shutil.rmtree(d, ignore_errors=True)
            gone += 1
    return gone


def place_file(src, dst):
    """A plugin into a run directory's PluginDir: a hard link where the file
    system allows it (a debug plugin is 50 MB, and a test run makes hundreds
    of clusters), else a copy. Either way a rebuild, which writes a new file,
    leaves a running cluster's plugin alone."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
