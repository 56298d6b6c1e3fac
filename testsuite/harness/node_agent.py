# SPDX-License-Identifier: GPL-2.0-or-later
"""The test API server's node agents (its stand-in kubelet + DRA drivers,
testsuite/apiserver/README.md "Node agents") as tests see them: each node's
view (prepared claims, shared CPU pool, pods), pods created on a node, and
waits on both.

Every function takes `target`: a harness Cluster, an apiserver_fixture
TestApiServer, or the server's run directory.  They talk to the server with
its admin token, never through the plugin's token."""
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .alignment import parse_id_list
from .wait import wait_for

HOLDER_IMAGE = "pause:3.10"
HOLDER_PRIORITY_CLASS = "slurm-k8s-cons-tres-holder"


class ApiError(RuntimeError):
    def __init__(self, code, body):
        super().__init__(f"HTTP {code}: {body.get('message') if isinstance(body, dict) else body}")
        self.code, self.body = code, body


def _endpoints(target):
    """(API URL, admin token, CA file, control URL)."""
    if hasattr(target, "apiserver_dir"):       # harness Cluster
        d, info = Path(target.apiserver_dir), target.apiserver()
    elif hasattr(target, "rundir"):            # TestApiServer
        d, info = Path(target.rundir), target.info
    else:                                      # a run directory
        d = Path(target)
        info = json.loads((d / "server.json").read_text())
    token = json.loads((d / "tokens.json").read_text())["admin"]
    return info["url"], token, str(d / "ca.crt"), info["controlUrl"]


def _call(url, method="GET", body=None, headers=None, context=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        raw = err.read()
        try:
            return err.code, json.loads(raw)
        except ValueError:
            return err.code, raw.decode(errors="replace")


def api(target, method, path, body=None, content_type="application/json", ok=(200, 201)):
    """One request to the API with the admin token; returns the decoded body.
    A status outside `ok` raises ApiError (ok=None returns (code, body))."""
    url, token, ca, _ = _endpoints(target)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    code, out = _call(url + path, method, body, headers, ssl.create_default_context(cafile=ca))
    if ok is None:
        return code, out
    if code not in ok:
        raise ApiError(code, out)
    return out


def control(target, path):
    return _call(_endpoints(target)[3] + path)[1]


# ---------------------------------------------------------------- the view

def nodes(target) -> list:
    """Nodes with an agent (every node some ResourceSlice names)."""
    return control(target, "/_test/nodes")["nodes"]


def view(target, node) -> dict:
    """GET /_test/nodes/NODE/agent: {"node", "observedResourceVersion",
    "cpuMode", "groupBy", "publishedCpus", "sharedCpus", "sharedCpuCount",
    "grouped", "gpus", "doubleBooked", "prepared", "pods"}; None if no agent."""
    code, out = _call(_endpoints(target)[3] + f"/_test/nodes/{urllib.parse.quote(node)}/agent")
    return out if code == 200 else None


def shared_cpus(target, node) -> set:
    """The dra.cpu shared pool of an individual-mode node (what ordinary
    containers get): published CPUs minus those of prepared claims."""
    return set(parse_id_list(view(target, node)["sharedCpus"] or ""))


def prepared_cpus(target, node) -> dict:
    """"ns/claim" -> set of CPU ids, for claims whose CPUs are known."""
    return {k: set(parse_id_list(p["cpus"])) for k, p in view(target, node)["prepared"].items()
            if p["cpus"] is not None}


def wait_view(target, node, predicate, timeout=30, what="the node agent's view"):
    """Wait until predicate(view) is true; returns the view."""
    return wait_for(lambda: (lambda v: v if v and predicate(v) else None)(view(target, node)),
                    timeout=timeout, what=f"{what} on {node}",
                    on_timeout=lambda: json.dumps(view(target, node), indent=1))


def wait_synced(target, node, timeout=30):
    """Wait until the agent has acted on everything the server holds now
    (to assert that something did NOT happen, without sleeping); returns
    that view, so a pod's message is the one after, say, its claim's
    reservation, not the "not allowed" from the moment before it."""
    rv = int(control(target, "/_test/info")["resourceVersion"])
    return wait_view(target, node, lambda v: int(v["observedResourceVersion"]) >= rv,
                     timeout, f"the agent to reach resourceVersion {rv}")


# ---------------------------------------------------------------- pods

def pod_manifest(name, node, claims=(), labels=None, cpu=None, memory=None,
                 priority_class=None, image=HOLDER_IMAGE, container="holder"):
    """A pod bound to `node` (no scheduler) using `claims` (names of
    ResourceClaims in its namespace) as c0, c1, ... in one container."""
    refs = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    resources = {}
    if requests:
        resources["requests"] = requests
    if refs:
        resources["claims"] = [{"name": r["name"]} for r in refs]
    spec = {"tolerations": [{"operator": "Exists"}], "restartPolicy": "Always",
            "containers": [{"name": container, "image": image, "resources": resources}]}
    if node:
        spec["nodeName"] = node
    if refs:
        spec["resourceClaims"] = refs
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


def holder_pod(name, node, claims, labels=None, priority_class=HOLDER_PRIORITY_CLASS,
               cpu="4", memory="1024Mi"):
    """The shape of the plugin's holder pod (issue 10)."""
    return pod_manifest(name, node, claims, labels, cpu, memory, priority_class)


def create_pod(target, namespace, manifest) -> dict:
    return api(target, "POST", f"/api/v1/namespaces/{namespace}/pods", manifest)


def create_pod_on(target, namespace, name, node, claims=(), **kw) -> dict:
    """An ordinary pod on `node` (claims optional); returns it as created."""
    return create_pod(target, namespace, pod_manifest(name, node, claims, **kw))


def get_pod(target, namespace, name):
    code, out = api(target, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}", ok=None)
    return out if code == 200 else None


def delete_pod(target, namespace, name, grace=None, uid=None):
    """DELETE with DeleteOptions; grace=0 removes it at once (force)."""
    opts = {}
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if uid:
        opts["preconditions"] = {"uid": uid}
    return api(target, "DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", opts)


def wait_pod_phase(target, namespace, name, phase, timeout=30) -> dict:
    def ready():
        pod = get_pod(target, namespace, name)
        return pod if pod and pod.get("status", {}).get("phase") == phase else None
    return wait_for(ready, timeout=timeout, what=f"pod {namespace}/{name} to be {phase}",
                    on_timeout=lambda: json.dumps(get_pod(target, namespace, name), indent=1))


def wait_pod_gone(target, namespace, name, timeout=30):
    wait_for(lambda: get_pod(target, namespace, name) is None, timeout=timeout,
             what=f"pod {namespace}/{name} to go")


def pod_events(target, namespace, name) -> list:
    sel = urllib.parse.quote(f"involvedObject.kind=Pod,involvedObject.name={name}")
    return api(target, "GET", f"/api/v1/namespaces/{namespace}/events?fieldSelector={sel}")["items"]


def reserve_claim(target, namespace, claim, pod) -> dict:
    """Add the pod to the claim's status.reservedFor (strategic merge by
    uid), as the scheduler or the plugin does; the claim must be allocated."""
    ref = {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
    return api(target, "PATCH", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{claim}/status",
               {"status": {"reservedFor": [ref]}}, "application/strategic-merge-patch+json")


def hold_claim(target, namespace, claim, node, name=None) -> dict:
    """A pod on `node` that uses the (allocated) claim, reserved for it: the
    way a pod really holds devices (seeded "pod-held" claims name pods that
    do not exist, so no agent prepares them)."""
    pod = create_pod_on(target, namespace, name or f"{claim}-pod", node, [claim])
    reserve_claim(target, namespace, claim, pod)
    return pod


def ensure_priority_class(target, name=HOLDER_PRIORITY_CLASS, value=999999999, preemption_policy="Never"):
    """The server refuses pods naming a missing PriorityClass (403), as
    kube-apiserver's Priority admission does."""
    code, out = api(target, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": name}, "value": value,
                     "preemptionPolicy": preemption_policy}, ok=None)
    if code not in (201, 409):
        raise ApiError(code, out)
