# SPDX-License-Identifier: GPL-2.0-or-later
"""core/v1 Nodes: what kubelet registers (labels, capacity, allocatable,
conditions, addresses, nodeInfo), kube-apiserver's node strategy (status
kept on create, /status may change metadata but not the spec; taints,
quantities, podCIDR and providerID validated) and the one controller this
server emulates, kube-controller-manager's node lifecycle controller: its
taints for spec.unschedulable and the node conditions (README.md)."""

import copy
import re
import uuid

from . import status as st
from .pods import QUANTITY_RE, TAINT_EFFECTS, quantity
from .validation import _label_key, bad, duplicate, forbidden, required, \
    unsupported

HOSTNAME_LABEL = "kubernetes.io/hostname"
ROLE_PREFIX = "node-role.kubernetes.io/"
KUBELET_VERSION = "v1.34.0"   # routing.VERSION's, as a kubelet reports it
KUBELET_PORT = 10250
DEFAULT_CPUS = 64
# The harness gives its Slurm nodes RealMemory=64000 (MiB): allocatable is
# that, capacity adds kubelet's default hard eviction threshold (100Mi).
EVICTION_HARD_KI = 100 * 1024
DEFAULT_MEMORY = "65536000Ki"
MAX_PODS = "110"

# kubelet's own conditions, in the order it writes them: (type, healthy
# status, reason, message)
KUBELET_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure",
     "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID",
     "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
NOT_READY = ("KubeletNotReady", "container runtime is down")
# what the node lifecycle controller writes once kubelet stops posting
UNKNOWN = ("NodeStatusUnknown", "Kubelet stopped posting node status.")

# The node lifecycle controller's taints.  NoSchedule: one per condition
# (type, status) and for spec.unschedulable; NoExecute: not-ready and
# unreachable (taint-based eviction; nothing is evicted here).
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
CONDITION_TAINTS = {
    ("Ready", "False"): NOT_READY_TAINT,
    ("Ready", "Unknown"): UNREACHABLE_TAINT,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure"}
NO_SCHEDULE_KEYS = set(CONDITION_TAINTS.values()) | {UNSCHEDULABLE_TAINT}
NO_EXECUTE_KEYS = {NOT_READY_TAINT, UNREACHABLE_TAINT}
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


# ---------------------------------------------------------------- registering

def now_rfc3339():
    from .api import now_rfc3339 as now   # api imports resources, which
    return now()                          # imports this module


def host_ip(index):
    """The node's InternalIP (the node agent's hostIP), by registration
    order from 1."""
    return f"172.{18 + index // 250}.0.{index % 250 + 1}"


def pod_cidr(index):
    """spec.podCIDR as the node IPAM controller would assign it (the node
    agent gives pods addresses in it)."""
    return f"10.{1 + index // 256}.{index % 256}.0/24"


def _ki(value):
    """A memory quantity in Ki, the unit kubelet reports."""
    return int((quantity(value) or 0) // 1024)


def condition(ctype, cstatus, reason, message, now, old=None):
    """A NodeCondition; lastTransitionTime moves only when status flips."""
    prev = old or {}
    return {"type": ctype, "status": cstatus,
            "lastHeartbeatTime": now,
            "lastTransitionTime": prev.get("lastTransitionTime", now)
            if prev.get("status") == cstatus else now,
            "reason": reason, "message": message}


def kubelet_conditions(ready=True, now=None, old=()):
    """kubelet's four conditions, healthy but for Ready when not `ready`;
    `old`: the conditions before, for the transition times."""
    now = now or now_rfc3339()
    prev = {c.get("type"): c for c in old or ()}
    out = []
    for ctype, ok, reason, message in KUBELET_CONDITIONS:
        if ctype == "Ready" and not ready:
            ok, (reason, message) = "False", NOT_READY
        out.append(condition(ctype, ok, reason, message, now,
                             prev.get(ctype)))
    return out


def register(name, index, cpu=None, memory=None, pods=None, labels=None,
             ready=True, unschedulable=False):
    """The Node kubelet registers for `name` (`index`: its registration
    order, for addresses).  memory: the allocatable memory (default 64000Mi);
    capacity adds the hard eviction threshold."""
    now = now_rfc3339()
    ids = uuid.uuid5(uuid.NAMESPACE_DNS, name + ".ktas")
    cpu = str(cpu or DEFAULT_CPUS)
    memory = str(memory or DEFAULT_MEMORY)
    pods = str(pods or MAX_PODS)
    labels = {"beta.kubernetes.io/arch": "amd64",
              "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              HOSTNAME_LABEL: name, "kubernetes.io/os": "linux",
              **(labels or {})}
    meta = {"name": name, "labels": dict(sorted(labels.items())),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach":
                "true"}}
    spec = {"podCIDR": pod_cidr(index), "podCIDRs": [pod_cidr(index)]}
    if unschedulable:
        spec["unschedulable"] = True
    resources = {"cpu": cpu, "ephemeral-storage": "102626232Ki",
                 "hugepages-1Gi": "0", "hugepages-2Mi": "0", "pods": pods}
    status = {   # Go writes maps with sorted keys
        "capacity": _sorted(resources,
                            memory=f"{_ki(memory) + EVICTION_HARD_KI}Ki"),
        "allocatable": _sorted(resources, memory=memory,
                               **{"ephemeral-storage": "94580335255"}),
        "conditions": kubelet_conditions(ready, now),
        "addresses": [{"type": "InternalIP", "address": host_ip(index)},
                      {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": KUBELET_PORT}},
        "nodeInfo": {
            "machineID": ids.hex, "systemUUID": str(ids),
            "bootID": str(uuid.uuid5(ids, "boot")),
            "kernelVersion": "6.1.0-37-amd64",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "containerRuntimeVersion": "containerd://1.7.24",
            "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": "amd64"}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": spec, "status": status}


def complete(seed, index, cpu=None):
    """A Node from a seed file, with what the seed leaves out filled in as
    kubelet would register it.  A resource given only in capacity or only
    in allocatable is taken for both, but for memory: capacity is
    allocatable plus the eviction threshold (register)."""
    seed = copy.deepcopy(seed)
    status = seed.setdefault("status", {})
    cap, alloc = status.get("capacity") or {}, status.get("allocatable") or {}
    memory = alloc.get("memory") or (
        f"{max(_ki(cap['memory']) - EVICTION_HARD_KI, 0)}Ki"
        if cap.get("memory") else None)
    base = register(seed["metadata"]["name"], index,
                    cpu=alloc.get("cpu") or cap.get("cpu") or cpu,
                    memory=memory,
                    pods=alloc.get("pods") or cap.get("pods"))
    for key in ("capacity", "allocatable"):
        other = {k: v for k, v in (alloc if key == "capacity" else cap)
                 .items() if k != "memory"}   # memory: register's rule
        given = status.get(key) or {}
        status[key] = _sorted(base["status"][key], **other, **given)
    return _fill(seed, base)


def _sorted(mapping, **more):
    return dict(sorted({**mapping, **more}.items()))


def _fill(given, base):
    """`given` with the keys it lacks taken from `base`, recursively into
    maps; lists are kept whole."""
    out = dict(given)
    for key, val in base.items():
        if key not in out:
            out[key] = val
        elif isinstance(val, dict) and isinstance(out[key], dict):
            out[key] = _fill(out[key], val)
    return out


def cpus_from_slices(slices):
    """The CPUs a node's dra.cpu slices publish: one per device with a
    cpuID (individual mode) or the `dra.cpu/cpu` capacity of its group
    devices (grouped mode); None without a dra.cpu slice."""
    seen, total = set(), 0
    for s in slices:
        spec = s.get("spec") or {}
        if spec.get("driver") != "dra.cpu":
            continue
        for dev in spec.get("devices") or []:
            key = ((spec.get("pool") or {}).get("name"), dev.get("name"))
            if key in seen:
                continue
            seen.add(key)
            if "dra.cpu/cpuID" in (dev.get("attributes") or {}):
                total += 1
            else:
                cap = (dev.get("capacity") or {}).get("dra.cpu/cpu") or {}
                total += int(quantity(cap.get("value", 0)) or 0)
    return total or None


def initial_status(obj):
    """Nodes keep the status they are created with (kubelet registers with
    it)."""
    return obj.get("status") or {}


def get_condition(node, ctype):
    return next((c for c in (node.get("status") or {}).get("conditions")
                 or [] if c.get("type") == ctype), None)


def with_ready(node, cstatus, reason=None, message=None):
    """The node's status after kubelet (True/False) or, once kubelet went
    silent, the node lifecycle controller (Unknown: every kubelet
    condition) reports Ready=cstatus."""
    now = now_rfc3339()
    status = copy.deepcopy(node.get("status") or {})
    old = status.get("conditions") or []
    if cstatus == "Unknown":
        reason, message = reason or UNKNOWN[0], message or UNKNOWN[1]
        kinds = {c[0] for c in KUBELET_CONDITIONS}
        status["conditions"] = [
            {**c, "status": "Unknown", "reason": reason, "message": message,
             "lastTransitionTime": c.get("lastTransitionTime")
             if c.get("status") == "Unknown" else now}
            if c.get("type") in kinds else c for c in old]
        return status
    conds = kubelet_conditions(cstatus == "True", now, old)
    if reason or message:
        conds[-1].update(reason=reason or conds[-1]["reason"],
                         message=message or conds[-1]["message"])
    ours = {c["type"] for c in conds}
    status["conditions"] = conds + [c for c in old
                                    if c.get("type") not in ours]
    return status


# ---------------------------------------------------------------- validation

def _quantities(status):
    """kube-apiserver fails to decode a malformed quantity: 400."""
    for key in ("capacity", "allocatable"):
        for res, val in (status.get(key) or {}).items():
            if not isinstance(val, str) or not QUANTITY_RE.match(val):
                raise st.bad_request(
                    f'Node in version "v1" cannot be handled as a Node: '
                    f"quantities must match the regular expression "
                    f"'{QUANTITY_RE.pattern}' (status.{key}.{res})")


def _taints(taints):
    out, seen = [], set()
    if not isinstance(taints, list):
        return [bad("spec.taints", taints, "must be a list")]
    for i, t in enumerate(taints):
        path = f"spec.taints[{i}]"
        if not isinstance(t, dict):
            out.append(bad(path, t, "must be an object"))
            continue
        key, value, effect = t.get("key"), t.get("value", ""), \
            t.get("effect")
        out += [required(path + ".key")] if not key else \
            _label_key(path + ".key", key)
        if not isinstance(value, str) or len(value) > 63 or \
                not LABEL_VALUE_RE.match(value):
            out.append(bad(path + ".value", value, "a valid label must be "
                           "an empty string or consist of alphanumeric "
                           "characters, '-', '_' or '.', and must start "
                           "and end with an alphanumeric character"))
        if not effect:
            out.append(required(path + ".effect"))
        elif effect not in TAINT_EFFECTS:
            out.append(unsupported(path + ".effect", effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            cause = duplicate(path, t)
            out.append((cause[0], cause[1], cause[2] + ": taints must be "
                        "unique by key and effect pair"))
        seen.add((key, effect))
    return out


def validate(obj):
    """ValidateNode: taints, and the quantities of the status."""
    _quantities(obj.get("status") or {})
    spec = obj.get("spec") or {}
    return _taints(spec.get("taints") or [])


def _addresses(status):
    out, seen = [], []
    for i, addr in enumerate(status.get("addresses") or []):
        if addr in seen:
            out.append(duplicate(f"status.addresses[{i}]", addr))
        seen.append(addr)
    return out


def _update(old, new):
    """ValidateNodeUpdate: podCIDRs and providerID may only be set once;
    no duplicate addresses."""
    out = []
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    if ospec.get("podCIDRs") and nspec.get("podCIDRs") != ospec["podCIDRs"]:
        out.append(forbidden("spec.podCIDRs", 'node updates may not change '
                             'podCIDR except from "" to valid'))
    if ospec.get("providerID") and \
            nspec.get("providerID") != ospec["providerID"]:
        out.append(forbidden("spec.providerID", 'node updates may not change '
                             'providerID except from "" to valid'))
    _quantities(new.get("status") or {})
    return out + _addresses(new.get("status") or {})


def validate_update(old, new):
    return validate(new) + _update(old, new)


def validate_status(old, new):
    return _update(old, new)


# ---------------------------------------------------------------- controller

def _no_schedule(node, taints):
    """doNoScheduleTaintingPass: a NoSchedule taint per tainting condition
    and for spec.unschedulable; its other NoSchedule taints are removed."""
    want = []
    for c in (node.get("status") or {}).get("conditions") or []:
        key = CONDITION_TAINTS.get((c.get("type"), c.get("status")))
        if key:
            want.append(key)
    if (node.get("spec") or {}).get("unschedulable"):
        want.append(UNSCHEDULABLE_TAINT)
    return _swap(taints, "NoSchedule", NO_SCHEDULE_KEYS, want)


def _no_execute(node, taints):
    """Taint-based eviction's marking: NoExecute not-ready while Ready is
    False, unreachable while Unknown, neither when True (no Ready
    condition: left alone, the controller waits for one)."""
    ready = get_condition(node, "Ready")
    if ready is None:
        return taints
    want = {"False": [NOT_READY_TAINT],
            "Unknown": [UNREACHABLE_TAINT]}.get(ready.get("status"), [])
    return _swap(taints, "NoExecute", NO_EXECUTE_KEYS, want)


def _swap(taints, effect, keys, want):
    """SwapNodeControllerTaint: the controller's taints of `effect` become
    `want` (new ones get timeAdded, appended); others are kept as they
    are."""
    have = [t for t in taints if t.get("effect") == effect and
            t.get("key") in keys]
    drop = [t for t in have if t.get("key") not in want]
    add = [k for k in dict.fromkeys(want)
           if not any(t.get("key") == k for t in have)]
    if not drop and not add:
        return taints
    now = now_rfc3339()
    return [t for t in taints if t not in drop] + \
        [{"key": k, "effect": effect, "timeAdded": now} for k in add]


def lifecycle(api, rtype, entry):
    """After a Node is written: the node lifecycle controller's two tainting
    passes, each that changes something a write of its own (as the
    controller patches the node), so a watch sees the cordon and then the
    taint.  Runs before the request that caused it is answered."""
    name = entry.name
    for tainting in (_no_schedule, _no_execute):
        node = entry.obj()
        if node["metadata"].get("deletionTimestamp"):
            return
        spec = node.setdefault("spec", {})
        taints = spec.get("taints") or []
        new = tainting(node, taints)
        if new == taints:
            continue
        if new:
            spec["taints"] = new
        else:
            spec.pop("taints", None)
        try:
            entry = api.update(rtype, "", name, node)
        except st.ApiError:
            return   # a user taint the controller cannot write back


# ---------------------------------------------------------------- printing

def print_status(node):
    """STATUS of `kubectl get nodes` (printNode): Ready or NotReady from the
    Ready condition, Unknown without one, SchedulingDisabled if
    cordoned."""
    ready = get_condition(node, "Ready")
    out = ["Unknown"] if ready is None else \
        ["Ready" if ready.get("status") == "True" else "NotReady"]
    if (node.get("spec") or {}).get("unschedulable"):
        out.append("SchedulingDisabled")
    return ",".join(out)


def roles(node):
    labels = (node.get("metadata") or {}).get("labels") or {}
    out = {k[len(ROLE_PREFIX):] for k in labels
           if k.startswith(ROLE_PREFIX) and k != ROLE_PREFIX}
    if labels.get("kubernetes.io/role"):
        out.add(labels["kubernetes.io/role"])
    return ",".join(sorted(out)) or "<none>"


def address(node, kind, missing="<none>"):
    for addr in (node.get("status") or {}).get("addresses") or []:
        if addr.get("type") == kind:
            return addr.get("address")
    return missing
