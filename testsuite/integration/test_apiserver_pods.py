# SPDX-License-Identifier: GPL-2.0-or-later
"""Pods in the test API server (CRUD, validation, admission, status
subresource, selectors, watch, delete, real kubectl) and its node agents,
the stand-in kubelet + DRA drivers: a pod runs once its claims are reserved
for it and allocated on its node, its CPUs leave the shared pool, deleting
it gives them back; grouped dra.cpu counts per group; the 1.36
resourceclaims/binding check.  Standalone server, no Slurm."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from apiserver_fixture import TestApiServer, WatchStream, KUBECTL  # noqa: E402
from harness import node_agent as na  # noqa: E402
from harness.wait import wait_for  # noqa: E402

V1 = "/apis/resource.k8s.io/v1"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
JSONP = "application/json-patch+json"
NOT_RESERVED = ("Failed to prepare dynamic resources: prepare dynamic "
                "resources: pod {pod} ({uid}) is not allowed to use "
                "ResourceClaim {claim} ({cuid})")


@pytest.fixture(scope="module")
def srv():
    with TestApiServer(bookmark_interval=0.3,
                       extra_args=["--node-agents"]) as server:
        yield server


def ok(srv, method, path, body=None, ctype="application/json", code=(200, 201)):
    got, _, out = srv.request(method, path, body, content_type=ctype)
    assert got in code, out
    return out


def pods_path(ns="default", name=""):
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


def namespace(srv, ns):
    srv.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    return ns


def add_node(srv, node, cpus=8, gpus=0):
    """Individual-mode dra.cpu (cpudevNNN = CPU NNN) and gpu-N devices."""
    ok(srv, "POST", V1 + "/resourceslices", {"metadata": {"name": f"{node}-cpu"}, "spec": {
        "driver": "dra.cpu", "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"cpudev{i:03d}", "attributes": {"dra.cpu/cpuID": {"int": i}}}
                    for i in range(cpus)]}})
    if gpus:
        ok(srv, "POST", V1 + "/resourceslices", {"metadata": {"name": f"{node}-gpu"}, "spec": {
            "driver": "gpu.nvidia.com", "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}}
                        for i in range(gpus)]}})
    wait_for(lambda: na.view(srv, node), 10, f"an agent for {node}")


def add_grouped_node(srv, node, groups):
    ok(srv, "POST", V1 + "/resourceslices", {"metadata": {"name": f"{node}-cpu"}, "spec": {
        "driver": "dra.cpu", "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": name, "allowMultipleAllocations": True,
                     "attributes": {"dra.cpu/numCPUs": {"int": cap}},
                     "capacity": {"dra.cpu/cpu": {"value": str(cap)}}}
                    for name, cap in groups.items()]}})
    wait_for(lambda: na.view(srv, node), 10, f"an agent for {node}")


def claim(srv, ns, name, node, cpus=(), gpus=(), pool=None, groups=None,
          cpuset=None, selector=True):
    """An allocated claim: individual CPUs, or grouped shares (+ cpuset)."""
    requests, results = [], []
    pool = pool or node
    if cpus or groups:
        requests.append({"name": "cpu", "exactly": {"deviceClassName": "dra.cpu",
                                                    "count": len(cpus) or len(groups)}})
        results += [{"request": "cpu", "driver": "dra.cpu", "pool": pool,
                     "device": f"cpudev{c:03d}"} for c in cpus]
        results += [{"request": "cpu", "driver": "dra.cpu", "pool": pool, "device": dev,
                     "shareID": "0b5e8c1e-2f0a-4c5d-9a43-6f1e2d3c4b5a",
                     "consumedCapacity": {"dra.cpu/cpu": str(n)}}
                    for dev, n in (groups or {}).items()]
    if gpus:
        requests.append({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                    "count": len(gpus)}})
        results += [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": pool,
                     "device": f"gpu-{g}"} for g in gpus]
    created = ok(srv, "POST", f"{V1}/namespaces/{ns}/resourceclaims", {
        "metadata": {"name": name}, "spec": {"devices": {"requests": requests}}})
    alloc = {"devices": {"results": results}}
    if selector:
        alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    if cpuset:
        alloc["devices"]["config"] = [{"source": "FromClaim", "requests": ["cpu"], "opaque": {
            "driver": "dra.cpu", "parameters": {"apiVersion": "v1alpha1",
                                                "cpuConfig": {"cpuset": cpuset}}}}]
    ok(srv, "PATCH", f"{V1}/namespaces/{ns}/resourceclaims/{name}/status",
       {"status": {"allocation": alloc}}, MERGE)
    return created


def pod(srv, ns, name, node, claims=(), **kw):
    return ok(srv, "POST", pods_path(ns), na.pod_manifest(name, node, claims, **kw))


def causes(out):
    return {(c["field"], c["reason"]) for c in out["details"]["causes"]}


# ---------------------------------------------------------------- REST

def test_create_defaults_admission_and_initial_status(srv):
    p = pod(srv, "default", "plain", None, cpu="1", memory="64Mi")
    spec, status = p["spec"], p["status"]
    assert status == {"phase": "Pending", "qosClass": "Burstable"}
    assert spec["restartPolicy"] == "Always" and spec["priority"] == 0
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["serviceAccountName"] == "default"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    # {operator: Exists} tolerates everything: no default tolerations added
    assert spec["tolerations"] == [{"operator": "Exists"}]
    q = ok(srv, "POST", pods_path(), {"metadata": {"name": "be"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}]}})
    assert q["status"]["qosClass"] == "BestEffort"
    assert q["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert {t["key"] for t in q["spec"]["tolerations"]} == {
        "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    code, _, body = srv.request("POST", pods_path(), {"metadata": {"name": "g"}, "status": {"phase": "Running"},
                                                      "spec": {"containers": [{"name": "c", "image": "i", "resources": {
                                                          "limits": {"cpu": "1", "memory": "1Gi"}}}]}})
    assert code == 201 and body["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    assert srv.request("POST", pods_path(), {"metadata": {"name": "plain"}, "spec": spec})[0] == 409


def test_priority_class_admission(srv):
    manifest = na.holder_pod("h1", None, [], priority_class="no-such-class")
    code, _, out = srv.request("POST", pods_path(), manifest)
    assert code == 403 and out["reason"] == "Forbidden"
    assert out["message"] == 'pods "h1" is forbidden: no PriorityClass with name no-such-class was found'
    na.ensure_priority_class(srv, "holder-test", value=999999999)
    na.ensure_priority_class(srv, "holder-test", value=999999999)   # twice is fine
    manifest["spec"]["priorityClassName"] = "holder-test"
    p = ok(srv, "POST", pods_path(), manifest)
    assert p["spec"]["priority"] == 999999999 and p["spec"]["preemptionPolicy"] == "Never"
    manifest["metadata"]["name"], manifest["spec"]["priority"] = "h2", 5
    code, _, out = srv.request("POST", pods_path(), manifest)
    assert code == 403 and "must not be provided in pod spec" in out["message"]
    sysp = na.pod_manifest("sys", None, priority_class="system-node-critical")
    assert ok(srv, "POST", pods_path(), sysp)["spec"]["priority"] == 2000001000


def test_validation(srv):
    def invalid(spec, name="bad"):
        code, _, out = srv.request("POST", pods_path(), {"metadata": {"name": name}, "spec": spec})
        assert code == 422 and out["reason"] == "Invalid", out
        return causes(out)

    assert ("spec.containers", "FieldValueRequired") in invalid({})
    assert ("metadata.name", "FieldValueInvalid") in invalid(
        {"containers": [{"name": "c", "image": "i"}]}, name="Bad_Name")
    got = invalid({"containers": [{"name": "c", "image": "i"}, {"name": "c"}, {"name": "Up", "image": "i"}]})
    assert {("spec.containers[1].name", "FieldValueDuplicate"), ("spec.containers[1].image", "FieldValueRequired"),
            ("spec.containers[2].name", "FieldValueInvalid")} <= got
    got = invalid({"resourceClaims": [{"name": "c0", "resourceClaimName": "x"},
                                      {"name": "c0", "resourceClaimName": "y"}, {"name": "c2"}],
                   "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "c9"}]}}]})
    assert {("spec.resourceClaims[1].name", "FieldValueDuplicate"), ("spec.resourceClaims[2]", "FieldValueInvalid"),
            ("spec.containers[0].resources.claims[0]", "FieldValueInvalid")} <= got
    code, _, out = srv.request("POST", pods_path(), {"metadata": {"name": "bad"}, "spec": {
        "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "c9"}]}}]}})
    assert "must be one of the names in pod.spec.resourceClaims which is empty" in out["message"]
    assert ("spec.restartPolicy", "FieldValueNotSupported") in invalid(
        {"restartPolicy": "Sometimes", "containers": [{"name": "c", "image": "i"}]})
    assert ("spec.containers[0].resources.requests", "FieldValueInvalid") in invalid(
        {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]})
    assert ("spec.tolerations[0].value", "FieldValueInvalid") in invalid(
        {"tolerations": [{"operator": "Exists", "value": "x"}], "containers": [{"name": "c", "image": "i"}]})


def test_update_keeps_spec_immutable_but_images_and_labels(srv):
    p = pod(srv, "default", "upd", None)
    p["metadata"]["labels"] = {"a": "b"}
    p["spec"]["containers"][0]["image"] = "pause:3.11"
    p2 = ok(srv, "PUT", pods_path("default", "upd"), p)
    assert p2["metadata"]["labels"] == {"a": "b"} and p2["spec"]["containers"][0]["image"] == "pause:3.11"
    assert p2["metadata"]["generation"] == 2
    for change in ({"nodeName": "elsewhere"}, {"restartPolicy": "Never"},
                   {"resourceClaims": [{"name": "c0", "resourceClaimName": "x"}]}):
        code, _, out = srv.request("PATCH", pods_path("default", "upd"), {"spec": change}, content_type=MERGE)
        assert code == 422 and ("spec", "FieldValueForbidden") in causes(out), out
        assert "pod updates may not change fields other than" in out["message"]
    extra = p2["spec"]["tolerations"] + [{"key": "k", "operator": "Exists"}]
    code, _, out = srv.request("PATCH", pods_path("default", "upd"), {"spec": {"tolerations": extra}},
                               content_type=MERGE)
    assert code == 200, out


def test_status_subresource_patch_types(srv):
    path = pods_path("default", "st")
    p = pod(srv, "default", "st", None)
    cond = {"type": "Ready", "status": "False"}
    out = ok(srv, "PATCH", path + "/status", {"status": {"conditions": [cond], "message": "m"},
                                              "spec": {"nodeName": "ignored"}}, MERGE)
    assert out["status"]["conditions"] == [cond] and "nodeName" not in out["spec"]
    # strategic merge: conditions merge by type
    out = ok(srv, "PATCH", path + "/status", {"status": {"conditions": [{"type": "Initialized", "status": "True"}]}}, SMP)
    assert [c["type"] for c in out["status"]["conditions"]] == ["Ready", "Initialized"]
    out = ok(srv, "PATCH", path + "/status", [{"op": "replace", "path": "/status/phase", "value": "Running"}], JSONP)
    assert out["status"]["phase"] == "Running" and out["status"]["qosClass"] == "BestEffort"
    code, _, bad = srv.request("PATCH", path + "/status", {"status": {"phase": "Sleeping"}}, content_type=MERGE)
    assert code == 422 and ("status.phase", "FieldValueNotSupported") in causes(bad)
    # a main-resource write keeps the status
    out = ok(srv, "PATCH", path, {"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Failed"}}, MERGE)
    assert out["status"]["phase"] == "Running" and out["metadata"]["uid"] == p["metadata"]["uid"]


def test_list_selectors_and_tables(srv):
    ns = namespace(srv, "sel")
    for name, node, labels in (("s1", "sel-n1", {"app": "a"}), ("s2", "sel-n2", {"app": "b"}), ("s3", None, {})):
        pod(srv, ns, name, node, labels=labels)

    def names(query, path=pods_path(ns)):
        return sorted(i["metadata"]["name"] for i in ok(srv, "GET", path + "?" + query)["items"])

    assert names("labelSelector=app%3Da") == ["s1"]
    assert names("labelSelector=app") == ["s1", "s2"]
    assert names("fieldSelector=spec.nodeName%3Dsel-n2") == ["s2"]
    assert names("fieldSelector=spec.nodeName%3D") == ["s3"]
    assert names("fieldSelector=metadata.name%3Ds1") == ["s1"]
    assert names("fieldSelector=status.phase%3DPending,spec.nodeName!%3Dsel-n1") == ["s2", "s3"]
    assert names(f"fieldSelector=metadata.namespace%3D{ns}", "/api/v1/pods") == ["s1", "s2", "s3"]
    code, _, out = srv.request("GET", pods_path(ns) + "?fieldSelector=spec.hostname%3Dx")
    assert code == 400 and "field label not supported" in out["message"]
    table = ok(srv, "GET", pods_path(ns), None)   # plain JSON still
    assert table["kind"] == "PodList"
    _, _, t = srv.request("GET", pods_path(ns), headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    cols = [c["name"] for c in t["columnDefinitions"]]
    assert cols == ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
    assert [c["priority"] for c in t["columnDefinitions"]][4:] == [0, 1, 1, 1, 1]
    row = next(r["cells"] for r in t["rows"] if r["cells"][0] == "s3")
    assert row[1:4] == ["0/1", "Pending", "0"] and row[6] == "<none>"


def test_watch_pods_on_a_node(srv):
    ns = namespace(srv, "watch")
    add_node(srv, "w1")
    start = ok(srv, "GET", pods_path(ns))["metadata"]["resourceVersion"]
    path = (pods_path(ns) + f"?watch=1&resourceVersion={start}&allowWatchBookmarks=true"
            "&fieldSelector=spec.nodeName%3Dw1")
    with WatchStream(srv, path) as w:
        pod(srv, ns, "other", "w2")
        p = pod(srv, ns, "wp", "w1")
        ev = w.next_non_bookmark()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "wp"
        ev = w.next_non_bookmark()   # the agent starts it (no claims)
        assert ev["type"] == "MODIFIED" and ev["object"]["status"]["phase"] == "Running"
        na.delete_pod(srv, ns, "wp")   # graceful on an agent's node
        ev = w.next_non_bookmark()
        assert ev["type"] == "MODIFIED" and ev["object"]["metadata"]["deletionTimestamp"]
        assert ev["object"]["metadata"]["deletionGracePeriodSeconds"] == 30
        ev = w.next_non_bookmark()
        assert ev["type"] == "DELETED" and ev["object"]["metadata"]["uid"] == p["metadata"]["uid"]
        assert w.next_event(5)["type"] == "BOOKMARK"


def test_delete_options_and_preconditions(srv):
    ns = namespace(srv, "del")
    add_node(srv, "d1")
    p = pod(srv, ns, "dp", "d1")
    code, _, out = srv.request("DELETE", pods_path(ns, "dp"), {"preconditions": {"uid": "not-it"}})
    assert code == 409 and "Precondition failed: UID in precondition: not-it" in out["message"]
    out = ok(srv, "DELETE", pods_path(ns, "dp") + "?gracePeriodSeconds=0", None)
    assert out["status"] == "Success" and out["details"]["uid"] == p["metadata"]["uid"]
    assert na.get_pod(srv, ns, "dp") is None
    pod(srv, ns, "nowhere", None)   # no node, nothing runs it: deleted at once
    assert ok(srv, "DELETE", pods_path(ns, "nowhere"), {"gracePeriodSeconds": 30})["status"] == "Success"
    na.wait_pod_phase(srv, ns, pod(srv, ns, "dp2", "d1")["metadata"]["name"], "Running")
    out = ok(srv, "DELETE", pods_path(ns, "dp2"), {"gracePeriodSeconds": 10})
    assert out["kind"] == "Pod" and out["metadata"]["deletionGracePeriodSeconds"] == 10
    na.wait_pod_gone(srv, ns, "dp2")


# ---------------------------------------------------------------- kubectl

@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_kubectl_get_describe_delete(srv):
    ns = namespace(srv, "kc")
    add_node(srv, "k1")
    c = claim(srv, ns, "kc-claim", "k1", cpus=[1])
    manifest = json.dumps(na.pod_manifest("kp", "k1", ["kc-claim"], labels={"app": "kp"}))
    res = srv.kubectl("apply", "-n", ns, "-f", "-", input=manifest)
    assert res.returncode == 0 and 'pod/kp created' in res.stdout, res.stderr
    p = na.get_pod(srv, ns, "kp")
    msg = NOT_RESERVED.format(pod="kp", uid=p["metadata"]["uid"], claim="kc-claim", cuid=c["metadata"]["uid"])
    na.wait_view(srv, "k1", lambda v: v["pods"].get(f"{ns}/kp", {}).get("message") == msg)
    out = srv.kubectl("get", "pods", "-n", ns, "-o", "wide").stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                              "NOMINATED", "NODE", "READINESS", "GATES"]
    assert out[1].split()[:4] == ["kp", "0/1", "ContainerCreating", "0"] and out[1].split()[5:7] == ["<none>", "k1"]
    desc = srv.kubectl("describe", "pod", "-n", ns, "kp")
    assert desc.returncode == 0, desc.stderr
    assert "FailedPrepareDynamicResources" in desc.stdout and "is not allowed to use ResourceClaim kc-claim" in desc.stdout
    assert "Node:             k1/" in desc.stdout
    na.reserve_claim(srv, ns, "kc-claim", p)
    na.wait_pod_phase(srv, ns, "kp", "Running")
    row = srv.kubectl("get", "pod", "kp", "-n", ns, "-o", "wide").stdout.splitlines()[1].split()
    assert row[1:3] == ["1/1", "Running"] and row[5].startswith("10.")
    assert "kp" in srv.kubectl("get", "pods", "-A", "-l", "app=kp").stdout
    got = json.loads(srv.kubectl("get", "pod", "kp", "-n", ns, "-o", "json").stdout)
    assert got["status"]["containerStatuses"][0]["ready"] is True
    events = srv.kubectl("get", "events", "-n", ns).stdout
    assert "FailedPrepareDynamicResources" in events and "pod/kp" in events
    res = srv.kubectl("delete", "pod", "kp", "-n", ns, timeout=60)
    assert res.returncode == 0 and 'pod "kp" deleted' in res.stdout, res.stderr
    assert na.get_pod(srv, ns, "kp") is None   # kubectl waited until it was gone
    assert na.view(srv, "k1")["prepared"] == {}


# ---------------------------------------------------------------- agents

def test_reserved_claim_runs_and_leaves_the_shared_pool(srv):
    ns = namespace(srv, "run")
    add_node(srv, "r1", cpus=8, gpus=2)
    assert na.view(srv, "r1")["publishedCpus"] == "0-7"
    c = claim(srv, ns, "job-1-r1-0", "r1", cpus=[2, 3], gpus=[1])
    labels = {"k8s-cons-tres.slurm.io/job-id": "1"}
    p = ok(srv, "POST", pods_path(ns), na.holder_pod("job-1-r1", "r1", ["job-1-r1-0"], labels, priority_class=None))
    na.reserve_claim(srv, ns, "job-1-r1-0", p)
    running = na.wait_pod_phase(srv, ns, "job-1-r1", "Running")
    st = running["status"]
    assert {c["type"]: c["status"] for c in st["conditions"]} == {
        "PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
        "ContainersReady": "True", "PodScheduled": "True"}
    cs, = st["containerStatuses"]
    assert cs["ready"] and cs["started"] and cs["state"]["running"]["startedAt"] and cs["name"] == "holder"
    assert st["podIP"].startswith("10.") and st["hostIP"] and st["startTime"] and st["qosClass"] == "Burstable"
    v = na.view(srv, "r1")
    assert v["sharedCpus"] == "0-1,4-7" and v["sharedCpuCount"] == 6
    prep = v["prepared"][f"{ns}/job-1-r1-0"]
    assert prep["cpus"] == "2-3" and prep["gpus"] == ["gpu-1"] and prep["pod"] == f"{ns}/job-1-r1"
    assert prep["uid"] == c["metadata"]["uid"] and prep["podUid"] == p["metadata"]["uid"]
    assert v["gpus"] == {"published": ["gpu-0", "gpu-1"], "free": ["gpu-0"]}
    assert v["pods"][f"{ns}/job-1-r1"]["cpuset"] == "2-3"
    # the holder pod goes (as the plugin does it: grace 0), the devices come back
    na.delete_pod(srv, ns, "job-1-r1", grace=0, uid=p["metadata"]["uid"])
    v = na.wait_view(srv, "r1", lambda v: not v["prepared"])
    assert v["sharedCpus"] == "0-7" and v["gpus"]["free"] == ["gpu-0", "gpu-1"] and not v["pods"]


def test_unreserved_or_missing_claim_waits_then_runs(srv):
    ns = namespace(srv, "wait")
    add_node(srv, "u1")
    p = pod(srv, ns, "up", "u1", ["late-claim"])
    na.wait_view(srv, "u1", lambda v: 'resourceclaims.resource.k8s.io "late-claim" not found'
                 in v["pods"].get(f"{ns}/up", {}).get("message", ""))
    c = claim(srv, ns, "late-claim", "u1", cpus=[5])
    msg = NOT_RESERVED.format(pod="up", uid=p["metadata"]["uid"], claim="late-claim", cuid=c["metadata"]["uid"])
    na.wait_view(srv, "u1", lambda v: v["pods"][f"{ns}/up"]["message"] == msg)
    pending = na.get_pod(srv, ns, "up")
    st = pending["status"]
    assert st["phase"] == "Pending"
    assert st["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    ready = next(c for c in st["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "ContainersNotReady", "containers with unready status: [holder]")
    ev = [e for e in na.pod_events(srv, ns, "up") if e["message"] == msg]
    assert len(ev) == 1 and ev[0]["type"] == "Warning" and ev[0]["reason"] == "FailedPrepareDynamicResources"
    assert ev[0]["source"] == {"component": "kubelet", "host": "u1"}
    assert na.view(srv, "u1")["sharedCpus"] == "0-7"
    # a reservation naming the right uid but another name does not do
    ok(srv, "PATCH", f"{V1}/namespaces/{ns}/resourceclaims/late-claim/status",
       {"status": {"reservedFor": [{"resource": "pods", "name": "wrong", "uid": p["metadata"]["uid"]}]}}, MERGE)
    na.wait_synced(srv, "u1")
    assert na.get_pod(srv, ns, "up")["status"]["phase"] == "Pending"
    na.reserve_claim(srv, ns, "late-claim", p)   # merges by uid: replaces it
    na.wait_pod_phase(srv, ns, "up", "Running")
    assert na.shared_cpus(srv, "u1") == {0, 1, 2, 3, 4, 6, 7}


def test_claim_allocated_on_another_node_never_runs(srv):
    ns = namespace(srv, "other")
    add_node(srv, "o1")
    add_node(srv, "o2")
    claim(srv, ns, "for-o2", "o2", cpus=[0])
    claim(srv, ns, "o2-pool", "o1", cpus=[1], pool="o2")   # selector says o1
    p = pod(srv, ns, "op", "o1", ["for-o2"])
    q = pod(srv, ns, "oq", "o1", ["o2-pool"])
    na.reserve_claim(srv, ns, "for-o2", p)
    na.reserve_claim(srv, ns, "o2-pool", q)
    v = na.wait_synced(srv, "o1")
    assert v["pods"][f"{ns}/op"]["message"].endswith(
        "NodePrepareResources failed for ResourceClaim for-o2: the allocation's nodeSelector does not select node o1")
    assert v["pods"][f"{ns}/oq"]["message"].endswith(
        "device dra.cpu/o2/cpudev001 is on node o2, not on node o1")
    na.wait_synced(srv, "o1")
    assert {na.get_pod(srv, ns, n)["status"]["phase"] for n in ("op", "oq")} == {"Pending"}
    assert na.view(srv, "o1")["prepared"] == {} and na.view(srv, "o2")["prepared"] == {}


def test_ordinary_pod_gets_the_shared_pool(srv):
    ns = namespace(srv, "shared")
    add_node(srv, "s1", cpus=4)
    plain = pod(srv, ns, "plain", "s1", cpu="100m")
    na.wait_pod_phase(srv, ns, "plain", "Running")
    assert na.view(srv, "s1")["pods"][f"{ns}/plain"]["cpuset"] == "0-3"
    claim(srv, ns, "two", "s1", cpus=[0, 1])
    h = pod(srv, ns, "holder", "s1", ["two"])
    na.reserve_claim(srv, ns, "two", h)
    na.wait_pod_phase(srv, ns, "holder", "Running")
    v = na.view(srv, "s1")   # NRI moves running shared containers along
    assert v["pods"][f"{ns}/plain"]["cpuset"] == "2-3" and v["pods"][f"{ns}/holder"]["cpuset"] == "0-1"
    # the last two CPUs would leave shared containers with none
    claim(srv, ns, "rest", "s1", cpus=[2, 3])
    r = pod(srv, ns, "greedy", "s1", ["rest"])
    na.reserve_claim(srv, ns, "rest", r)
    v = na.wait_synced(srv, "s1")
    assert v["pods"][f"{ns}/greedy"]["message"].endswith(
        f'claim "{na.api(srv, "GET", f"{V1}/namespaces/{ns}/resourceclaims/rest")["metadata"]["uid"]}" '
        "would exhaust the shared CPU pool while shared containers are running")
    na.delete_pod(srv, ns, "plain")
    na.wait_pod_phase(srv, ns, "greedy", "Running")
    assert na.view(srv, "s1")["sharedCpus"] == ""


def test_overlapping_claims_and_deleted_claims(srv):
    ns = namespace(srv, "ovl")
    add_node(srv, "v1")
    claim(srv, ns, "first", "v1", cpus=[1, 2])
    claim(srv, ns, "second", "v1", cpus=[2, 3])
    a, b = pod(srv, ns, "a", "v1", ["first"]), pod(srv, ns, "b", "v1", ["second"])
    na.reserve_claim(srv, ns, "first", a)
    na.wait_pod_phase(srv, ns, "a", "Running")
    na.reserve_claim(srv, ns, "second", b)
    v = na.wait_synced(srv, "v1")
    assert v["pods"][f"{ns}/b"]["message"].endswith(
        f"NodePrepareResources failed for ResourceClaim second: claim {ns}/second has overlapping "
        "device assignment with other claims")
    # a running pod keeps its claim prepared after the claim is deleted
    ok(srv, "DELETE", f"{V1}/namespaces/{ns}/resourceclaims/first")
    na.wait_synced(srv, "v1")
    assert na.view(srv, "v1")["prepared"][f"{ns}/first"]["cpus"] == "1-2"
    assert na.get_pod(srv, ns, "b")["status"]["phase"] == "Pending"
    na.delete_pod(srv, ns, "a")   # graceful: unprepared, then deleted
    na.wait_pod_phase(srv, ns, "b", "Running")
    assert set(na.view(srv, "v1")["prepared"]) == {f"{ns}/second"}


def test_grouped_numa_counts_per_group(srv):
    ns = namespace(srv, "grp")
    add_grouped_node(srv, "g1", {"cpudevnuma000": 8, "cpudevnuma001": 8})
    v = na.view(srv, "g1")
    assert (v["cpuMode"], v["groupBy"], v["sharedCpus"], v["sharedCpuCount"]) == ("grouped", "numa", None, 16)
    claim(srv, ns, "g-a", "g1", groups={"cpudevnuma000": 6, "cpudevnuma001": 2}, cpuset="0-7")
    claim(srv, ns, "g-b", "g1", groups={"cpudevnuma000": 4})
    a, b = pod(srv, ns, "ga", "g1", ["g-a"]), pod(srv, ns, "gb", "g1", ["g-b"])
    na.reserve_claim(srv, ns, "g-a", a)
    na.wait_pod_phase(srv, ns, "ga", "Running")
    v = na.view(srv, "g1")
    assert v["grouped"] == {"cpudevnuma000": {"capacity": 8, "used": 6, "free": 2},
                            "cpudevnuma001": {"capacity": 8, "used": 2, "free": 6}}
    prep = v["prepared"][f"{ns}/g-a"]   # NUMA grouping: the driver picks, cpuset ignored
    assert prep["cpus"] is None and prep["cpuCount"] == 8 and v["sharedCpuCount"] == 8
    na.reserve_claim(srv, ns, "g-b", b)
    v = na.wait_synced(srv, "g1")
    assert v["pods"][f"{ns}/gb"]["message"].endswith(
        "not enough cpus available to satisfy request: requested=4, available=2")
    na.delete_pod(srv, ns, "ga", grace=0)
    na.wait_pod_phase(srv, ns, "gb", "Running")
    assert na.view(srv, "g1")["grouped"]["cpudevnuma000"]["used"] == 4


def test_grouped_machine_takes_the_opaque_cpuset(srv):
    ns = namespace(srv, "mach")
    add_grouped_node(srv, "m1", {"cpudevmachine": 16})
    claim(srv, ns, "pinned", "m1", groups={"cpudevmachine": 4}, cpuset="2-5")
    claim(srv, ns, "clash", "m1", groups={"cpudevmachine": 2}, cpuset="5-6")
    claim(srv, ns, "unpinned", "m1", groups={"cpudevmachine": 2})
    na.reserve_claim(srv, ns, "pinned", pod(srv, ns, "pinned", "m1", ["pinned"]))
    na.wait_pod_phase(srv, ns, "pinned", "Running")
    for name in ("clash", "unpinned"):
        na.reserve_claim(srv, ns, name, pod(srv, ns, name, "m1", [name]))
    v = na.wait_synced(srv, "m1")
    assert v["groupBy"] == "machine" and v["prepared"][f"{ns}/pinned"]["cpus"] == "2-5"
    assert v["pods"][f"{ns}/pinned"]["cpuset"] == "2-5"
    assert v["pods"][f"{ns}/clash"]["message"].endswith(
        "requested CPUs 5-6 from preferred CPUs conflict with already allocated claims")
    assert v["pods"][f"{ns}/unpinned"]["message"].endswith(
        'opaque config: request "cpu" is targeted by 0 configurations, must be targeted by exactly 1')


def test_gpus_prepared_per_claim_and_double_booking_shows(srv):
    ns = namespace(srv, "gpu")
    add_node(srv, "x1", cpus=2, gpus=2)
    claim(srv, ns, "ga", "x1", gpus=[0])
    claim(srv, ns, "gb", "x1", gpus=[0])   # the drivers do not check this
    for name in ("ga", "gb"):
        na.reserve_claim(srv, ns, name, pod(srv, ns, name, "x1", [name]))
        na.wait_pod_phase(srv, ns, name, "Running")
    v = na.view(srv, "x1")
    assert v["doubleBooked"] == ["gpu-0"] and v["gpus"]["free"] == ["gpu-1"]
    assert v["pods"][f"{ns}/ga"]["cpuset"] == "0-1"   # GPU only: a shared container


def test_resourceclaims_binding_permission(srv):
    """Kubernetes 1.36: changing allocation or reservedFor also needs the
    request's verb on resourceclaims/binding at the cluster scope."""
    ns = namespace(srv, "rbac")
    c = claim(srv, ns, "bc", "b1", cpus=[0])
    path = f"{V1}/namespaces/{ns}/resourceclaims/bc/status"
    ref = {"status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u-1"}]}}
    base = [{"verbs": ["get", "update", "patch"], "resources": ["resourceclaims/status"]}]
    srv.add_token("t-status", user="writer", rules=base)
    code, _, out = srv.request("PATCH", path, ref, token="t-status", content_type=SMP)
    assert code == 422 and ("status", "FieldValueForbidden") in causes(out)
    assert ('changing status.allocation or status.reservedFor requires resource="resourceclaims/binding", '
            'verb="patch" permission: resourceclaims.resource.k8s.io is forbidden: User "writer" cannot patch '
            'resource "resourceclaims/binding" in API group "resource.k8s.io" at the cluster scope') in out["message"]
    # other status fields need no binding permission
    dev = {"status": {"devices": [{"driver": "dra.cpu", "pool": "b1", "device": "cpudev000"}]}}
    assert srv.request("PATCH", path, dev, token="t-status", content_type=MERGE)[0] == 200
    # a Role (namespaced) does not grant it; a ClusterRole does, per verb
    srv.add_token("t-role", user="writer", rules=base + [
        {"verbs": ["update", "patch"], "resources": ["resourceclaims/binding"], "namespaces": [ns]}])
    assert srv.request("PATCH", path, ref, token="t-role", content_type=SMP)[0] == 422
    srv.add_token("t-cluster", user="writer", rules=base + [
        {"verbs": ["update"], "resources": ["resourceclaims/binding"]}])
    assert srv.request("PATCH", path, ref, token="t-cluster", content_type=SMP)[0] == 422
    cur = ok(srv, "GET", path.rsplit("/", 1)[0])
    cur["status"]["reservedFor"] = ref["status"]["reservedFor"]
    code, _, out = srv.request("PUT", path, cur, token="t-cluster")
    assert code == 200 and out["status"]["reservedFor"][0]["uid"] == "u-1"
    assert out["metadata"]["uid"] == c["metadata"]["uid"]


def test_agents_are_off_without_the_flag(tmp_path):
    with TestApiServer(rundir=str(tmp_path)) as plain:
        assert plain.control("GET", "/_test/nodes") == {"enabled": False, "nodes": []}
        plain.request("POST", V1 + "/resourceslices", {"metadata": {"name": "z"}, "spec": {
            "driver": "dra.cpu", "nodeName": "z1", "pool": {"name": "z1", "resourceSliceCount": 1},
            "devices": []}})
        p = pod(plain, "default", "zp", "z1")
        assert na.view(plain, "z1") is None
        out = ok(plain, "DELETE", pods_path("default", "zp"), {})
        assert out["status"] == "Success" and p["status"]["phase"] == "Pending"
