# SPDX-License-Identifier: GPL-2.0-or-later
"""Containers the node agents run (--run-image, ktas/containers.py): a
pod's command, environment and volumes as kubelet would give them, its
status following the process, a missing ConfigMap keeping it in
ContainerCreating (FailedMount), deletion honouring the grace period and
ending everything the container started, back-off after an exit, and
restartPolicy Never ending the pod.  Standalone server, no Slurm."""

import os
import sys
import time
from pathlib import Path

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from apiserver_fixture import TestApiServer, cpu_slice_seed  # noqa: E402
from harness.wait import wait_for  # noqa: E402

IMAGE = "example.test/tools:1"
NODE = "ct-n1"
PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    seed = cpu_slice_seed(tmp_path_factory.mktemp("ct") / "seed.json", [NODE])
    with TestApiServer(seeds=[seed], extra_args=[
            "--node-agents", "--run-image", f"{IMAGE}=/usr/bin:/bin"]) as server:
        yield server


def call(srv, method, path, body=None, ok=(200, 201)):
    code, _, out = srv.request(method, path, body)
    assert code in ok, out
    return out


def pod(name, command, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": NODE, "containers": [{
                "name": "c", "image": IMAGE, "command": command,
                **spec.pop("container", {})}], **spec}}


def get_pod(srv, name):
    code, _, out = srv.request("GET", f"{PODS}/{name}")
    return out if code == 200 else None


def state(srv, name):
    p = get_pod(srv, name) or {}
    cs = (p.get("status") or {}).get("containerStatuses") or [{}]
    return p.get("status", {}).get("phase"), cs[0]


def pid_of(path):
    return int(wait_for(lambda: path.exists() and path.read_text().strip(), timeout=20,
                        what=f"a pid in {path}"))


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_command_environment_and_configmap_volume(srv):
    call(srv, "POST", PODS, pod("env", [
        "sh", "-c", "echo $(WHERE) $HOSTNAME $GREETING; cat /etc/app/conf.txt; "
        "echo $CONF; exec sleep 300 > /dev/null"], container={
            "env": [{"name": "WHERE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "GREETING", "value": "hello-$(WHERE)"},
                    {"name": "CONF", "value": "/etc/app/conf.txt"}],
            "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]},
        volumes=[{"name": "cfg", "configMap": {"name": "app"}}]))
    # no ConfigMap yet: kubelet cannot mount it and says so
    wait_for(lambda: any(e.get("reason") == "FailedMount" and 'configmap "app" not found' in e["message"]
                         for e in call(srv, "GET", "/api/v1/namespaces/default/events")["items"]),
             timeout=20, what="the FailedMount event")
    phase, cs = state(srv, "env")
    assert phase == "Pending" and cs["state"]["waiting"]["reason"] == "ContainerCreating"
    call(srv, "POST", CMS, {"metadata": {"name": "app"}, "data": {"conf.txt": "from-the-configmap\n"}})
    wait_for(lambda: state(srv, "env")[0] == "Running", timeout=20, what="the pod Running")
    p = get_pod(srv, "env")
    assert p["status"]["containerStatuses"][0]["ready"] and p["status"]["containerStatuses"][0]["state"]["running"]
    root = Path(srv.rundir) / "pods" / f"default_env_{p['metadata']['uid']}"
    log = root / "c.log"
    wait_for(lambda: log.exists() and len(log.read_text().splitlines()) >= 3, timeout=20, what="the output",
             on_timeout=lambda: log.exists() and log.read_text())
    lines = log.read_text().splitlines()
    assert lines[0] == f"{NODE} env hello-{NODE}"
    assert lines[1] == "from-the-configmap"
    assert lines[2] == f"{root}/volumes/cfg/conf.txt"   # the mountPath, rewritten
    call(srv, "DELETE", f"{PODS}/env")
    wait_for(lambda: get_pod(srv, "env") is None, timeout=40, what="the pod gone")


def test_deletion_waits_for_the_grace_period_then_ends_all_the_container_started(srv, tmp_path):
    child, main = tmp_path / "child", tmp_path / "main"
    # the main process ignores SIGTERM; a daemonised child outlives its parent
    call(srv, "POST", PODS, pod("grace", [
        "sh", "-c", f"(setsid sh -c 'echo $$$$ > {child}; exec sleep 300' &); "   # $$: kubelet's escape
        f"trap '' TERM; echo $$$$ > {main}; while true; do sleep 0.1; done"],
        terminationGracePeriodSeconds=2))
    wait_for(lambda: state(srv, "grace")[0] == "Running", timeout=20, what="the pod Running")
    pids = pid_of(child), pid_of(main)
    t0 = time.monotonic()
    call(srv, "DELETE", f"{PODS}/grace")
    # there, terminating, while the grace period runs (the process ignores
    # TERM), and gone only after it
    assert get_pod(srv, "grace")["metadata"]["deletionTimestamp"] and all(alive(p) for p in pids)
    wait_for(lambda: get_pod(srv, "grace") is None, timeout=20, what="the pod gone")
    assert time.monotonic() - t0 >= 1.9
    wait_for(lambda: not any(alive(p) for p in pids), timeout=10, what="every process of the pod to end")


def test_an_ended_container_backs_off_and_restarts(srv):
    call(srv, "POST", PODS, pod("crash", ["sh", "-c", "exit 3"]))

    def backing_off():
        phase, cs = state(srv, "crash")
        return phase == "Running" and cs.get("state", {}).get("waiting", {}).get("reason") == \
            "CrashLoopBackOff" and cs
    cs = wait_for(backing_off, timeout=20, what="CrashLoopBackOff")
    assert cs["lastState"]["terminated"]["exitCode"] == 3 and not cs["ready"]
    p = get_pod(srv, "crash")
    assert {c["type"]: c["status"] for c in p["status"]["conditions"]}["Ready"] == "False"
    # kubelet's first back-off is 10 s; then it runs again
    wait_for(lambda: state(srv, "crash")[1].get("restartCount", 0) >= 1, timeout=30,
             what="the first restart")
    call(srv, "DELETE", f"{PODS}/crash")
    wait_for(lambda: get_pod(srv, "crash") is None, timeout=40, what="the pod gone")


def test_restart_policy_never_ends_the_pod(srv):
    call(srv, "POST", PODS, pod("once", ["sh", "-c", "exit 0"], restartPolicy="Never"))
    call(srv, "POST", PODS, pod("fails", ["false"], restartPolicy="Never"))
    wait_for(lambda: state(srv, "once")[0] == "Succeeded", timeout=20, what="once Succeeded")
    wait_for(lambda: state(srv, "fails")[0] == "Failed", timeout=20, what="fails Failed")
    assert state(srv, "fails")[1]["state"]["terminated"]["exitCode"] == 1


def test_pods_of_other_images_only_change_state(srv):
    p = pod("pause", None)
    p["spec"]["containers"][0].update(image="pause:3.10")
    del p["spec"]["containers"][0]["command"]
    call(srv, "POST", PODS, p)
    wait_for(lambda: state(srv, "pause")[0] == "Running", timeout=20, what="the pause pod Running")
    uid = get_pod(srv, "pause")["metadata"]["uid"]
    assert not (Path(srv.rundir) / "pods" / f"default_pause_{uid}").exists()
