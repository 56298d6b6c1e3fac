# SPDX-License-Identifier: GPL-2.0-or-later
"""apps/v1 DaemonSets, core/v1 ConfigMaps and Secrets in the test API
server, and its DaemonSet controller (ktas/daemonsets.py), driven by the
real kubectl 1.32: the slurmd component (etc/kubernetes/components/slurmd)
rendered by kustomize and applied, one pod per labelled node, started by
the node agents; `kubectl rollout status`; a deleted pod comes back on its
node once gone; an unlabelled or NoExecute-tainted node loses its pod; a
template change rolls the pods one node at a time; a Failed pod is
replaced; OnDelete leaves pods alone; deleting the DaemonSet deletes its
pods.  And what it costs: no work per claim write without a DaemonSet.
Standalone server, no Slurm."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from apiserver_fixture import TestApiServer, WatchStream, KUBECTL, cpu_slice_seed, kubectl_ok  # noqa: E402
from harness.wait import wait_for  # noqa: E402

TOP = Path(HERE).parents[1]
SLURMD = TOP / "etc" / "kubernetes" / "components" / "slurmd"
EXAMPLE = TOP / "etc" / "kubernetes" / "overlays" / "slurmd-example"
NS = "slurmd"
LABEL = "k8s-cons-tres.slurm.io/slurmd"
IMAGE = "example.test/hpc/slurm:ktas"
NODES = ("ds-n1", "ds-n2", "ds-n3")
PODS = f"/api/v1/namespaces/{NS}/pods"
DS = f"/apis/apps/v1/namespaces/{NS}/daemonsets/slurmd"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL),
                                reason="kubectl not installed")


def seed(path):
    """A dra.cpu slice per node: each gets a Node and a node agent."""
    return cpu_slice_seed(path, NODES)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ds")
    with TestApiServer(seeds=[seed(tmp / "seed.json")], bookmark_interval=0.3,
                       extra_args=["--node-agents"]) as server:
        yield server


kubectl = kubectl_ok


# The component leaves updates to the admin (OnDelete); this site rolls them.
ROLLING = {"apiVersion": "apps/v1", "kind": "DaemonSet",
           "metadata": {"name": "slurmd", "namespace": NS},
           "spec": {"updateStrategy": {
               "type": "RollingUpdate",
               "rollingUpdate": {"maxUnavailable": 1}}}}


def render(tmp_path):
    """A site's kustomization: the component by a relative path, the
    example's configuration files generated into a ConfigMap, an image,
    rolling updates."""
    for name in ("slurm.conf", "gres.conf", "cgroup.conf"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "components": [os.path.relpath(SLURMD, tmp_path)],
        "images": [{"name": "slurmd", "newName": IMAGE.split(":")[0],
                    "newTag": IMAGE.split(":")[1]}],
        "configMapGenerator": [{"name": "slurmd-config", "namespace": NS,
                                "files": ["slurm.conf", "gres.conf",
                                          "cgroup.conf"]}],
        "patches": [{"patch": yaml.safe_dump(ROLLING)}]}))
    return kustomize("--load-restrictor", "LoadRestrictionsNone",
                     str(tmp_path))


def kustomize(*args):
    res = subprocess.run([KUBECTL, "kustomize", *args], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def get(srv, path):
    code, _, body = srv.request("GET", path)
    assert code == 200, body
    return body


def pods(srv):
    """The DaemonSet's pods that are not terminating, by node."""
    out = {}
    for p in get(srv, PODS)["items"]:
        if not p["metadata"].get("deletionTimestamp"):
            out.setdefault(p["spec"].get("nodeName"), []).append(p)
    return out


def running(p):
    return (p.get("status") or {}).get("phase") == "Running"


def wait_pods(srv, nodes, what, pred=running):
    """Exactly one pod on each of `nodes` and none elsewhere, each pred."""
    def check():
        got = pods(srv)
        ok = sorted(got) == sorted(nodes) and \
            all(len(ps) == 1 and pred(ps[0]) for ps in got.values())
        return got if ok else None
    return wait_for(check, 20, what, on_timeout=lambda: json.dumps(
        {n: [(p["metadata"]["name"], p["status"].get("phase"))
             for p in ps] for n, ps in pods(srv).items()}))


def controller(srv):
    return srv.control("GET", "/_test/daemonsets")


def settled(srv):
    """The controller has acted on everything and the store is quiet (to
    assert that something did not happen)."""
    def quiet():
        rv = srv.server_info()["resourceVersion"]
        stats = controller(srv)
        again = srv.server_info()["resourceVersion"]
        return not stats["pending"] and rv == again and \
            not controller(srv)["pending"]
    wait_for(quiet, 20, "the DaemonSet controller to settle")


def label(srv, node, on=True):
    kubectl(srv, "label", "node", node,
            f"{LABEL}=true" if on else f"{LABEL}-", "--overwrite")


@pytest.fixture(scope="module")
def slurmd(srv, tmp_path_factory):
    """The component applied as an admin would, two of three nodes
    labelled, its pods running."""
    tmp = tmp_path_factory.mktemp("kustomization")
    text = render(tmp)
    res = kubectl(srv, "apply", "-f", "-", stdin=text)
    assert "daemonset.apps/slurmd created" in res.stdout, res.stdout
    key = tmp / "munge.key"
    key.write_bytes(os.urandom(64))
    # `kubectl create secret` sends protobuf, which the server refuses
    # (415): the manifest it would send, applied as JSON
    manifest = kubectl(srv, "-n", NS, "create", "secret", "generic", "munge-key",
                       f"--from-file=munge.key={key}", "--dry-run=client",
                       "-o", "json").stdout
    kubectl(srv, "apply", "-f", "-", stdin=manifest)
    for node in NODES[:2]:
        label(srv, node)
    wait_pods(srv, NODES[:2], "slurmd pods on the labelled nodes")
    return text


# ---------------------------------------------------------------- serving

def test_discovery_lists_apps_and_the_new_core_kinds(srv):
    out = kubectl(srv, "api-resources", "--api-group=apps").stdout
    assert any(line.split()[:4] == ["daemonsets", "ds", "apps/v1", "true"]
               for line in out.splitlines()), out
    out = kubectl(srv, "api-resources", "--api-group=").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["configmaps"][1:3] == ["cm", "v1"] and "secrets" in rows
    names = {r["name"] for r in get(srv, "/apis/apps/v1")["resources"]}
    assert names == {"daemonsets", "daemonsets/status"}


def test_one_pod_per_labelled_node_holding_no_device(srv, slurmd):
    ds = get(srv, DS)
    uid = ds["metadata"]["uid"]
    assert ds["metadata"]["generation"] == 1
    assert ds["metadata"]["annotations"][
        "deprecated.daemonset.template.generation"] == "1"
    for node, (pod,) in pods(srv).items():
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["name"].startswith("slurmd-") and \
            meta["generateName"] == "slurmd-"
        assert meta["ownerReferences"] == [{
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "slurmd",
            "uid": uid, "controller": True, "blockOwnerDeletion": True}]
        labels = meta["labels"]
        assert labels["app.kubernetes.io/name"] == "slurmd"
        assert labels["pod-template-generation"] == "1"
        assert labels["controller-revision-hash"]
        assert spec["nodeName"] == node
        assert spec["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"] == {
                "nodeSelectorTerms": [{"matchFields": [{
                    "key": "metadata.name", "operator": "In",
                    "values": [node]}]}]}
        # the daemon tolerations are added after the template's own
        keys = [(t.get("key"), t["effect"]) for t in spec["tolerations"]]
        for key in ("disk-pressure", "memory-pressure", "pid-pressure",
                    "unschedulable", "network-unavailable"):
            assert (f"node.kubernetes.io/{key}", "NoSchedule") in keys, keys
        assert len(keys) == len(set(keys)), keys
        # Priority admission, as for any pod
        assert spec["priority"] == 1000000000
        # no device, no claim: the shared pool keeps what no job holds
        assert "resourceClaims" not in spec
        for c in spec["containers"]:
            assert "claims" not in c["resources"]
            assert set(c["resources"].get("requests", {})) <= \
                {"cpu", "memory"}
            assert c["image"] == IMAGE
    res = kubectl(srv, "-n", NS, "rollout", "status", "daemonset/slurmd",
                  "--timeout=30s")
    assert 'daemon set "slurmd" successfully rolled out' in res.stdout
    table = kubectl(srv, "-n", NS, "get", "ds", "-o", "wide").stdout
    header, row = table.splitlines()
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY",
                              "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR",
                              "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    cells = row.split()
    assert cells[:7] == ["slurmd", "2", "2", "2", "2", "2",
                         f"{LABEL}=true"]
    assert cells[8:] == ["slurmd,munge", f"{IMAGE},{IMAGE}",
                         "app.kubernetes.io/name=slurmd"]
    status = get(srv, DS)["status"]
    assert status == {"currentNumberScheduled": 2, "numberMisscheduled": 0,
                      "desiredNumberScheduled": 2, "numberReady": 2,
                      "observedGeneration": 1, "updatedNumberScheduled": 2,
                      "numberAvailable": 2}, status
    events = kubectl(srv, "-n", NS, "get", "events", "--field-selector",
                     "involvedObject.kind=DaemonSet", "-o", "json").stdout
    reasons = [e["reason"] for e in json.loads(events)["items"]]
    assert reasons.count("SuccessfulCreate") >= 2, reasons


def test_secret_configmap_namespace_from_kubectl_create_and_apply(srv,
                                                                  slurmd):
    secret = get(srv, f"/api/v1/namespaces/{NS}/secrets/munge-key")
    assert secret["type"] == "Opaque" and \
        len(secret["data"]["munge.key"]) == 88   # 64 bytes in base64
    cms = kubectl(srv, "-n", NS, "get", "cm").stdout.splitlines()
    assert cms[0].split() == ["NAME", "DATA", "AGE"]
    assert [r.split()[1] for r in cms[1:]] == ["3"]
    res = kubectl(srv, "apply", "-f", "-", stdin=slurmd)
    assert res.stdout.count("unchanged") == 4, res.stdout
    assert get(srv, DS)["metadata"]["generation"] == 1
    table = kubectl(srv, "-n", NS, "get", "secrets").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert table[1].split()[:3] == ["munge-key", "Opaque", "1"]


# ---------------------------------------------------------------- controller

def test_deleted_pod_comes_back_on_its_node_once_gone(srv, slurmd):
    (old,) = pods(srv)[NODES[0]]
    rv = get(srv, PODS)["metadata"]["resourceVersion"]
    with WatchStream(srv, f"{PODS}?watch=1&resourceVersion={rv}") as w:
        kubectl(srv, "-n", NS, "delete", "pod", old["metadata"]["name"])
        got = wait_pods(srv, NODES[:2], "the pod replaced")
        seen = []
        while True:
            ev = w.next_event(timeout=2)
            if ev is None:
                break
            seen.append((ev["type"], ev["object"]["metadata"]["uid"],
                         ev["object"]["spec"]["nodeName"],
                         bool(ev["object"]["metadata"].get(
                             "deletionTimestamp"))))
            if ev["type"] == "ADDED":
                break
    (new,) = got[NODES[0]]
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    # graceful: terminating first, then gone, and only then a new pod
    types = [(t, uid == old["metadata"]["uid"], term)
             for t, uid, _, term in seen]
    assert types[0] == ("MODIFIED", True, True), seen
    assert types.index(("DELETED", True, True)) < \
        types.index(("ADDED", False, False)), seen
    assert seen[-1][2] == NODES[0]


def test_unlabelled_or_noexecute_tainted_node_loses_its_pod(srv, slurmd):
    label(srv, NODES[1], on=False)
    wait_pods(srv, NODES[:1], f"no pod on {NODES[1]}")
    wait_for(lambda: get(srv, DS)["status"]["desiredNumberScheduled"] == 1,
             10, "desired 1")
    label(srv, NODES[1])
    wait_pods(srv, NODES[:2], f"a pod on {NODES[1]} again")
    # NoSchedule taints are tolerated (the template's own toleration)...
    kubectl(srv, "taint", "node", NODES[0], "example.test/x=y:NoSchedule")
    kubectl(srv, "cordon", NODES[1])
    settled(srv)
    wait_pods(srv, NODES[:2], "pods kept on tainted and cordoned nodes")
    # ... a NoExecute one the pod does not tolerate evicts it
    kubectl(srv, "taint", "node", NODES[0], "example.test/evict=y:NoExecute")
    wait_pods(srv, NODES[1:2], f"no pod on {NODES[0]}")
    for args in (("taint", "node", NODES[0], "example.test/evict-"),
                 ("taint", "node", NODES[0], "example.test/x-"),
                 ("uncordon", NODES[1])):
        kubectl(srv, *args)
    wait_pods(srv, NODES[:2], "both pods back")


def pod_events_since(srv, rv):
    """The pods' watch events after `rv` (replayed from the history), up
    to now: until a bookmark at the current resourceVersion."""
    now = int(srv.server_info()["resourceVersion"])
    out = []
    with WatchStream(srv, f"{PODS}?watch=1&allowWatchBookmarks=true&"
                     f"resourceVersion={rv}") as w:
        while True:
            ev = w.next_event(timeout=10)
            assert ev is not None, "the watch ended"
            if ev["type"] != "BOOKMARK":
                out.append(ev)
            elif int(ev["object"]["metadata"]["resourceVersion"]) >= now:
                return out


def availability(events, nodes):
    """After each event, how many of `nodes` had a Ready pod that was not
    terminating."""
    state, out = {}, []
    for ev in events:
        obj = ev["object"]
        uid = obj["metadata"]["uid"]
        if ev["type"] == "DELETED":
            state.pop(uid, None)
        else:
            ready = any(c["type"] == "Ready" and c["status"] == "True"
                        for c in obj["status"].get("conditions") or [])
            up = ready and not obj["metadata"].get("deletionTimestamp")
            state[uid] = (obj["spec"]["nodeName"], up)
        out.append(len({n for n, up in state.values() if up and n in nodes}))
    return out


def test_template_change_rolls_one_node_at_a_time(srv, slurmd):
    before = get(srv, DS)
    listed = get(srv, PODS)
    gen = int(before["metadata"]["annotations"][
        "deprecated.daemonset.template.generation"])
    kubectl(srv, "-n", NS, "set", "env", "daemonset/slurmd", "-c", "slurmd",
            "SLURM_DEBUG=debug2")
    res = kubectl(srv, "-n", NS, "rollout", "status", "daemonset/slurmd",
                  "--timeout=30s")
    assert "successfully rolled out" in res.stdout
    settled(srv)
    after = get(srv, DS)
    assert after["metadata"]["generation"] == \
        before["metadata"]["generation"] + 1
    assert after["metadata"]["annotations"][
        "deprecated.daemonset.template.generation"] == str(gen + 1)
    # a strategic merge patch: env merged by name, nothing else lost
    def env(ds):
        return ds["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env(after) == env(before) + [{"name": "SLURM_DEBUG",
                                         "value": "debug2"}]
    got = pods(srv)
    for node in NODES[:2]:
        (p,) = got[node]
        assert p["metadata"]["labels"]["pod-template-generation"] == \
            str(gen + 1)
        assert {"name": "SLURM_DEBUG", "value": "debug2"} in \
            p["spec"]["containers"][0]["env"]
    # maxUnavailable 1: one node at a time, never both without a ready pod
    initial = [{"type": "ADDED", "object": p} for p in listed["items"]]
    events = pod_events_since(srv, listed["metadata"]["resourceVersion"])
    counts = availability(initial + events, NODES[:2])[len(initial) - 1:]
    assert [e["type"] for e in events].count("DELETED") == 2, events
    assert counts[0] == 2 and min(counts) == 1 and counts[-1] == 2, counts


def test_failed_pod_is_replaced(srv, slurmd):
    (old,) = pods(srv)[NODES[1]]
    name = old["metadata"]["name"]
    code, _, body = srv.request(
        "PATCH", f"{PODS}/{name}/status",
        {"status": {"phase": "Failed", "reason": "Evicted"}},
        content_type="application/merge-patch+json")
    assert code == 200, body
    got = wait_pods(srv, NODES[:2], "the failed pod replaced",
                    lambda p: running(p) and p["metadata"]["name"] != name)
    assert got[NODES[1]][0]["metadata"]["name"] != name
    events = json.loads(kubectl(srv, "-n", NS, "get", "events", "-o",
                                "json").stdout)["items"]
    assert any(e["reason"] == "FailedDaemonPod" and name in e["message"]
               for e in events)


def test_on_delete_strategy_replaces_only_deleted_pods(srv, slurmd):
    kubectl(srv, "-n", NS, "patch", "daemonset", "slurmd", "-p",
            json.dumps({"spec": {"updateStrategy": {
                "type": "OnDelete", "rollingUpdate": None}}}))
    kubectl(srv, "-n", NS, "set", "env", "daemonset/slurmd", "-c", "slurmd",
            "SLURM_DEBUG=debug3")
    settled(srv)
    gen = get(srv, DS)["metadata"]["annotations"][
        "deprecated.daemonset.template.generation"]
    got = pods(srv)
    assert all(ps[0]["metadata"]["labels"]["pod-template-generation"] != gen
               for ps in got.values()), got
    status = get(srv, DS)["status"]
    assert "updatedNumberScheduled" not in status and \
        status["observedGeneration"] == get(srv, DS)["metadata"]["generation"]
    kubectl(srv, "-n", NS, "delete", "pod",
            got[NODES[0]][0]["metadata"]["name"])
    got = wait_pods(srv, NODES[:2], "one pod replaced", lambda p: running(p)
                    and (p["spec"]["nodeName"] != NODES[0] or p["metadata"][
                        "labels"]["pod-template-generation"] == gen))
    assert got[NODES[1]][0]["metadata"]["labels"][
        "pod-template-generation"] != gen
    kubectl(srv, "-n", NS, "patch", "daemonset", "slurmd", "-p", json.dumps(
        {"spec": {"updateStrategy": {"type": "RollingUpdate"}}}))
    kubectl(srv, "-n", NS, "rollout", "status", "daemonset/slurmd",
            "--timeout=30s")
    wait_pods(srv, NODES[:2], "all pods updated", lambda p: running(p) and
              p["metadata"]["labels"]["pod-template-generation"] == gen)


def test_validation(srv, slurmd):
    base = yaml.safe_load(get_yaml(srv))

    def invalid(mutate):
        obj = json.loads(json.dumps(base))
        obj["metadata"] = {"name": "bad", "namespace": NS}
        obj.pop("status")
        mutate(obj)
        res = kubectl(srv, "apply", "-f", "-", stdin=json.dumps(obj),
                      ok=False)
        assert res.returncode != 0
        return res.stderr
    spec = lambda o: o["spec"]  # noqa: E731
    err = invalid(lambda o: spec(o).pop("selector"))
    assert 'spec.template.metadata.labels: Invalid value: map[string]string' \
        '{"app.kubernetes.io/name":"slurmd"}: `selector` does not match ' \
        'template `labels`' in err, err
    err = invalid(lambda o: spec(o)["template"]["spec"].update(
        containers=[]))
    assert "spec.template.spec.containers: Required value" in err, err
    err = invalid(lambda o: spec(o)["template"]["spec"]["containers"][0].pop(
        "image"))
    assert "spec.template.spec.containers[0].image: Required value" in err
    err = invalid(lambda o: spec(o)["template"]["spec"].update(
        restartPolicy="Never"))
    assert 'spec.template.spec.restartPolicy: Unsupported value: ' \
        '"Never"' in err
    code, _, body = srv.request("PATCH", DS, {"spec": {"selector": {
        "matchLabels": {"other": "x"}}}},
        content_type="application/merge-patch+json")
    assert code == 422 and "spec.selector" in body["message"] and \
        "field is immutable" in body["message"], body


def get_yaml(srv):
    return kubectl(srv, "-n", NS, "get", "ds", "slurmd", "-o",
                   "yaml").stdout


def test_secret_and_configmap_rules(srv):
    path = "/api/v1/namespaces/default/secrets"
    code, _, body = srv.request("POST", path, {
        "metadata": {"name": "b64"}, "data": {"k": "YWJjZA"}})
    assert code == 400 and body["message"] == (
        'Secret in version "v1" cannot be handled as a Secret: illegal '
        'base64 data at input byte 4'), body
    code, _, body = srv.request("POST", path, {
        "metadata": {"name": "sd"}, "data": {"a": "YQ==", "b": "Yg=="},
        "stringData": {"b": "B", "c": "C"}, "immutable": True})
    assert code == 201, body
    assert body["type"] == "Opaque" and "stringData" not in body
    assert body["data"] == {"a": "YQ==", "b": "Qg==", "c": "Qw=="}
    code, _, body = srv.request("PATCH", path + "/sd",
                                {"stringData": {"a": "x"}},
                                content_type="application/merge-patch+json")
    assert code == 422 and "data: Forbidden: field is immutable when " \
        "`immutable` is set" in body["message"], body
    cms = "/api/v1/namespaces/default/configmaps"
    code, _, body = srv.request("POST", cms, {
        "metadata": {"name": "c"}, "data": {"bad key": "v", "k": "v"},
        "binaryData": {"k": "dg=="}})
    assert code == 422, body
    fields = {c["field"] for c in body["details"]["causes"]}
    assert fields == {"data[bad key]", "data[k]"}, body


def test_deleting_the_daemonset_deletes_its_pods(srv, slurmd):
    assert pods(srv)
    res = kubectl(srv, "-n", NS, "delete", "daemonset", "slurmd")
    assert "deleted" in res.stdout
    wait_for(lambda: not get(srv, PODS)["items"], 20, "the pods gone")
    settled(srv)
    stats = controller(srv)
    assert stats["daemonSets"] == 0 and stats["orphanedOwners"] == 0, stats


# ---------------------------------------------------------------- cost

def claim(i):
    return {"metadata": {"name": f"c{i}"}, "spec": {"devices": {"requests": [
        {"name": "cpu", "exactly": {"deviceClassName": "dra.cpu"}}]}}}


def test_no_work_per_claim_write_without_a_daemonset(tmp_path):
    """The plugin's benchmarks write thousands of claims: without a
    DaemonSet they (and Node and pod writes) wake nothing; with one, only
    what concerns it does."""
    with TestApiServer(seeds=[seed(tmp_path / "seed.json")]) as fresh:
        for i in range(200):
            code, _, body = fresh.request("POST", CLAIMS, claim(i))
            assert code == 201, body
        kubectl(fresh, "label", "node", NODES[0], "x=y")
        stats = controller(fresh)
        assert stats["eventsNoted"] == 0 and stats["passes"] == 0, stats
        ds = yaml.safe_load(run_agent_daemonset(fresh))
        assert ds["status"]["desiredNumberScheduled"] == 3
        # the defaults, on a DaemonSet that sets none
        assert ds["spec"]["updateStrategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
        assert ds["spec"]["revisionHistoryLimit"] == 10
        tspec = ds["spec"]["template"]["spec"]
        assert (tspec["restartPolicy"], tspec["dnsPolicy"],
                tspec["terminationGracePeriodSeconds"],
                tspec["schedulerName"]) == ("Always", "ClusterFirst", 30,
                                            "default-scheduler")
        assert "enableServiceLinks" not in tspec   # a pod's default only
        busy = controller(fresh)
        assert busy["passes"] > 0 and busy["podsCreated"] == 3, busy
        for i in range(200, 300):
            assert fresh.request("POST", CLAIMS, claim(i))[0] == 201
        settled(fresh)
        assert controller(fresh)["eventsNoted"] == busy["eventsNoted"]


def run_agent_daemonset(server):
    """A minimal DaemonSet on every node; its status once all are
    scheduled."""
    kubectl(server, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [
                                  {"name": "a", "image": "pause:3.10"}]}}}}))
    path = "/apis/apps/v1/namespaces/default/daemonsets/agent"
    wait_for(lambda: server.request("GET", path)[2]["status"].get(
        "currentNumberScheduled") == 3, 20, "3 pods scheduled")
    settled(server)
    return kubectl(server, "get", "ds", "agent", "-o", "yaml").stdout


def test_slurmd_example_overlay_applies_twice(tmp_path):
    """`kubectl kustomize etc/kubernetes/overlays/slurmd-example | kubectl
    apply -f -`: every object (the base, the Namespace, PriorityClass,
    ConfigMap and DaemonSet) is accepted, and again unchanged."""
    text = kustomize(str(EXAMPLE))
    kinds = {d["kind"] for d in yaml.safe_load_all(text) if d}
    assert {"ConfigMap", "Namespace", "PriorityClass", "DaemonSet"} <= kinds
    with TestApiServer() as fresh:
        res = kubectl(fresh, "apply", "-f", "-", stdin=text)
        count = len([d for d in yaml.safe_load_all(text) if d])
        assert res.stdout.count(" created") == count, res.stdout
        res = kubectl(fresh, "apply", "-f", "-", stdin=text)
        assert res.stdout.count(" unchanged") == count, res.stdout
        res = kubectl(fresh, "apply", "--server-side", "--force-conflicts",
                      "-f", "-", stdin=text)
        assert res.stdout.count("serverside-applied") == count, res.stdout
