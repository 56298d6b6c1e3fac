# SPDX-License-Identifier: GPL-2.0-or-later
"""slurmd in Kubernetes pods (`testsuite/cluster up --slurmd-in-pods`):
the Kubernetes nodes' slurmds come from the shipped DaemonSet component
(etc/kubernetes/components/slurmd), applied with kubectl as an admin
applies it, and the test API server's node agents run each pod's slurmd
container as kubelet would (ktas/containers.py).

The harness's overlay, written into the run directory:
- the image is this run's Slurm release, a name the server maps to the
  release's commands (--run-image);
- the ConfigMap holds the run's slurm.conf and gres.conf, the files
  slurmctld reads too (config hash match);
- no munge container and no munge key: the harness runs auth/none.
Everything else (command, SLURM_NODENAME from spec.nodeName, SLURM_CONF,
hostNetwork, grace period, no devices) is the component's own."""

import json
import os
import shutil
from pathlib import Path

from . import node_agent
from .kube import kubectl
from .wait import wait_for

TOP = Path(__file__).resolve().parents[2]
COMPONENT = TOP / "etc" / "kubernetes" / "components" / "slurmd"
IMAGE = "localhost/k8s-cons-tres-test/slurm"
LABEL = "k8s-cons-tres.slurm.io/slurmd"
NAMESPACE = "slurmd"

NO_MUNGE = """\
# auth/none in the harness: no munged, no key
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: slurmd
  namespace: slurmd
spec:
  template:
    spec:
      containers:
        - name: munge
          $patch: delete
      volumes:
        - name: munge-key
          $patch: delete
"""


def image(cluster) -> str:
    return f"{IMAGE}:{cluster.release.version}"


def server_args(cluster, mark_var: str) -> list:
    """The test API server's options: run this image's containers with
    the release's commands, and pass the run's mark to them (so that the
    harness finds what they leave)."""
    return ["--run-image", f"{image(cluster)}={cluster.env(extra=False)['PATH']}",
            "--container-host-env", mark_var]


def overlay(cluster) -> Path:
    d = cluster.run_dir / "kustomize" / "slurmd"
    d.mkdir(parents=True, exist_ok=True)
    for name in ("slurm.conf", "gres.conf"):
        shutil.copyfile(cluster.run_dir / "etc" / name, d / name)
    (d / "no-munge.yaml").write_text(NO_MUNGE)
    (d / "kustomization.yaml").write_text(json.dumps({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "components": [os.path.relpath(COMPONENT, d)],
        "images": [{"name": "slurmd", "newName": IMAGE, "newTag": cluster.release.version}],
        "configMapGenerator": [{"name": "slurmd-config", "namespace": NAMESPACE,
                                "files": ["slurm.conf", "gres.conf"]}],
        "patches": [{"path": "no-munge.yaml"}]}, indent=1))
    return d


def deploy(cluster, nodes):
    """kubectl apply -k the overlay, then label the nodes: the
    DaemonSet's pods follow."""
    d = overlay(cluster)
    kubectl(cluster, "apply", "-k", str(d))
    for node in nodes:
        label(cluster, node, True)


def label(cluster, node, on: bool):
    kubectl(cluster, "label", "node", node, f"{LABEL}=true" if on else f"{LABEL}-",
            *(["--overwrite"] if on else []))


def pods(cluster) -> dict:
    """node -> the DaemonSet's live pods there (not being deleted)."""
    out = {}
    items = node_agent.api(cluster, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    for p in items:
        if not p["metadata"].get("deletionTimestamp"):
            out.setdefault(p["spec"].get("nodeName"), []).append(p)
    return out


def ready(pod) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def wait_ready(cluster, nodes, timeout=60, exclude=()) -> dict:
    """Until each node has one Ready pod (none of the uids in `exclude`);
    returns node -> pod."""
    def check():
        now = pods(cluster)
        got = {}
        for n in nodes:
            live = [p for p in now.get(n, []) if p["metadata"]["uid"] not in exclude]
            if len(live) != 1 or not ready(live[0]):
                return None
            got[n] = live[0]
        return got
    return wait_for(check, timeout=timeout, what=f"slurmd pods Ready on {','.join(nodes)}",
                    on_timeout=lambda: json.dumps({n: [(p["metadata"]["name"],
                                                        (p.get("status") or {}).get("phase"))
                                                       for p in ps]
                                                   for n, ps in pods(cluster).items()}))


def slurmd_pid(cluster, node):
    """The node's slurmd, from its SlurmdPidFile (run/slurmd.NODE.pid)."""
    try:
        pid = int((cluster.run_dir / "run" / f"slurmd.{node}.pid").read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def daemonset(cluster) -> dict:
    return node_agent.api(cluster, "GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/slurmd")
