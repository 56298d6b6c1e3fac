# SPDX-License-Identifier: GPL-2.0-or-later
"""Events the server's stand-in components (the node agents' kubelet, the
DaemonSet controller) record about an object, as client-go's event
recorder writes them (core/v1, one Event per occurrence)."""

import time

from .api import now_rfc3339
from .resources import EVENTS
from .status import ApiError


def record(api, obj, kind, api_version, etype, reason, message, component,
           host=None):
    """An Event about `obj` (a Pod, a DaemonSet, ...) from `component`,
    on node `host` if it has one; nothing if its namespace is going."""
    meta, now = obj["metadata"], now_rfc3339()
    source = {"component": component}
    if host is not None:
        source["host"] = host
    try:
        api.create(EVENTS, meta["namespace"], {
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}"},
            "involvedObject": {
                "kind": kind, "namespace": meta["namespace"],
                "name": meta["name"], "uid": meta["uid"],
                "apiVersion": api_version,
                "resourceVersion": meta.get("resourceVersion", "")},
            "reason": reason, "message": message, "type": etype,
            "source": source,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "eventTime": None, "reportingComponent": component,
            "reportingInstance": host or ""})
    except ApiError:
        pass   # namespace going away
