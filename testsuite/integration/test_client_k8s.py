# SPDX-License-Identifier: GPL-2.0-or-later
"""The C++ Kubernetes client (k8s_client/) against the test API server,
driven through testsuite/integration/k8s_cons_tres_client_probe: sync, watch,
resume, relist, outages, faults, TLS and token errors, and the claim writer.

The probe is found through $K8S_CONS_TRES_CLIENT_PROBE, or under $K8S_CONS_TRES_BUILDDIR
(or the source tree) at testsuite/integration/k8s_cons_tres_client_probe."""
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest

from apiserver_fixture import TestApiServer, wait_for

TOP = Path(__file__).resolve().parents[2]
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
FAST = ["--backoff-initial-ms", "100", "--backoff-cap-ms", "400"]


def probe_path():
    candidates = [os.environ.get("K8S_CONS_TRES_CLIENT_PROBE", "")]
    for base in (os.environ.get("K8S_CONS_TRES_BUILDDIR", ""), str(TOP / "build"), str(TOP)):
        if base:
            candidates.append(os.path.join(base, "testsuite/integration/k8s_cons_tres_client_probe"))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    pytest.fail("k8s_cons_tres_client_probe not built: run build-aux/build.sh and make check "
                "(or set K8S_CONS_TRES_CLIENT_PROBE or K8S_CONS_TRES_BUILDDIR)")


class Probe:
    """A running `k8s_cons_tres_client_probe watch`: its JSON lines are collected
    by a reader thread and waited on with bounded timeouts."""

    def __init__(self, *args):
        drivers = args[list(args).index("--drivers") + 1] if "--drivers" in args else "a,b"
        # one per driver, the claims' and the DeviceTaintRules'
        self.informers = len(drivers.split(",")) + 2
        self.proc = subprocess.Popen([probe_path(), "watch", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(json.loads(line))
                self.cond.notify_all()
        with self.cond:
            self.lines.append({"event": "eof"})
            self.cond.notify_all()

    def wait(self, pred, timeout=20, what="probe output", start=0):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines[start:]:
                    if pred(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}; got {self.lines[-8:]}")
                self.cond.wait(left)

    def mark(self):
        with self.cond:
            return len(self.lines)

    def events(self, kind):
        with self.cond:
            return [l for l in self.lines if l["event"] == kind]

    def snapshot(self, pred, timeout=20, what="snapshot", start=0):
        return self.wait(lambda l: l["event"] == "snapshot" and pred(l), timeout, what, start)

    def synced(self, timeout=20):
        return self.snapshot(lambda s: s["synced"], timeout, "first synced snapshot")

    def stats(self):
        """Informer name -> counters."""
        start = self.mark()
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        out = {}

        def enough(line):
            if line["event"] == "stats":
                out[line["informer"]] = line
            return len(out) == self.informers
        self.wait(enough, 10, "stats", start)
        return out

    def dump(self):
        start = self.mark()
        self.proc.stdin.write("dump\n")
        self.proc.stdin.flush()
        self.wait(lambda l: l["event"] == "end", 10, "dump", start)
        with self.cond:
            return self.lines[start:]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)
        stopped = [l for l in self.lines if l["event"] == "stopped"]
        return stopped[0] if stopped else None


def run_writer(server, *args, kubeconfig=None, timeout=60):
    res = subprocess.run([probe_path(), "write", "--kubeconfig", kubeconfig or server.kubeconfig,
                          *FAST, *args], capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    return res.returncode, lines


@pytest.fixture
def server():
    with TestApiServer(synthetic_nodes=3, bookmark_interval=0.5) as srv:
        yield srv


@pytest.fixture
def probe_factory():
    probes = []

    def make(*args):
        p = Probe(*args)
        probes.append(p)
        return p
    yield make
    for p in probes:
        p.close()
    # A clean exit: no crash, no sanitizer report, nothing thrown.
    assert all(p.proc.returncode == 0 for p in probes), [p.proc.returncode for p in probes]


def gpu_slice(name, node="extra"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "attributes": {
                         "type": {"string": "gpu"},
                         "resource.kubernetes.io/numaNode": {"int": 0}}}]}}


def create(server, path, obj):
    status, _, body = server.request("POST", path, obj)
    assert status == 201, body
    return body


# ------------------------------------------------------------------ informer

def test_initial_sync_lists_slices_of_configured_drivers(server, probe_factory):
    create(server, SLICES, {**gpu_slice("other"), "spec": {
        **gpu_slice("other")["spec"], "driver": "other.example.com"}})
    p = probe_factory("--kubeconfig", server.kubeconfig, "--page-size", "2")
    snap = p.synced()
    assert snap["slices"] == 6          # 3 nodes x (dra.cpu + gpu), not other.example.com
    assert snap["devices"] == 3 * (128 + 8)
    stats = p.stats()
    assert stats["resourceslices[dra.cpu]"]["pages"] == 2   # paged with limit=2
    names = {l["name"] for l in p.dump() if l["event"] == "slice"}
    assert "other" not in names
    assert all(s["failures"] == 0 for s in stats.values())


def test_watch_sees_adds_changes_and_deletes(server, probe_factory):
    p = probe_factory("--kubeconfig", server.kubeconfig)
    p.synced()
    mark = p.mark()
    create(server, SLICES, gpu_slice("added"))
    p.snapshot(lambda s: s["slices"] == 7, start=mark, what="added slice")
    server.churn(4)
    wait_for(lambda: p.stats()["resourceslices[dra.cpu]"]["events"]
             + p.stats()["resourceslices[gpu.nvidia.com]"]["events"] >= 5, 10,
             what="churn events")
    mark = p.mark()
    status, _, _ = server.request("DELETE", SLICES + "/added")
    assert status == 200
    p.snapshot(lambda s: s["slices"] == 6, start=mark, what="deleted slice")
    assert all(s["lists"] == 1 for s in p.stats().values())


def test_claims_from_all_namespaces_are_seen(server, probe_factory):
    create(server, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "slurm"}})
    p = probe_factory("--kubeconfig", server.kubeconfig)
    p.synced()
    code, lines = run_writer(server, "--count", "2", "--ns", "slurm")
    assert code == 0, lines
    p.snapshot(lambda s: s["claims"] == 2 and s["allocated"] == 2, what="allocated claims")
    claims = [l for l in p.dump() if l["event"] == "claim"]
    assert {c["ns"] for c in claims} == {"slurm"}
    assert all(c["node"] == "node1" and c["results"] == 3 for c in claims)


def test_dropped_stream_resumes_without_relist(server, probe_factory):
    p = probe_factory("--kubeconfig", server.kubeconfig, *FAST)
    p.synced()
    # Synced means listed; each informer's watch may still be on its way.
    # Drop only once the server holds one open watch per informer.
    wait_for(lambda: server.stats()["watchesOpen"] >= p.informers, 10, what="open watches")
    before = p.stats()
    assert server.set_faults(dropWatches=True)["droppedWatches"] >= p.informers
    mark = p.mark()
    create(server, SLICES, gpu_slice("after-drop"))
    p.snapshot(lambda s: s["slices"] == 7, start=mark, what="slice after drop")
    wait_for(lambda: p.stats()["resourceslices[gpu.nvidia.com]"]["watches"]
             > before["resourceslices[gpu.nvidia.com]"]["watches"], 10, what="rewatch")
    after = p.stats()
    assert all(s["lists"] == 1 for s in after.values()), after
    assert all(s["expired"] == 0 for s in after.values())


def test_expired_resource_version_relists(server, probe_factory):
    p = probe_factory("--kubeconfig", server.kubeconfig, *FAST)
    p.synced()
    # Keep the informers away (watches answered 503) while history moves on.
    server.set_faults(status=503, verb="watch", dropWatches=True)
    create(server, SLICES, gpu_slice("while-away"))
    server.set_faults(expireBefore="all")
    mark = p.mark()
    server.reset_faults()
    p.snapshot(lambda s: s["slices"] == 7, start=mark, what="relisted snapshot")
    stats = wait_for(lambda: (lambda s: s if s["resourceslices[gpu.nvidia.com]"]["lists"] == 2
                              else None)(p.stats()), 10, what="second list")
    assert stats["resourceslices[gpu.nvidia.com]"]["expired"] == 1


def test_expired_continue_token_restarts_the_list(server, probe_factory):
    server.set_faults(delayMs=300)
    p = probe_factory("--kubeconfig", server.kubeconfig, "--page-size", "1",
                      "--drivers", "dra.cpu", *FAST)
    wait_for(lambda: server.stats()["requests"].get("list resourceslices", 0) >= 1, 10,
             what="first page")
    create(server, SLICES, {**gpu_slice("x"), "spec": {**gpu_slice("x")["spec"],
                                                          "driver": "dra.cpu"}})
    server.set_faults(expireBefore="all", delayMs=0)
    p.wait(lambda l: l["event"] == "log" and "continue token expired" in l["msg"],
           what="restart log")
    assert p.synced()["slices"] == 4
    assert p.stats()["resourceslices[dra.cpu]"]["failures"] == 0


def test_server_down_at_start_then_up(server, probe_factory):
    server.set_faults(refuse=True)
    p = probe_factory("--kubeconfig", server.kubeconfig, *FAST)
    wait_for(lambda: p.stats()["resourceclaims"]["failures"] >= 2, 15, what="failed attempts")
    assert not any(s["synced"] for s in p.events("snapshot"))
    server.reset_faults()
    assert p.synced()["slices"] == 6


def test_server_errors_are_retried(server, probe_factory):
    server.set_faults(status=500, count=4, verb="list")
    p = probe_factory("--kubeconfig", server.kubeconfig, *FAST)
    assert p.synced()["slices"] == 6
    assert sum(s["failures"] for s in p.stats().values()) == 4


def test_slow_answers_hit_the_request_timeout(server, probe_factory):
    server.set_faults(delayMs=1500)
    p = probe_factory("--kubeconfig", server.kubeconfig, "--request-timeout-ms", "300", *FAST)
    line = p.wait(lambda l: l["event"] == "log" and "LIST" in l["msg"]
                  and "timed out" in l["msg"].lower(), what="timeout log")
    assert "resourceslices" in line["msg"] or "resourceclaims" in line["msg"]
    server.reset_faults()
    assert p.synced()["slices"] == 6


def test_stop_is_prompt_while_the_server_hangs(server, probe_factory):
    p = probe_factory("--kubeconfig", server.kubeconfig, *FAST)
    p.synced()
    server.set_faults(hang=True, dropWatches=True)
    wait_for(lambda: server.stats()["watchesOpen"] == 0, 10, what="watches dropped")
    stopped = p.close()
    server.reset_faults()
    assert stopped is not None and stopped["stopMs"] < 1500


def write_kubeconfig(server, path, ca=None, token=None, token_file=None):
    user = f"    tokenFile: {token_file}\n" if token_file else f"    token: {token}\n"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
        f"clusters:\n- name: c\n  cluster:\n    server: {server.url}\n"
        f"    certificate-authority: {ca or server.ca_path}\n"
        f"users:\n- name: u\n  user:\n{user}"
        "contexts:\n- name: t\n  context:\n    cluster: c\n    user: u\n")
    return str(path)


def test_wrong_ca_fails_closed(server, probe_factory, tmp_path):
    key, crt = tmp_path / "k.pem", tmp_path / "other-ca.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=not-the-cluster-ca", "-keyout", str(key), "-out", str(crt)],
                   check=True, capture_output=True, timeout=60)
    kc = write_kubeconfig(server, tmp_path / "kc", ca=crt, token=server.admin_token)
    p = probe_factory("--kubeconfig", kc, *FAST)
    line = p.wait(lambda l: l["event"] == "log" and l["level"] == 0 and "TLS" in l["msg"],
                  what="TLS error")
    assert "certificate-authority" in line["msg"] and kc in line["msg"]
    assert server.stats()["total"] == 0       # not a single request got through
    assert not any(s["synced"] for s in p.events("snapshot"))


def test_wrong_token_gives_a_clear_error_and_never_logs_tokens(server, probe_factory, tmp_path):
    kc = write_kubeconfig(server, tmp_path / "kc", token="wrong-token-value")
    p = probe_factory("--kubeconfig", kc, *FAST)
    line = p.wait(lambda l: l["event"] == "log" and "401" in l["msg"], what="401 log")
    assert "token" in line["msg"] and kc in line["msg"]
    assert not any(s["synced"] for s in p.events("snapshot"))
    p.close()
    assert all("wrong-token-value" not in json.dumps(l) for l in p.lines)


def test_forbidden_token_names_rbac(server, probe_factory, tmp_path):
    kc = write_kubeconfig(server, tmp_path / "kc", token=server.tokens["noaccess"])
    p = probe_factory("--kubeconfig", kc, *FAST)
    line = p.wait(lambda l: l["event"] == "log" and "403" in l["msg"], what="403 log")
    assert "RBAC" in line["msg"]


def test_rotated_token_file_is_reread(server, probe_factory, tmp_path):
    tok = tmp_path / "token"
    tok.write_text("stale-token\n")
    kc = write_kubeconfig(server, tmp_path / "kc", token_file=tok)
    p = probe_factory("--kubeconfig", kc, *FAST)
    p.wait(lambda l: l["event"] == "log" and "401" in l["msg"], what="401 with old token")
    tmp = tmp_path / "token.new"
    tmp.write_text(server.admin_token + "\n")
    os.replace(tmp, tok)
    assert p.synced()["slices"] == 6


# ------------------------------------------------------------------ writer

def results(lines, kind="apply"):
    return [l for l in lines if l["event"] == "result" and l["kind"] == kind]


def test_writer_creates_allocates_and_deletes(server):
    code, lines = run_writer(server, "--count", "3", "--job", "50", "--node", "node00001")
    assert code == 0, lines
    assert all(r["ok"] and r["attempts"] == 1 for r in results(lines))
    status, _, claim = server.request("GET", CLAIMS + "/slurm-probe-50-node00001-0")
    assert status == 200
    assert claim["metadata"]["labels"]["k8s-cons-tres.slurm.io/job-id"] == "50"
    alloc = claim["status"]["allocation"]
    assert len(alloc["devices"]["results"]) == 3
    assert alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
        "node00001"]
    code, lines = run_writer(server, "--count", "3", "--job", "50", "--node", "node00001",
                             "--delete")
    assert code == 0
    assert all(r["ok"] for r in results(lines, "remove"))
    assert server.request("GET", CLAIMS + "/slurm-probe-50-node00001-0")[0] == 404


def test_writer_grouped_mode_writes_the_cpuset(server):
    code, lines = run_writer(server, "--grouped", "--job", "7")
    assert code == 0, lines
    claim = server.request("GET", CLAIMS + "/slurm-probe-7-node1-0")[2]
    cfg = claim["status"]["allocation"]["devices"]["config"][0]
    assert cfg["opaque"]["parameters"]["cpuConfig"]["cpuset"] == "2-5"
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"]["requests"] == {
        "dra.cpu/cpu": "4"}


def test_writer_deletes_exactly_the_object_it_was_told(server):
    # Reconciliation decides about one object (by its UID); by the time the
    # DELETE goes out, another of that name may stand there. That one stays.
    assert run_writer(server, "--job", "60")[0] == 0
    path = CLAIMS + "/slurm-probe-60-node1-0"
    old = server.request("GET", path)[2]
    assert server.request("DELETE", path)[0] == 200
    again = {k: v for k, v in old.items() if k != "status"}
    again["metadata"] = {k: v for k, v in old["metadata"].items()
                         if k in ("name", "namespace", "labels")}
    status, _, new = server.request("POST", CLAIMS, again)
    assert status == 201 and new["metadata"]["uid"] != old["metadata"]["uid"]
    code, lines = run_writer(server, "--job", "60", "--remove-only",
                             "--uid", old["metadata"]["uid"])
    assert code == 0 and results(lines, "remove")[0]["ok"], lines
    assert server.request("GET", path)[2]["metadata"]["uid"] == new["metadata"]["uid"]
    # Without a UID the writer deletes what it finds, still by its UID.
    code, lines = run_writer(server, "--job", "60", "--remove-only")
    assert code == 0 and results(lines, "remove")[0]["ok"], lines
    assert server.request("GET", path)[0] == 404


def test_writer_deletes_nothing_that_is_not_its_own_when_told_no_uid(server):
    """A delete without a known UID reads the object first: one that is not
    marked as the plugin's (here a tenant-made claim of the same name, without
    the managed-by label) is left alone."""
    assert run_writer(server, "--job", "61")[0] == 0
    path = CLAIMS + "/slurm-probe-61-node1-0"
    old = server.request("GET", path)[2]
    assert server.request("DELETE", path)[0] == 200
    foreign = {k: v for k, v in old.items() if k != "status"}
    labels = {k: v for k, v in old["metadata"]["labels"].items() if k != "app.kubernetes.io/managed-by"}
    foreign["metadata"] = {"name": old["metadata"]["name"], "namespace": old["metadata"]["namespace"],
                           "labels": labels}
    status, _, made = server.request("POST", CLAIMS, foreign)
    assert status == 201, made
    code, lines = run_writer(server, "--job", "61", "--remove-only")
    (res,) = results(lines, "remove")
    assert not res["ok"] and "not ours" in res["error"], lines
    assert server.request("GET", path)[2]["metadata"]["uid"] == made["metadata"]["uid"]


def test_writer_is_idempotent_and_refuses_foreign_claims(server):
    assert run_writer(server, "--job", "8")[0] == 0
    code, lines = run_writer(server, "--job", "8")       # AlreadyExists, same allocation
    assert code == 0 and results(lines)[0]["ok"]
    before = server.request("GET", CLAIMS + "/slurm-probe-8-node1-0")[2]
    # another allocation for the same claim (a job that shrank or grew):
    # allocations are immutable, so exactly that object is deleted and the
    # claim written anew
    code, lines = run_writer(server, "--job", "8", "--grouped")
    assert code == 0 and results(lines)[0]["ok"], lines
    after = server.request("GET", CLAIMS + "/slurm-probe-8-node1-0")[2]
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert after["status"]["allocation"] != before["status"]["allocation"]
    code, lines = run_writer(server, "--job", "8", "--foreign-labels")
    assert code != 0 and "not ours" in results(lines)[0]["error"]


def test_writer_survives_a_conflict_storm(server):
    server.set_faults(status=409, verb="update", count=6)
    code, lines = run_writer(server, "--job", "9")
    assert code == 0, lines
    writer = [l for l in lines if l["event"] == "writer"][0]
    assert writer["conflicts"] == 6
    assert server.request("GET", CLAIMS + "/slurm-probe-9-node1-0")[2]["status"]["allocation"]


def test_writer_honours_retry_after(server):
    server.set_faults(status=429, retryAfter=1, count=2, verb="create")
    code, lines = run_writer(server, "--job", "10")
    assert code == 0, lines
    r = results(lines)[0]
    assert r["attempts"] == 3
    assert r["latencyUs"] >= 1_900_000        # two waits of Retry-After: 1


def test_writer_backs_off_on_server_errors(server):
    server.set_faults(status=503, count=3, verb="create")
    code, lines = run_writer(server, "--job", "11")
    assert code == 0, lines
    assert [l for l in lines if l["event"] == "writer"][0]["retries"] == 3


def test_writer_does_not_retry_invalid_claims(server):
    code, lines = run_writer(server, "--job", "12", "--results", "40")
    assert code != 0
    r = results(lines)[0]
    assert r["attempts"] == 1
    assert "Invalid" in r["error"] and "32" in r["error"]
    assert any(l["event"] == "log" and "Invalid" in l["msg"] for l in lines)


def test_writer_queue_is_bounded_and_never_blocks(server):
    server.set_faults(delayMs=300)
    code, lines = run_writer(server, "--count", "10", "--capacity", "2", "--job", "100")
    writer = [l for l in lines if l["event"] == "writer"][0]
    assert writer["refused"] >= 7
    assert writer["succeeded"] == writer["submitted"] == 10 - writer["refused"]


def test_writer_with_forbidden_token_fails_without_retry(server, tmp_path):
    kc = write_kubeconfig(server, tmp_path / "kc", token=server.tokens["readonly"])
    code, lines = run_writer(server, "--job", "13", kubeconfig=kc)
    assert code != 0
    r = results(lines)[0]
    assert r["attempts"] == 1
    assert "403" in r["error"] or "Forbidden" in r["error"]

