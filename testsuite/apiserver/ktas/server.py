# SPDX-License-Identifier: GPL-2.0-or-later
"""Sockets: the HTTPS API listener (which can be made to refuse connections
by closing and later reopening its listening socket on the same port) and
the always-on plain-HTTP control listener on 127.0.0.1."""

import selectors
import socket
import ssl
import threading
import time
from http.server import ThreadingHTTPServer

from .handler import Handler


class ControlHandler(Handler):
    control_only = True


class ControlServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, app, host):
        self.app = app
        self.ssl_context = None
        super().__init__((host, 0), ControlHandler)

    def handle_error(self, request, client_address):
        pass


class ApiServer:
    """Accept loop with one thread per connection; TLS handshakes happen in
    the connection thread so a slow client cannot stall accept()."""

    def __init__(self, app, host, port, certfile, keyfile, cafile):
        self.app = app
        self.host = host
        self.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ssl_context.load_cert_chain(certfile, keyfile)
        # client certificates are optional: signed by our CA, CN = user
        self.ssl_context.verify_mode = ssl.CERT_OPTIONAL
        self.ssl_context.load_verify_locations(cafile)
        self.ssl_context.set_alpn_protocols(["http/1.1"])
        self.lock = threading.Lock()
        self.refusing = threading.Event()
        self.listening = threading.Event()
        self.stopping = False
        self.conns = set()
        self.sock = self._listen(port)
        self.port = self.sock.getsockname()[1]
        self.listening.set()
        self.thread = threading.Thread(target=self._accept_loop, daemon=True)

    def _listen(self, port):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, port))
        sock.listen(128)
        return sock

    def start(self):
        self.thread.start()

    def _accept_loop(self):
        sel = selectors.DefaultSelector()
        while not self.stopping:
            if self.refusing.is_set():
                self._closed_phase()
                continue
            sel.register(self.sock, selectors.EVENT_READ)
            ready = sel.select(0.2)
            sel.unregister(self.sock)
            if not ready or self.refusing.is_set():
                continue
            try:
                conn, addr = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve_conn, args=(conn, addr),
                             daemon=True).start()
        self.sock.close()

    def _closed_phase(self):
        """Refusing: close the listening socket, wait, then rebind."""
        self.listening.clear()
        self.sock.close()
        while self.refusing.is_set() and not self.stopping:
            time.sleep(0.05)
        while not self.stopping:
            try:
                self.sock = self._listen(self.port)
                break
            except OSError:
                time.sleep(0.05)
        self.listening.set()

    def _serve_conn(self, conn, addr):
        # TLS detaches `conn`; a dup of the fd lets another thread shut the
        # connection down without touching the SSL object.
        ctl = conn.dup()
        with self.lock:
            self.conns.add(ctl)
        try:
            Handler(conn, addr, self)
        except Exception:   # handshake failures, resets: the client's problem
            pass
        finally:
            with self.lock:
                self.conns.discard(ctl)
            for s in (ctl, conn):
                try:
                    s.close()
                except OSError:
                    pass

    def set_refuse(self, refuse):
        if refuse == self.refusing.is_set():
            return
        if refuse:
            self.refusing.set()
            self._wait_closed()
            self.kill_connections()
        else:
            self.refusing.clear()
            self.listening.wait(5)

    def _wait_closed(self):
        for _ in range(200):
            if not self.listening.is_set():
                return
            time.sleep(0.01)

    def kill_connections(self):
        with self.lock:
            conns = list(self.conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        self.stopping = True
        self.refusing.clear()
        self.kill_connections()
        self.thread.join(2)
