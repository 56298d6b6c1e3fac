# SPDX-License-Identifier: GPL-2.0-or-later
"""core/v1 Pods as kube-apiserver treats them: defaulting, the Priority,
ServiceAccount and DefaultTolerationSeconds admission steps, validation of
create and update (the spec is immutable but for images, tolerations added,
activeDeadlineSeconds), the initial status (Pending, qosClass) and whether a
DELETE is graceful (only where a node agent plays the kubelet)."""

import copy
import re

from . import status as st
from .store import Filter
from .validation import (bad, dns_label, dns_subdomain, duplicate, forbidden,
                         required, unsupported)

RESTART_POLICIES = ("Always", "OnFailure", "Never")
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Classes every kube-apiserver creates at bootstrap.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000,
                           "system-cluster-critical": 2000000000}
# DefaultTolerationSeconds admission: these NoExecute taints get 300 s.
DEFAULT_TOLERATED = ("node.kubernetes.io/not-ready",
                     "node.kubernetes.io/unreachable")
UPDATABLE = ("`spec.containers[*].image`", "`spec.initContainers[*].image`",
             "`spec.activeDeadlineSeconds`",
             "`spec.tolerations` (only additions to existing tolerations)",
             "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 "
             "if it was previously negative)")
QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "P": 1e15, "E": 1e18, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30,
           "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


def quantity(value):
    """A resource.Quantity string as a float, or None when malformed."""
    m = QUANTITY_RE.match(str(value))
    if not m:
        return None
    try:
        num = float(m.group(1))
    except ValueError:
        return None
    suffix = m.group(2)
    if suffix in _SUFFIX:
        return num * _SUFFIX[suffix]
    try:   # decimal exponent, e.g. 1e3
        return num * 10 ** int(suffix[1:])
    except ValueError:
        return None


def _containers(spec):
    return [(kind, c) for kind in ("initContainers", "containers")
            for c in spec.get(kind) or []]


# ---------------------------------------------------------------- defaults

def default(obj, old=None):
    """SetDefaults_Pod and friends; on update, what admission set on create
    (and a client sending the object back omitted) comes from the old pod."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for key, val in (("restartPolicy", "Always"),
                     ("dnsPolicy", "ClusterFirst"),
                     ("schedulerName", "default-scheduler"),
                     ("terminationGracePeriodSeconds", 30),
                     ("securityContext", {}), ("enableServiceLinks", True)):
        spec.setdefault(key, val)
    for _, c in _containers(spec):
        if not isinstance(c, dict):
            continue
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        image = str(c.get("image") or "")
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in image and (":" not in tag or
                                       tag.endswith(":latest"))
        c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    if old is not None:
        ospec = old.get("spec") or {}
        for key in ("priority", "preemptionPolicy", "serviceAccountName",
                    "serviceAccount"):
            if key not in spec and key in ospec:
                spec[key] = ospec[key]


def admit(api, obj):
    """Mutating admission on create: Priority (403 for an unknown class),
    ServiceAccount (the name only; no token volume) and
    DefaultTolerationSeconds."""
    from .resources import PRIORITY_CLASSES   # resources imports this module
    meta, spec = obj.get("metadata") or {}, obj.get("spec")
    if not isinstance(spec, dict):
        return
    name = spec.get("priorityClassName")
    value, policy = 0, "PreemptLowerPriority"
    if name in SYSTEM_PRIORITY_CLASSES:
        value = SYSTEM_PRIORITY_CLASSES[name]
    elif name:
        entry = api.store.get(PRIORITY_CLASSES, name)
        if entry is None:
            raise _forbidden(meta, f"no PriorityClass with name {name} was "
                             "found")
        pc = entry.obj()
        value, policy = pc.get("value", 0), pc.get("preemptionPolicy", policy)
    else:
        _, entries, _, _ = api.store.list_page(PRIORITY_CLASSES, Filter())
        for e in entries:
            pc = e.obj()
            if pc.get("globalDefault"):
                value = pc.get("value", 0)
                policy = pc.get("preemptionPolicy", policy)
                break
    if spec.get("priority") not in (None, value):
        raise _forbidden(meta, f"the integer value of priority "
                         f"({spec['priority']}) must not be provided in pod "
                         f"spec; priority admission controller computed "
                         f"{value} from the given PriorityClass name")
    spec["priority"] = value
    spec.setdefault("preemptionPolicy", policy)
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
    spec["serviceAccount"] = spec["serviceAccountName"]
    tols = spec.setdefault("tolerations", [])
    for key in DEFAULT_TOLERATED:
        if not any(_tolerates(t, key) for t in tols if isinstance(t, dict)):
            tols.append({"key": key, "operator": "Exists",
                         "effect": "NoExecute", "tolerationSeconds": 300})


def _tolerates(tol, key):
    if tol.get("effect") not in (None, "", "NoExecute"):
        return False
    if tol.get("operator") == "Exists":
        return tol.get("key") in (None, "", key)
    return tol.get("key") == key and not tol.get("value")


def _forbidden(meta, why):
    name = meta.get("name") or meta.get("generateName") or ""
    return st.ApiError(403, "Forbidden", f'pods "{name}" is forbidden: {why}',
                       {"name": name, "kind": "pods"})


def initial_status(obj):
    """PrepareForCreate: what a new pod's status is, whatever was sent."""
    return {"phase": "Pending", "qosClass": qos_class(obj.get("spec") or {})}


def qos_class(spec):
    conts = [c for _, c in _containers(spec) if isinstance(c, dict)]
    any_set, guaranteed = False, True
    for c in conts:
        res = c.get("resources") or {}
        reqs, lims = res.get("requests") or {}, res.get("limits") or {}
        for r in ("cpu", "memory"):
            if quantity(reqs.get(r, 0)) or quantity(lims.get(r, 0)):
                any_set = True
            if r not in lims or reqs.get(r, lims[r]) != lims[r]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed and conts else "Burstable"


# ---------------------------------------------------------------- validation

def validate(obj):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec.containers")]
    out = []
    if not spec.get("containers"):
        out.append(required("spec.containers"))
    claim_names = set()
    for i, rc in enumerate(spec.get("resourceClaims") or []):
        out += _pod_claim(f"spec.resourceClaims[{i}]", rc, claim_names)
    seen = set()
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(kind) or []):
            path = f"spec.{kind}[{i}]"
            if not isinstance(c, dict):
                out.append(bad(path, c, "must be an object"))
                continue
            name = c.get("name")
            out += dns_label(path + ".name", name)
            if name and name in seen:   # unique across both kinds
                out.append(duplicate(path + ".name", name))
            seen.add(name)
            out += _container(path, c, claim_names)
    policy = spec.get("restartPolicy")
    if policy not in RESTART_POLICIES:
        out.append(unsupported("spec.restartPolicy", policy,
                               RESTART_POLICIES))
    if spec.get("nodeName"):
        out += dns_subdomain("spec.nodeName", spec["nodeName"])
    if spec.get("priorityClassName"):
        out += dns_subdomain("spec.priorityClassName",
                             spec["priorityClassName"])
    for i, tol in enumerate(spec.get("tolerations") or []):
        out += _toleration(f"spec.tolerations[{i}]", tol)
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or
                              isinstance(grace, bool)):
        out.append(bad("spec.terminationGracePeriodSeconds", grace,
                       "must be an integer"))
    return out


def _pod_claim(path, rc, claim_names):
    if not isinstance(rc, dict):
        return [bad(path, rc, "must be an object")]
    name = rc.get("name")
    out = dns_label(path + ".name", name)
    if name in claim_names:
        out.append(duplicate(path + ".name", name))
    claim_names.add(name)
    has_c = bool(rc.get("resourceClaimName"))
    has_t = bool(rc.get("resourceClaimTemplateName"))
    if not has_c and not has_t:
        out.append(bad(path, name, "must specify one of: `resourceClaimName`"
                       ", `resourceClaimTemplateName`"))
    elif has_c and has_t:
        out.append(bad(path, name, "at most one of `resourceClaimName` or "
                       "`resourceClaimTemplateName` may be specified"))
    elif has_c:
        out += dns_subdomain(path + ".resourceClaimName",
                             rc["resourceClaimName"])
    else:
        out += dns_subdomain(path + ".resourceClaimTemplateName",
                             rc["resourceClaimTemplateName"])
    return out


def _container(path, c, claim_names):
    out = []
    if not str(c.get("image") or "").strip():
        out.append(required(path + ".image"))
    res = c.get("resources") or {}
    if not isinstance(res, dict):
        return out + [bad(path + ".resources", res, "must be an object")]
    reqs, lims = res.get("requests") or {}, res.get("limits") or {}
    for kind, vals in (("requests", reqs), ("limits", lims)):
        for rname, val in vals.items():
            if quantity(val) is None:
                out.append(bad(f"{path}.resources.{kind}[{rname}]", val,
                               "quantities must match the regular expression"
                               f" '{QUANTITY_RE.pattern}'"))
    for rname, val in reqs.items():
        req, lim = quantity(val), quantity(lims.get(rname))
        if None not in (req, lim) and req > lim:
            out.append(bad(f"{path}.resources.requests", val,
                           f"must be less than or equal to {rname} limit of "
                           f"{lims[rname]}"))
    keys = set()
    for j, cl in enumerate(res.get("claims") or []):
        p = f"{path}.resources.claims[{j}]"
        name = cl.get("name") if isinstance(cl, dict) else None
        if not name:
            out.append(required(p))
            continue
        key = name + (f"/{cl['request']}" if cl.get("request") else "")
        if key in keys:
            out.append(duplicate(p, key))
        keys.add(key)
        if name not in claim_names:
            why = "must be one of the names in pod.spec.resourceClaims"
            why += (": " + ", ".join(sorted(n for n in claim_names if n))
                    if claim_names else " which is empty")
            out.append(bad(p, name, why))
    return out


def _toleration(path, tol):
    if not isinstance(tol, dict):
        return [bad(path, tol, "must be an object")]
    out = []
    op = tol.get("operator") or "Equal"
    if op not in ("Equal", "Exists"):
        out.append(unsupported(path + ".operator", op, ("Equal", "Exists")))
    if op == "Exists" and tol.get("value"):
        out.append(bad(path + ".value", tol["value"], "value must be empty "
                       "when `operator` is 'Exists'"))
    if not tol.get("key") and op != "Exists":
        out.append(bad(path + ".operator", op, "operator must be Exists when "
                       '`key` is empty, which means "match all values and '
                       'all keys"'))
    if tol.get("effect") not in (None, "") + TAINT_EFFECTS:
        out.append(unsupported(path + ".effect", tol.get("effect"),
                               TAINT_EFFECTS))
    return out


def validate_update(old, new):
    """ValidatePodUpdate: the new spec must be valid, and may differ from
    the old one only where UPDATABLE says."""
    out = validate(new)
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    munged = copy.deepcopy(nspec)
    for kind in ("containers", "initContainers"):
        olds, news = ospec.get(kind) or [], munged.get(kind) or []
        if len(olds) == len(news):
            for o, n in zip(olds, news):
                if isinstance(n, dict) and isinstance(o, dict) and \
                        "image" in o:
                    n["image"] = o["image"]
    for key in ("activeDeadlineSeconds",):
        if key in ospec:
            munged[key] = ospec[key]
        else:
            munged.pop(key, None)
    otol = ospec.get("tolerations") or []
    ntol = munged.get("tolerations") or []
    if ntol[:len(otol)] == otol:
        munged["tolerations"] = copy.deepcopy(ospec.get("tolerations"))
        if "tolerations" not in ospec:
            munged.pop("tolerations", None)
    if (ospec.get("terminationGracePeriodSeconds") or 0) < 0 and \
            munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = \
            ospec["terminationGracePeriodSeconds"]
    if munged != ospec:
        changed = sorted(k for k in set(munged) | set(ospec)
                         if munged.get(k) != ospec.get(k))
        out.append(forbidden("spec", "pod updates may not change fields other"
                             " than " + ",".join(UPDATABLE) +
                             "\n(changed: " + ", ".join(changed) + ")"))
    return out


def validate_status(old, new):
    phase = (new.get("status") or {}).get("phase")
    if phase not in (None, "") + PHASES:
        return [unsupported("status.phase", phase, PHASES)]
    return []


# ---------------------------------------------------------------- delete

def grace_period(api, obj, options):
    """Seconds of graceful deletion, or None to delete now.  Graceful only
    where a node agent (the stand-in kubelet) runs: it unprepares the pod's
    claims and then deletes the pod; elsewhere nothing would ever finish."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    node = spec.get("nodeName")
    agents = getattr(api, "kubelet", None)
    if not node or agents is None or not agents.owns(node) or \
            status.get("phase") in ("Succeeded", "Failed"):
        return None
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    try:
        grace = int(grace)
    except (TypeError, ValueError):
        raise st.bad_request("gracePeriodSeconds must be an integer") \
            from None
    return grace if grace > 0 else None
