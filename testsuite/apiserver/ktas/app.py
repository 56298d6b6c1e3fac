# SPDX-License-Identifier: GPL-2.0-or-later
"""Wires the pieces together: store, API, faults, stats, listeners, run
directory files (server.json is written last, atomically), and the start
content: seeds, synthetic inventory, a Node for every node the slices
name."""

import json
import os
import signal
import threading
import time

from . import certs, nodes, synthetic
from .api import Api
from .auth import Authenticator, BUILTIN_RULES
from .control import Control, Stats
from .faults import Faults
from .resources import TYPES, NAMESPACES, NODES, RESOURCE_SLICES, serve_taint_rules
from .server import ApiServer, ControlServer
from .status import ApiError
from .store import Store
from .watches import Watches


class App:
    def __init__(self, opts):
        self.opts = opts
        self.verbose = opts.verbose
        rules = getattr(opts, "device_taint_rules", "v1beta2")
        if rules != "off":
            serve_taint_rules([rules])
        self.store = Store(history_limit=opts.history)
        self.api = Api(self.store)
        self.faults = Faults(getattr(opts, "delay_ms", 0), getattr(opts, "jitter_ms", 0))
        self.stats = Stats()
        self.control = Control(self)
        self.watches = Watches(self, opts.bookmark_interval,
                               opts.watch_timeout)
        self.auth = Authenticator()
        self.server = None
        self.control_server = None
        self.agents = None   # ktas/kubelet.py, with --node-agents
        self.node_seeds = []   # seeded Nodes: registered after the slices
        self.stop_event = threading.Event()

    # ------------------------------------------------------------ content
    def seed_defaults(self):
        for ns in ("default", "kube-system", "kube-public"):
            self.api.create(NAMESPACES, "", {"metadata": {"name": ns}})

    def seed_file(self, path):
        with open(path) as f:
            doc = json.load(f)
        items = doc.get("items", []) if isinstance(doc, dict) else doc
        by_kind = {t.kind: t for t in TYPES}
        for item in items:
            rtype = by_kind.get(item.get("kind"))
            if rtype is None:
                raise SystemExit(f"{path}: unsupported kind "
                                 f"{item.get('kind')!r}")
            ns = ((item.get("metadata") or {}).get("namespace") or
                  "default") if rtype.namespaced else ""
            if rtype is NAMESPACES and self.store.get(
                    NAMESPACES, item["metadata"]["name"]):
                continue
            if rtype is NODES:
                self.node_seeds.append(item)
                continue
            if rtype.namespaced and not self.store.get(NAMESPACES, ns):
                self.api.create(NAMESPACES, "", {"metadata": {"name": ns}})
            try:
                self.api.create(rtype, ns, item, keep_status=True)
            except ApiError as err:
                raise SystemExit(f"{path}: cannot seed "
                                 f"{item.get('kind')} "
                                 f"{item.get('metadata', {}).get('name')}: "
                                 f"{err.message}") from None

    def load_synthetic(self, count):
        t0 = time.monotonic()
        entries = synthetic.generate(count, self.store.rv + 1)
        self.store.load_bulk(RESOURCE_SLICES, entries)
        self.store.load_bulk(NODES, synthetic.node_entries(
            count, self.store.rv + 1, self.store.count(NODES) + 1))
        if self.verbose:
            print(f"ktas: {len(entries)} synthetic slices and {count} nodes "
                  f"in {time.monotonic() - t0:.2f}s", flush=True)

    def register_nodes(self):
        """kubelet has registered every node the slices name before the
        server answers: a Node each (Ready, schedulable, the CPUs its dra.cpu
        slices publish), seeded ones completed (nodes.complete)."""
        seeded = {(n.get("metadata") or {}).get("name"): n
                  for n in self.node_seeds}
        by_node = {name: [] for name in seeded}
        with self.store.lock:
            for e in self.store.tables[RESOURCE_SLICES.name].entries.values():
                name = e.fields.get("spec.nodeName")
                if name and not self.store.get(NODES, name):
                    by_node.setdefault(name, []).append(e)
        index = self.store.count(NODES)
        for name in sorted(by_node, key=str):
            index += 1
            cpu = nodes.cpus_from_slices([e.obj() for e in by_node[name]])
            try:
                if name in seeded:
                    obj = nodes.complete(seeded[name], index, cpu)
                else:
                    obj = nodes.register(name, index, cpu=cpu)
                self.api.create(NODES, "", obj, keep_status=True)
            except (ApiError, KeyError, TypeError) as err:
                raise SystemExit(f"cannot register node {name!r}: "
                                 f"{getattr(err, 'message', err)}") from None

    # ------------------------------------------------------------ running
    def run(self):
        opts = self.opts
        rundir = opts.dir
        os.makedirs(rundir, exist_ok=True)
        server_json = os.path.join(rundir, "server.json")
        if os.path.exists(server_json):
            os.unlink(server_json)
        certs.ensure_certs(rundir, hosts=[opts.host])
        tokens = certs.ensure_tokens(rundir)
        for role, tok in tokens.items():
            self.auth.add(tok, role, BUILTIN_RULES[role])
            self.auth.add_cert_user(role, BUILTIN_RULES[role])
        self.seed_defaults()
        for path in opts.seed or []:
            self.seed_file(path)
        if opts.synthetic_nodes:
            self.load_synthetic(opts.synthetic_nodes)
        self.register_nodes()
        from .daemonsets import DaemonSetController
        self.daemonsets = DaemonSetController(self)
        self.daemonsets.start()
        if getattr(opts, "node_agents", False):
            from .kubelet import NodeAgents
            self.agents = self.api.kubelet = NodeAgents(self)
            if getattr(opts, "run_image", None):
                from .containers import Runtime, parse_images
                self.agents.runtime = Runtime(
                    parse_images(opts.run_image), os.path.abspath(rundir),
                    opts.container_host_env, self.agents.poke)
            self.agents.start()
        self.server = ApiServer(self, opts.host, opts.port,
                                os.path.join(rundir, "server.crt"),
                                os.path.join(rundir, "server.key"),
                                os.path.join(rundir, "ca.crt"))
        self.control_server = ControlServer(self, "127.0.0.1")
        url = f"https://{opts.host}:{self.server.port}"
        control_url = f"http://127.0.0.1:{self.control_server.server_port}"
        certs.write_kubeconfigs(rundir, url, tokens)
        self.server.start()
        threading.Thread(target=self.control_server.serve_forever,
                         daemon=True).start()
        certs.write_atomic(server_json, json.dumps(
            {"url": url, "pid": os.getpid(), "controlUrl": control_url,
             "port": self.server.port}) + "\n", 0o644)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop_event.set())
        while not self.stop_event.wait(3600):
            pass
        self.shutdown()

    def shutdown(self):
        if getattr(self, "daemonsets", None):
            self.daemonsets.stop()
        if self.agents:
            self.agents.stop()
        self.faults.stop()
        self.store.drop_watches()
        self.server.stop()
        self.control_server.shutdown()
        self.control_server.server_close()
