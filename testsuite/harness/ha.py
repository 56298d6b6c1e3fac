# SPDX-License-Identifier: GPL-2.0-or-later
"""A primary and a backup slurmctld (SlurmctldHost twice) on one machine.

slurmctld tells primary from backup only by gethostname() (short name)
against the SlurmctldHost= names, and it binds its port on all addresses.
So each controller runs in a UTS namespace of its own with its
SlurmctldHost's name (ctl1, ctl2), and the backup in a network namespace of
its own, joined to the root namespace by a veth pair on a private /30
(10.213.N.0/30, N held by a lock file per run, so runs side by side do not
collide). The primary, the slurmds (NodeAddr= the root-side address), the
test API server (listening on the root-side address, which its certificate
names) and the client commands stay in the root namespace and reach both
controllers; no traffic goes to any other non-loopback address.

Both controllers read the same slurm.conf and state directory, as HA
controllers do. Each logs to its own file (slurmctld -L) and has its own pid
file: a starting slurmctld kills whatever its SlurmctldPidFile names, so
the backup's run/ is a bind mount of run-ctl2/ in its own mount namespace.

down() removes everything made here (processes, veth pair, namespace), also
after a failure.
"""
import fcntl
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import yaml

from .cluster import Cluster, ClusterError
from .kube import CLAIM_LABEL_JOB
from .wait import wait_for

PRIMARY, BACKUP = "ctl1", "ctl2"
SUBNET = "10.213"
LOCK_DIR = Path("/run/lock/k8s-cons-tres-ha")
# Slurm's own log lines that say what a controller does.
IN_CONTROL = "Running as primary controller"
STANDBY = "slurmctld running in background mode"


class HAError(ClusterError):
    pass


def _run(cmd, check=True, timeout=30) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise HAError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


_unavailable = None


def ha_unavailable():
    """Why this machine cannot run two controllers (no root, no `ip` or
    `unshare`, network or UTS namespaces refused), or None when it can.
    Tried once per process: a namespace with a veth pair and a UTS
    namespace are made and removed again."""
    global _unavailable
    if _unavailable is not None:
        return _unavailable or None
    reason = ""
    if os.geteuid() != 0:
        reason = "needs root (network namespaces, veth, unshare --uts)"
    for tool in ("ip", "unshare", "mount", "hostname"):
        if not reason and not shutil.which(tool):
            reason = f"`{tool}` is not installed"
    if not reason:
        res = _run(["unshare", "--uts", "--mount", "sh", "-c", "hostname kct-probe && hostname"], check=False)
        if res.returncode != 0 or res.stdout.strip() != "kct-probe":
            reason = f"unshare --uts --mount refused: {res.stderr.strip() or res.stdout.strip()}"
    if not reason:
        ns, a, b = f"kct-probe-{os.getpid()}", f"kctp{os.getpid()}a", f"kctp{os.getpid()}b"
        try:
            for cmd in (["ip", "netns", "add", ns],
                        ["ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", ns]):
                res = _run(cmd, check=False)
                if res.returncode != 0:
                    reason = f"{' '.join(cmd)} refused: {res.stderr.strip()}"
                    break
        finally:
            _run(["ip", "link", "del", a], check=False)
            _run(["ip", "netns", "del", ns], check=False)
    _unavailable = reason
    return reason or None


class BackupNet:
    """The backup controller's network namespace: a veth pair with
    10.213.N.1 in the root namespace and 10.213.N.2 in `netns`. N is held
    by an flock on LOCK_DIR/N.lock for as long as this object lives, so a
    namespace or veth of that N left by a run that died is stale and is
    removed before use."""

    def __init__(self, index: int, lock_fd: int):
        self.index = index
        self.netns = f"kct-ha-{index}"
        self.veth_root = f"kctha{index}r"
        self.veth_ns = f"kctha{index}b"
        self.root_addr = f"{SUBNET}.{index}.1"
        self.ns_addr = f"{SUBNET}.{index}.2"
        self._lock_fd = lock_fd

    def exec_prefix(self) -> list:
        return ["ip", "netns", "exec", self.netns]

    def as_dict(self) -> dict:
        return {"netns": self.netns, "veth": [self.veth_root, self.veth_ns],
                "root_addr": self.root_addr, "ns_addr": self.ns_addr}

    @classmethod
    def create(cls) -> "BackupNet":
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        start = os.getpid() % 250
        for k in range(250):
            n = (start + k) % 250 + 1
            fd = os.open(LOCK_DIR / f"{n}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            net = cls(n, fd)
            if not net._clear_stale():
                os.close(fd)
                continue
            try:
                net._make()
            except Exception:
                net.destroy()
                raise
            return net
        raise HAError(f"no free {SUBNET}.N.0/30 for a backup controller's namespace")

    def _clear_stale(self) -> bool:
        """Remove what a dead run left under this N; False if N is in use
        by something that is not ours to remove."""
        if self.netns in _run(["ip", "netns", "list"], check=False).stdout.split():
            if _run(["ip", "netns", "pids", self.netns], check=False).stdout.strip():
                return False  # processes still run in it: leave it alone
            _run(["ip", "netns", "del", self.netns], check=False)
        if _run(["ip", "link", "show", self.veth_root], check=False).returncode == 0:
            _run(["ip", "link", "del", self.veth_root], check=False)
        return f" inet {SUBNET}.{self.index}." not in _run(["ip", "-o", "-4", "addr", "show"]).stdout

    def _make(self):
        ns = ["ip", "-n", self.netns]
        for cmd in (["ip", "netns", "add", self.netns],
                    ["ip", "link", "add", self.veth_root, "type", "veth", "peer", "name", self.veth_ns,
                     "netns", self.netns],
                    ["ip", "addr", "add", f"{self.root_addr}/30", "dev", self.veth_root],
                    ["ip", "link", "set", self.veth_root, "up"],
                    ns + ["link", "set", "lo", "up"],
                    ns + ["addr", "add", f"{self.ns_addr}/30", "dev", self.veth_ns],
                    ns + ["link", "set", self.veth_ns, "up"]):
            _run(cmd)
        self._check_reachable()

    def _check_reachable(self):
        """A TCP connection from the namespace to the root-side address."""
        with socket.socket() as srv:
            srv.bind((self.root_addr, 0))
            srv.listen(1)
            port = srv.getsockname()[1]
            probe = (f"import socket; socket.create_connection(('{self.root_addr}', {port}), timeout=5).close()")
            deadline = time.monotonic() + 10
            while True:
                res = _run(self.exec_prefix() + [sys.executable, "-c", probe], check=False)
                if res.returncode == 0:
                    return
                if time.monotonic() > deadline:
                    raise HAError(f"the namespace {self.netns} cannot reach {self.root_addr}: {res.stderr.strip()}")
                time.sleep(0.2)

    def destroy(self):
        """Remove the veth pair (both ends) and the namespace; release N."""
        _run(["ip", "link", "del", self.veth_root], check=False)
        _run(["ip", "netns", "del", self.netns], check=False)
        left = []
        if _run(["ip", "link", "show", self.veth_root], check=False).returncode == 0:
            left.append(f"veth {self.veth_root}")
        if self.netns in _run(["ip", "netns", "list"], check=False).stdout.split():
            left.append(f"netns {self.netns}")
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if left:
            raise HAError(f"could not remove {', '.join(left)}")


class HACluster(Cluster):
    """Cluster with SlurmctldHost=ctl1 (primary, root namespace) and
    SlurmctldHost=ctl2 (backup, its own network namespace)."""

    SLURMCTLD_TIMEOUT = 6  # seconds before the backup takes over

    def __init__(self, run_dir):
        super().__init__(run_dir)
        self.net = None

    # ---- configuration ------------------------------------------------------
    def _write_config(self, fx, select, plugin, ports):
        super()._write_config(fx, select, plugin, ports)
        text = self.slurm_conf.read_text()
        one = "SlurmctldHost=localhost(127.0.0.1)\n"
        if text.count(one) != 1 or "SlurmctldTimeout=" in text:
            raise HAError(f"{self.slurm_conf}: not the single-controller configuration harness/ha.py expects")
        text = text.replace(one, f"SlurmctldHost={PRIMARY}({self.net.root_addr})\n"
                                 f"SlurmctldHost={BACKUP}({self.net.ns_addr})\n"
                                 f"SlurmctldTimeout={self.SLURMCTLD_TIMEOUT}\n")
        # Jobs submitted right after a controller takes control wait for
        # the nodes to register again; backfill every 2 s (not 30) starts
        # them soon after.
        sched = "SchedulerParameters=permit_job_expansion\n"
        if text.count(sched) != 1:
            raise HAError(f"{self.slurm_conf}: expected {sched.strip()}")
        text = text.replace(sched, sched.strip() + ",bf_interval=2\n")
        if text.count(" NodeAddr=127.0.0.1 ") != len(fx.nodes):
            raise HAError(f"{self.slurm_conf}: expected NodeAddr=127.0.0.1 on each of {len(fx.nodes)} nodes")
        # slurmd binds all addresses: the backup reaches it on the veth
        text = text.replace(" NodeAddr=127.0.0.1 ", f" NodeAddr={self.net.root_addr} ")
        self.slurm_conf.write_text(text)
        (self.run_dir / f"run-{BACKUP}").mkdir(exist_ok=True)

    def prepare(self, *args, **kw):
        fx = super().prepare(*args, **kw)
        st = self.state()
        st["ha"] = self.net.as_dict()
        self.state_file.write_text(json.dumps(st, indent=1))
        return fx

    # ---- controllers ----------------------------------------------------------
    def controller_log(self, host: str) -> Path:
        return self.run_dir / "log" / f"slurmctld-{host}.log"

    def log_text(self, host: str) -> str:
        try:
            return self.controller_log(host).read_text(errors="replace")
        except OSError:
            return ""

    def _controller_cmd(self, host: str) -> list:
        slurmctld = ["slurmctld", "-D", "-L", str(self.controller_log(host))]
        if host == PRIMARY:
            return ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, *slurmctld]
        return self.net.exec_prefix() + [
            "unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$1" "$2" && hostname "$0" && shift 2 && exec "$@"',
            host, str(self.run_dir / f"run-{host}"), str(self.run_dir / "run"), *slurmctld]

    def start_controller(self, host: str):
        """Start one controller (no wait)."""
        self._spawn(f"slurmctld-{host}", self._controller_cmd(host))

    def controller_pid(self, host: str):
        pid = self._pids().get(f"slurmctld-{host}")
        return pid if pid and self._alive_ours(pid) else None

    def kill_controller(self, host: str, sig=signal.SIGKILL, timeout=30):
        pid = self.controller_pid(host)
        if pid:
            os.kill(pid, sig)
            wait_for(lambda: not self._alive_ours(pid), timeout=timeout, what=f"slurmctld {host} to exit")
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

    def ping(self) -> dict:
        """scontrol ping: {"ctl1": "UP"|"DOWN", "ctl2": ...}. A backup in
        standby answers pings too: in_charge() says who is in control."""
        res = self.run("scontrol", "ping", check=False, timeout=45)
        return {m.group(1): m.group(2)
                for m in re.finditer(r"Slurmctld\(\w+\) at (\S+) is (UP|DOWN)", res.stdout)}

    def in_charge(self, host: str) -> bool:
        """Alive, and its log's last word on its role is Slurm's own
        "Running as primary controller" (a backup in standby logged
        "slurmctld running in background mode" after it)."""
        if not self.controller_pid(host):
            return False
        text = self.log_text(host)
        return text.rfind(IN_CONTROL) > text.rfind(STANDBY)

    def in_standby(self, host: str) -> bool:
        if not self.controller_pid(host):
            return False
        text = self.log_text(host)
        return text.rfind(STANDBY) > text.rfind(IN_CONTROL)

    def wait_in_charge(self, host: str, timeout=60):
        """host controls the cluster and answers; the other controller is
        down or in standby."""
        other = BACKUP if host == PRIMARY else PRIMARY

        def ready():
            if not self.in_charge(host) or self.in_charge(other):
                return False
            if self.ping().get(host) != "UP":
                return False
            return self.run("squeue", "-h", check=False, timeout=45).returncode == 0
        wait_for(ready, timeout=timeout, what=f"slurmctld {host} to be in control",
                 on_timeout=lambda: f"ping: {self.ping()}\n" + self.tail_controllers() + self.stacks(other))

    def wait_standby(self, host: str, count: int = 1, timeout=60):
        """host answers pings in standby, for at least the count-th time."""
        def ready():
            return (self.log_text(host).count(STANDBY) >= count and self.in_standby(host)
                    and self.ping().get(host) == "UP")
        wait_for(ready, timeout=timeout, what=f"slurmctld {host} to be in standby",
                 on_timeout=lambda: f"ping: {self.ping()}\n" + self.tail_controllers() + self.stacks(host))

    def stacks(self, host: str) -> str:
        """Every thread's stack of a controller (gdb, when installed), and
        saved beside its log: what a controller that hangs waits on."""
        pid = self.controller_pid(host)
        if not pid or not shutil.which("gdb"):
            return ""
        res = _run(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt"], check=False, timeout=120)
        out = self.run_dir / "log" / f"slurmctld-{host}.stacks"
        out.write_text(res.stdout + res.stderr)
        frames = [ln for ln in res.stdout.splitlines() if ln.startswith(("Thread ", "#"))]
        return f"\n--- threads of slurmctld {host} (all in {out}) ---\n" + "\n".join(frames[:150])

    # Cluster.up() and the base diagnostics call these.
    def start_slurmctld(self):
        self.start_controller(PRIMARY)
        self.wait_in_charge(PRIMARY)
        self.start_controller(BACKUP)
        self.wait_standby(BACKUP)

    def stop_slurmctld(self, sig=signal.SIGTERM):
        for host in (BACKUP, PRIMARY):
            self.kill_controller(host, sig)

    def tail_controllers(self, lines=40) -> str:
        return "\n".join(self.tail(f"log/slurmctld-{h}.log", lines) for h in (PRIMARY, BACKUP))

    def tail(self, rel: str, lines: int = 40) -> str:
        if rel == "log/slurmctld.log":
            return self.tail_controllers(lines)
        return super().tail(rel, lines)

    # ---- life cycle -----------------------------------------------------------
    def up(self, fixture_path: str, select: str = "k8s_cons_tres", plugin=None, **kw):
        self.net = BackupNet.create()
        self.apiserver_host = self.net.root_addr
        try:
            super().up(fixture_path, select, plugin, **kw)
        except Exception:
            self.down()
            raise

    def down(self, timeout=30):
        try:
            super().down(timeout)
        finally:
            net, self.net = self.net, None
            if net:
                net.destroy()


class ClaimWatch:
    """Every ResourceClaim event in one namespace from the moment of
    start() on, as the API server sends them (a watch, on a thread of its
    own; the admin kubeconfig of the test API server)."""

    def __init__(self, cluster: Cluster, namespace: str = "slurm"):
        kc = yaml.safe_load((cluster.apiserver_dir / "kubeconfig").read_text())
        url = urlparse(kc["clusters"][0]["cluster"]["server"])
        self._host, self._port = url.hostname, url.port
        self._ctx = ssl.create_default_context(cafile=kc["clusters"][0]["cluster"]["certificate-authority"])
        self._headers = {"Authorization": f"Bearer {kc['users'][0]['user']['token']}"}
        self._path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
        self.events = []  # (monotonic time, type, claim name, job id label)
        self.error = None
        self._conn = None
        self._stop = False
        self._thread = None

    def _request(self, query: str):
        conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=30)
        conn.request("GET", f"{self._path}?{query}", headers=self._headers)
        resp = conn.getresponse()
        if resp.status != 200:
            raise HAError(f"GET {self._path}?{query}: {resp.status} {resp.read()[:300]!r}")
        return conn, resp

    def start(self) -> "ClaimWatch":
        conn, resp = self._request("")
        rv = json.loads(resp.read())["metadata"]["resourceVersion"]
        conn.close()
        self._conn, resp = self._request(f"watch=true&resourceVersion={rv}&allowWatchBookmarks=true"
                                         "&timeoutSeconds=1800")
        self._conn.sock.settimeout(None)
        self._thread = threading.Thread(target=self._read, args=(resp,), daemon=True)
        self._thread.start()
        return self

    def _read(self, resp):
        try:
            while not self._stop:
                line = resp.readline()
                if not line:
                    if not self._stop:
                        self.error = "the watch ended early"
                    return
                ev = json.loads(line)
                if ev["type"] in ("BOOKMARK",):
                    continue
                meta = ev["object"].get("metadata", {})
                self.events.append((time.monotonic(), ev["type"], meta.get("name"),
                                    meta.get("labels", {}).get(CLAIM_LABEL_JOB)))
        except Exception as e:  # noqa: BLE001 (reported by stop())
            if not self._stop:
                self.error = f"{type(e).__name__}: {e}"

    def stop(self):
        self._stop = True
        if self._conn and self._conn.sock:
            try:
                self._conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread:
            self._thread.join(10)
        if self._conn:
            self._conn.close()
