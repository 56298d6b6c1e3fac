# SPDX-License-Identifier: GPL-2.0-or-later
"""Watch streams: chunked newline-delimited JSON events, history replay from
a resourceVersion, periodic BOOKMARKs, 410 as an ERROR event."""

import select
import socket
import ssl
import time

from . import status as st
from .store import dumps
from .tables import wants_table, table_for


def event_bytes(etype, raw):
    return b'{"type":"%s","object":%s}\n' % (etype.encode(), raw)


class Watches:
    def __init__(self, app, bookmark_interval, default_timeout):
        self.app = app
        self.bookmark_interval = bookmark_interval
        self.default_timeout = default_timeout

    def serve(self, h, req, flt, query):
        store = self.app.store
        rt = req.rtype
        try:
            timeout = float(query.get("timeoutSeconds") or
                            self.default_timeout)
        except ValueError:
            raise st.bad_request("timeoutSeconds must be a number") from None
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        as_table = wants_table(h.headers)
        try:
            watcher, initial = store.start_watch(rt, flt,
                                                 query.get("resourceVersion"))
        except st.ApiError as err:
            if err.code != 410 or self.app.faults.expired_as_http():
                raise
            h.start_chunked()
            h.write_chunk(event_bytes("ERROR", dumps(err.body())))
            h.end_chunked()
            return
        self.app.stats.watch_opened()
        try:
            h.start_chunked()
            encode = self._encoder(rt, as_table)
            self._send(h, initial, encode)
            if query.get("sendInitialEvents") == "true" and bookmarks:
                self._bookmark(h, watcher, rt, initial_end=True)
            self._loop(h, watcher, encode, rt, timeout, bookmarks)
        finally:
            store.stop_watch(watcher)
            self.app.stats.watch_closed()

    def _encoder(self, rt, as_table):
        if not as_table:
            return lambda etype, entry: event_bytes(etype, entry.raw())
        state = {"first": True}

        def encode(etype, entry):
            table = table_for(rt, [entry], None, columns=state["first"])
            state["first"] = False
            return event_bytes(etype, dumps(table))
        return encode

    def _send(self, h, items, encode):
        buf, size = [], 0
        for etype, entry in items:
            data = encode(etype, entry)
            buf.append(data)
            size += len(data)
            if size >= 1 << 20:
                h.write_chunk(b"".join(buf))
                buf, size = [], 0
        h.write_chunk(b"".join(buf))

    def _bookmark(self, h, watcher, rt, initial_end=False):
        rv = self.app.store.bookmark_rv(watcher)
        if rv is not None:
            obj = {"kind": rt.kind, "apiVersion": rt.api_version,
                   "metadata": {"resourceVersion": str(rv)}}
            if initial_end:   # the watch-list protocol's end marker
                obj["metadata"]["annotations"] = {
                    "k8s.io/initial-events-end": "true"}
            h.write_chunk(event_bytes("BOOKMARK", dumps(obj)))

    @staticmethod
    def _client_gone(h):
        """True when the client closed its end (EOF is readable).  Clients
        send nothing on a watch connection, so readable means closing."""
        sock = h.connection
        try:
            if not select.select([sock], [], [], 0)[0]:
                return False
            old = sock.gettimeout()
            sock.settimeout(0.05)
            try:
                return sock.recv(1) == b""
            finally:
                sock.settimeout(old)
        except (ssl.SSLWantReadError, socket.timeout):
            return False
        except (OSError, ValueError):
            return True

    def _loop(self, h, watcher, encode, rt, timeout, bookmarks):
        deadline = time.monotonic() + timeout
        next_mark = time.monotonic() + self.bookmark_interval
        while True:
            now = time.monotonic()
            if now >= deadline:
                if bookmarks:
                    self._bookmark(h, watcher, rt)
                break
            wait = min(deadline - now, 1.0)   # look for a vanished client
            if bookmarks:
                wait = min(wait, max(next_mark - now, 0))
            with watcher.cond:
                if not watcher.queue and not watcher.closed:
                    watcher.cond.wait(wait)
                items = list(watcher.queue)
                watcher.queue.clear()
                closed = watcher.closed
            if closed or (not items and self._client_gone(h)):
                # dropped like a broken connection: no terminating chunk
                h.close_connection = True
                return
            self._send(h, items, encode)
            if bookmarks and time.monotonic() >= next_mark:
                self._bookmark(h, watcher, rt)
                next_mark = time.monotonic() + self.bookmark_interval
        h.end_chunked()
