#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The test API server's own cost, as the baseline for the client ingest
benchmark: start a server with N synthetic nodes (a 128-CPU dra.cpu
individual-mode slice + an 8-GPU slice each), then time a full paged LIST
of resourceslices with a minimal client that only reads bytes, the
server's cost of producing and streaming watch events, and its latency for
claim writes (create, status, delete).

    /usr/bin/python3 testsuite/bench/bench_apiserver_list.py [--nodes 15000]
"""

import argparse
import json
import os
import re
import socket
import ssl
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from apiserver_fixture import TestApiServer, wait_for  # noqa: E402

PATH = "/apis/resource.k8s.io/v1/resourceslices"
CONTINUE_RE = re.compile(rb'"continue":"([^"]*)"')
RV_RE = re.compile(rb'"resourceVersion":"([0-9]+)"')


class RawClient:
    """HTTP/1.1 keep-alive over TLS that reads bodies into one buffer and
    never decodes JSON."""

    def __init__(self, srv):
        ctx = ssl.create_default_context(cafile=srv.ca_path)
        raw = socket.create_connection(("127.0.0.1", srv.port))
        self.sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.token = srv.admin_token
        self.buf = b""

    def _read_headers(self):
        while b"\r\n\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("connection closed")
            self.buf += data
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower()] = v.strip()
        return status, headers

    def get(self, path):
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          f"Authorization: Bearer {self.token}\r\n"
                          "Accept: application/json\r\n\r\n".encode())
        status, headers = self._read_headers()
        length = int(headers[b"content-length"])
        body = bytearray(length)
        view = memoryview(body)
        got = min(len(self.buf), length)
        view[:got] = self.buf[:got]
        self.buf = self.buf[got:]
        while got < length:
            n = self.sock.recv_into(view[got:], length - got)
            if not n:
                raise EOFError("short body")
            got += n
        return status, body

    def open_watch(self, path):
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          f"Authorization: Bearer {self.token}\r\n\r\n"
                          .encode())
        return self._read_headers()

    def count_lines(self, want, needle=b'"type":"MODIFIED"'):
        """Reads the chunked stream until `want` events were seen."""
        seen = 0
        data = self.buf
        while seen < want:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("watch closed")
            data += chunk
            seen += data.count(needle)
            data = data[-len(needle):]
        return seen


def rss_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])
    return out


def full_list(client, limit, selector=""):
    t0 = time.monotonic()
    cont, pages, nbytes, items, rv = "", 0, 0, 0, None
    while True:
        q = f"{PATH}?limit={limit}{selector}" + \
            (f"&continue={cont}" if cont else "")
        status, body = client.get(q)
        assert status == 200, bytes(body[:300])
        pages += 1
        nbytes += len(body)
        items += body.count(b'"kind":"ResourceSlice"')
        head = bytes(body[:600])
        rv = rv or RV_RE.search(head).group(1).decode()
        m = CONTINUE_RE.search(head)
        cont = m.group(1).decode() if m else ""
        if not cont:
            break
    return time.monotonic() - t0, pages, nbytes, items, rv


def watch_cost(srv, client, rv, events):
    client.open_watch(f"{PATH}?watch=1&resourceVersion={rv}")
    wait_for(lambda: srv.stats()["watchesOpen"] >= 1, 10, what="watch")
    t0 = time.monotonic()
    srv.churn(events)
    t_server = time.monotonic() - t0
    client.count_lines(events)
    return t_server, time.monotonic() - t0


def claim_latency(srv, n):
    """create + PUT status + delete of n claims over one keep-alive
    connection: per-request latency percentiles in ms."""
    conn = srv.connect()
    hdrs = {"Authorization": f"Bearer {srv.admin_token}",
            "Content-Type": "application/json"}
    base = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    lat = []

    def call(method, path, body=None):
        t = time.monotonic()
        conn.request(method, path, body=body and json.dumps(body),
                     headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        lat.append(time.monotonic() - t)
        assert resp.status in (200, 201), data[:300]
        return json.loads(data)
    t0 = time.monotonic()
    for i in range(n):
        name = f"bench-{i}"
        claim = call("POST", base, {
            "metadata": {"name": name, "labels": {"job": str(i)}},
            "spec": {"devices": {"requests": [{"name": "cpu", "exactly": {
                "deviceClassName": "dra.cpu", "count": 2}}]}}})
        claim["status"] = {"allocation": {"devices": {"results": [
            {"request": "cpu", "driver": "dra.cpu", "pool": "node00001",
             "device": f"cpudev{d:03d}"} for d in range(2)]}}}
        call("PUT", f"{base}/{name}/status", claim)
        call("DELETE", f"{base}/{name}")
    secs = time.monotonic() - t0
    lat.sort()

    def pick(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3
    return pick(0.5), pick(0.99), n / secs


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--nodes", type=int, default=15000)
    p.add_argument("--limit", type=int, default=500)
    p.add_argument("--events", type=int, default=4000,
                   help="watch events for the per-event cost")
    p.add_argument("--repeat", type=int, default=2, help="full lists")
    p.add_argument("--claims", type=int, default=500,
                   help="claims created, allocated and deleted")
    args = p.parse_args()
    t0 = time.monotonic()
    with TestApiServer(synthetic_nodes=args.nodes) as srv:
        startup = time.monotonic() - t0
        rss_start = rss_kib(srv.proc.pid)
        client = RawClient(srv)
        runs = [full_list(client, args.limit) for _ in range(args.repeat)]
        best = min(runs)
        by_driver = [min(full_list(client, args.limit,
                                   f"&fieldSelector=spec.driver%3D{d}")
                         for _ in range(args.repeat))
                     for d in ("dra.cpu", "gpu.nvidia.com")]
        rss_after = rss_kib(srv.proc.pid)
        p50, p99, rate = claim_latency(srv, args.claims)
        wclient = RawClient(srv)
        t_srv, t_all = watch_cost(srv, wclient, best[4], args.events)
        print(f"| nodes | slices | list bytes | pages (limit={args.limit}) "
              f"| full list (best of {args.repeat}) | MB/s |")
        print("|---|---|---|---|---|---|")
        secs, pages, nbytes, items, _ = best
        print(f"| {args.nodes} | {items} | {nbytes / 1e6:.0f} MB | {pages} "
              f"| {secs:.2f} s | {nbytes / 1e6 / secs:.0f} |")
        for driver, (secs, pages, nbytes, items, _) in zip(
                ("dra.cpu", "gpu.nvidia.com"), by_driver):
            print(f"| {args.nodes} (spec.driver={driver}) | {items} | "
                  f"{nbytes / 1e6:.0f} MB | {pages} | {secs:.2f} s | "
                  f"{nbytes / 1e6 / secs:.0f} |")
        print()
        print(f"server startup incl. synthetic generation: {startup:.2f} s")
        print(f"server RSS after start: {rss_start['VmRSS'] / 1024:.0f} MiB,"
              f" peak during lists: {rss_after['VmHWM'] / 1024:.0f} MiB")
        print(f"watch: {args.events} MODIFIED events (alternately a ~47 KB "
              f"CPU and a ~6 KB GPU slice): server commit "
              f"{t_srv / args.events * 1e6:.0f} us/event,"
              f" delivered to a byte-reading client in {t_all:.2f} s "
              f"({t_all / args.events * 1e6:.0f} us/event)")
        print(f"claims: {args.claims} x (POST, PUT status, DELETE) in "
              f"sequence from one keep-alive connection: p50 {p50:.2f} ms, "
              f"p99 {p99:.2f} ms per request, {rate:.0f} claims/s")


if __name__ == "__main__":
    main()
