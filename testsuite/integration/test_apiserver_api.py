# SPDX-License-Identifier: GPL-2.0-or-later
"""The test API server against kube-apiserver semantics, over HTTPS with a
plain Python client: auth, discovery, CRUD, status subresource, validation,
optimistic concurrency, selectors, pagination, watch, fault injection."""

import json
import os
import socket
import ssl
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apiserver_fixture import TestApiServer, WatchStream, wait_for  # noqa

V1 = "/apis/resource.k8s.io/v1"
CLAIMS = V1 + "/namespaces/default/resourceclaims"
SLICES = V1 + "/resourceslices"


@pytest.fixture(scope="module")
def srv():
    with TestApiServer(bookmark_interval=0.3) as server:
        yield server


@pytest.fixture(autouse=True)
def clean_faults(srv):
    yield
    srv.reset_faults()


def slice_obj(name, node="n1", driver="dra.cpu", devices=1, labels=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1,
                              "resourceSliceCount": 1},
                     "devices": [{"name": f"cpudev{i:03d}", "attributes": {
                         "dra.cpu/cpuID": {"int": i}}}
                         for i in range(devices)]}}


def claim_obj(name, requests=("cpu",), labels=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"devices": {"requests": [
                {"name": r, "exactly": {"deviceClassName": "dra.cpu",
                                        "allocationMode": "ExactCount",
                                        "count": 1}} for r in requests]}}}


def allocation(n=1, request="cpu"):
    return {"devices": {"results": [
        {"request": request, "driver": "dra.cpu", "pool": "n1",
         "device": f"cpudev{i:03d}"} for i in range(n)]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}


def create(srv, path, obj):
    code, _, body = srv.request("POST", path, obj)
    assert code == 201, body
    return body


# ---------------------------------------------------------------- auth

def test_missing_and_wrong_token_get_401_status(srv):
    for token in (None, "not-a-token"):
        code, hdrs, body = srv.request("GET", SLICES, token=token)
        assert code == 401
        assert hdrs["Content-Type"] == "application/json"
        assert body["kind"] == "Status" and body["reason"] == "Unauthorized"


def test_readonly_may_read_but_not_write(srv):
    assert srv.request("GET", SLICES, token="readonly")[0] == 200
    code, _, body = srv.request("POST", SLICES, slice_obj("ro-1"),
                                token="readonly")
    assert code == 403 and body["reason"] == "Forbidden"
    assert 'User "readonly" cannot create' in body["message"]


def test_noaccess_gets_403_on_resources_but_sees_discovery(srv):
    assert srv.request("GET", SLICES, token="noaccess")[0] == 403
    assert srv.request("GET", "/apis", token="noaccess")[0] == 200


def test_wrong_ca_is_rejected_by_client(srv, tmp_path):
    other = TestApiServer(rundir=str(tmp_path))
    other.start()
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            srv.connect(ca=other.ca_path).request("GET", "/version")
    finally:
        other.stop()


# ---------------------------------------------------------------- discovery

def test_discovery_documents(srv):
    aggregated = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;"
                  "as=APIGroupDiscoveryList,application/json"}
    code, hdrs, groups = srv.request("GET", "/apis", headers=aggregated)
    assert code == 200 and hdrs["Content-Type"] == "application/json"
    assert groups["kind"] == "APIGroupList"
    assert groups["groups"][0]["preferredVersion"]["groupVersion"] == \
        "resource.k8s.io/v1"
    _, _, res = srv.request("GET", V1)
    names = {r["name"]: r for r in res["resources"]}
    assert not names["resourceslices"]["namespaced"]
    assert names["resourceclaims"]["namespaced"]
    assert "resourceclaims/status" in names and "deviceclasses" in names
    assert srv.request("GET", "/api")[2]["versions"] == ["v1"]
    assert srv.request("GET", "/version")[2]["major"] == "1"
    assert srv.request("GET", "/openapi/v3")[0] == 404


# ---------------------------------------------------------------- claims

def test_create_wipes_status_and_sets_metadata(srv):
    obj = claim_obj("c-create")
    obj["status"] = {"allocation": allocation()}
    body = create(srv, CLAIMS, obj)
    meta = body["metadata"]
    assert body["status"] == {}
    assert meta["namespace"] == "default" and meta["generation"] == 1
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    code, _, dup = srv.request("POST", CLAIMS, claim_obj("c-create"))
    assert code == 409 and dup["reason"] == "AlreadyExists"


def test_global_resource_version_increases(srv):
    a = create(srv, SLICES, slice_obj("rv-a"))
    b = create(srv, CLAIMS, claim_obj("rv-b"))
    assert int(b["metadata"]["resourceVersion"]) > \
        int(a["metadata"]["resourceVersion"])


def test_generate_name(srv):
    obj = claim_obj("")
    obj["metadata"] = {"generateName": "job-7-"}
    body = create(srv, CLAIMS, obj)
    assert body["metadata"]["name"].startswith("job-7-")
    assert len(body["metadata"]["name"]) == len("job-7-") + 5


def test_not_found_status(srv):
    code, _, body = srv.request("GET", CLAIMS + "/nope")
    assert code == 404 and body["reason"] == "NotFound"
    assert body["details"]["name"] == "nope"
    code, _, body = srv.request(
        "POST", V1 + "/namespaces/missing/resourceclaims", claim_obj("x"))
    assert code == 404 and "namespaces" in body["message"]


def test_status_write_keeps_spec_and_main_write_keeps_status(srv):
    body = create(srv, CLAIMS, claim_obj("c-status"))
    body["spec"]["devices"]["requests"][0]["exactly"]["count"] = 5
    body["status"] = {"allocation": allocation(2)}
    code, _, st = srv.request("PUT", CLAIMS + "/c-status/status", body)
    assert code == 200, st
    assert st["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    assert len(st["status"]["allocation"]["devices"]["results"]) == 2
    st["metadata"]["labels"] = {"job": "7"}
    st["status"] = {}
    code, _, main = srv.request("PUT", CLAIMS + "/c-status", st)
    assert code == 200, main
    assert main["metadata"]["labels"] == {"job": "7"}
    assert len(main["status"]["allocation"]["devices"]["results"]) == 2


def test_allocation_is_immutable_once_set(srv):
    body = create(srv, CLAIMS, claim_obj("c-immut"))
    body["status"] = {"allocation": allocation(1)}
    code, _, body = srv.request("PUT", CLAIMS + "/c-immut/status", body)
    assert code == 200
    body["status"]["allocation"] = allocation(2)
    code, _, err = srv.request("PUT", CLAIMS + "/c-immut/status", body)
    assert code == 422 and err["reason"] == "Invalid"
    assert err["details"]["causes"][0]["field"] == "status.allocation"
    # clearing to null is allowed
    code, _, body = srv.request(
        "PATCH", CLAIMS + "/c-immut/status",
        {"status": {"allocation": None}},
        content_type="application/merge-patch+json")
    assert code == 200 and "allocation" not in body["status"]


def test_status_validation_rules(srv):
    body = create(srv, CLAIMS, claim_obj("c-valid"))
    cases = [
        ({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]},
         "status.reservedFor"),
        ({"allocation": allocation(33)}, "status.allocation.devices.results"),
        ({"allocation": allocation(1, request="gpu")},
         "status.allocation.devices.results[0].request"),
    ]
    for status, field in cases:
        body["status"] = status
        code, _, err = srv.request("PUT", CLAIMS + "/c-valid/status", body)
        assert code == 422, status
        assert field in [c["field"] for c in err["details"]["causes"]]


def test_claim_spec_validation(srv):
    code, _, err = srv.request("POST", CLAIMS, claim_obj(
        "c-many", requests=[f"r{i}" for i in range(33)]))
    assert code == 422
    assert err["details"]["causes"][0]["field"] == "spec.devices.requests"
    code, _, err = srv.request("POST", CLAIMS, claim_obj("Bad_Name"))
    assert code == 422 and err["details"]["causes"][0]["field"] == \
        "metadata.name"


def test_stale_resource_version_conflicts(srv):
    body = create(srv, CLAIMS, claim_obj("c-409"))
    stale = json.loads(json.dumps(body))
    body["metadata"]["labels"] = {"a": "1"}
    assert srv.request("PUT", CLAIMS + "/c-409", body)[0] == 200
    stale["metadata"]["labels"] = {"a": "2"}
    code, _, err = srv.request("PUT", CLAIMS + "/c-409", stale)
    assert code == 409 and err["reason"] == "Conflict"
    stale["status"] = {"allocation": allocation()}
    assert srv.request("PUT", CLAIMS + "/c-409/status", stale)[0] == 409


def test_noop_update_keeps_resource_version(srv):
    body = create(srv, CLAIMS, claim_obj("c-noop"))
    code, _, again = srv.request("PUT", CLAIMS + "/c-noop", body)
    assert code == 200
    assert again["metadata"]["resourceVersion"] == \
        body["metadata"]["resourceVersion"]


def test_patch_types(srv):
    create(srv, CLAIMS, claim_obj("c-patch"))
    code, _, body = srv.request(
        "PATCH", CLAIMS + "/c-patch", {"metadata": {"labels": {"x": "1"}}},
        content_type="application/strategic-merge-patch+json")
    assert code == 200 and body["metadata"]["labels"] == {"x": "1"}
    code, _, body = srv.request(
        "PATCH", CLAIMS + "/c-patch",
        [{"op": "add", "path": "/metadata/labels/y", "value": "2"}],
        content_type="application/json-patch+json")
    assert code == 200 and body["metadata"]["labels"] == {"x": "1", "y": "2"}
    code, _, body = srv.request(
        "PATCH", CLAIMS + "/c-patch/status",
        {"status": {"allocation": allocation()}},
        content_type="application/merge-patch+json")
    assert code == 200 and body["status"]["allocation"]
    code, _, _ = srv.request(
        "PATCH", CLAIMS + "/c-patch", {"spec": {"devices": None}},
        content_type="application/merge-patch+json")
    assert code == 422
    assert srv.request("PATCH", CLAIMS + "/c-patch", {},
                       content_type="text/plain")[0] == 415


def test_delete_with_finalizer_and_preconditions(srv):
    obj = claim_obj("c-final")
    obj["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    body = create(srv, CLAIMS, obj)
    code, _, err = srv.request("DELETE", CLAIMS + "/c-final", {
        "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})
    assert code == 409
    code, _, body = srv.request("DELETE", CLAIMS + "/c-final")
    assert code == 200 and body["metadata"]["deletionTimestamp"]
    assert srv.request("GET", CLAIMS + "/c-final")[0] == 200
    body["metadata"]["finalizers"] = []
    assert srv.request("PUT", CLAIMS + "/c-final", body)[0] == 200
    assert srv.request("GET", CLAIMS + "/c-final")[0] == 404
    create(srv, CLAIMS, claim_obj("c-del"))
    code, _, status = srv.request("DELETE", CLAIMS + "/c-del")
    assert code == 200 and status["status"] == "Success"
    assert srv.request("DELETE", CLAIMS + "/c-del")[0] == 404


# ---------------------------------------------------------------- slices

def test_slice_validation(srv):
    code, _, err = srv.request("POST", SLICES, slice_obj("s-big", devices=129))
    assert code == 422
    assert err["details"]["causes"][0]["field"] == "spec.devices"
    assert "at most 128" in err["message"]
    assert srv.request("POST", SLICES, slice_obj("s-128", devices=128))[0] \
        == 201
    obj = slice_obj("s-nosel")
    del obj["spec"]["nodeName"]
    assert srv.request("POST", SLICES, obj)[0] == 422
    body = create(srv, SLICES, slice_obj("s-immut"))
    body["spec"]["driver"] = "other.example.com"
    assert srv.request("PUT", SLICES + "/s-immut", body)[0] == 422


def test_label_and_field_selectors(srv):
    for i, (node, driver) in enumerate([("sel-a", "dra.cpu"),
                                        ("sel-a", "gpu.nvidia.com"),
                                        ("sel-b", "dra.cpu")]):
        create(srv, SLICES, slice_obj(f"sel-{i}", node, driver,
                                      labels={"tier": f"t{i}", "sel": "y"}))

    def names(query):
        code, _, body = srv.request("GET", SLICES + "?" + query)
        assert code == 200, body
        return sorted(i["metadata"]["name"] for i in body["items"])
    assert names("fieldSelector=spec.nodeName%3Dsel-a") == ["sel-0", "sel-1"]
    assert names("fieldSelector=spec.driver%3Ddra.cpu,spec.nodeName%3Dsel-b"
                 ) == ["sel-2"]
    assert names("fieldSelector=spec.driver!%3Ddra.cpu,"
                 "spec.nodeName%3Dsel-a") == ["sel-1"]
    assert names("labelSelector=tier+in+(t0,t2)") == ["sel-0", "sel-2"]
    assert names("labelSelector=sel,tier+notin+(t0)") == ["sel-1", "sel-2"]
    assert names("labelSelector=tier!%3Dt1,sel%3D%3Dy") == ["sel-0", "sel-2"]
    assert "sel-0" not in names("labelSelector=!tier")
    code, _, err = srv.request("GET", SLICES + "?fieldSelector=spec.pool%3Dx")
    assert code == 400 and "field label not supported" in err["message"]


def test_pagination_is_consistent_and_expires(srv):
    for i in range(7):
        create(srv, SLICES, slice_obj(f"page-{i}", labels={"page": "y"}))
    base = SLICES + "?labelSelector=page&limit=3"
    _, _, first = srv.request("GET", base)
    rv = first["metadata"]["resourceVersion"]
    assert len(first["items"]) == 3 and first["metadata"]["continue"]
    # a change after the first page is not visible in later pages
    srv.request("DELETE", SLICES + "/page-5")
    create(srv, SLICES, slice_obj("page-9", labels={"page": "y"}))
    seen, cont = [i["metadata"]["name"] for i in first["items"]], \
        first["metadata"]["continue"]
    while cont:
        _, _, page = srv.request("GET", f"{base}&continue={cont}")
        assert page["metadata"]["resourceVersion"] == rv
        seen += [i["metadata"]["name"] for i in page["items"]]
        cont = page["metadata"].get("continue")
    assert seen == [f"page-{i}" for i in range(7)]
    srv.set_faults(expireBefore="all")
    code, _, err = srv.request(
        "GET", f"{base}&continue={first['metadata']['continue']}")
    assert code == 410 and err["reason"] == "Expired"


# ---------------------------------------------------------------- watch

def test_watch_sees_changes_from_resource_version(srv):
    body = create(srv, CLAIMS, claim_obj("w-1", labels={"w": "1"}))
    rv = body["metadata"]["resourceVersion"]
    path = CLAIMS + f"?watch=1&labelSelector=w&resourceVersion={rv}"
    with WatchStream(srv, path) as w:
        assert w.status == 200
        create(srv, CLAIMS, claim_obj("w-2", labels={"w": "1"}))
        ev = w.next_non_bookmark()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] \
            == "w-2"
        srv.request("PATCH", CLAIMS + "/w-1", {"metadata": {"labels": None}},
                    content_type="application/merge-patch+json")
        ev = w.next_non_bookmark()   # left the selection: DELETED
        assert ev["type"] == "DELETED"
        assert ev["object"]["metadata"]["name"] == "w-1"
        srv.request("DELETE", CLAIMS + "/w-2")
        ev = w.next_non_bookmark()
        assert ev["type"] == "DELETED" and \
            int(ev["object"]["metadata"]["resourceVersion"]) > int(rv)


def test_watch_replays_history_and_sends_bookmarks(srv):
    rv = create(srv, SLICES, slice_obj("wh-0"))["metadata"]["resourceVersion"]
    create(srv, SLICES, slice_obj("wh-1"))
    path = SLICES + ("?watch=1&allowWatchBookmarks=true&fieldSelector="
                     f"metadata.name%3Dwh-1&resourceVersion={rv}")
    with WatchStream(srv, path) as w:
        ev = w.next_event()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == \
            "wh-1"
        ev = w.next_event(timeout=5)
        assert ev["type"] == "BOOKMARK"
        assert int(ev["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_watch_without_resource_version_lists_first(srv):
    create(srv, SLICES, slice_obj("wi-0", labels={"wi": "y"}))
    with WatchStream(srv, SLICES + "?watch=true&labelSelector=wi") as w:
        ev = w.next_event()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] \
            == "wi-0"


def test_watch_expired_resource_version_gets_410_event(srv):
    rv = create(srv, SLICES, slice_obj("we-0"))["metadata"]["resourceVersion"]
    create(srv, SLICES, slice_obj("we-1"))
    srv.set_faults(expireBefore=str(int(rv) + 1))
    with WatchStream(srv, SLICES + f"?watch=1&resourceVersion={rv}") as w:
        assert w.status == 200
        ev = w.next_event()
        assert ev["type"] == "ERROR"
        assert ev["object"]["code"] == 410
        assert ev["object"]["reason"] == "Expired"
        assert w.next_event() is None


def test_watch_timeout_ends_stream(srv):
    with WatchStream(srv, SLICES + "?watch=1&resourceVersion=" +
                     srv.server_info()["resourceVersion"] +
                     "&timeoutSeconds=1") as w:
        assert w.next_event(timeout=5) is None


def test_history_limit_expires_old_versions(tmp_path):
    with TestApiServer(rundir=str(tmp_path), history=3) as small:
        rvs = [create(small, SLICES, slice_obj(f"h-{i}"))["metadata"][
            "resourceVersion"] for i in range(6)]
        with WatchStream(small, SLICES + f"?watch=1&resourceVersion={rvs[0]}"
                         ) as w:
            assert w.next_event()["type"] == "ERROR"
        with WatchStream(small, SLICES + f"?watch=1&resourceVersion={rvs[3]}"
                         ) as w:
            assert w.next_event()["object"]["metadata"]["name"] == "h-4"


# ---------------------------------------------------------------- faults

def test_status_faults_with_count_and_retry_after(srv):
    srv.set_faults(status=500, count=2)
    assert srv.request("GET", SLICES)[0] == 500
    assert srv.request("GET", SLICES)[0] == 500
    assert srv.request("GET", SLICES)[0] == 200
    srv.set_faults(status=429, retryAfter=3, count=1, verb="create")
    assert srv.request("GET", SLICES)[0] == 200
    code, hdrs, body = srv.request("POST", CLAIMS, claim_obj("f-429"))
    assert code == 429 and hdrs["Retry-After"] == "3"
    assert body["reason"] == "TooManyRequests"
    assert srv.request("POST", CLAIMS, claim_obj("f-429"))[0] == 201


def test_delay_and_hang(srv):
    srv.set_faults(delayMs=300)
    t0 = time.monotonic()
    assert srv.request("GET", "/version")[0] == 200
    assert time.monotonic() - t0 >= 0.3
    srv.set_faults(delayMs=0, hang=True)
    with pytest.raises((socket.timeout, TimeoutError)):
        srv.request("GET", SLICES, timeout=0.5)
    srv.set_faults(hang=False)
    assert srv.request("GET", SLICES)[0] == 200


def test_jitter_and_the_servers_own_latency_kept_by_reset():
    """--delay-ms/--jitter-ms: every answer at least that late, at most the
    jitter more; a reset of the faults keeps the server's own latency."""
    with TestApiServer(extra_args=["--delay-ms", "60", "--jitter-ms", "40"]) as slow:
        def took():
            t0 = time.monotonic()
            assert slow.request("GET", SLICES)[0] == 200
            return time.monotonic() - t0
        for _ in range(2):
            times = [took() for _ in range(8)]
            assert min(times) >= 0.06, times
            assert max(times) < 0.06 + 0.04 + 2.0, times  # the jitter, and a loaded machine's own noise
            assert len({round(t, 3) for t in times}) > 1, times  # not a fixed delay
            slow.reset_faults()
        slow.set_faults(jitterMs=200)
        assert max(took() for _ in range(8)) > 0.1 + 0.01


def test_refuse_closes_the_port_until_cleared(srv):
    srv.set_faults(refuse=True)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=2)
    assert srv.faults()["refuse"] is True
    srv.set_faults(refuse=False)
    assert srv.request("GET", SLICES)[0] == 200


def test_drop_watches_and_stats(srv):
    srv.reset_stats()
    rv = srv.server_info()["resourceVersion"]
    with WatchStream(srv, SLICES + f"?watch=1&resourceVersion={rv}") as w:
        wait_for(lambda: srv.stats()["watchesOpen"] >= 1, 5,
                 what="watch open")
        assert srv.set_faults(dropWatches=True)["droppedWatches"] >= 1
        assert w.next_event() is None
    stats = srv.stats()
    assert stats["requests"]["watch resourceslices"] == 1
    assert "list resourceslices" not in stats["requests"]


def test_churn_produces_watch_events(srv):
    create(srv, SLICES, slice_obj("churn-0"))
    rv = srv.server_info()["resourceVersion"]
    with WatchStream(srv, SLICES + f"?watch=1&resourceVersion={rv}") as w:
        out = srv.churn(3)
        assert out["modified"] == 3
        types = [w.next_non_bookmark()["type"] for _ in range(3)]
        assert types == ["MODIFIED"] * 3


# ---------------------------------------------------------------- process

def test_seed_keeps_claim_status_and_sigterm_exits_zero(tmp_path):
    claim = claim_obj("held-by-pod")
    claim["metadata"]["namespace"] = "jobs"
    claim["status"] = {"allocation": allocation(),
                       "reservedFor": [{"resource": "pods", "name": "p",
                                        "uid": "u-1"}]}
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"items": [slice_obj("seed-s"), claim]}))
    server = TestApiServer(rundir=str(tmp_path / "run"), seeds=[str(seed)])
    server.start()
    try:
        code, _, body = server.request(
            "GET", V1 + "/namespaces/jobs/resourceclaims/held-by-pod")
        assert code == 200 and body["status"]["reservedFor"][0]["uid"] == \
            "u-1"
        assert server.request("GET", SLICES + "/seed-s")[0] == 200
        with open(os.path.join(server.rundir, "server.json")) as f:
            assert json.load(f)["pid"] == server.proc.pid
    finally:
        assert server.stop() == 0


def test_expired_watch_as_http_status(srv):
    rv = create(srv, SLICES, slice_obj("wx-0"))["metadata"]["resourceVersion"]
    create(srv, SLICES, slice_obj("wx-1"))
    srv.set_faults(expireBefore="all", expiredAsHttp=True)
    code, _, body = srv.request("GET", SLICES + f"?watch=1&resourceVersion={rv}")
    assert code == 410 and body["reason"] == "Expired"


def test_tokens_added_scoped_and_revoked_at_run_time(srv):
    srv.control("POST", "/_test/tokens", {
        "token": "claims-writer-1", "user": "writer",
        "rules": [{"verbs": ["create", "update", "get"],
                   "resources": ["resourceclaims", "resourceclaims/status"]}]})
    assert srv.request("POST", CLAIMS, claim_obj("tok-1"),
                       token="claims-writer-1")[0] == 201
    code, _, body = srv.request("GET", SLICES, token="claims-writer-1")
    assert code == 403 and 'User "writer" cannot list' in body["message"]
    code, _, body = srv.request("DELETE", CLAIMS + "/tok-1",
                                token="claims-writer-1")
    assert code == 403
    srv.control("POST", "/_test/tokens", {"token": "claims-writer-1",
                                          "revoke": True})
    assert srv.request("GET", CLAIMS + "/tok-1",
                       token="claims-writer-1")[0] == 401


def test_dry_run_and_delete_collection(srv):
    code, _, body = srv.request("POST", CLAIMS + "?dryRun=All",
                                claim_obj("dc-dry"))
    assert code == 201 and body["metadata"]["name"] == "dc-dry"
    assert srv.request("GET", CLAIMS + "/dc-dry")[0] == 404
    for i in range(3):
        create(srv, CLAIMS, claim_obj(f"dc-{i}", labels={"dc": "y"}))
    code, _, body = srv.request("DELETE", CLAIMS + "?labelSelector=dc")
    assert code == 200
    assert sorted(i["metadata"]["name"] for i in body["items"]) == \
        ["dc-0", "dc-1", "dc-2"]
    _, _, left = srv.request("GET", CLAIMS + "?labelSelector=dc")
    assert left["items"] == []


def test_client_certificate_authentication(srv):
    code, _, _ = srv.request("GET", SLICES, token=None, cert_role="readonly")
    assert code == 200
    code, _, body = srv.request("DELETE", SLICES + "/x", token=None,
                                cert_role="readonly")
    assert code == 403
    assert body["message"].startswith(
        'resourceslices.resource.k8s.io "x" is forbidden: User "readonly"')
    # the certificate is checked before the token, as kube-apiserver does
    code, _, _ = srv.request("GET", SLICES, token="wrong", cert_role="admin")
    assert code == 200


def test_strategic_merge_uses_patch_strategies(srv):
    body = create(srv, CLAIMS, claim_obj("c-smp"))
    body["status"] = {"allocation": allocation(),
                      "reservedFor": [{"resource": "pods", "name": "p1",
                                       "uid": "u1"}]}
    srv.request("PUT", CLAIMS + "/c-smp/status", body)
    smp = "application/strategic-merge-patch+json"
    code, _, out = srv.request("PATCH", CLAIMS + "/c-smp/status", {
        "status": {"reservedFor": [{"resource": "pods", "name": "p2",
                                    "uid": "u2"}]}}, content_type=smp)
    assert code == 200
    assert [r["uid"] for r in out["status"]["reservedFor"]] == ["u1", "u2"]
    code, _, out = srv.request("PATCH", CLAIMS + "/c-smp/status", {
        "status": {"reservedFor": [{"uid": "u1", "$patch": "delete"}]}},
        content_type=smp)
    assert [r["uid"] for r in out["status"]["reservedFor"]] == ["u2"]
    code, _, out = srv.request("PATCH", CLAIMS + "/c-smp", {
        "metadata": {"finalizers": ["a", "b"]}}, content_type=smp)
    srv.request("PATCH", CLAIMS + "/c-smp", {"metadata": {
        "$deleteFromPrimitiveList/finalizers": ["a"],
        "finalizers": ["c"]}}, content_type=smp)
    _, _, out = srv.request("GET", CLAIMS + "/c-smp")
    assert out["metadata"]["finalizers"] == ["b", "c"]
    # a JSON merge patch replaces lists
    _, _, out = srv.request("PATCH", CLAIMS + "/c-smp/status", {
        "status": {"reservedFor": [{"resource": "pods", "name": "p3",
                                    "uid": "u3"}]}},
        content_type="application/merge-patch+json")
    assert [r["uid"] for r in out["status"]["reservedFor"]] == ["u3"]


def test_namespaced_pagination(srv):
    for ns in ("pg-a", "pg-b"):
        srv.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        for i in range(3):
            create(srv, V1 + f"/namespaces/{ns}/resourceclaims",
                   claim_obj(f"c{i}"))

    def walk(path):
        names, cont = [], ""
        while True:
            _, _, page = srv.request("GET", path + (f"&continue={cont}"
                                                    if cont else ""))
            names += [f"{i['metadata']['namespace']}/{i['metadata']['name']}"
                      for i in page["items"]]
            cont = page["metadata"].get("continue")
            if not cont:
                return names
    assert walk(V1 + "/namespaces/pg-a/resourceclaims?limit=2") == \
        ["pg-a/c0", "pg-a/c1", "pg-a/c2"]
    every = walk(V1 + "/resourceclaims?limit=2")
    assert [n for n in every if n.startswith("pg-")] == \
        ["pg-a/c0", "pg-a/c1", "pg-a/c2", "pg-b/c0", "pg-b/c1", "pg-b/c2"]


def test_watch_of_a_vanished_client_is_closed(srv):
    rv = srv.server_info()["resourceVersion"]
    before = srv.stats()["watchesOpen"]
    w = WatchStream(srv, SLICES + f"?watch=1&resourceVersion={rv}")
    wait_for(lambda: srv.stats()["watchesOpen"] > before, 5, what="watch")
    w.close()
    wait_for(lambda: srv.stats()["watchesOpen"] == before, 5,
             what="server noticing the closed watch")
