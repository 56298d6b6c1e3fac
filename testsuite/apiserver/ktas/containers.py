# SPDX-License-Identifier: GPL-2.0-or-later
"""Containers the node agents really run (--run-image IMAGE=PATH): a pod
whose containers all use such an image has each container's command run
as a host process, as kubelet and the container runtime would run it;
other pods (holder pods: pause) only change state, as before.

What is played, from the pod spec:
- the command and args, `$(VAR)` expanded from the container's
  environment as kubelet expands them; the command is looked up on the
  image's PATH (the PATH after `=`), and there is no image entrypoint;
- the environment: the image's PATH, HOSTNAME, the pod's `env` and
  `envFrom` (values, fieldRef, configMapKeyRef, secretKeyRef), and the
  server's own variables named by --container-host-env (the test run's
  mark, so that the harness finds what is left);
- volumes: configMap and secret (their keys as files, missing objects
  keep the pod in ContainerCreating with kubelet's FailedMount event),
  emptyDir, and hostPath under the node's own root (every test node is
  a host of its own).  There is no mount namespace, so a path under a
  mountPath in the command, args or environment is rewritten to the
  volume's directory: SLURM_CONF=/etc/slurm/slurm.conf names the file
  kubelet materialised from the ConfigMap;
- a container runs under ktas/shim.py, which stands in for its cgroup:
  what it starts (slurmd's slurmstepd, their tasks) ends with it;
- restartPolicy: an ended container is restarted after kubelet's back-off
  (10 s doubling to 5 min; CrashLoopBackOff meanwhile); with Never or
  OnFailure the pod ends Succeeded or Failed;
- deletion: SIGTERM to each main process, SIGKILL to everything left
  when the grace period ends; only then is the pod deleted for good.

Not played: probes (a running container counts as ready), resource
limits, image pulls, mount propagation, security contexts."""

import base64
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from .api import now_rfc3339
from .store import object_key

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim.py")
BACKOFF_FIRST, BACKOFF_MAX = 10.0, 300.0   # kubelet's crash-loop back-off
_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class MountError(Exception):
    """A volume kubelet cannot set up yet (its event's text)."""


def parse_images(specs):
    """["IMAGE=DIR:DIR", ...] -> {image: PATH}."""
    out = {}
    for spec in specs or []:
        image, sep, path = spec.partition("=")
        if not sep or not image or not path:
            raise SystemExit(f"--run-image {spec!r}: want IMAGE=PATH")
        out[image] = path
    return out


def expand(text, env):
    """kubelet's $(VAR) expansion: known names expand, `$$` is `$`,
    unknown references stay as written."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR.sub(one, text)


class Container:
    """One container of a pod: its process (through the shim) and the
    facts its status shows."""

    def __init__(self, spec):
        self.spec, self.name = spec, spec["name"]
        self.proc = None
        self.started = None        # RFC 3339 of the current run
        self.restarts = 0
        self.last = None           # the previous run's terminated state
        self.ended = None          # this run's terminated state, once over
        self.next_start = 0.0      # monotonic time the back-off allows
        self.backoff = 0.0
        self.id = ""

    @property
    def running(self):
        return self.proc is not None and self.ended is None


class PodRun:
    def __init__(self, pod, node, root):
        meta = pod["metadata"]
        self.uid, self.node, self.root = meta["uid"], node, root
        self.key = f"{meta['namespace']}/{meta['name']}"
        self.containers = [Container(c) for c in pod["spec"]["containers"]]
        self.restart_policy = pod["spec"].get("restartPolicy", "Always")
        self.grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        self.stopping = False
        self.stop_timer = None
        self.env = {}              # container name -> environment
        self.argv = {}             # container name -> argv

    def done(self):
        """Every container ended for good (restartPolicy allowing)."""
        return all(c.ended is not None and not self._restarts(c)
                   for c in self.containers)

    def _restarts(self, c):
        if self.stopping:
            return False
        code = c.ended["exitCode"] if c.ended else 0
        return self.restart_policy == "Always" or (
            self.restart_policy == "OnFailure" and code != 0)

    def exited(self):
        return all(c.proc is None or c.proc.poll() is not None
                   for c in self.containers)


class Runtime:
    """The containers of the pods that use a --run-image image, for every
    node agent.  `poke(node)` wakes that node's agent (a process ended, a
    back-off or grace period is over)."""

    def __init__(self, images, rundir, host_env, poke):
        self.images, self.rundir, self.poke = images, rundir, poke
        self.host_env = {k: os.environ[k] for k in host_env or []
                         if k in os.environ}
        self.pods = {}   # uid -> PodRun
        self.lock = threading.Lock()

    def runs(self, pod):
        cs = (pod.get("spec") or {}).get("containers") or []
        return bool(self.images) and bool(cs) and all(
            c.get("image") in self.images for c in cs)

    def get(self, uid):
        with self.lock:
            return self.pods.get(uid)

    # ------------------------------------------------------------ start
    def start(self, pod, node, host_ip, pod_ip, lookup):
        """Sets up the pod's volumes and starts its containers.  `lookup`
        (kind, ns, name) gives a ConfigMap or Secret or None.  Returns
        kubelet's FailedMount text while a volume cannot be set up."""
        meta = pod["metadata"]
        if self.get(meta["uid"]):
            return None   # started already
        root = os.path.join(self.rundir, "pods",
                            f"{meta['namespace']}_{meta['name']}_{meta['uid']}")
        run = PodRun(pod, node, root)
        os.makedirs(root, exist_ok=True)
        try:
            mounts = self._volumes(pod, node, root, lookup)
            for c in run.containers:
                env = self._environment(pod, c.spec, node, host_ip, pod_ip,
                                        lookup)
                paths = mounts.get(c.name, [])
                env = {k: translate(v, paths) for k, v in env.items()}
                argv = [translate(expand(a, env), paths) for a in
                        (c.spec.get("command") or []) + (c.spec.get("args") or [])]
                run.env[c.name], run.argv[c.name] = env, argv
        except MountError as err:
            shutil.rmtree(root, ignore_errors=True)
            return str(err)
        with self.lock:
            self.pods[run.uid] = run
        for c in run.containers:
            self._spawn(run, c)
        return None

    def _spawn(self, run, c):
        argv, env = run.argv[c.name], run.env[c.name]
        log = os.path.join(run.root, f"{c.name}.log")
        c.ended, c.started = None, now_rfc3339()
        c.id = hashlib.sha256(f"{run.uid}/{c.name}/{c.restarts}"
                              .encode()).hexdigest()
        if not argv:   # no image entrypoint here: the spec must say
            c.proc = None
            c.ended = _terminated(c, 128, "StartError",
                                  "no command: the test server runs no "
                                  "image entrypoint")
            self.poke(run.node)
            return
        if "/" not in argv[0]:
            found = shutil.which(argv[0], path=env.get("PATH", ""))
            argv = [found or argv[0]] + argv[1:]
        c.proc = subprocess.Popen(
            [sys.executable, SHIM, run.root, log, "--", *argv], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        threading.Thread(target=self._wait, args=(run, c, c.proc),
                         daemon=True, name=f"wait-{c.name}").start()

    def _wait(self, run, c, proc):
        code = proc.wait()
        if c.proc is proc:
            c.ended = _terminated(c, code, "Completed" if code == 0 else
                                  "Error")
        if run.stopping and run.exited():   # nobody may ask again
            run.stop_timer.cancel()
            with self.lock:
                if self.pods.get(run.uid) is run:
                    del self.pods[run.uid]
        self.poke(run.node)

    # ------------------------------------------------------------ running
    def sync(self, uid):
        """Restarts what ended, after the back-off; returns the pod's
        phase if it is over (Succeeded/Failed), else None."""
        run = self.get(uid)
        if run is None or run.stopping:
            return None
        now = time.monotonic()
        for c in run.containers:
            if c.ended is None or not run._restarts(c):
                continue
            if not c.next_start:
                c.backoff = min(BACKOFF_MAX, c.backoff * 2 or BACKOFF_FIRST)
                c.next_start = now + c.backoff
                threading.Timer(c.backoff, self.poke, (run.node,)).start()
            elif now >= c.next_start:
                c.last, c.next_start = c.ended, 0.0
                c.restarts += 1
                self._spawn(run, c)
        if run.done():
            ok = all(c.ended and c.ended["exitCode"] == 0
                     for c in run.containers)
            return "Succeeded" if ok else "Failed"
        return None

    def stop(self, uid, grace=None):
        """Begins stopping the pod's containers: SIGTERM now, SIGKILL to
        all that is left once `grace` seconds (the pod's deletion grace
        period, else its spec's) are over.  Returns True once every
        process has ended; call again on each wake-up."""
        run = self.get(uid)
        if run is None:
            return True
        if not run.stopping:
            run.stopping = True
            grace = run.grace if grace is None else grace
            for c in run.containers:
                _signal(c.proc, "TERM")
            run.stop_timer = threading.Timer(max(grace, 0), self._kill,
                                             (run,))
            run.stop_timer.daemon = True
            run.stop_timer.start()
        if not run.exited():
            return False
        run.stop_timer.cancel()
        with self.lock:
            self.pods.pop(uid, None)
        return True

    def _kill(self, run):
        for c in run.containers:
            _signal(c.proc, "USR1")   # the shim kills all below it
        self.poke(run.node)

    def shutdown(self):
        with self.lock:
            runs = list(self.pods.values())
        for run in runs:
            self._kill(run)

    # ------------------------------------------------------------ status
    def statuses(self, uid, pod):
        """containerStatuses of a pod this runtime runs."""
        run = self.get(uid)
        out = []
        for spec in pod["spec"].get("containers") or []:
            c = next((c for c in run.containers if c.name == spec["name"]),
                     None) if run else None
            st = {"name": spec["name"], "image": spec.get("image", ""),
                  "imageID": "", "lastState": {}, "ready": False,
                  "restartCount": c.restarts if c else 0, "started": False}
            if c is None:
                st["state"] = {"waiting": {"reason": "ContainerCreating"}}
                out.append(st)
                continue
            st["imageID"] = "sha256:" + hashlib.sha256(
                st["image"].encode()).hexdigest()
            st["containerID"] = "containerd://" + c.id
            if c.last:
                st["lastState"] = {"terminated": dict(c.last)}
            if c.running:
                st["state"] = {"running": {"startedAt": c.started}}
                st["ready"] = st["started"] = True
            elif c.ended and c.next_start:
                st["state"] = {"waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {int(c.backoff)}s restarting "
                    f"failed container={c.name} pod={run.key}"}}
                st["lastState"] = {"terminated": dict(c.ended)}
            else:
                st["state"] = {"terminated": dict(c.ended or {})}
            out.append(st)
        return out

    # ------------------------------------------------------------ set-up
    def _volumes(self, pod, node, root, lookup):
        """Each volume's directory; returns container -> [(mountPath,
        host path)], longest mountPath first."""
        ns = pod["metadata"]["namespace"]
        dirs = {}
        for v in pod["spec"].get("volumes") or []:
            name = v["name"]
            if "hostPath" in v:
                # every test node is a host of its own
                path = os.path.join(self.rundir, "hosts", node,
                                    v["hostPath"]["path"].lstrip("/"))
                kind = v["hostPath"].get("type", "")
                if kind in ("DirectoryOrCreate",):
                    os.makedirs(path, exist_ok=True)
                elif kind == "Directory" and not os.path.isdir(path):
                    raise MountError(
                        f'MountVolume.SetUp failed for volume "{name}" : '
                        f"hostPath type check failed: {v['hostPath']['path']}"
                        " is not a directory")
                dirs[name] = path
                continue
            path = os.path.join(root, "volumes", name)
            if "emptyDir" in v:
                os.makedirs(path, exist_ok=True)
            elif "configMap" in v or "secret" in v:
                self._keys(v, ns, path, lookup)
            else:
                continue   # not played: its mountPath stays as written
            dirs[name] = path
        out = {}
        for c in pod["spec"]["containers"]:
            pairs = []
            for m in c.get("volumeMounts") or []:
                if m["name"] in dirs:
                    pairs.append((m["mountPath"].rstrip("/") or "/",
                                  os.path.join(dirs[m["name"]],
                                               m.get("subPath", ""))
                                  .rstrip("/")))
            out[c["name"]] = sorted(pairs, key=lambda p: -len(p[0]))
        return out

    @staticmethod
    def _keys(v, ns, path, lookup):
        """A configMap or secret volume: one file per key (or per item)."""
        if "configMap" in v:
            src, kind, ref = v["configMap"], "configmap", "name"
        else:
            src, kind, ref = v["secret"], "secret", "secretName"
        obj = lookup(kind, ns, src.get(ref))
        if obj is None:
            if src.get("optional"):
                os.makedirs(path, exist_ok=True)
                return
            raise MountError(
                f'MountVolume.SetUp failed for volume "{v["name"]}" : '
                f'{kind} "{src.get(ref)}" not found')
        files = {k: val.encode() for k, val in
                 (obj.get("data") or {}).items()} if kind == "configmap" \
            else {k: base64.b64decode(val) for k, val in
                  (obj.get("data") or {}).items()}
        for k, val in (obj.get("binaryData") or {}).items():
            files[k] = base64.b64decode(val)
        items = src.get("items")
        if items:
            missing = [i["key"] for i in items if i["key"] not in files]
            if missing:
                raise MountError(
                    f'MountVolume.SetUp failed for volume "{v["name"]}" : '
                    f"configmap references non-existent config key: "
                    f"{missing[0]}")
            files = {i.get("path", i["key"]): files[i["key"]] for i in items}
        os.makedirs(path, exist_ok=True)
        mode = src.get("defaultMode", 0o644)
        for name, data in files.items():
            f = os.path.join(path, name)
            os.makedirs(os.path.dirname(f), exist_ok=True)
            with open(f, "wb") as out:
                out.write(data)
            os.chmod(f, mode)

    def _environment(self, pod, spec, node, host_ip, pod_ip, lookup):
        meta, pspec = pod["metadata"], pod["spec"]
        ns = meta["namespace"]
        env = {"PATH": self.images[spec["image"]],
               "HOSTNAME": node if pspec.get("hostNetwork") else meta["name"],
               "HOME": "/root"}
        env.update(self.host_env)
        fields = {"metadata.name": meta["name"], "metadata.namespace": ns,
                  "metadata.uid": meta["uid"], "spec.nodeName": node,
                  "spec.serviceAccountName":
                  pspec.get("serviceAccountName", "default"),
                  "status.hostIP": host_ip, "status.podIP": pod_ip}
        for src in spec.get("envFrom") or []:
            if "configMapRef" in src or "secretRef" in src:
                ref = src.get("configMapRef") or src.get("secretRef")
                kind = "configmap" if "configMapRef" in src else "secret"
                obj = lookup(kind, ns, ref.get("name")) or {}
                for k, val in (obj.get("data") or {}).items():
                    env[src.get("prefix", "") + k] = val if kind == \
                        "configmap" else base64.b64decode(val).decode()
        for e in spec.get("env") or []:
            if "value" in e:
                env[e["name"]] = expand(e["value"], env)
                continue
            vf = e.get("valueFrom") or {}
            if "fieldRef" in vf:
                val = fields.get(vf["fieldRef"].get("fieldPath"))
            elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
                ref = vf.get("configMapKeyRef") or vf.get("secretKeyRef")
                kind = "configmap" if "configMapKeyRef" in vf else "secret"
                obj = lookup(kind, ns, ref.get("name")) or {}
                val = (obj.get("data") or {}).get(ref.get("key"))
                if val is not None and kind == "secret":
                    val = base64.b64decode(val).decode()
            else:
                val = None   # resourceFieldRef: not played
            if val is not None:
                env[e["name"]] = val
        return env


def translate(text, mounts):
    """A container path under a mountPath -> the volume's host path."""
    for mount, host in mounts:
        pat = re.compile(r"(?<![\w./-])" + re.escape(mount) +
                         r"(?=/|$|[\s:;,'\"=])")
        text = pat.sub(lambda _m, h=host: h, text)
    return text


def _terminated(c, code, reason, message=None):
    out = {"exitCode": code, "reason": reason, "startedAt": c.started,
           "finishedAt": now_rfc3339(), "containerID": "containerd://" + c.id}
    if message:
        out["message"] = message
    return out


def _signal(proc, name):
    if proc is not None and proc.poll() is None:
        try:
            proc.send_signal(getattr(signal, "SIG" + name))
        except ProcessLookupError:
            pass


def lookup_in(store, types):
    """(kind, ns, name) -> the object in the store, or None; `types` maps
    "configmap"/"secret" to their ResourceType (None: not served)."""
    def lookup(kind, ns, name):
        rtype = types.get(kind)
        if rtype is None or not name:
            return None
        entry = store.get(rtype, object_key(ns, name))
        return entry.obj() if entry else None
    return lookup
