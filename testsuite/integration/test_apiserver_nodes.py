# SPDX-License-Identifier: GPL-2.0-or-later
"""core/v1 Nodes in the test API server, as the plugin's discovery of
Kubernetes nodes (Slurm EXTERNAL nodes) will read them: registered at start
for every node the slices name (seeded Nodes completed), get/list/watch with
selectors, pages and bookmarks, create/update/delete, the three patch types,
the /status subresource (Ready flipped as kubelet does), the node lifecycle
controller's taints, validation, RBAC, the /_test/ controls, and the real
kubectl 1.32: get (table, wide, json), cordon/uncordon, label, get --watch,
describe, delete.  Standalone server, no Slurm."""

import json
import os
import queue
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apiserver_fixture import TestApiServer, WatchStream, KUBECTL, wait_for  # noqa: E402

NODES = "/api/v1/nodes"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_MEMORY = "65536000Ki"          # 64000Mi, the harness's RealMemory
DEFAULT_CAPACITY = "65638400Ki"        # + kubelet's 100Mi eviction threshold

needs_kubectl = pytest.mark.skipif(not os.path.exists(KUBECTL),
                                   reason="kubectl not installed")


def cpu_slice(node, cpus):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-dra.cpu"},
            "spec": {"driver": "dra.cpu", "nodeName": node,
                     "pool": {"name": node, "generation": 1,
                              "resourceSliceCount": 1},
                     "devices": [{"name": f"cpudev{i:03d}", "attributes": {
                         "dra.cpu/cpuID": {"int": i}}} for i in range(cpus)]}}


def grouped_slice(node, groups):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-dra.cpu"},
            "spec": {"driver": "dra.cpu", "nodeName": node,
                     "pool": {"name": node, "generation": 1,
                              "resourceSliceCount": 1},
                     "devices": [{"name": f"cpudevnuma{i:03d}",
                                  "allowMultipleAllocations": True,
                                  "capacity": {"dra.cpu/cpu": {
                                      "value": str(n)}}}
                                 for i, n in enumerate(groups)]}}


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """kn-a: slices only (4 CPUs); kn-b: slices (2 NUMA groups of 3) and a
    seeded Node giving its memory; kn-c: a seeded Node without slices."""
    path = tmp_path_factory.mktemp("seed") / "seed.json"
    path.write_text(json.dumps({"items": [
        cpu_slice("kn-a", 4), grouped_slice("kn-b", [3, 3]),
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kn-b"},
         "status": {"allocatable": {"memory": "131072000Ki"}}},
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "kn-c", "labels": {"rack": "r2"}}}]}))
    return str(path)


@pytest.fixture(scope="module")
def srv(seed):
    with TestApiServer(seeds=[seed], bookmark_interval=0.3,
                       extra_args=["--node-agents"]) as server:
        yield server


def ok(srv, method, path, body=None, ctype="application/json",
       code=(200, 201), token="admin"):
    got, _, out = srv.request(method, path, body, content_type=ctype,
                              token=token)
    assert got in code, out
    return out


def node(srv, name):
    return ok(srv, "GET", f"{NODES}/{name}")


def taints(obj):
    return {(t["key"], t["effect"]) for t in obj["spec"].get("taints", [])}


def ready(obj):
    return next(c for c in obj["status"]["conditions"]
                if c["type"] == "Ready")


def new_node(srv, name, **spec):
    """A Node registered through the HTTP API, as kubelet does it."""
    return ok(srv, "POST", NODES, {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                   "allocatable": {"cpu": "2", "memory": "4Gi",
                                   "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True",
                                   "reason": "KubeletReady",
                                   "message": "kubelet is posting ready "
                                   "status"}]}})


def kubectl(srv, *args, ok=True, **kw):
    res = srv.kubectl(*args, **kw)
    if ok:
        assert res.returncode == 0, res.stderr
    return res


class Lines:
    """A long-running kubectl whose output lines are read with timeouts."""

    def __init__(self, srv, *args):
        self.proc = subprocess.Popen(
            [KUBECTL, "--kubeconfig", srv.kubeconfig, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=lambda: [self.lines.put(line) for line in
                                         self.proc.stdout],
                         daemon=True).start()

    def next(self, timeout=20):
        try:
            line = self.lines.get(timeout=timeout).rstrip("\n")
        except queue.Empty:
            self.close()
            raise AssertionError(f"no line from kubectl in {timeout}s after "
                                 f"{self.seen}; stderr: "
                                 f"{self.proc.stderr.read()}") from None
        self.seen.append(line)
        return line

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


# ---------------------------------------------------------------- start

def test_nodes_registered_at_start(srv):
    out = ok(srv, "GET", NODES)
    assert out["kind"] == "NodeList" and out["apiVersion"] == "v1"
    assert [i["metadata"]["name"] for i in out["items"]] == \
        ["kn-a", "kn-b", "kn-c"]
    a, b, c = out["items"]
    for n in (a, b, c):
        meta = n["metadata"]
        assert meta["uid"] and meta["creationTimestamp"]
        assert int(meta["resourceVersion"]) <= int(out["metadata"][
            "resourceVersion"])
        assert meta["labels"]["kubernetes.io/hostname"] == meta["name"]
        assert meta["labels"]["kubernetes.io/os"] == "linux"
        assert "unschedulable" not in n["spec"] and "taints" not in n["spec"]
        assert ready(n)["status"] == "True"
        assert ready(n)["reason"] == "KubeletReady"
        assert [c["type"] for c in n["status"]["conditions"]] == \
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        assert n["status"]["nodeInfo"]["kubeletVersion"] == "v1.34.0"
        assert n["status"]["daemonEndpoints"] == \
            {"kubeletEndpoint": {"Port": 10250}}
        assert n["status"]["allocatable"]["pods"] == "110"
    # the CPUs the dra.cpu slices publish, else a default; memory: default
    # or the seed's (capacity = allocatable + the 100Mi eviction threshold)
    assert a["status"]["allocatable"]["cpu"] == "4"
    assert a["status"]["allocatable"]["memory"] == DEFAULT_MEMORY
    assert a["status"]["capacity"]["memory"] == DEFAULT_CAPACITY
    assert b["status"]["allocatable"]["cpu"] == "6"
    assert b["status"]["allocatable"]["memory"] == "131072000Ki"
    assert b["status"]["capacity"]["memory"] == "131174400Ki"
    assert c["status"]["allocatable"]["cpu"] == "64"
    assert c["metadata"]["labels"]["rack"] == "r2"
    addrs = {x["type"]: x["address"] for x in a["status"]["addresses"]}
    assert addrs["Hostname"] == "kn-a" and addrs["InternalIP"]
    assert list(a["status"]["capacity"]) == sorted(a["status"]["capacity"])


def test_synthetic_nodes_get_nodes_too():
    with TestApiServer(synthetic_nodes=3) as srv:
        out = ok(srv, "GET", NODES + "?limit=2")
        assert [i["metadata"]["name"] for i in out["items"]] == \
            ["node00000", "node00001"]
        assert out["metadata"]["remainingItemCount"] == 1
        rest = ok(srv, "GET", NODES + "?limit=2&continue=" +
                  out["metadata"]["continue"])
        assert [i["metadata"]["name"] for i in rest["items"]] == \
            ["node00002"]
        one = rest["items"][0]
        assert one["status"]["allocatable"]["cpu"] == "128"
        assert ready(one)["status"] == "True"
        # a synthetic node is an ordinary object: it can be cordoned
        ok(srv, "PATCH", NODES + "/node00002",
           {"spec": {"unschedulable": True}}, SMP)
        assert taints(node(srv, "node00002")) == \
            {(UNSCHEDULABLE, "NoSchedule")}
        srv.churn(2, resource="nodes")
        assert "ktas.test/churn" in node(srv, "node00000")["metadata"][
            "annotations"]


def test_discovery(srv):
    doc = ok(srv, "GET", "/api/v1")
    res = {r["name"]: r for r in doc["resources"]}
    assert res["nodes"]["namespaced"] is False
    assert res["nodes"]["kind"] == "Node"
    assert res["nodes"]["shortNames"] == ["no"]
    assert {"get", "list", "watch", "create", "update", "patch",
            "delete"} <= set(res["nodes"]["verbs"])
    assert set(res["nodes/status"]["verbs"]) == {"get", "patch", "update"}
    # cluster-scoped: no namespaced path
    got, _, _ = srv.request("GET", "/api/v1/namespaces/default/nodes")
    assert got == 404


# ---------------------------------------------------------------- REST

def test_create_update_status_delete(srv):
    created = new_node(srv, "kn-crud")
    # status is kept on create (kubelet registers with it)
    assert created["status"]["allocatable"]["memory"] == "4Gi"
    assert created["metadata"]["uid"]
    got, _, out = srv.request("POST", NODES, {"metadata": {"name":
                                                           "kn-crud"}})
    assert got == 409 and out["reason"] == "AlreadyExists"
    # a main-resource update keeps the status
    obj = node(srv, "kn-crud")
    obj["metadata"]["labels"]["rack"] = "r9"
    obj["status"]["allocatable"]["memory"] = "1Gi"
    upd = ok(srv, "PUT", NODES + "/kn-crud", obj)
    assert upd["metadata"]["labels"]["rack"] == "r9"
    assert upd["status"]["allocatable"]["memory"] == "4Gi"
    # a /status update keeps the spec but, for Nodes, takes the metadata
    obj = node(srv, "kn-crud")
    obj["spec"]["unschedulable"] = True
    obj["status"]["allocatable"]["memory"] = "3Gi"
    obj["metadata"]["labels"]["from-status"] = "yes"
    upd = ok(srv, "PUT", NODES + "/kn-crud/status", obj)
    assert "unschedulable" not in upd["spec"]
    assert upd["status"]["allocatable"]["memory"] == "3Gi"
    assert upd["metadata"]["labels"]["from-status"] == "yes"
    assert upd["metadata"]["uid"] == created["metadata"]["uid"]
    # optimistic concurrency
    obj["metadata"]["resourceVersion"] = created["metadata"][
        "resourceVersion"]
    got, _, out = srv.request("PUT", NODES + "/kn-crud", obj)
    assert got == 409 and out["reason"] == "Conflict"
    out = ok(srv, "DELETE", NODES + "/kn-crud")
    assert out["status"] == "Success"
    assert out["details"] == {"name": "kn-crud", "group": "",
                              "kind": "nodes",
                              "uid": created["metadata"]["uid"]}
    got, _, out = srv.request("GET", NODES + "/kn-crud")
    assert got == 404 and out["message"] == 'nodes "kn-crud" not found'


def test_patch_types(srv):
    new_node(srv, "kn-patch")
    out = ok(srv, "PATCH", NODES + "/kn-patch",
             {"metadata": {"labels": {"a": "1"}}}, SMP)
    assert out["metadata"]["labels"]["a"] == "1"
    out = ok(srv, "PATCH", NODES + "/kn-patch",
             {"metadata": {"labels": {"a": None, "b": "2"}}}, MERGE)
    assert "a" not in out["metadata"]["labels"]
    out = ok(srv, "PATCH", NODES + "/kn-patch",
             [{"op": "add", "path": "/spec/taints", "value": [
                 {"key": "dedicated", "value": "slurm",
                  "effect": "NoSchedule"}]}], JSONP)
    assert out["spec"]["taints"] == [{"key": "dedicated", "value": "slurm",
                                      "effect": "NoSchedule"}]
    # taints are replaced as a whole by a strategic merge (no merge key);
    # a status patch cannot touch the spec
    out = ok(srv, "PATCH", NODES + "/kn-patch/status",
             {"spec": {"unschedulable": True}, "status": {
                 "addresses": [{"type": "InternalIP",
                                "address": "10.9.9.9"}]}}, SMP)
    assert "unschedulable" not in out["spec"]
    assert out["status"]["addresses"] == [{"type": "InternalIP",
                                           "address": "10.9.9.9"}]
    out = ok(srv, "PATCH", NODES + "/kn-patch/status", {"status": {
        "addresses": [{"type": "Hostname", "address": "kn-patch"}]}}, SMP)
    assert [a["type"] for a in out["status"]["addresses"]] == \
        ["InternalIP", "Hostname"]   # merged by type
    # dry run changes nothing
    before = node(srv, "kn-patch")
    ok(srv, "PATCH", NODES + "/kn-patch?dryRun=All",
       {"spec": {"unschedulable": True}}, SMP)
    assert node(srv, "kn-patch") == before
    ok(srv, "DELETE", NODES + "/kn-patch")


def test_cordon_by_patch_gets_the_controllers_taint(srv):
    new_node(srv, "kn-cordon", taints=[{"key": "dedicated",
                                        "effect": "NoSchedule"}])
    out = ok(srv, "PATCH", NODES + "/kn-cordon",
             {"spec": {"unschedulable": True}}, SMP)
    # the answer is the write itself; the controller's follows it
    assert out["spec"]["unschedulable"] is True
    assert taints(out) == {("dedicated", "NoSchedule")}
    obj = node(srv, "kn-cordon")
    assert taints(obj) == {("dedicated", "NoSchedule"),
                           (UNSCHEDULABLE, "NoSchedule")}
    added = next(t for t in obj["spec"]["taints"]
                 if t["key"] == UNSCHEDULABLE)
    assert added["timeAdded"].endswith("Z")
    assert int(obj["metadata"]["resourceVersion"]) > \
        int(out["metadata"]["resourceVersion"])
    # a controller taint without its cause is removed, others are kept
    obj["spec"]["unschedulable"] = False
    ok(srv, "PUT", NODES + "/kn-cordon", obj)
    assert taints(node(srv, "kn-cordon")) == {("dedicated", "NoSchedule")}
    ok(srv, "DELETE", NODES + "/kn-cordon")


def test_status_patch_flips_ready_and_taints_follow(srv):
    new_node(srv, "kn-ready")
    rv = node(srv, "kn-ready")["metadata"]["resourceVersion"]
    ok(srv, "PATCH", NODES + "/kn-ready/status", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
         "message": "container runtime is down"}]}}, SMP)
    obj = node(srv, "kn-ready")
    assert ready(obj)["status"] == "False"
    assert taints(obj) == {(NOT_READY, "NoSchedule"),
                           (NOT_READY, "NoExecute")}
    # two controller passes, two writes, after the status write
    with WatchStream(srv, f"{NODES}?watch=1&resourceVersion={rv}&"
                     "fieldSelector=metadata.name%3Dkn-ready") as w:
        events = [w.next_non_bookmark() for _ in range(3)]
    assert [e["type"] for e in events] == ["MODIFIED"] * 3
    assert [taints(e["object"]) for e in events] == [
        set(), {(NOT_READY, "NoSchedule")},
        {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}]
    ok(srv, "PATCH", NODES + "/kn-ready/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "message": "kubelet is posting ready status"}]}}, SMP)
    obj = node(srv, "kn-ready")
    assert ready(obj)["status"] == "True" and taints(obj) == set()
    ok(srv, "DELETE", NODES + "/kn-ready")


def test_validation(srv):
    got, _, out = srv.request("POST", NODES, {"metadata": {"name": "kn-v"},
                                              "spec": {"taints": [
        {"key": "k", "effect": "NoSchedule"},
        {"key": "k", "value": "other", "effect": "NoSchedule"},
        {"key": "k2", "effect": "Sometimes"}, {"effect": "NoExecute"}]}})
    assert got == 422 and out["reason"] == "Invalid"
    fields = {c["field"]: c["message"] for c in out["details"]["causes"]}
    assert "taints must be unique by key and effect pair" in \
        fields["spec.taints[1]"]
    assert fields["spec.taints[2].effect"].startswith("Unsupported value")
    assert fields["spec.taints[3].key"] == "Required value"
    got, _, out = srv.request("POST", NODES, {
        "metadata": {"name": "kn-v"},
        "status": {"capacity": {"memory": "lots"}}})
    assert got == 400 and "quantities must match" in out["message"]
    created = new_node(srv, "kn-v", podCIDR="10.77.0.0/24",
                       podCIDRs=["10.77.0.0/24"])
    created["spec"]["podCIDRs"] = ["10.78.0.0/24"]
    got, _, out = srv.request("PUT", NODES + "/kn-v", created)
    assert got == 422
    assert out["details"]["causes"][0]["field"] == "spec.podCIDRs"
    assert "may not change podCIDR" in out["message"]
    ok(srv, "DELETE", NODES + "/kn-v")


def test_field_and_label_selectors_and_pages(srv):
    out = ok(srv, "GET", NODES + "?fieldSelector=metadata.name%3Dkn-b")
    assert [i["metadata"]["name"] for i in out["items"]] == ["kn-b"]
    out = ok(srv, "GET", NODES + "?fieldSelector=spec.unschedulable%3D"
             "false")
    assert {"kn-a", "kn-b", "kn-c"} <= {i["metadata"]["name"]
                                        for i in out["items"]}
    got, _, out = srv.request("GET", NODES + "?fieldSelector=spec.nodeName"
                              "%3Dx")
    assert got == 400 and "field label not supported" in out["message"]
    out = ok(srv, "GET", NODES + "?labelSelector=kubernetes.io%2Fhostname"
             "%3Dkn-a")
    assert [i["metadata"]["name"] for i in out["items"]] == ["kn-a"]
    out = ok(srv, "GET", NODES + "?labelSelector=rack+in+%28r2%2Cr3%29")
    assert [i["metadata"]["name"] for i in out["items"]] == ["kn-c"]
    names, cont = [], ""
    while True:
        page = ok(srv, "GET", NODES + "?limit=1" +
                  (f"&continue={cont}" if cont else ""))
        names += [i["metadata"]["name"] for i in page["items"]]
        cont = page["metadata"].get("continue")
        if not cont:
            break
    assert names == sorted(names) and {"kn-a", "kn-b", "kn-c"} <= set(names)


def test_watch_cordon_modified_delete_deleted_and_bookmarks(srv):
    created = new_node(srv, "kn-watch")
    rv = created["metadata"]["resourceVersion"]
    with WatchStream(srv, f"{NODES}?watch=1&resourceVersion={rv}&"
                     "allowWatchBookmarks=true") as w:
        ok(srv, "PATCH", NODES + "/kn-watch",
           {"spec": {"unschedulable": True}}, SMP)
        ev = w.next_non_bookmark()
        assert ev["type"] == "MODIFIED"
        assert ev["object"]["spec"]["unschedulable"] is True
        ev = w.next_non_bookmark()
        assert ev["type"] == "MODIFIED"
        assert taints(ev["object"]) == {(UNSCHEDULABLE, "NoSchedule")}
        ok(srv, "DELETE", NODES + "/kn-watch")
        ev = w.next_non_bookmark()
        assert ev["type"] == "DELETED"
        assert ev["object"]["metadata"]["name"] == "kn-watch"
        mark = wait_for(lambda: (lambda e: e if e and e["type"] == "BOOKMARK"
                                 else None)(w.next_event()), 10,
                        what="a bookmark")
        assert mark["object"]["kind"] == "Node"
        assert int(mark["object"]["metadata"]["resourceVersion"]) >= \
            int(ev["object"]["metadata"]["resourceVersion"])
    # no resourceVersion: the nodes that exist first, as ADDED
    with WatchStream(srv, f"{NODES}?watch=1&labelSelector=rack%3Dr2") as w:
        ev = w.next_event()
        assert ev["type"] == "ADDED"
        assert ev["object"]["metadata"]["name"] == "kn-c"
        # leaving the selection is a DELETED
        ok(srv, "PATCH", NODES + "/kn-c",
           {"metadata": {"labels": {"rack": "r3"}}}, MERGE)
        ev = w.next_non_bookmark()
        assert ev["type"] == "DELETED"
    ok(srv, "PATCH", NODES + "/kn-c", {"metadata": {"labels":
                                                    {"rack": "r2"}}}, MERGE)


# ---------------------------------------------------------------- RBAC

def test_rbac_read_only_token_cannot_patch(srv):
    srv.add_token("node-reader-token", user="node-reader", rules=[
        {"verbs": ["get", "list", "watch"], "resources": ["nodes"]}])
    ok(srv, "GET", NODES, token="node-reader-token")
    ok(srv, "GET", NODES + "/kn-a", token="node-reader-token")
    got, _, out = srv.request("PATCH", NODES + "/kn-a",
                              {"spec": {"unschedulable": True}},
                              content_type=SMP, token="node-reader-token")
    assert got == 403 and out["reason"] == "Forbidden"
    assert out["message"] == (
        'nodes "kn-a" is forbidden: User "node-reader" cannot patch resource '
        '"nodes" in API group "" at the cluster scope')
    got, _, out = srv.request("PATCH", NODES + "/kn-a/status",
                              {"status": {}}, content_type=SMP,
                              token="node-reader-token")
    assert got == 403 and 'resource "nodes/status"' in out["message"]
    # a namespaced grant (a Role's) never reaches cluster-scoped nodes
    srv.add_token("ns-node-token", user="ns-user", rules=[
        {"verbs": ["*"], "resources": ["nodes"], "namespaces": ["default"]}])
    got, _, out = srv.request("GET", NODES, token="ns-node-token")
    assert got == 403 and "at the cluster scope" in out["message"]
    # kubelet-like: may write the status but not cordon
    srv.add_token("kubelet-token", user="system:node:kn-a", rules=[
        {"verbs": ["get", "patch"], "resources": ["nodes/status"]},
        {"verbs": ["get"], "resources": ["nodes"]}])
    ok(srv, "PATCH", NODES + "/kn-a/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True"}]}}, SMP, token="kubelet-token")
    assert node(srv, "kn-a")["metadata"]["name"] == "kn-a"


@needs_kubectl
def test_kubectl_rbac_refusal(srv):
    srv.add_token("node-reader-token", user="node-reader", rules=[
        {"verbs": ["get", "list", "watch"], "resources": ["nodes"]}])
    res = kubectl(srv, "--token", "node-reader-token", "get", "nodes")
    assert "kn-a" in res.stdout
    # kubectl cordon reports a refused patch but still exits 0
    res = kubectl(srv, "--token", "node-reader-token", "cordon", "kn-a",
                  ok=False)
    assert 'nodes "kn-a" is forbidden: User "node-reader" cannot patch ' \
        'resource "nodes" in API group "" at the cluster scope' in res.stderr
    assert "unschedulable" not in node(srv, "kn-a")["spec"]


# ---------------------------------------------------------------- kubectl

@needs_kubectl
def test_kubectl_get_nodes_table_and_json(srv):
    lines = kubectl(srv, "get", "nodes").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    row = next(r.split() for r in lines if r.startswith("kn-a "))
    assert row[:3] == ["kn-a", "Ready", "<none>"] and row[4] == "v1.34.0"
    wide = kubectl(srv, "get", "nodes", "kn-a", "-o", "wide").stdout
    head, row = wide.splitlines()[:2]
    assert head.split()[5:] == ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE",
                                "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    ip = next(a["address"] for a in node(srv, "kn-a")["status"]["addresses"]
              if a["type"] == "InternalIP")
    assert row.split()[5:7] == [ip, "<none>"]
    doc = json.loads(kubectl(srv, "get", "nodes", "-o", "json").stdout)
    assert doc["kind"] == "List"
    kn_a = next(i for i in doc["items"] if i["metadata"]["name"] == "kn-a")
    assert kn_a["status"]["allocatable"]["memory"] == DEFAULT_MEMORY
    one = json.loads(kubectl(srv, "get", "node", "kn-b", "-o",
                             "json").stdout)
    assert one["kind"] == "Node"
    assert one["status"]["allocatable"]["memory"] == "131072000Ki"
    out = kubectl(srv, "get", "no", "-o", "name").stdout.split()
    assert {"node/kn-a", "node/kn-b", "node/kn-c"} <= set(out)
    # roles come from node-role.kubernetes.io/ labels
    kubectl(srv, "label", "node", "kn-c", "node-role.kubernetes.io/worker=")
    row = kubectl(srv, "get", "node", "kn-c").stdout.splitlines()[1]
    assert row.split()[:3] == ["kn-c", "Ready", "worker"]
    kubectl(srv, "label", "node", "kn-c", "node-role.kubernetes.io/worker-")


@needs_kubectl
def test_kubectl_cordon_and_uncordon(srv):
    res = kubectl(srv, "cordon", "kn-a")
    assert res.stdout.strip() == "node/kn-a cordoned"
    obj = json.loads(kubectl(srv, "get", "node", "kn-a", "-o", "json").stdout)
    assert obj["spec"]["unschedulable"] is True
    assert taints(obj) == {(UNSCHEDULABLE, "NoSchedule")}
    row = kubectl(srv, "get", "node", "kn-a").stdout.splitlines()[1]
    assert row.split()[1] == "Ready,SchedulingDisabled"
    out = kubectl(srv, "get", "nodes", "--field-selector",
                  "spec.unschedulable=true", "-o", "name").stdout
    assert out.split() == ["node/kn-a"]
    res = kubectl(srv, "cordon", "kn-a")
    assert res.stdout.strip() == "node/kn-a already cordoned"
    res = kubectl(srv, "uncordon", "kn-a")
    assert res.stdout.strip() == "node/kn-a uncordoned"
    obj = node(srv, "kn-a")
    assert "unschedulable" not in obj["spec"] and taints(obj) == set()
    out = kubectl(srv, "get", "nodes", "--field-selector",
                  "spec.unschedulable=true", "-o", "name").stdout
    assert out.split() == []


@needs_kubectl
def test_kubectl_label_and_label_selectors(srv):
    assert kubectl(srv, "label", "node", "kn-b", "slurm/partition=gpu") \
        .stdout.strip() == "node/kn-b labeled"
    out = kubectl(srv, "get", "nodes", "-l", "slurm/partition=gpu", "-o",
                  "name").stdout
    assert out.split() == ["node/kn-b"]
    res = kubectl(srv, "label", "node", "kn-b", "slurm/partition=cpu",
                  ok=False)
    assert res.returncode != 0 and "already has a value" in res.stderr
    kubectl(srv, "label", "node", "kn-b", "slurm/partition=cpu",
            "--overwrite")
    out = kubectl(srv, "get", "nodes", "-l", "slurm/partition in (cpu,x)",
                  "-o", "name").stdout
    assert out.split() == ["node/kn-b"]
    out = kubectl(srv, "get", "nodes", "-l", "!slurm/partition", "-o",
                  "name").stdout
    assert "node/kn-b" not in out.split() and "node/kn-a" in out.split()
    kubectl(srv, "label", "node", "kn-b", "slurm/partition-")
    assert "slurm/partition" not in node(srv, "kn-b")["metadata"]["labels"]


@needs_kubectl
def test_kubectl_watch_sees_cordon_and_delete(srv):
    new_node(srv, "kn-kw")
    before = srv.stats()["watchesTotal"]
    w = Lines(srv, "get", "nodes", "kn-kw", "--watch",
              "--output-watch-events", "-o",
              "jsonpath={.type} {.object.metadata.name} "
              "{.object.spec.unschedulable} "
              "{.object.spec.taints[*].key}{\"\\n\"}")
    try:
        assert w.next().split() == ["ADDED", "kn-kw"]   # kubectl's GET
        wait_for(lambda: srv.stats()["watchesTotal"] > before, 20,
                 what="kubectl's watch request")
        kubectl(srv, "cordon", "kn-kw")
        assert w.next().split() == ["MODIFIED", "kn-kw", "true"]
        assert w.next().split() == ["MODIFIED", "kn-kw", "true",
                                    UNSCHEDULABLE]
        kubectl(srv, "delete", "node", "kn-kw")
        assert w.next().split()[:2] == ["DELETED", "kn-kw"]
    finally:
        w.close()


@needs_kubectl
def test_kubectl_get_watch_table_shows_not_ready(srv):
    new_node(srv, "kn-tw")
    before = srv.stats()["watchesTotal"]
    w = Lines(srv, "get", "nodes", "kn-tw", "--watch")
    try:
        assert w.next().split()[:2] == ["NAME", "STATUS"]
        assert w.next().split()[:2] == ["kn-tw", "Ready"]
        # kubectl watches one object from RV 0 and drops the first event
        # (the state it printed), so a change before its watch is lost
        wait_for(lambda: srv.stats()["watchesTotal"] > before, 20,
                 what="kubectl's watch request")
        srv.control("POST", "/_test/nodes/kn-tw/ready", {"status": "False"})
        statuses = [w.next().split()[1] for _ in range(3)]
        assert statuses == ["NotReady"] * 3   # the status, then 2 taints
    finally:
        w.close()
    kubectl(srv, "delete", "node", "kn-tw")


@needs_kubectl
def test_kubectl_describe_node(srv):
    kubectl(srv, "cordon", "kn-b")
    try:
        out = kubectl(srv, "describe", "node", "kn-b").stdout
    finally:
        kubectl(srv, "uncordon", "kn-b")
    assert out.startswith("Name:               kn-b\n")
    assert "kubernetes.io/hostname=kn-b" in out
    assert f"Taints:             {UNSCHEDULABLE}:NoSchedule" in out
    assert "Unschedulable:      true" in out
    assert "KubeletReady" in out and "Kubelet Version:" in out
    alloc = out.split("Allocatable:")[1].split("System Info:")[0]
    assert "memory:             125Gi" in alloc   # 131072000Ki
    assert "cpu:                6" in alloc


@needs_kubectl
def test_kubectl_apply_and_delete_node(srv):
    manifest = json.dumps({"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": "kn-kubectl",
                                        "labels": {"x": "y"}}})
    res = kubectl(srv, "apply", "-f", "-", input=manifest)
    assert res.stdout.strip() == "node/kn-kubectl created"
    res = kubectl(srv, "delete", "node", "kn-kubectl")
    assert res.stdout.strip() == 'node "kn-kubectl" deleted'
    res = kubectl(srv, "get", "node", "kn-kubectl", ok=False)
    assert res.returncode != 0 and "NotFound" in res.stderr


@needs_kubectl
def test_kubectl_api_resources(srv):
    out = kubectl(srv, "api-resources", "--api-group=").stdout
    row = next(line.split() for line in out.splitlines()
               if line.startswith("nodes "))
    assert row == ["nodes", "no", "v1", "false", "Node"]


# ---------------------------------------------------------------- controls

def test_control_register_and_ready(srv):
    out = srv.control("POST", "/_test/nodes/kn-reg/register", {
        "cpu": 32, "memory": "128Gi", "labels": {"rack": "r7"}})
    assert out["metadata"]["labels"]["rack"] == "r7"
    assert out["status"]["allocatable"]["memory"] == "128Gi"
    assert out["status"]["capacity"]["memory"] == "134320128Ki"
    assert out["status"]["capacity"]["cpu"] == "32"
    obj = srv.control("POST", "/_test/nodes/kn-reg/ready",
                      {"status": "False"})
    cond = ready(obj)
    assert (cond["status"], cond["reason"], cond["message"]) == \
        ("False", "KubeletNotReady", "container runtime is down")
    assert taints(obj) == {(NOT_READY, "NoSchedule"),
                           (NOT_READY, "NoExecute")}
    obj = srv.control("POST", "/_test/nodes/kn-reg/ready",
                      {"status": "Unknown"})
    assert {c["status"] for c in obj["status"]["conditions"]} == \
        {"Unknown"}
    assert ready(obj)["reason"] == "NodeStatusUnknown"
    assert taints(obj) == {(UNREACHABLE, "NoSchedule"),
                           (UNREACHABLE, "NoExecute")}
    obj = srv.control("POST", "/_test/nodes/kn-reg/ready", {"status": "True"})
    assert [c["status"] for c in obj["status"]["conditions"]] == \
        ["False", "False", "False", "True"]
    assert taints(obj) == set()
    # through the HTTPS port too, with the admin token
    ok(srv, "POST", "/_test/nodes/kn-reg/ready", {"status": "True"})
    got, _, _ = srv.request("POST", "/_test/nodes/kn-reg/ready",
                            {"status": "False"}, token="readonly")
    assert got == 403
    for path, body, code in (
            ("/_test/nodes/kn-reg/register", {}, 409),
            ("/_test/nodes/kn-none/ready", {"status": "False"}, 404),
            ("/_test/nodes/kn-reg/ready", {"status": "maybe"}, 400)):
        got, _, _ = srv.request("POST", path, body)
        assert got == code, path
    ok(srv, "DELETE", NODES + "/kn-reg")


def test_node_agent_takes_the_nodes_address(srv):
    ip = next(a["address"] for a in node(srv, "kn-a")["status"]["addresses"]
              if a["type"] == "InternalIP")
    cidr = node(srv, "kn-a")["spec"]["podCIDR"]
    ok(srv, "POST", "/api/v1/namespaces/default/pods", {
        "metadata": {"name": "kn-a-pod"},
        "spec": {"nodeName": "kn-a", "containers": [
            {"name": "c", "image": "busybox:1.36"}]}})
    pod = wait_for(lambda: (lambda p: p if p["status"].get("phase") ==
                            "Running" else None)(
        ok(srv, "GET", "/api/v1/namespaces/default/pods/kn-a-pod")), 20,
        what="the pod to run")
    assert pod["status"]["hostIP"] == ip
    assert pod["status"]["podIP"].startswith(cidr[:-len("0/24")])
    ok(srv, "DELETE", "/api/v1/namespaces/default/pods/kn-a-pod?"
       "gracePeriodSeconds=0")
