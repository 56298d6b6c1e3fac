# SPDX-License-Identifier: GPL-2.0-or-later
"""etc/kubernetes is a kustomize base the real kubectl builds and applies:
`kubectl kustomize`, then `kubectl apply --server-side --dry-run=server`
and a real apply against the test API server; the overlay moves the claim
namespace; the loose etc/rbac.yaml and etc/deviceclasses.yaml (used by the
harness and by admins without kustomize) say the same as the base."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apiserver_fixture import TestApiServer, KUBECTL, kubectl_ok  # noqa: E402

TOP = Path(__file__).resolve().parents[2]
BASE = TOP / "etc" / "kubernetes"
OVERLAY = BASE / "overlays" / "example-namespace"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding",
                  "PriorityClass", "DeviceClass"}
APPLY = "application/apply-patch+yaml"

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL),
                                reason="kubectl not installed")


def kustomize(path):
    res = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def docs(text):
    return [d for d in yaml.safe_load_all(text) if d]


def by_kind(items):
    out = {}
    for d in items:
        out.setdefault(d["kind"], []).append(d)
    return out


def strip(d):
    """What must agree between the base and the loose files: everything but
    labels and comments."""
    d = json.loads(json.dumps(d))
    d["metadata"].pop("labels", None)
    return d


def default_claim_namespace():
    header = (TOP / "core" / "plugin_config.h").read_text()
    return re.search(r'claim_namespace = "([^"]+)"', header).group(1)


@pytest.fixture(scope="module")
def srv():
    with TestApiServer() as server:
        yield server


kubectl = kubectl_ok


# ---------------------------------------------------------------- build

def test_base_holds_what_the_plugin_needs():
    items = docs(kustomize(BASE))
    kinds = by_kind(items)
    assert sorted(kinds) == sorted([
        "Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
        "ClusterRoleBinding", "PriorityClass", "DeviceClass"])
    ns = default_claim_namespace()
    assert [d["metadata"]["name"] for d in kinds["Namespace"]] == [ns]
    # holder pods pass "restricted"; a stolen token starts nothing privileged
    labels = kinds["Namespace"][0]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted", labels
    for d in items:
        if d["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in d["metadata"], d
        else:
            assert d["metadata"]["namespace"] == ns, d
    pc, = kinds["PriorityClass"]
    assert pc["metadata"]["name"] == "slurm-k8s-cons-tres-holder"
    assert pc["preemptionPolicy"] == "Never"
    assert pc["globalDefault"] is False
    # high, but a user priority: below system-cluster-critical (2e9)
    assert 0 < pc["value"] <= 1000000000


def test_loose_files_say_the_same_as_the_base():
    loose_ns, = [d for d in docs((TOP / "etc" / "rbac.yaml").read_text()) if d["kind"] == "Namespace"]
    base_ns, = [d for d in docs(kustomize(BASE)) if d["kind"] == "Namespace"]
    security = lambda d: {k: v for k, v in d["metadata"]["labels"].items()  # noqa: E731
                          if k.startswith("pod-security.kubernetes.io/")}
    assert security(loose_ns) == security(base_ns) and security(base_ns), base_ns
    base = [strip(d) for d in docs(kustomize(BASE))]
    rbac = [strip(d) for d in docs((TOP / "etc" / "rbac.yaml").read_text())]
    classes = [strip(d) for d in
               docs((TOP / "etc" / "deviceclasses.yaml").read_text())]
    key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
    assert sorted(rbac + classes, key=key) == \
        sorted([d for d in base if d["kind"] != "PriorityClass"], key=key)


def test_rbac_grants_exactly_the_verbs_the_plugin_uses():
    kinds = by_kind(docs(kustomize(BASE)))
    binding, events, read = sorted(kinds["ClusterRole"], key=lambda d: d["metadata"]["name"])
    assert binding["metadata"]["name"].endswith("-binding")
    # the launch gate's Warning Event on a pod's claim, in that claim's namespace
    assert events["metadata"]["name"].endswith("-events")
    assert events["rules"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    # Nodes and pods cluster-wide are the node-discovery component's, not
    # the base's (a site without NodeDiscovery=external grants neither).
    assert read["rules"] == [{"apiGroups": ["resource.k8s.io"],
                              "resources": ["resourceslices",
                                            "resourceclaims",
                                            "devicetaintrules"],
                              "verbs": ["list", "watch"]}]
    # checked by Kubernetes 1.36+ at cluster scope: a Role cannot grant it
    assert binding["rules"] == [{"apiGroups": ["resource.k8s.io"],
                                 "resources": ["resourceclaims/binding"],
                                 "verbs": ["update"]}]
    write, = kinds["Role"]
    assert sorted((r, v) for rule in write["rules"]
                  for r in rule["resources"] for v in rule["verbs"]) == [
        ("leases", "create"), ("leases", "get"), ("leases", "update"),
        ("pods", "create"), ("pods", "delete"), ("pods", "get"),
        ("pods", "list"), ("pods", "watch"),
        ("resourceclaims", "create"), ("resourceclaims", "delete"),
        ("resourceclaims", "get"), ("resourceclaims/status", "update")]
    assert [rule["apiGroups"] for rule in write["rules"] if "pods" in rule["resources"]] == [[""]]
    assert [rule["apiGroups"] for rule in write["rules"] if "leases" in rule["resources"]] == \
        [["coordination.k8s.io"]]
    sa, = kinds["ServiceAccount"]
    for binding in kinds["RoleBinding"] + kinds["ClusterRoleBinding"]:
        assert binding["subjects"] == [{
            "kind": "ServiceAccount", "name": sa["metadata"]["name"],
            "namespace": sa["metadata"]["namespace"]}]


def with_discovery(tmp_path, base):
    """A site's kustomization: `base` plus the node-discovery component
    (paths relative, as kustomize wants them)."""
    rel = lambda p: os.path.relpath(p, tmp_path)  # noqa: E731
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {rel(base)}\n"
        f"components:\n  - {rel(BASE / 'components' / 'node-discovery')}\n")
    return docs(kustomize(tmp_path))


def test_node_discovery_component_adds_only_reading_nodes_and_pods(tmp_path):
    """NodeDiscovery=external (and ExternalJobClaims=bridge) read Nodes and
    slurm-bridge's pods cluster-wide: that, and only that, is what the
    component adds; it binds the base's ServiceAccount, in the overlay's
    namespace too; etc/rbac-node-discovery.yaml says the same."""
    key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
    base = {key(d): d for d in docs(kustomize(BASE))}
    site = {key(d): d for d in with_discovery(tmp_path, BASE / "base")}
    added = [site[k] for k in sorted(set(site) - set(base))]
    assert [key(d) for d in added] == [("ClusterRole", "slurm-k8s-cons-tres-discovery"),
                                       ("ClusterRoleBinding", "slurm-k8s-cons-tres-discovery")]
    assert all(site[k] == base[k] for k in base)
    role, binding = added
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes", "pods"],
                              "verbs": ["list", "watch"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    sa = base[("ServiceAccount", "slurm-k8s-cons-tres")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": sa["metadata"]["namespace"]}]
    loose = sorted((strip(d) for d in docs((TOP / "etc" / "rbac-node-discovery.yaml").read_text())),
                   key=key)
    assert loose == [strip(d) for d in added]

    moved = tmp_path / "moved"
    moved.mkdir()
    site = {key(d): d for d in with_discovery(moved, OVERLAY)}
    binding = site[("ClusterRoleBinding", "slurm-k8s-cons-tres-discovery")]
    assert binding["subjects"][0]["namespace"] == "hpc-claims"


def test_overlay_moves_the_claim_namespace():
    items = docs(kustomize(OVERLAY))
    kinds = by_kind(items)
    assert [d["metadata"]["name"] for d in kinds["Namespace"]] == \
        ["hpc-claims"]
    for d in items:
        if d["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in d["metadata"], d
        else:
            assert d["metadata"]["namespace"] == "hpc-claims", d
    for binding in kinds["RoleBinding"] + kinds["ClusterRoleBinding"]:
        assert {s["namespace"] for s in binding["subjects"]} == \
            {"hpc-claims"}
    # everything else is the base's
    base = docs(kustomize(BASE))
    assert len(base) == len(items)


# ---------------------------------------------------------------- apply

def _objects(srv, items):
    """The stored version of each manifest object (None when missing)."""
    out = []
    for d in items:
        args = ["get", d["kind"].lower() + "." +
                (d["apiVersion"].split("/")[0] if "/" in d["apiVersion"]
                 else ""), d["metadata"]["name"], "-o", "json",
            "--show-managed-fields"]
        args[1] = args[1].rstrip(".")
        if "namespace" in d["metadata"]:
            args += ["-n", d["metadata"]["namespace"]]
        res = kubectl(srv, *args, ok=False)
        out.append(json.loads(res.stdout) if res.returncode == 0 else None)
    return out


def _check_stored(stored, items):
    for obj, d in zip(stored, items):
        assert obj is not None, d
        for key in ("rules", "subjects", "roleRef", "spec", "value",
                    "preemptionPolicy"):
            if key in d and not (d["kind"] == "Namespace" and key == "spec"):
                assert obj[key] == d[key], (key, obj, d)
        assert obj["metadata"].get("labels") == d["metadata"].get("labels")


@pytest.mark.parametrize("path", [BASE, OVERLAY], ids=["base", "overlay"])
def test_server_side_dry_run_then_apply(srv, path):
    text = kustomize(path)
    items = docs(text)
    namespaces = yaml.safe_dump_all(by_kind(items)["Namespace"])
    # kube-apiserver refuses objects in a namespace that does not exist,
    # dry run or not (NamespaceLifecycle): the namespace comes first.
    res = kubectl(srv, "apply", "--server-side", "--dry-run=server", "-f", "-",
                  stdin=namespaces)
    assert "(server dry run)" in res.stdout
    ns = by_kind(items)["Namespace"][0]["metadata"]["name"]
    assert kubectl(srv, "get", "namespace", ns, ok=False).returncode != 0
    kubectl(srv, "apply", "--server-side", "-f", "-", stdin=namespaces)

    res = kubectl(srv, "apply", "--server-side", "--dry-run=server", "-f", "-",
                  stdin=text)
    lines = res.stdout.strip().splitlines()
    assert len(lines) == len(items)
    assert all(line.endswith("serverside-applied (server dry run)")
               for line in lines), res.stdout
    role = _objects(srv, by_kind(items)["Role"])
    assert role == [None], "a dry run stores nothing"

    res = kubectl(srv, "apply", "--server-side", "-f", "-", stdin=text)
    assert res.stdout.count("serverside-applied") == len(items)
    stored = _objects(srv, items)
    _check_stored(stored, items)
    managers = {e["manager"] for o in stored
                for e in o["metadata"].get("managedFields", [])}
    assert managers == {"kubectl"}

    # applying the same again changes nothing
    kubectl(srv, "apply", "--server-side", "-f", "-", stdin=text)
    again = _objects(srv, items)
    assert [o["metadata"]["resourceVersion"] for o in again] == \
        [o["metadata"]["resourceVersion"] for o in stored]


def test_readme_command_apply_k_on_a_fresh_server():
    """`kubectl apply -k etc/kubernetes` (client-side apply), as README says."""
    with TestApiServer() as fresh:
        res = kubectl(fresh, "apply", "-k", str(BASE))
        items = docs(kustomize(BASE))
        assert res.stdout.count("created") == len(items), res.stdout
        _check_stored(_objects(fresh, items), items)
        res = kubectl(fresh, "apply", "-k", str(BASE))
        assert res.stdout.count("unchanged") == len(items), res.stdout


# ---------------------------------------------------------------- server

def _apply(srv, path, obj, manager="m1", force=False, dry=False):
    query = f"?fieldManager={manager}" if manager else "?"
    if force:
        query += "&force=true"
    if dry:
        query += "&dryRun=All"
    return srv.request("PATCH", path + query, json.dumps(obj),
                       content_type=APPLY)


def test_server_side_apply_ownership_and_validation(srv):
    path = "/apis/scheduling.k8s.io/v1/priorityclasses/pc-test"
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
          "metadata": {"name": "pc-test", "labels": {"a": "1", "b": "1"}},
          "value": 1000, "description": "first"}
    assert _apply(srv, path, pc, manager=None)[0] == 400
    code, _, body = _apply(srv, path, pc, dry=True)
    assert code == 201 and body["preemptionPolicy"] == "PreemptLowerPriority"
    assert srv.request("GET", path)[0] == 404
    assert _apply(srv, path, pc)[0] == 201
    # another manager setting a field differently conflicts, unless forced
    other = {**pc, "metadata": {"name": "pc-test"}, "description": "second"}
    code, _, body = _apply(srv, path, other, manager="m2")
    assert code == 409 and body["reason"] == "Conflict"
    assert '.description: conflict with "m1"' in body["message"]
    assert _apply(srv, path, other, manager="m2", force=True)[0] == 200
    # a field the manager no longer applies goes (b), one it still does stays
    code, _, body = _apply(srv, path, {**pc, "metadata": {
        "name": "pc-test", "labels": {"a": "1"}}, "description": "second"})
    assert code == 200, body
    assert body["metadata"]["labels"] == {"a": "1"}
    assert body["description"] == "second"
    # immutable value, user priority limit
    code, _, body = _apply(srv, path, {**pc, "value": 2000}, force=True)
    assert code == 422 and "may not be changed" in body["message"]
    big = {**pc, "metadata": {"name": "pc-big"}, "value": 1000000001}
    code, _, body = _apply(srv, path.replace("pc-test", "pc-big"), big)
    assert code == 422 and body["details"]["causes"][0]["field"] == "value"


def test_rbac_kinds_are_validated_not_enforced(srv):
    base = "/apis/rbac.authorization.k8s.io/v1"
    crb = {"apiVersion": "rbac.authorization.k8s.io/v1",
           "kind": "ClusterRoleBinding", "metadata": {"name": "crb-test"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                       "kind": "ClusterRole", "name": "nothing"},
           "subjects": [{"kind": "ServiceAccount", "name": "x"}]}
    code, _, body = srv.request("POST", base + "/clusterrolebindings", crb)
    assert code == 422 and body["details"]["causes"][0]["field"] == \
        "subjects[0].namespace"
    crb["subjects"][0]["namespace"] = "default"
    assert srv.request("POST", base + "/clusterrolebindings", crb)[0] == 201
    crb["roleRef"]["name"] = "other"
    code, _, body = srv.request("PUT", base + "/clusterrolebindings/crb-test",
                                crb)
    assert code == 422 and "cannot change roleRef" in body["message"]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": [{"resources": ["x"]}]}
    code, _, body = srv.request("POST", base + "/namespaces/default/roles",
                                role)
    assert code == 422
    assert {c["field"] for c in body["details"]["causes"]} == \
        {"rules[0].verbs", "rules[0].apiGroups"}


# ---------------------------------------------------------------- slurmd

SLURMD = BASE / "components" / "slurmd"
SLURMD_EXAMPLE = BASE / "overlays" / "slurmd-example"


def test_the_slurmd_component_builds_alone_and_with_the_example_overlay():
    alone = by_kind(docs(kustomize(SLURMD)))
    assert sorted(alone) == ["DaemonSet", "Namespace", "PriorityClass"]
    ds, = alone["DaemonSet"]
    # no image is shipped: the component names a placeholder the site sets
    assert {c["image"] for c in ds["spec"]["template"]["spec"]["containers"]} == {"slurmd"}

    site = by_kind(docs(kustomize(SLURMD_EXAMPLE)))
    # the plugin's base, the component, the generated ConfigMap
    assert sorted(site) == sorted(["Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                                   "ClusterRoleBinding", "PriorityClass", "DeviceClass", "DaemonSet",
                                   "ConfigMap"])
    ds, = site["DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    assert {c["image"] for c in pod["containers"]} == {"registry.example.com/hpc/slurm:25.11.7"}
    cm, = site["ConfigMap"]
    assert cm["metadata"]["namespace"] == ds["metadata"]["namespace"] == "slurmd"
    assert sorted(cm["data"]) == ["cgroup.conf", "gres.conf", "slurm.conf"]
    # the generated name (its content's hash) is what the pod mounts
    assert cm["metadata"]["name"].startswith("slurmd-config-")
    assert {v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v} == {cm["metadata"]["name"]}
    assert "IgnoreSystemd=yes" in cm["data"]["cgroup.conf"]
    assert "SelectType=select/k8s_cons_tres" in cm["data"]["slurm.conf"]
    # the claim namespace stays "restricted"; slurmd's own is privileged
    enforce = {n["metadata"]["name"]: n["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
               for n in site["Namespace"]}
    assert enforce == {default_claim_namespace(): "restricted", "slurmd": "privileged"}, enforce


def test_the_slurmd_pod_holds_no_device_and_runs_slurmd_as_a_host_would():
    site = by_kind(docs(kustomize(SLURMD_EXAMPLE)))
    ds, = site["DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    # No device, no claim: each job's devices are its own claims' and holder
    # pod's, so the node's shared pool keeps every CPU and GPU no job holds.
    assert "resourceClaims" not in pod
    for c in pod["containers"] + pod.get("initContainers", []):
        res = c.get("resources", {})
        assert "claims" not in res, c["name"]
        for kind in ("requests", "limits"):
            assert set(res.get(kind, {})) <= {"cpu", "memory"}, (c["name"], res)
    slurmd, = [c for c in pod["containers"] if c["name"] == "slurmd"]
    assert slurmd["resources"]["requests"]["cpu"] == "100m"
    assert pod["hostNetwork"] is True and pod["hostPID"] is True
    assert pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert slurmd["securityContext"] == {"privileged": True}
    # the node's name is the Slurm node's name
    env = {e["name"]: e for e in slurmd["env"]}
    assert env["SLURM_NODENAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert slurmd["command"][:2] == ["slurmd", "-D"] and "$(SLURM_NODENAME)" in slurmd["command"]
    assert slurmd["readinessProbe"]["tcpSocket"]["port"] == 6818
    # longer than slurm.conf's default KillWait (30 s), for the steps to end
    assert pod["terminationGracePeriodSeconds"] > 30
    assert pod["nodeSelector"] == {"k8s-cons-tres.slurm.io/slurmd": "true"}
    assert pod["automountServiceAccountToken"] is False
    # munged beside it, on a socket directory they share, the key from a Secret
    munge, = [c for c in pod["containers"] if c["name"] == "munge"]
    assert "munged --foreground" in " ".join(munge["command"])
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["munge-key"]["secret"]["secretName"] == "munge-key"
    assert vols["munge-key"]["secret"]["defaultMode"] == 0o400
    assert "emptyDir" in vols["munge-socket"]
    mounts = lambda c: {m["mountPath"]: m["name"] for m in c["volumeMounts"]}  # noqa: E731
    assert mounts(slurmd)["/run/munge"] == mounts(munge)["/run/munge"] == "munge-socket"
    # never preempted by ordinary pods: above the holder pods, the top user priority
    classes = {p["metadata"]["name"]: p for p in site["PriorityClass"]}
    mine = classes[pod["priorityClassName"]]
    assert mine["value"] > classes["slurm-k8s-cons-tres-holder"]["value"]
    assert mine["value"] <= 1000000000 and mine["globalDefault"] is False
    # replaced only when the admin deletes a pod (after draining the node):
    # a pod's deletion ends the steps on its node
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}
