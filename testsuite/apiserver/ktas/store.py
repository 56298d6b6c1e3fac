# SPDX-License-Identifier: GPL-2.0-or-later
"""The object store: one global resourceVersion, objects kept pre-serialized
as bytes (so that huge lists are joined, not re-encoded), a bounded event
history for watches and continue tokens, and the open watchers."""

import base64
import bisect
import collections
import json
import threading

from .status import too_old, expired, bad_request


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"),
                      ensure_ascii=False).encode()


def object_key(namespace, name):
    return f"{namespace}/{name}" if namespace else name


class Entry:
    """One stored object version.  Immutable once built; `parts` joined is
    the object's JSON (synthetic objects share big byte segments)."""
    __slots__ = ("key", "name", "namespace", "rv", "parts", "labels",
                 "fields", "uid")

    def __init__(self, key, name, namespace, rv, parts, labels, fields, uid):
        self.key, self.name, self.namespace = key, name, namespace
        self.rv, self.parts, self.labels = rv, parts, labels
        self.fields, self.uid = fields, uid

    def raw(self):
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)

    def obj(self):
        return json.loads(self.raw())


def parsed(entry, cache):
    """The entry's object, parsed once per version: `cache` maps its key to
    (rv, object). Shared by the callers: read-only!"""
    hit = cache.get(entry.key)
    if hit is None or hit[0] != entry.rv:
        hit = cache[entry.key] = (entry.rv, entry.obj())
    return hit[1]


def entry_from_obj(rtype, obj):
    meta = obj["metadata"]
    ns = meta.get("namespace", "") if rtype.namespaced else ""
    return Entry(object_key(ns, meta["name"]), meta["name"], ns,
                 int(meta["resourceVersion"]), (dumps(obj),),
                 dict(meta.get("labels") or {}), rtype.field_values(obj),
                 meta.get("uid", ""))


class Event:
    __slots__ = ("rv", "rtype", "type", "entry", "old")

    def __init__(self, rv, rtype, etype, entry, old):
        self.rv, self.rtype, self.type = rv, rtype, etype
        self.entry, self.old = entry, old


class Filter:
    """What one list or watch selects: namespace, labels, fields."""

    def __init__(self, namespace="", labels=None, fields=None):
        self.namespace, self.labels, self.fields = namespace, labels, fields

    def matches(self, entry):
        if entry is None:
            return False
        if self.namespace and entry.namespace != self.namespace:
            return False
        if self.labels and not self.labels(entry.labels):
            return False
        return not self.fields or self.fields(entry.fields)

    @property
    def selects_all(self):
        return not self.labels and not self.fields


class Watcher:
    def __init__(self, rtype, flt):
        self.rtype, self.filter = rtype, flt
        self.cond = threading.Condition()
        self.queue = collections.deque()
        self.closed = False

    def offer(self, ev):
        """Called with the store lock held: turn a store event into what
        this watcher sees (objects leaving the selection are DELETED)."""
        if ev.rtype is not self.rtype:
            return
        item = translate(ev, self.filter)
        if item:
            with self.cond:
                self.queue.append(item)
                self.cond.notify()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify()


def translate(ev, flt):
    if ev.type == "MODIFIED":
        now, before = flt.matches(ev.entry), flt.matches(ev.old)
        if now and before:
            return ("MODIFIED", ev.entry)
        if now:
            return ("ADDED", ev.entry)
        return ("DELETED", ev.entry) if before else None
    return (ev.type, ev.entry) if flt.matches(ev.entry) else None


class Table:
    def __init__(self):
        self.entries = {}
        self.keys = []

    def put(self, entry):
        if entry.key not in self.entries:
            bisect.insort(self.keys, entry.key)
        self.entries[entry.key] = entry

    def remove(self, key):
        del self.entries[key]
        del self.keys[bisect.bisect_left(self.keys, key)]


def encode_continue(rv, last_key):
    tok = {"v": "meta.k8s.io/v1", "rv": rv, "start": last_key + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(tok).encode()).decode()


def decode_continue(token):
    try:
        tok = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(tok["rv"]), str(tok["start"])
    except (ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: invalid continue "
                          "token") from None


def _scan(keys, lookup, flt, prefix, limit):
    """Matching entries in key order, at most `limit` (0: all).  Returns
    (entries, whether keys under `prefix` remain, how many keys remain)."""
    out = []
    for i, key in enumerate(keys):
        if prefix and not key.startswith(prefix):
            break
        entry = lookup(key)
        if flt.matches(entry):
            out.append(entry)
            if limit and len(out) >= limit:
                rest = keys[i + 1:i + 2]
                more = bool(rest) and rest[0].startswith(prefix)
                return out, more, len(keys) - i - 1
    return out, False, 0


class Store:
    def __init__(self, history_limit=10000):
        self.lock = threading.RLock()
        self.rv = 0
        self.compacted = 0     # RVs below this are 410 Expired
        self.history = collections.deque()
        self.history_limit = history_limit
        self.tables = collections.defaultdict(Table)
        self.watchers = set()
        # Called with every event, under the lock: must only take note
        # (the node agents wake up on them).
        self.listeners = []

    # ------------------------------------------------------------ reads
    def get(self, rtype, key):
        with self.lock:
            return self.tables[rtype.name].entries.get(key)

    def count(self, rtype):
        with self.lock:
            return len(self.tables[rtype.name].keys)

    # ------------------------------------------------------------ writes
    def commit(self, rtype, etype, obj, old=None):
        """Store a new version (ADDED/MODIFIED) or remove (DELETED; obj is
        the final state).  The caller has validated it."""
        def build(rv):
            obj["metadata"]["resourceVersion"] = str(rv)
            return entry_from_obj(rtype, obj)
        return self.commit_entry(rtype, etype, build, old)

    def commit_entry(self, rtype, etype, build, old=None):
        """Like commit, for callers that build the Entry themselves from
        the new RV (build(rv) -> Entry), e.g. byte-level edits."""
        with self.lock:
            self.rv += 1
            entry = build(self.rv)
            table = self.tables[rtype.name]
            if etype == "DELETED":
                table.remove(entry.key)
            else:
                table.put(entry)
            self._record(Event(self.rv, rtype, etype, entry, old))
            return entry

    def _record(self, ev):
        self.history.append(ev)
        while len(self.history) > self.history_limit:
            self.compacted = self.history.popleft().rv
        for w in list(self.watchers):
            w.offer(ev)
        for fn in self.listeners:
            fn(ev)

    def load_bulk(self, rtype, entries):
        """Insert prebuilt entries (synthetic inventory) without history:
        their RVs must be above self.rv.  Watches from older RVs get 410."""
        with self.lock:
            table = self.tables[rtype.name]
            for e in entries:
                table.entries[e.key] = e
                self.rv = max(self.rv, e.rv)
            table.keys = sorted(table.entries)
            self.expire_before(self.rv)

    def expire_before(self, rv):
        with self.lock:
            self.compacted = max(self.compacted, min(int(rv), self.rv))
            while self.history and self.history[0].rv <= self.compacted:
                self.history.popleft()

    # ------------------------------------------------------------ lists
    def list_page(self, rtype, flt, limit=0, token=None):
        """Returns (rv, entries, continue_token, remaining_count|None)."""
        with self.lock:
            if token:
                list_rv, start = decode_continue(token)
                if list_rv < self.compacted:
                    raise expired(
                        "The provided continue parameter is too old to "
                        "display a consistent list result. You can start a "
                        "new list without the continue parameter.")
            else:
                list_rv, start = self.rv, ""
            prefix = flt.namespace + "/" if flt.namespace else ""
            keys, lookup = self._view(rtype, list_rv, max(start, prefix))
            out, more, remaining = _scan(keys, lookup, flt, prefix, limit)
            if not more:
                return list_rv, out, "", None
            if not flt.selects_all or prefix:
                remaining = None
            return list_rv, out, encode_continue(list_rv, out[-1].key), \
                remaining

    def _view(self, rtype, list_rv, start):
        """Sorted keys >= start and a lookup, as the table was at list_rv
        (undoing later events from the history)."""
        table = self.tables[rtype.name]
        overlay = {}
        for ev in reversed(self.history):
            if ev.rv <= list_rv:
                break
            if ev.rtype is rtype:
                # older events overwrite: the first change after list_rv wins
                overlay[ev.entry.key] = None if ev.type == "ADDED" else ev.old
        if not overlay:
            lo = bisect.bisect_left(table.keys, start)
            return table.keys[lo:], table.entries.get
        keys = {k for k in table.keys[bisect.bisect_left(table.keys, start):]}
        keys |= {k for k in overlay if k >= start}

        def lookup(key):
            return overlay[key] if key in overlay else table.entries.get(key)
        return sorted(keys), lookup

    # ------------------------------------------------------------ watches
    def start_watch(self, rtype, flt, rv_param):
        """Registers a watcher.  Returns (watcher, initial items).  An RV
        older than the kept history raises 410 (sent as an ERROR event)."""
        with self.lock:
            w = Watcher(rtype, flt)
            if rv_param in (None, "", "0"):
                table = self.tables[rtype.name]
                initial = [("ADDED", table.entries[k]) for k in table.keys
                           if flt.matches(table.entries[k])]
            else:
                try:
                    since = int(rv_param)
                except ValueError:
                    raise bad_request(f"invalid resource version: "
                                      f"{rv_param}") from None
                if since < self.compacted:
                    raise too_old(since, self.compacted)
                initial = []
                for ev in reversed(self.history):
                    if ev.rv <= since:
                        break
                    if ev.rtype is rtype:
                        item = translate(ev, flt)
                        if item:
                            initial.append(item)
                initial.reverse()
            self.watchers.add(w)
            return w, initial

    def stop_watch(self, w):
        with self.lock:
            self.watchers.discard(w)

    def drop_watches(self):
        with self.lock:
            ws = list(self.watchers)
        for w in ws:
            w.close()
        return len(ws)

    def bookmark_rv(self, w):
        """The RV a bookmark may carry now, or None if events are pending."""
        with self.lock:
            with w.cond:
                return None if w.queue else self.rv
