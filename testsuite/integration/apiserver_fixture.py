# SPDX-License-Identifier: GPL-2.0-or-later
"""Start/stop the Kubernetes test API server (testsuite/apiserver) for
tests and benchmarks.  Importing this module has no side effects.

    with TestApiServer() as srv:
        srv.request("GET", "/apis/resource.k8s.io/v1/resourceslices")
        srv.set_faults(status=500, count=2)
        srv.kubectl("get", "resourceslices")
"""

import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request

PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_SCRIPT = os.path.join(os.path.dirname(HERE), "apiserver",
                             "k8s_test_apiserver.py")
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def wait_for(predicate, timeout, interval=0.02, what="condition"):
    """Polls predicate() until it returns a truthy value or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for "
                               f"{what}")
        time.sleep(interval)


class TestApiServer:
    __test__ = False  # not a pytest test class

    def __init__(self, rundir=None, seeds=(), history=None, port=0,
                 synthetic_nodes=0, bookmark_interval=None,
                 watch_timeout=None, extra_args=()):
        self._own_dir = rundir is None
        self.rundir = rundir or tempfile.mkdtemp(prefix="ktas-")
        self.args = [PYTHON, SERVER_SCRIPT, "--dir", self.rundir,
                     "--port", str(port)]
        for seed in seeds:
            self.args += ["--seed", seed]
        if history is not None:
            self.args += ["--history", str(history)]
        if synthetic_nodes:
            self.args += ["--synthetic-nodes", str(synthetic_nodes)]
        if bookmark_interval is not None:
            self.args += ["--bookmark-interval", str(bookmark_interval)]
        if watch_timeout is not None:
            self.args += ["--watch-timeout", str(watch_timeout)]
        self.args += list(extra_args)
        self.proc = None
        self.info = {}
        self.tokens = {}

    # ------------------------------------------------------------ lifecycle
    def start(self, timeout=60):
        os.makedirs(self.rundir, exist_ok=True)
        server_json = os.path.join(self.rundir, "server.json")
        if os.path.exists(server_json):
            os.unlink(server_json)
        self._log = open(os.path.join(self.rundir, "server.log"), "ab")
        self.proc = subprocess.Popen(self.args, stdout=self._log,
                                     stderr=subprocess.STDOUT)

        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"test API server exited with "
                                   f"{self.proc.returncode}; see "
                                   f"{self.rundir}/server.log")
            try:
                with open(server_json) as f:
                    info = json.load(f)
            except (OSError, ValueError):
                return None
            return info if info.get("pid") == self.proc.pid else None
        self.info = wait_for(ready, timeout, what="server.json")
        with open(os.path.join(self.rundir, "tokens.json")) as f:
            self.tokens = json.load(f)
        return self

    def stop(self, timeout=10):
        """SIGTERM, wait; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self._log.close()
        code, self.proc = self.proc.returncode, None
        return code

    def cleanup(self):
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.rundir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()

    # ------------------------------------------------------------ facts
    @property
    def url(self):
        return self.info["url"]

    @property
    def port(self):
        return int(self.url.rsplit(":", 1)[1])

    @property
    def control_url(self):
        return self.info["controlUrl"]

    @property
    def kubeconfig(self):
        return os.path.join(self.rundir, "kubeconfig")

    def kubeconfig_for(self, role):
        return os.path.join(self.rundir, f"kubeconfig-{role}")

    def kubeconfig_cert(self, role="admin"):
        """A kubeconfig that authenticates with a client certificate."""
        return os.path.join(self.rundir, f"kubeconfig-cert-{role}")

    def client_cert(self, role="admin"):
        """(certificate, key) paths of the client certificate for role."""
        stem = os.path.join(self.rundir, f"client-{role}")
        return stem + ".crt", stem + ".key"

    @property
    def ca_path(self):
        return os.path.join(self.rundir, "ca.crt")

    @property
    def admin_token(self):
        return self.tokens["admin"]

    # ------------------------------------------------------------ control
    def control(self, method, path, body=None, timeout=10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.control_url + path, data=data,
                                     method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.load(resp)

    def set_faults(self, **faults):
        """refuse, hang, status, retryAfter, delayMs, count, resource, verb,
        dropWatches, expireBefore (see testsuite/apiserver/README.md)."""
        return self.control("POST", "/_test/faults", faults)

    def reset_faults(self):
        return self.control("POST", "/_test/faults/reset", {})

    def faults(self):
        return self.control("GET", "/_test/faults")

    def stats(self):
        return self.control("GET", "/_test/stats")

    def reset_stats(self):
        return self.control("POST", "/_test/stats/reset", {})

    def server_info(self):
        return self.control("GET", "/_test/info")

    def add_token(self, token, user=None, role=None, rules=None):
        """Adds or replaces a bearer token: a built-in role ("admin",
        "readonly", "noaccess") or explicit rules [{"verbs": [...],
        "resources": ["resourceclaims", "resourceclaims/status"]}]."""
        body = {"token": token}
        for key, val in (("user", user), ("role", role), ("rules", rules)):
            if val is not None:
                body[key] = val
        return self.control("POST", "/_test/tokens", body)

    def revoke_token(self, token):
        return self.control("POST", "/_test/tokens",
                            {"token": token, "revoke": True})

    def churn(self, count, resource="resourceslices"):
        return self.control("POST", "/_test/churn",
                            {"resource": resource, "count": count})

    # ------------------------------------------------------------ clients
    def ssl_context(self, ca=None, cert_role=None):
        ctx = ssl.create_default_context(cafile=ca or self.ca_path)
        if cert_role:
            ctx.load_cert_chain(*self.client_cert(cert_role))
        return ctx

    def connect(self, timeout=10, ca=None, cert_role=None):
        host, port = self.url[len("https://"):].rsplit(":", 1)
        return http.client.HTTPSConnection(
            host, int(port), timeout=timeout,
            context=self.ssl_context(ca, cert_role))

    def request(self, method, path, body=None, token="admin",
                content_type="application/json", headers=None, timeout=10,
                cert_role=None):
        """One HTTPS request.  token: a role name from tokens.json, a raw
        token, or None; cert_role: present that role's client certificate.
        Returns (status, headers, decoded JSON or bytes)."""
        conn = self.connect(timeout, cert_role=cert_role)
        try:
            hdrs = dict(headers or {})
            tok = self.tokens.get(token, token)
            if tok:
                hdrs["Authorization"] = f"Bearer {tok}"
            data = body
            if body is not None and not isinstance(body, (bytes, str)):
                data = json.dumps(body)
            if data is not None:
                hdrs["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = raw
            return resp.status, dict(resp.getheaders()), decoded
        finally:
            conn.close()

    def kubectl(self, *args, timeout=30, kubeconfig=None, input=None,
                check=False):
        cmd = [KUBECTL, "--kubeconfig", kubeconfig or self.kubeconfig,
               *args]
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout, input=input, check=check)


def kubectl_ok(srv, *args, stdin=None, ok=True):
    """kubectl against `srv`; with ok, its exit status must be 0."""
    res = srv.kubectl(*args, input=stdin, timeout=60)
    if ok:
        assert res.returncode == 0, res.stderr
    return res


def cpu_slice_seed(path, nodes):
    """A seed file with one single-CPU dra.cpu slice per node: each node
    gets a Node object and, with --node-agents, an agent. Returns its path."""
    path.write_text(json.dumps({"items": [{
        "kind": "ResourceSlice", "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": f"{n}-cpu"},
        "spec": {"driver": "dra.cpu", "nodeName": n,
                 "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "cpudev000",
                              "attributes": {"dra.cpu/cpuID": {"int": 0}}}]}}
        for n in nodes]}))
    return str(path)


class WatchStream:
    """A watch request read event by event (newline-delimited JSON)."""

    def __init__(self, server, path, token="admin", timeout=10):
        self.conn = server.connect(timeout)
        tok = server.tokens.get(token, token)
        self.conn.request("GET", path,
                          headers={"Authorization": f"Bearer {tok}"})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def next_event(self, timeout=5):
        """The next event as a dict, or None when the stream has ended."""
        self.conn.sock.settimeout(timeout)
        try:
            line = self.resp.readline()
        except http.client.IncompleteRead:
            return None
        return json.loads(line) if line.strip() else None

    def next_non_bookmark(self, timeout=5):
        deadline = time.monotonic() + timeout
        while True:
            ev = self.next_event(max(deadline - time.monotonic(), 0.01))
            if ev is None or ev["type"] != "BOOKMARK":
                return ev

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
