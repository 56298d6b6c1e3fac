# SPDX-License-Identifier: GPL-2.0-or-later
"""Server-side printing (meta.k8s.io/v1 Table) for `kubectl get`, with the
columns kube-apiserver's printers use for these types."""

import datetime

_NAME = {"name": "Name", "type": "string", "format": "name",
         "description": "Name must be unique within a namespace.",
         "priority": 0}
_AGE = {"name": "Age", "type": "string", "format": "",
        "description": "CreationTimestamp is a timestamp representing the "
        "server time when this object was created.", "priority": 0}


def _col(name, desc=""):
    return {"name": name, "type": "string", "format": "",
            "description": desc, "priority": 0}


def wants_table(headers):
    return "as=Table" in (headers.get("Accept") or "")


def human_age(created):
    try:
        then = datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError):
        return "<unknown>"
    then = then.replace(tzinfo=datetime.timezone.utc)
    secs = int((datetime.datetime.now(datetime.timezone.utc) - then)
               .total_seconds())
    secs = max(secs, 0)
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        return f"{mins}m{secs % 60}s" if secs % 60 else f"{mins}m"
    if mins < 180:
        return f"{mins}m"
    hours = mins // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def claim_state(obj):
    meta, status = obj["metadata"], obj.get("status") or {}
    states = ["deleted"] if meta.get("deletionTimestamp") else []
    if status.get("allocation") is None:
        if not meta.get("deletionTimestamp"):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
        elif meta.get("deletionTimestamp"):
            states.append("deallocating")
    return ",".join(states)


def _columns(rtype):
    if rtype.name == "resourceslices":
        return [_NAME, _col("Node"), _col("Driver"), _col("Pool"), _AGE]
    if rtype.name == "resourceclaims":
        return [_NAME, _col("State"), _AGE]
    if rtype.name == "namespaces":
        return [_NAME, _col("Status"), _AGE]
    return [_NAME, _AGE]


def _cells(rtype, obj):
    meta = obj["metadata"]
    age = human_age(meta.get("creationTimestamp"))
    if rtype.name == "resourceslices":
        spec = obj.get("spec") or {}
        return [meta["name"], spec.get("nodeName") or "<none>",
                spec.get("driver", ""), (spec.get("pool") or {}).get(
                    "name", ""), age]
    if rtype.name == "resourceclaims":
        return [meta["name"], claim_state(obj), age]
    if rtype.name == "namespaces":
        return [meta["name"], (obj.get("status") or {}).get("phase", ""),
                age]
    return [meta["name"], age]


def table_for(rtype, entries, rv, cont="", columns=True):
    rows = []
    for entry in entries:
        obj = entry if isinstance(entry, dict) else entry.obj()
        rows.append({"cells": _cells(rtype, obj), "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}})
    meta = {}
    if rv is not None:
        meta["resourceVersion"] = str(rv)
    if cont:
        meta["continue"] = cont
    table = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
             "metadata": meta, "rows": rows}
    if columns:
        table["columnDefinitions"] = _columns(rtype)
    return table
