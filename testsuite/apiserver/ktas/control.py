# SPDX-License-Identifier: GPL-2.0-or-later
"""The /_test control API (fault injection, statistics, churn, node agents'
views, registering nodes and setting their Ready condition, the DaemonSet
controller's counters) and the request statistics it reports."""

import collections
import json
import threading

from . import nodes as node_objs
from . import status as st
from .auth import BUILTIN_RULES
from .resources import NODES, TYPES
from .routing import not_found
from .store import Entry, dumps


def touched(old, rv):
    """`old` with a new RV and a changed annotation.  Synthetic slices are
    (head, shared devices, tail): only the small head is re-encoded."""
    split = len(old.parts) == 3 and old.parts[0].endswith(b'"devices":')
    head = json.loads(old.parts[0] + b"[]" + old.parts[2] if split
                      else old.raw())
    meta = head["metadata"]
    meta["resourceVersion"] = str(rv)
    meta.setdefault("annotations", {})["ktas.test/churn"] = str(rv)
    if split:
        del head["spec"]["devices"]
        text = dumps(head)
        parts = (text[:-2] + b',"devices":', old.parts[1], b"}}")
    else:
        parts = (dumps(head),)
    return Entry(old.key, old.name, old.namespace, rv, parts, old.labels,
                 old.fields, old.uid)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.watches_open = 0
        self.watches_total = 0

    def count(self, verb, resource):
        with self.lock:
            self.counts[f"{verb} {resource}"] += 1

    def watch_opened(self):
        with self.lock:
            self.watches_open += 1
            self.watches_total += 1

    def watch_closed(self):
        with self.lock:
            self.watches_open -= 1

    def snapshot(self):
        with self.lock:
            return {"requests": dict(self.counts),
                    "total": sum(self.counts.values()),
                    "watchesOpen": self.watches_open,
                    "watchesTotal": self.watches_total}

    def reset(self):
        with self.lock:
            self.counts.clear()
            self.watches_total = self.watches_open


class Control:
    def __init__(self, app):
        self.app = app

    def handle(self, h, method, path, body):
        route = (method, path)
        if route == ("GET", "/_test/faults"):
            return h.send_json(200, self.app.faults.snapshot())
        if route == ("POST", "/_test/faults"):
            return h.send_json(200, self.set_faults(self._obj(body)))
        if route == ("POST", "/_test/faults/reset"):
            self.app.server.set_refuse(False)
            return h.send_json(200, self.app.faults.reset())
        if route == ("GET", "/_test/stats"):
            return h.send_json(200, self.app.stats.snapshot())
        if route == ("POST", "/_test/stats/reset"):
            self.app.stats.reset()
            return h.send_json(200, self.app.stats.snapshot())
        if route == ("GET", "/_test/info"):
            return h.send_json(200, self.info())
        if route == ("POST", "/_test/tokens"):
            return h.send_json(200, self.tokens(self._obj(body)))
        if route == ("POST", "/_test/churn"):
            return h.send_json(200, self.churn(self._obj(body)))
        if route == ("GET", "/_test/daemonsets"):
            return h.send_json(200, self.app.daemonsets.stats())
        if method == "GET" and path.startswith("/_test/nodes"):
            return h.send_json(200, self.nodes(path))
        if method == "POST" and path.startswith("/_test/nodes/"):
            return h.send_json(*self.node_write(path, self._obj(body)))
        raise not_found()

    def _obj(self, body):
        try:
            obj = json.loads(body or b"{}")
        except ValueError as err:
            raise st.bad_request(f"bad JSON: {err}") from None
        if not isinstance(obj, dict):
            raise st.bad_request("expected a JSON object")
        return obj

    def set_faults(self, req):
        app = self.app
        state = app.faults.update(req)
        out = dict(state)
        if req.get("dropWatches"):
            out["droppedWatches"] = app.store.drop_watches()
        if req.get("expireBefore") not in (None, ""):
            rv = req["expireBefore"]
            app.store.expire_before(app.store.rv if rv == "all" else int(rv))
        if "refuse" in req:
            app.server.set_refuse(bool(req["refuse"]))
        out["compactedRV"] = str(app.store.compacted)
        return out

    def tokens(self, req):
        """{"token": T, "user": U, "rules": [{"verbs": [..], "resources":
        [..]}]} adds or replaces T; {"token": T, "revoke": true} removes
        it.  "role": "admin"|"readonly"|"noaccess" stands for its rules."""
        token = req.get("token")
        if not token:
            raise st.bad_request("token is required")
        if req.get("revoke"):
            return {"revoked": self.app.auth.revoke(token)}
        rules = req.get("rules")
        if rules is None:
            role = req.get("role", "noaccess")
            if role not in BUILTIN_RULES:
                raise st.bad_request(f"unknown role {role!r}")
            rules = BUILTIN_RULES[role]
        user = req.get("user") or req.get("role") or "user"
        self.app.auth.add(token, user, rules)
        return {"token": token, "user": user, "rules": rules}

    def nodes(self, path):
        """GET /_test/nodes: the nodes with an agent; GET
        /_test/nodes/NODE/agent: that agent's view (README.md)."""
        agents = self.app.agents
        parts = path.split("/")[3:]
        if not parts:
            return {"enabled": agents is not None,
                    "nodes": agents.nodes() if agents else []}
        if len(parts) != 2 or parts[1] != "agent":
            raise not_found()
        view = agents.view(parts[0]) if agents else None
        if view is None:
            why = (f'no node agent for node "{parts[0]}" (no ResourceSlice '
                   "names it)" if agents else "node agents are off (start the"
                   " server with --node-agents)")
            raise st.ApiError(404, "NotFound", why,
                              {"name": parts[0], "kind": "nodes"})
        return view

    def node_write(self, path, req):
        """POST /_test/nodes/NODE/register {cpu, memory, pods, labels,
        ready, unschedulable}: kubelet registers NODE (201, the Node);
        POST /_test/nodes/NODE/ready {"status": "True"|"False"|"Unknown",
        reason, message}: kubelet (or, for Unknown, the node lifecycle
        controller) writes its Ready condition (200, the Node after the
        controller's taints)."""
        parts = path.split("/")[3:]
        if len(parts) != 2 or parts[1] not in ("register", "ready"):
            raise not_found()
        name, api, store = parts[0], self.app.api, self.app.store
        if parts[1] == "register":
            obj = node_objs.register(
                name, store.count(NODES) + 1, cpu=req.get("cpu"),
                memory=req.get("memory"), pods=req.get("pods"),
                labels=req.get("labels"), ready=req.get("ready", True),
                unschedulable=bool(req.get("unschedulable")))
            api.create(NODES, "", obj, keep_status=True)
            return 201, api.existing(NODES, "", name).obj()
        cstatus = req.get("status")
        if cstatus not in ("True", "False", "Unknown"):
            raise st.bad_request('status must be "True", "False" or '
                                 '"Unknown"')
        with store.lock:
            node = api.existing(NODES, "", name).obj()
            node["status"] = node_objs.with_ready(
                node, cstatus, req.get("reason"), req.get("message"))
            api.update_status(NODES, "", name, node)
            return 200, api.existing(NODES, "", name).obj()

    def info(self):
        store = self.app.store
        return {"resourceVersion": str(store.rv),
                "compactedRV": str(store.compacted),
                "historyLength": len(store.history),
                "objects": {t.name: store.count(t) for t in TYPES}}

    def churn(self, req):
        """Touch `count` objects of `resource` (an annotation changes), so
        that watchers get that many MODIFIED events."""
        rtype = next((t for t in TYPES if t.name == req.get("resource",
                                                            "resourceslices")),
                     None)
        if rtype is None:
            raise st.bad_request("unknown resource")
        count = int(req.get("count", 1))
        store = self.app.store
        with store.lock:
            keys = list(store.tables[rtype.name].keys)
            if not keys:
                return {"modified": 0}
            first = store.rv
            for i in range(count):
                old = store.tables[rtype.name].entries[keys[i % len(keys)]]
                store.commit_entry(rtype, "MODIFIED",
                                   lambda rv, old=old: touched(old, rv), old)
            return {"modified": count, "fromRV": str(first + 1),
                    "toRV": str(store.rv)}
