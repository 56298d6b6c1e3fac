# SPDX-License-Identifier: GPL-2.0-or-later
"""Server-side printing (meta.k8s.io/v1 Table) for `kubectl get`, with the
columns kube-apiserver's printers use for these types."""

import datetime

from . import apps, nodes

_NAME = {"name": "Name", "type": "string", "format": "name",
         "description": "Name must be unique within a namespace.",
         "priority": 0}
_AGE = {"name": "Age", "type": "string", "format": "",
        "description": "CreationTimestamp is a timestamp representing the "
        "server time when this object was created.", "priority": 0}


def _col(name, desc="", priority=0):
    """priority 1: shown by `kubectl get -o wide` only."""
    return {"name": name, "type": "string", "format": "",
            "description": desc, "priority": priority}


def _int(name, desc=""):
    return {"name": name, "type": "integer", "format": "",
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


def pod_status(obj):
    """READY, STATUS and RESTARTS as kubectl shows them (printPod, without
    init-container and sidecar details)."""
    meta, status = obj["metadata"], obj.get("status") or {}
    total = len((obj.get("spec") or {}).get("containers") or [])
    reason = status.get("reason") or status.get("phase") or ""
    ready = restarts = 0
    for cs in reversed(status.get("containerStatuses") or []):
        restarts += cs.get("restartCount", 0)
        state = cs.get("state") or {}
        waiting, term = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif term and term.get("reason"):
            reason = term["reason"]
        elif term:
            reason = f"ExitCode:{term.get('exitCode', 0)}"
        elif cs.get("ready") and state.get("running"):
            ready += 1
    if meta.get("deletionTimestamp"):
        reason = "Terminating"
    return f"{ready}/{total}", reason, str(restarts)


def _columns(rtype):
    if rtype.name == "resourceslices":
        return [_NAME, _col("Node"), _col("Driver"), _col("Pool"), _AGE]
    if rtype.name == "resourceclaims":
        return [_NAME, _col("State"), _AGE]
    if rtype.name == "namespaces":
        return [_NAME, _col("Status"), _AGE]
    if rtype.name == "pods":
        return [_NAME, _col("Ready"), _col("Status"), _col("Restarts"), _AGE,
                _col("IP", priority=1), _col("Node", priority=1),
                _col("Nominated Node", priority=1),
                _col("Readiness Gates", priority=1)]
    if rtype.name == "events":
        return [_col("Last Seen"), _col("Type"), _col("Reason"),
                _col("Object"), _col("Message")]
    if rtype.name == "nodes":
        return [_NAME, _col("Status"), _col("Roles"), _AGE, _col("Version"),
                _col("Internal-IP", priority=1),
                _col("External-IP", priority=1),
                _col("OS-Image", priority=1),
                _col("Kernel-Version", priority=1),
                _col("Container-Runtime", priority=1)]
    if rtype.name == "daemonsets":
        return [_NAME, _int("Desired"), _int("Current"), _int("Ready"),
                _int("Up-to-date"), _int("Available"), _col("Node Selector"),
                _AGE, _col("Containers", priority=1),
                _col("Images", priority=1), _col("Selector", priority=1)]
    if rtype.name == "configmaps":
        return [_NAME, _int("Data"), _AGE]
    if rtype.name == "secrets":
        return [_NAME, _col("Type"), _int("Data"), _AGE]
    return [_NAME, _AGE]


def _daemon_set_cells(obj, age):
    """printDaemonSet: the status counters, the template's node selector,
    containers and images, the selector."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    conts = pod.get("containers") or []
    selector = ",".join(f"{k}={v}" for k, v in sorted(
        (pod.get("nodeSelector") or {}).items())) or "<none>"
    return [obj["metadata"]["name"]] + [
        status.get(k, 0) for k in ("desiredNumberScheduled",
                                   "currentNumberScheduled", "numberReady",
                                   "updatedNumberScheduled",
                                   "numberAvailable")] + [
        selector, age, ",".join(c.get("name", "") for c in conts),
        ",".join(c.get("image", "") for c in conts),
        apps.format_selector(spec.get("selector"))]


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
    if rtype.name == "pods":
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [meta["name"], *pod_status(obj), age,
                status.get("podIP") or "<none>",
                spec.get("nodeName") or "<none>",
                status.get("nominatedNodeName") or "<none>", "<none>"]
    if rtype.name == "events":
        inv = obj.get("involvedObject") or {}
        return [human_age(obj.get("lastTimestamp") or
                          meta.get("creationTimestamp")),
                obj.get("type", ""), obj.get("reason", ""),
                f"{(inv.get('kind') or '').lower()}/{inv.get('name', '')}",
                obj.get("message", "")]
    if rtype.name == "nodes":
        info = (obj.get("status") or {}).get("nodeInfo") or {}
        return [meta["name"], nodes.print_status(obj), nodes.roles(obj), age,
                info.get("kubeletVersion", ""),
                nodes.address(obj, "InternalIP"),
                nodes.address(obj, "ExternalIP"),
                info.get("osImage") or "<unknown>",
                info.get("kernelVersion") or "<unknown>",
                info.get("containerRuntimeVersion") or "<unknown>"]
    if rtype.name == "daemonsets":
        return _daemon_set_cells(obj, age)
    if rtype.name == "configmaps":
        return [meta["name"], len(obj.get("data") or {}) +
                len(obj.get("binaryData") or {}), age]
    if rtype.name == "secrets":
        return [meta["name"], obj.get("type", ""),
                len(obj.get("data") or {}), age]
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
