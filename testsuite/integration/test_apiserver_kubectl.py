# SPDX-License-Identifier: GPL-2.0-or-later
"""The real kubectl against the test API server: get (table, json, yaml),
apply (create, update), delete, get --watch, patch --subresource=status,
409 on a stale replace, and the auth/TLS failures.  kubectl's default
client-side validation finds no schema in the server's empty OpenAPI v2
document and leaves validation to the server (422), so no
--validate=false is needed."""

import json
import os
import queue
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apiserver_fixture import TestApiServer, KUBECTL, wait_for  # noqa

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL),
                                reason="kubectl not installed")


@pytest.fixture(scope="module")
def srv():
    with TestApiServer() as server:
        yield server


def run(srv, *args, stdin=None, ok=True, **kw):
    res = srv.kubectl(*args, input=stdin, **kw)
    if ok:
        assert res.returncode == 0, res.stderr
    return res


def slice_yaml(name, node, cpu_id):
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: {name}
spec:
  driver: dra.cpu
  nodeName: {node}
  pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: cpudev000
    attributes:
      dra.cpu/cpuID: {{int: {cpu_id}}}
      dra.cpu/coreType: {{string: standard}}
"""


def claim_json(name, count=1, labels=None):
    return json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"devices": {"requests": [
            {"name": "cpu", "exactly": {"deviceClassName": "dra.cpu",
                                        "allocationMode": "ExactCount",
                                        "count": count}}]}}})


ALLOCATION = {"status": {"allocation": {
    "devices": {"results": [{"request": "cpu", "driver": "dra.cpu",
                             "pool": "node1", "device": "cpudev000"}]},
    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}},
    "reservedFor": [{"resource": "pods", "name": "job-1-0", "uid": "u-1"}]}}


def test_api_resources(srv):
    out = run(srv, "api-resources", "--api-group=resource.k8s.io").stdout
    assert "resourceslices" in out and "resourceclaims" in out
    assert "deviceclasses" in out


def test_apply_get_update_delete_slice(srv):
    res = run(srv, "apply", "-f", "-",
              stdin=slice_yaml("kc-node1-dra.cpu-a", "kc-node1", 0))
    assert "created" in res.stdout
    table = run(srv, "get", "resourceslices", "kc-node1-dra.cpu-a").stdout
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert row.split()[:4] == ["kc-node1-dra.cpu-a", "kc-node1", "dra.cpu",
                               "kc-node1"]
    res = run(srv, "apply", "-f", "-",
              stdin=slice_yaml("kc-node1-dra.cpu-a", "kc-node1", 7))
    assert "configured" in res.stdout
    obj = json.loads(run(srv, "get", "resourceslice", "kc-node1-dra.cpu-a",
                         "-o", "json").stdout)
    assert obj["spec"]["devices"][0]["attributes"]["dra.cpu/cpuID"] == \
        {"int": 7}
    assert obj["metadata"]["generation"] == 2
    res = run(srv, "apply", "-f", "-",
              stdin=slice_yaml("kc-node1-dra.cpu-a", "kc-node1", 7))
    assert "unchanged" in res.stdout
    yaml_out = run(srv, "get", "resourceslice", "kc-node1-dra.cpu-a", "-o",
                   "yaml").stdout
    assert "kind: ResourceSlice" in yaml_out and "cpudev000" in yaml_out
    res = run(srv, "delete", "resourceslice", "kc-node1-dra.cpu-a")
    assert "deleted" in res.stdout
    res = run(srv, "get", "resourceslice", "kc-node1-dra.cpu-a", ok=False)
    assert res.returncode != 0 and "NotFound" in res.stderr


def test_get_with_selectors_and_chunks(srv):
    for i in range(5):
        run(srv, "apply", "-f", "-",
            stdin=slice_yaml(f"kc-sel-{i}", f"kc-sel-node{i % 2}", i))
    out = run(srv, "get", "resourceslices", "--chunk-size=2", "-o", "name",
              "--field-selector", "spec.nodeName=kc-sel-node0").stdout
    assert out.split() == [f"resourceslice.resource.k8s.io/kc-sel-{i}"
                           for i in (0, 2, 4)]
    run(srv, "label", "resourceslice", "kc-sel-1", "rack=r1")
    # kubectl patch defaults to a strategic merge patch
    run(srv, "patch", "resourceslice", "kc-sel-3", "-p",
        '{"metadata":{"labels":{"rack":"r3"}}}')
    out = run(srv, "get", "resourceslices", "-l", "rack", "-o", "name").stdout
    assert out.split() == ["resourceslice.resource.k8s.io/kc-sel-1",
                           "resourceslice.resource.k8s.io/kc-sel-3"]
    out = run(srv, "get", "resourceslices", "-l", "rack in (r1,r2)", "-o",
              "name").stdout
    assert out.split() == ["resourceslice.resource.k8s.io/kc-sel-1"]


def test_apply_claim_and_patch_status(srv):
    res = run(srv, "apply", "-f", "-",
              stdin=claim_json("kc-claim", labels={"job": "1"}))
    assert "created" in res.stdout
    res = run(srv, "apply", "-f", "-",
              stdin=claim_json("kc-claim", labels={"job": "1", "x": "y"}))
    assert "configured" in res.stdout
    table = run(srv, "get", "resourceclaims").stdout
    assert "kc-claim" in table and "pending" in table
    run(srv, "patch", "resourceclaim", "kc-claim", "--subresource=status",
        "--type=merge", "-p", json.dumps(ALLOCATION))
    obj = json.loads(run(srv, "get", "resourceclaim", "kc-claim", "-o",
                         "json").stdout)
    assert obj["status"]["reservedFor"][0]["name"] == "job-1-0"
    assert obj["metadata"]["labels"] == {"job": "1", "x": "y"}
    assert "allocated,reserved" in run(srv, "get", "resourceclaims").stdout
    # the allocation cannot change once set: 422 from the server
    other = json.loads(json.dumps(ALLOCATION))
    other["status"]["allocation"]["devices"]["results"][0]["device"] = \
        "cpudev001"
    res = run(srv, "patch", "resourceclaim", "kc-claim",
              "--subresource=status", "--type=merge", "-p",
              json.dumps(other), ok=False)
    assert res.returncode != 0 and "field is immutable" in res.stderr
    # a spec change through apply is refused too (spec is immutable)
    res = run(srv, "apply", "-f", "-",
              stdin=claim_json("kc-claim", count=2,
                               labels={"job": "1", "x": "y"}), ok=False)
    assert res.returncode != 0 and "is invalid" in res.stderr
    run(srv, "delete", "resourceclaim", "kc-claim")


def test_stale_replace_gets_409(srv):
    run(srv, "create", "-f", "-",
        stdin=claim_json("kc-stale"))
    old = run(srv, "get", "resourceclaim", "kc-stale", "-o", "json").stdout
    run(srv, "label", "resourceclaim", "kc-stale", "changed=yes")
    res = run(srv, "replace", "-f", "-", stdin=old,
              ok=False)
    assert res.returncode != 0
    assert "Conflict" in res.stderr
    assert "the object has been modified" in res.stderr


def test_get_watch_sees_new_claim(srv):
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", srv.kubeconfig, "get", "resourceclaims",
         "--watch-only", "-o", "name"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout],
                     daemon=True).start()
    try:
        before = srv.stats()["watchesTotal"]
        wait_for(lambda: srv.stats()["watchesTotal"] > before, 20,
                 what="kubectl's watch request")
        run(srv, "create", "-f", "-",
            stdin=claim_json("kc-watched"))
        line = lines.get(timeout=20)
        assert line.strip() == "resourceclaim.resource.k8s.io/kc-watched"
        run(srv, "delete", "resourceclaim", "kc-watched")
        line = lines.get(timeout=20)
        assert line.strip() == "resourceclaim.resource.k8s.io/kc-watched"
    finally:
        proc.terminate()
        proc.wait(10)


def test_get_watch_table_output(srv):
    run(srv, "create", "-f", "-",
        stdin=claim_json("kc-wt"))
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", srv.kubeconfig, "get", "resourceclaims",
         "kc-wt", "--watch"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout],
                     daemon=True).start()
    try:
        assert lines.get(timeout=20).split()[:2] == ["NAME", "STATE"]
        assert lines.get(timeout=20).split()[:2] == ["kc-wt", "pending"]
        run(srv, "patch", "resourceclaim", "kc-wt", "--subresource=status",
            "--type=merge", "-p", json.dumps(ALLOCATION))
        assert lines.get(timeout=20).split()[:2] == \
            ["kc-wt", "allocated,reserved"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_wrong_token_is_unauthorized(srv):
    res = run(srv, "--token", "wrong", "get", "resourceslices", ok=False)
    assert res.returncode != 0 and "Unauthorized" in res.stderr


def test_readonly_token_is_forbidden_to_write(srv):
    res = srv.kubectl("delete", "resourceslice", "anything",
                      kubeconfig=srv.kubeconfig_for("readonly"))
    assert res.returncode != 0 and "Forbidden" in res.stderr
    res = srv.kubectl("get", "resourceslices",
                      kubeconfig=srv.kubeconfig_for("readonly"))
    assert res.returncode == 0, res.stderr


def test_client_certificate_kubeconfig(srv):
    res = srv.kubectl("get", "resourceslices",
                      kubeconfig=srv.kubeconfig_cert("admin"))
    assert res.returncode == 0, res.stderr
    res = srv.kubectl("delete", "resourceslice", "anything",
                      kubeconfig=srv.kubeconfig_cert("readonly"))
    assert res.returncode != 0
    assert 'User "readonly" cannot delete' in res.stderr


def test_wrong_ca_fails_certificate_check(srv, tmp_path):
    other = TestApiServer(rundir=str(tmp_path))
    other.start()
    try:
        res = run(srv, "--certificate-authority", other.ca_path, "get",
                  "resourceslices", ok=False)
    finally:
        other.stop()
    assert res.returncode != 0
    assert "certificate signed by unknown authority" in res.stderr


def test_server_validation_reaches_kubectl(srv):
    res = run(srv, "apply", "-f", "-", ok=False, stdin=json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "kc-bad"},
        "spec": {"driver": "dra.cpu", "nodeName": "n1",
                 "pool": {"name": "n1", "resourceSliceCount": 1},
                 "devices": [{"name": f"cpudev{i:03d}"}
                             for i in range(129)]}}))
    assert res.returncode != 0
    assert 'The ResourceSlice "kc-bad" is invalid' in res.stderr
    assert "must have at most 128 items" in res.stderr


def test_namespaces_and_namespaced_claims(srv):
    # A manifest goes through the JSON path (`kubectl create namespace`
    # sends protobuf, which the server refuses).
    run(srv, "create", "-f", "-", stdin=json.dumps(
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "kc-jobs"}}))
    run(srv, "create", "-n", "kc-jobs", "-f", "-",
        stdin=claim_json("kc-ns-claim"))
    out = run(srv, "get", "resourceclaims", "-A", "-o", "name").stdout
    assert "resourceclaim.resource.k8s.io/kc-ns-claim" in out.split()
    out = run(srv, "get", "resourceclaims", "-n", "default", "-o",
              "name").stdout
    assert "kc-ns-claim" not in out


# ------------------------------------------------------------ DeviceTaintRules

def taint_rule(name, effect, version="v1beta2", selector='{"driver": "gpu.nvidia.com", "device": "gpu-0"}'):
    return json.dumps({"apiVersion": f"resource.k8s.io/{version}", "kind": "DeviceTaintRule",
                       "metadata": {"name": name},
                       "spec": {"deviceSelector": json.loads(selector),
                                "taint": {"key": "example.com/maintenance", "effect": effect}}})


def test_device_taint_rules_served_at_v1beta2_by_default(srv):
    """As a 1.36 API server with DRADeviceTaintRules: discovery lists them
    in resource.k8s.io/v1beta2, kubectl creates one, the server defaults
    timeAdded and refuses an effect Kubernetes does not know."""
    out = run(srv, "api-resources", "--api-group=resource.k8s.io", "-o", "wide").stdout
    assert any(line.split()[:1] == ["devicetaintrules"] and "resource.k8s.io/v1beta2" in line
               for line in out.splitlines()), out
    run(srv, "apply", "-f", "-", stdin=taint_rule("gpu0-maint", "NoSchedule"))
    got = json.loads(run(srv, "get", "devicetaintrule", "gpu0-maint", "-o", "json").stdout)
    assert got["apiVersion"] == "resource.k8s.io/v1beta2" and "namespace" not in got["metadata"]
    assert got["spec"]["taint"]["timeAdded"], got
    res = run(srv, "apply", "-f", "-", stdin=taint_rule("bad", "PreferNoSchedule"), ok=False)
    assert res.returncode != 0 and 'spec.taint.effect: Unsupported value: "PreferNoSchedule"' in res.stderr, \
        res.stderr
    run(srv, "delete", "devicetaintrule", "gpu0-maint")


@pytest.mark.parametrize("version", ["v1alpha3", "off"])
def test_device_taint_rules_at_another_version_or_none(version):
    with TestApiServer(extra_args=["--device-taint-rules", version]) as s:
        res = s.kubectl("apply", "-f", "-", input=taint_rule("r", "NoExecute", version="v1alpha3"))
        if version == "off":  # as without the feature gate: kubectl finds no such kind
            assert res.returncode != 0 and "DeviceTaintRule" in res.stderr, res.stderr
        else:
            assert res.returncode == 0, res.stderr
            res = s.kubectl("apply", "-f", "-", input=taint_rule("r2", "NoExecute", version="v1beta2"))
            assert res.returncode != 0, "only one version is served at a time"
