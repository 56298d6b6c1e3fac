# SPDX-License-Identifier: GPL-2.0-or-later
"""The HTTP/1.1 request handler: authentication, authorization, fault
injection, the REST verbs, chunked watch streams and the /_test control
API."""

import json
import socket
import ssl
import time
import traceback
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit, parse_qs

from . import status as st
from .apply import is_apply
from .auth import RequestAuthz
from .routing import resolve, not_found, OPENAPI_V2_PB, OPENAPI_V2_TYPE
from .selectors import parse_label_selector, parse_field_selector
from .store import Filter, dumps
from .tables import wants_table, table_for

SMALL_BODY = 64 * 1024


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ktas/1.0"
    sys_version = ""
    timeout = 300
    control_only = False

    def setup(self):
        # headers and body go out as separate writes: without NODELAY the
        # second waits for a delayed ACK (~40 ms)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ctx = getattr(self.server, "ssl_context", None)
        if ctx is not None:
            self.request.settimeout(10)
            self.request = ctx.wrap_socket(self.request, server_side=True)
        super().setup()

    def finish(self):
        try:
            super().finish()
        finally:
            if getattr(self.server, "ssl_context", None) is not None:
                self.request.close()

    @property
    def app(self):
        return self.server.app

    def log_message(self, fmt, *args):
        if self.app.verbose:
            super().log_message(fmt, *args)

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    # ------------------------------------------------------------ plumbing
    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(out)
                out.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send_bytes(self, code, data, ctype="application/json", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-cache, private")
        for key, val in (headers or {}).items():
            self.send_header(key, val)
        self.send_header("Content-Length", str(len(data)))
        if self.command == "HEAD":
            data = b""
        if len(data) <= SMALL_BODY:   # one write for headers and body
            self._headers_buffer.extend((b"\r\n", data))
            self.flush_headers()
        else:
            self.end_headers()
            self.wfile.write(data)

    def send_json(self, code, obj, headers=None):
        self.send_bytes(code, dumps(obj), headers=headers)

    def json_body(self, body):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0]
        if body and ctype and "json" not in ctype and "yaml" not in ctype:
            raise st.ApiError(415, "UnsupportedMediaType",
                              f"the body of the request was in an unknown "
                              f"format - accepted media types include: "
                              f"application/json (got {ctype!r}; this test "
                              f"server does not decode protobuf)")
        try:
            return json.loads(body or b"null")
        except ValueError as err:
            raise st.bad_request(f"error decoding request body: {err}") \
                from None

    def dispatch(self, method):
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        try:
            body = self.read_body()
            if path.startswith("/_test/") or path == "/_test":
                if not self.control_only:
                    self.authorize_admin()
                return self.app.control.handle(self, method, path, body)
            if self.control_only:
                raise not_found()
            if path in ("/healthz", "/livez", "/readyz"):
                return self.send_bytes(200, b"ok", "text/plain")
            self.app.faults.wait_while_hung()
            delay = self.app.faults.delay_seconds()
            if delay:
                time.sleep(delay)
            user = self.authenticate()
            if path == "/openapi/v2" and method == "GET":
                return self.send_openapi_v2()
            watch = query.get("watch") in ("1", "true", "True")
            req = resolve(method, path, watch)
            self.app.stats.count(req.verb, req.resource)
            if req.rtype is not None:
                injected = self.app.faults.take_status(req.resource, req.verb)
                if injected:
                    raise st.injected(*injected)
            self.authorize(user, req)
            self.who = user
            self.execute(req, query, body)
        except st.ApiError as err:
            self.send_json(err.code, err.body(), err.headers)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError,
                TimeoutError):
            self.close_connection = True
        except Exception as err:  # a bug here must still answer like k8s
            traceback.print_exc()
            self.send_json(500, st.status_body(
                500, "InternalError", f"Internal error occurred: {err}"))

    def send_openapi_v2(self):
        """An empty schema document: clients find no schema for any type."""
        self.app.stats.count("get", "openapi")
        if "protobuf" in (self.headers.get("Accept") or ""):
            return self.send_bytes(200, OPENAPI_V2_PB, OPENAPI_V2_TYPE)
        return self.send_json(200, {
            "swagger": "2.0", "info": {"title": "Kubernetes",
                                       "version": "v1.34.0"},
            "paths": {}, "definitions": {}})

    # ------------------------------------------------------------ auth
    def version_string(self):
        return self.server_version

    def bearer(self):
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else None

    def client_cn(self):
        """CN of a client certificate the TLS layer verified, if any."""
        getpeercert = getattr(self.connection, "getpeercert", None)
        cert = getpeercert() if getpeercert else None
        for rdn in (cert or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return value
        return None

    def authenticate(self):
        return self.app.auth.user(self.bearer(), self.client_cn())

    def authorize(self, who, req):
        self.app.auth.authorize(who, req)

    def authorize_admin(self):
        user, _ = self.authenticate()
        if user != "admin":
            raise st.ApiError(403, "Forbidden", f'User "{user}" cannot use '
                              'the test control API')

    # ------------------------------------------------------------ verbs
    def execute(self, req, query, body):
        if req.discovery is not None:
            return self.send_json(200, req.discovery)
        dry = "All" in (query.get("dryRun") or "")
        verb = getattr(self, "verb_" + req.verb, None)
        if verb is None:
            raise st.method_not_allowed()
        return verb(req, query, body, dry)

    def verb_get(self, req, query, body, dry):
        entry = self.app.api.existing(req.rtype, req.namespace, req.name)
        if req.subresource == "" and wants_table(self.headers):
            return self.send_json(200, table_for(req.rtype, [entry], None))
        return self.send_entry(200, entry)

    def verb_list(self, req, query, body, dry):
        return self.serve_list(req, query)

    def verb_watch(self, req, query, body, dry):
        return self.app.watches.serve(self, req, self.filter(req, query),
                                      query)

    def verb_create(self, req, query, body, dry):
        res = self.app.api.create(req.rtype, req.namespace,
                                  self.json_body(body), dry_run=dry)
        return self.send_entry(201, res)

    def verb_update(self, req, query, body, dry):
        api = self.app.api
        write = api.update_status if req.subresource == "status" \
            else api.update
        extra = {"authz": RequestAuthz(self.who, req.verb)} \
            if req.subresource == "status" else {}
        res = write(req.rtype, req.namespace, req.name, self.json_body(body),
                    dry, **extra)
        return self.send_entry(200, res)

    def verb_patch(self, req, query, body, dry):
        ctype = self.headers.get("Content-Type")
        if is_apply(ctype):
            res, created = self.app.api.apply(
                req.rtype, req.namespace, req.name, body,
                query.get("fieldManager"), query.get("force") == "true", dry,
                req.subresource)
            return self.send_entry(201 if created else 200, res)
        res = self.app.api.patch(req.rtype, req.namespace, req.name,
                                 self.headers.get("Content-Type"), body,
                                 req.subresource, dry,
                                 RequestAuthz(self.who, req.verb))
        return self.send_entry(200, res)

    def verb_delete(self, req, query, body, dry):
        """Deleted now: a Success Status; held by finalizers: the object."""
        rt = req.rtype
        opts = self.json_body(body) if body else {}
        if not isinstance(opts, dict):
            raise st.bad_request("DeleteOptions must be an object")
        if "gracePeriodSeconds" in query:   # the body's value wins
            opts.setdefault("gracePeriodSeconds", query["gracePeriodSeconds"])
        res, gone = self.app.api.delete(rt, req.namespace, req.name, opts, dry)
        if not gone:
            return self.send_entry(200, res)
        details = {"name": req.name, "group": rt.group, "kind": rt.name,
                   "uid": getattr(res, "uid", "")}
        return self.send_json(200, {
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Success", "details": details})

    def verb_deletecollection(self, req, query, body, dry):
        return self.delete_collection(req, query, dry)

    def send_entry(self, code, res):
        if isinstance(res, dict):
            return self.send_json(code, res)
        return self.send_bytes(code, res.raw())

    def filter(self, req, query):
        rt = req.rtype
        fields = query.get("fieldSelector")
        if req.name:
            extra = f"metadata.name={req.name}"
            fields = f"{fields},{extra}" if fields else extra
        return Filter(req.namespace,
                      parse_label_selector(query.get("labelSelector")),
                      parse_field_selector(fields, rt.selectable))

    def serve_list(self, req, query):
        rt = req.rtype
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise st.bad_request("limit must be an integer") from None
        rv, entries, cont, remaining = self.app.store.list_page(
            rt, self.filter(req, query), max(limit, 0), query.get("continue"))
        if wants_table(self.headers):
            return self.send_json(200, table_for(rt, entries, rv, cont))
        meta = {"resourceVersion": str(rv)}
        if cont:
            meta["continue"] = cont
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        head = dumps({"kind": rt.kind + "List", "apiVersion": rt.api_version,
                      "metadata": meta})
        parts = [head[:-1], b',"items":[']
        for entry in entries:
            parts.extend(entry.parts)
            parts.append(b",")
        if entries:
            parts.pop()
        parts.append(b"]}")
        self.send_bytes(200, b"".join(parts))

    def delete_collection(self, req, query, dry):
        rt = req.rtype
        _, entries, _, _ = self.app.store.list_page(rt, self.filter(req, query))
        items = []
        for entry in entries:
            try:
                res, _ = self.app.api.delete(rt, entry.namespace, entry.name,
                                             None, dry)
            except st.ApiError:
                continue   # deleted meanwhile
            items.append(res if isinstance(res, dict) else res.obj())
        self.send_json(200, {"kind": rt.kind + "List",
                             "apiVersion": rt.api_version,
                             "metadata": {"resourceVersion":
                                          str(self.app.store.rv)},
                             "items": items})

    # ------------------------------------------------------------ chunks
    def start_chunked(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def write_chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
