# SPDX-License-Identifier: GPL-2.0-or-later
"""Validation rules of kube-apiserver for the DRA objects (see
shared/reference/kubernetes-dra-api.md).  Each check returns a list of
causes (field, reason, message) so that one 422 can report all of them."""

import json
import re

DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
C_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                     r"[0-9a-f]{12}$")

MAX_DEVICES = 128
MAX_DEVICES_ADVANCED = 64
MAX_ATTRS_AND_CAPS = 32
MAX_REQUESTS = 32
MAX_CONSTRAINTS = 32
MAX_RESULTS = 32
MAX_ALLOC_CONFIG = 64
MAX_RESERVED_FOR = 256
MAX_SUBREQUESTS = 8
ATTR_VALUE_KINDS = ("int", "bool", "string", "version")
ATTR_LIST_KINDS = ("ints", "bools", "strings", "versions")

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case "
             "alphanumeric characters or '-', and must start and end with an "
             "alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
             "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case "
                 "alphanumeric characters, '-' or '.', and must start and end "
                 "with an alphanumeric character (e.g. 'example.com', regex "
                 "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                 "(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def _q(value):
    return json.dumps(value)


def required(field, what=""):
    return (field, "FieldValueRequired", "Required value" +
            (f": {what}" if what else ""))


def bad(field, value, why):
    return (field, "FieldValueInvalid", f"Invalid value: {_q(value)}: {why}")


def too_many(field, n, limit):
    return (field, "FieldValueTooMany",
            f"Too many: {n}: must have at most {limit} items")


def forbidden(field, why):
    return (field, "FieldValueForbidden", f"Forbidden: {why}")


def duplicate(field, value):
    return (field, "FieldValueDuplicate", f"Duplicate value: {_q(value)}")


def unsupported(field, value, allowed):
    return (field, "FieldValueNotSupported",
            f"Unsupported value: {_q(value)}: supported values: " +
            ", ".join(_q(a) for a in allowed))


def dns_label(field, value, required_=True):
    if value in (None, ""):
        return [required(field)] if required_ else []
    if not isinstance(value, str):
        return [bad(field, value, "must be a string")]
    out = []
    if len(value) > 63:
        out.append(bad(field, value, "must be no more than 63 characters"))
    if not DNS_LABEL_RE.match(value):
        out.append(bad(field, value, LABEL_MSG))
    return out


def dns_subdomain(field, value, max_len=253, required_=True):
    if value in (None, ""):
        return [required(field)] if required_ else []
    if not isinstance(value, str):
        return [bad(field, value, "must be a string")]
    out = []
    if len(value) > max_len:
        out.append(bad(field, value,
                       f"must be no more than {max_len} characters"))
    if not DNS_SUBDOMAIN_RE.match(value):
        out.append(bad(field, value, SUBDOMAIN_MSG))
    return out


def pool_name(field, value):
    if value in (None, ""):
        return [required(field)]
    if not isinstance(value, str):
        return [bad(field, value, "must be a string")]
    if len(value) > 253:
        return [bad(field, value, "must be no more than 253 characters")]
    for part in value.split("/"):
        if not DNS_SUBDOMAIN_RE.match(part):
            return [bad(field, value, "each part of a pool name must be a "
                        "DNS subdomain: " + SUBDOMAIN_MSG)]
    return []


def qualified_name(field, name):
    """Attribute/capacity names: C identifier (<=32), optional domain/."""
    domain, sep, ident = name.rpartition("/")
    out = []
    if sep and (not DNS_SUBDOMAIN_RE.match(domain) or len(domain) > 63):
        out.append(bad(field, name, "the domain must be a DNS subdomain of "
                       "at most 63 characters"))
    if not C_IDENT_RE.match(ident) or len(ident) > 32:
        out.append(bad(field, name, "the name must be a C identifier of at "
                       "most 32 characters"))
    return out


def object_meta(meta, namespaced):
    out = []
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        out.append(required("metadata.name", "name or generateName is "
                            "required"))
    elif name:
        out += dns_subdomain("metadata.name", name)
    if namespaced:
        out += dns_label("metadata.namespace", meta.get("namespace"))
    for key, val in (meta.get("labels") or {}).items():
        if not isinstance(val, str) or len(val) > 63:
            out.append(bad("metadata.labels", val, "must be no more than 63 "
                           "characters"))
        out += _label_key("metadata.labels", key)
    return out


def _label_key(field, key):
    prefix, sep, name = key.rpartition("/")
    ok = re.match(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$", name or "")
    if not ok or len(name) > 63 or (sep and not DNS_SUBDOMAIN_RE.match(prefix)):
        return [bad(field, key, "name part must consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with "
                    "an alphanumeric character")]
    return []


# ---------------------------------------------------------------- slices

def resource_slice(obj):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    out = dns_subdomain("spec.driver", spec.get("driver"), max_len=63)
    pool = spec.get("pool") or {}
    out += pool_name("spec.pool.name", pool.get("name"))
    if not isinstance(pool.get("resourceSliceCount"), int) or \
            pool.get("resourceSliceCount") <= 0:
        out.append(bad("spec.pool.resourceSliceCount",
                       pool.get("resourceSliceCount"),
                       "must be greater than zero"))
    if not isinstance(pool.get("generation", 0), int) or \
            pool.get("generation", 0) < 0:
        out.append(bad("spec.pool.generation", pool.get("generation"),
                       "must be greater than or equal to 0"))
    out += _node_selection(spec)
    devices = spec.get("devices") or []
    if devices and spec.get("sharedCounters"):
        out.append(forbidden("spec", "only one of `devices`, "
                             "`sharedCounters` may be set"))
    out += _devices(devices)
    return out


def _node_selection(spec):
    chosen = [k for k in ("nodeName", "nodeSelector", "allNodes",
                          "perDeviceNodeSelection")
              if spec.get(k) not in (None, "", False)]
    if len(chosen) != 1 and not spec.get("sharedCounters"):
        return [required("spec", "exactly one of `nodeName`, `nodeSelector`"
                         ", `allNodes`, `perDeviceNodeSelection` is required")
                if not chosen else
                forbidden("spec", "exactly one of `nodeName`, `nodeSelector`"
                          ", `allNodes`, `perDeviceNodeSelection` is required"
                          )]
    if spec.get("nodeName"):
        return dns_subdomain("spec.nodeName", spec["nodeName"])
    sel = spec.get("nodeSelector")
    if sel is not None and len(sel.get("nodeSelectorTerms") or []) != 1:
        return [bad("spec.nodeSelector.nodeSelectorTerms",
                    len(sel.get("nodeSelectorTerms") or []),
                    "must have exactly one node selector term")]
    return []


def _devices(devices):
    if not isinstance(devices, list):
        return [bad("spec.devices", devices, "must be a list")]
    advanced = any(d.get("taints") or d.get("consumesCounters")
                   for d in devices if isinstance(d, dict))
    limit = MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES
    if len(devices) > limit:
        return [too_many("spec.devices", len(devices), limit)]
    out, seen = [], set()
    for i, dev in enumerate(devices):
        path = f"spec.devices[{i}]"
        if not isinstance(dev, dict):
            out.append(bad(path, dev, "must be an object"))
            continue
        out += dns_label(path + ".name", dev.get("name"))
        if dev.get("name") in seen:
            out.append(duplicate(path + ".name", dev.get("name")))
        seen.add(dev.get("name"))
        out += _device_attrs(path, dev)
    return out


def _device_attrs(path, dev):
    attrs = dev.get("attributes") or {}
    caps = dev.get("capacity") or {}
    out = []
    if len(attrs) + len(caps) > MAX_ATTRS_AND_CAPS:
        out.append(too_many(path + ".attributes", len(attrs) + len(caps),
                            MAX_ATTRS_AND_CAPS))
    for name, val in attrs.items():
        field = f"{path}.attributes[{_q(name)}]"
        out += qualified_name(field, name)
        kinds = [k for k in ATTR_VALUE_KINDS + ATTR_LIST_KINDS
                 if isinstance(val, dict) and k in val]
        if len(kinds) != 1:
            out.append(required(field, "exactly one value must be specified"))
        elif kinds[0] == "string" and len(str(val["string"])) > 64:
            out.append(bad(field + ".string", val["string"],
                           "may not be more than 64 bytes"))
        elif kinds[0] == "int" and (not isinstance(val["int"], int) or
                                    isinstance(val["int"], bool)):
            out.append(bad(field + ".int", val["int"], "must be an integer"))
        elif kinds[0] == "bool" and not isinstance(val["bool"], bool):
            out.append(bad(field + ".bool", val["bool"], "must be a boolean"))
    for name, val in caps.items():
        field = f"{path}.capacity[{_q(name)}]"
        out += qualified_name(field, name)
        if not isinstance(val, dict) or "value" not in val:
            out.append(required(field + ".value"))
    return out


def resource_slice_update(old, new):
    out = resource_slice(new)
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    if ospec.get("driver") != nspec.get("driver"):
        out.append(bad("spec.driver", nspec.get("driver"),
                       "field is immutable"))
    if (ospec.get("pool") or {}).get("name") != \
            (nspec.get("pool") or {}).get("name"):
        out.append(bad("spec.pool.name", (nspec.get("pool") or {}).get(
            "name"), "field is immutable"))
    return out


# ---------------------------------------------------------------- claims

def resource_claim(obj):
    devices = ((obj.get("spec") or {}).get("devices")) or {}
    requests = devices.get("requests") or []
    out = []
    if len(requests) > MAX_REQUESTS:
        out.append(too_many("spec.devices.requests", len(requests),
                            MAX_REQUESTS))
    seen = set()
    for i, req in enumerate(requests):
        out += _request(f"spec.devices.requests[{i}]", req, seen)
    constraints = devices.get("constraints") or []
    if len(constraints) > MAX_CONSTRAINTS:
        out.append(too_many("spec.devices.constraints", len(constraints),
                            MAX_CONSTRAINTS))
    for i, con in enumerate(constraints):
        path = f"spec.devices.constraints[{i}]"
        for r in con.get("requests") or []:
            if r.split("/")[0] not in seen:
                out.append(bad(path + ".requests", r, "must be the name of "
                               "a request in the claim or the name of a "
                               "request and a subrequest separated by '/'"))
        for key in ("matchAttribute", "distinctAttribute"):
            if key in con and "/" not in str(con[key]):
                out.append(bad(f"{path}.{key}", con[key], "must include a "
                               "domain"))
    return out


def _request(path, req, seen):
    if not isinstance(req, dict):
        return [bad(path, req, "must be an object")]
    out = dns_label(path + ".name", req.get("name"))
    if req.get("name") in seen:
        out.append(duplicate(path + ".name", req.get("name")))
    seen.add(req.get("name"))
    has_exact, has_first = "exactly" in req, "firstAvailable" in req
    if has_exact == has_first:
        out.append(required(path, "exactly one of `exactly` or "
                            "`firstAvailable` is required"))
    if has_exact:
        out += _exact(path + ".exactly", req["exactly"] or {})
    if has_first:
        subs = req["firstAvailable"] or []
        if len(subs) > MAX_SUBREQUESTS:
            out.append(too_many(path + ".firstAvailable", len(subs),
                                MAX_SUBREQUESTS))
        for j, sub in enumerate(subs):
            out += dns_label(f"{path}.firstAvailable[{j}].name",
                             sub.get("name"))
            out += _exact(f"{path}.firstAvailable[{j}]", sub)
    return out


def _exact(path, ex):
    out = dns_subdomain(path + ".deviceClassName", ex.get("deviceClassName"))
    mode = ex.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        out.append(unsupported(path + ".allocationMode", mode,
                               ["All", "ExactCount"]))
    if mode == "ExactCount" and "count" in ex and \
            (not isinstance(ex["count"], int) or ex["count"] <= 0):
        out.append(bad(path + ".count", ex["count"], "must be greater than "
                       "zero"))
    for k, sel in enumerate(ex.get("selectors") or []):
        expr = ((sel or {}).get("cel") or {}).get("expression")
        if not expr:
            out.append(required(f"{path}.selectors[{k}].cel.expression"))
        elif len(expr) > 10 * 1024:
            out.append(too_many(f"{path}.selectors[{k}].cel.expression",
                                len(expr), 10 * 1024))
    return out


def resource_claim_update(old, new):
    out = resource_claim(new)
    if old.get("spec") != new.get("spec"):
        out.append(bad("spec", "", "field is immutable"))
    return out


def resource_claim_status(old, new):
    """validateResourceClaimStatusUpdate: old/new are full claims."""
    status = new.get("status") or {}
    old_alloc = (old.get("status") or {}).get("allocation")
    alloc = status.get("allocation")
    out = []
    if old_alloc is not None and alloc is not None and alloc != old_alloc:
        out.append(bad("status.allocation", "", "field is immutable"))
    reserved = status.get("reservedFor") or []
    if reserved and alloc is None:
        out.append(forbidden("status.reservedFor", "may not be specified "
                             "when `allocated` is not set"))
    if len(reserved) > MAX_RESERVED_FOR:
        out.append(too_many("status.reservedFor", len(reserved),
                            MAX_RESERVED_FOR))
    uids = set()
    for i, ref in enumerate(reserved):
        path = f"status.reservedFor[{i}]"
        if not ref.get("resource"):
            out.append(required(path + ".resource"))
        if not ref.get("name"):
            out.append(required(path + ".name"))
        if not ref.get("uid"):
            out.append(required(path + ".uid"))
        elif ref["uid"] in uids:
            out.append(duplicate(path + ".uid", ref["uid"]))
        uids.add(ref.get("uid"))
    if alloc is not None and alloc != old_alloc:
        out += _allocation(new, alloc)
    return out


def _request_names(claim):
    names = set()
    for req in (((claim.get("spec") or {}).get("devices") or {})
                .get("requests") or []):
        names.add(req.get("name"))
        for sub in req.get("firstAvailable") or []:
            names.add(f"{req.get('name')}/{sub.get('name')}")
    return names


def _allocation(claim, alloc):
    devs = alloc.get("devices") or {}
    results = devs.get("results") or []
    out = []
    if len(results) > MAX_RESULTS:
        out.append(too_many("status.allocation.devices.results",
                            len(results), MAX_RESULTS))
    names = _request_names(claim)
    for i, res in enumerate(results):
        path = f"status.allocation.devices.results[{i}]"
        if res.get("request") not in names:
            out.append(bad(path + ".request", res.get("request"),
                           "must be the name of a request in the claim or "
                           "the name of a request and a subrequest "
                           "separated by '/'"))
        out += dns_subdomain(path + ".driver", res.get("driver"), max_len=63)
        out += pool_name(path + ".pool", res.get("pool"))
        out += dns_label(path + ".device", res.get("device"))
        if "shareID" in res and not UUID_RE.match(str(res["shareID"])):
            out.append(bad(path + ".shareID", res["shareID"],
                           "must be a lowercase UUID in 8-4-4-4-12 format"))
    config = devs.get("config") or []
    if len(config) > MAX_ALLOC_CONFIG:
        out.append(too_many("status.allocation.devices.config", len(config),
                            MAX_ALLOC_CONFIG))
    for i, cfg in enumerate(config):
        path = f"status.allocation.devices.config[{i}]"
        if cfg.get("source") not in ("FromClaim", "FromClass"):
            out.append(unsupported(path + ".source", cfg.get("source"),
                                   ["FromClaim", "FromClass"]))
        opaque = cfg.get("opaque")
        if opaque is not None:
            out += dns_subdomain(path + ".opaque.driver", opaque.get("driver"),
                                 max_len=63)
    return out


# ---------------------------------------------------------------- classes

def device_class(obj):
    spec = obj.get("spec") or {}
    out = []
    for k, sel in enumerate(spec.get("selectors") or []):
        if not ((sel or {}).get("cel") or {}).get("expression"):
            out.append(required(f"spec.selectors[{k}].cel.expression"))
    return out


# ---------------------------------------------------------------- RBAC
# Accepted and stored with kube-apiserver's shape checks; never enforced
# (the server's own token rules decide who may do what).

RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _rules(obj, namespaced):
    out = []
    for i, rule in enumerate(obj.get("rules") or []):
        path = f"rules[{i}]"
        if not isinstance(rule, dict):
            out.append(bad(path, rule, "must be an object"))
            continue
        if not rule.get("verbs"):
            out.append(required(f"{path}.verbs", "verbs must contain at "
                                "least one value"))
        urls = rule.get("nonResourceURLs") or []
        if urls and namespaced:
            out.append(bad(f"{path}.nonResourceURLs", urls, "namespaced "
                           "rules cannot apply to non-resource URLs"))
        if urls and (rule.get("resources") or rule.get("apiGroups")):
            out.append(bad(f"{path}.nonResourceURLs", urls, "rules cannot "
                           "apply to both regular resources and "
                           "non-resource URLs"))
        if not urls:
            if not rule.get("apiGroups"):
                out.append(required(f"{path}.apiGroups", "resource rules "
                                    "must supply at least one api group"))
            if not rule.get("resources"):
                out.append(required(f"{path}.resources", "resource rules "
                                    "must supply at least one resource"))
    return out


def role(obj):
    return _rules(obj, True)


def cluster_role(obj):
    return _rules(obj, False)


def _binding(obj, namespaced):
    out = []
    ref = obj.get("roleRef") or {}
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if not ref.get("name"):
        out.append(required("roleRef.name"))
    if ref.get("kind") not in kinds:
        out.append(unsupported("roleRef.kind", ref.get("kind"), kinds))
    if ref.get("apiGroup") != RBAC_GROUP:
        out.append(unsupported("roleRef.apiGroup", ref.get("apiGroup"),
                               (RBAC_GROUP,)))
    for i, sub in enumerate(obj.get("subjects") or []):
        path = f"subjects[{i}]"
        sub = sub if isinstance(sub, dict) else {}
        if not sub.get("name"):
            out.append(required(f"{path}.name"))
        kind = sub.get("kind")
        if kind not in SUBJECT_KINDS:
            out.append(unsupported(f"{path}.kind", kind, SUBJECT_KINDS))
        elif kind == "ServiceAccount":
            if sub.get("apiGroup"):
                out.append(unsupported(f"{path}.apiGroup", sub["apiGroup"],
                                       ("",)))
            if not namespaced and not sub.get("namespace"):
                out.append(required(f"{path}.namespace"))
        elif sub.get("apiGroup") != RBAC_GROUP:
            out.append(unsupported(f"{path}.apiGroup", sub.get("apiGroup"),
                                   (RBAC_GROUP,)))
    return out


def role_binding(obj):
    return _binding(obj, True)


def cluster_role_binding(obj):
    return _binding(obj, False)


def _binding_update(old, new, namespaced):
    out = _binding(new, namespaced)
    if old.get("roleRef") != new.get("roleRef"):
        out.append(bad("roleRef", new.get("roleRef"), "cannot change "
                       "roleRef"))
    return out


def role_binding_update(old, new):
    return _binding_update(old, new, True)


def cluster_role_binding_update(old, new):
    return _binding_update(old, new, False)


# ---------------------------------------------------------------- scheduling

HIGHEST_USER_PRIORITY = 1000000000
SYSTEM_CRITICAL_PRIORITY = 2000000000
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


# ---------------------------------------------------------------- taint rules

TAINT_EFFECTS = ["NoSchedule", "NoExecute", "None"]   # None: 1.35+


def device_taint_rule(obj):
    """resource.k8s.io DeviceTaintRule (v1alpha3 1.33-1.35, v1beta2 1.36):
    a selector of driver, pool and device, and one taint. Also defaults
    taint.timeAdded, as kube-apiserver does."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    out = []
    sel = spec.get("deviceSelector")
    if sel is not None:
        if not isinstance(sel, dict):
            out.append(bad("spec.deviceSelector", sel, "must be an object"))
        else:
            if sel.get("driver") is not None:
                out += dns_subdomain("spec.deviceSelector.driver", sel["driver"], max_len=63)
            if sel.get("pool") is not None:
                out += pool_name("spec.deviceSelector.pool", sel["pool"])
            if sel.get("device") is not None:
                out += dns_label("spec.deviceSelector.device", sel["device"])
    taint = spec.get("taint")
    if not isinstance(taint, dict):
        return out + [required("spec.taint")]
    if not taint.get("key"):
        out.append(required("spec.taint.key"))
    else:
        out += _label_key("spec.taint.key", taint["key"])
    value = taint.get("value", "")
    if not isinstance(value, str) or len(value) > 63:
        out.append(bad("spec.taint.value", value, "must be no more than 63 characters"))
    if not taint.get("effect"):
        out.append(required("spec.taint.effect"))
    elif taint["effect"] not in TAINT_EFFECTS:
        out.append(unsupported("spec.taint.effect", taint["effect"], TAINT_EFFECTS))
    return out


def device_taint_rule_default(obj, old=None):
    taint = (obj.get("spec") or {}).get("taint")
    if isinstance(taint, dict) and not taint.get("timeAdded"):
        before = ((old or {}).get("spec") or {}).get("taint") or {}
        same = {k: before.get(k) for k in ("key", "value", "effect")} == \
            {k: taint.get(k) for k in ("key", "value", "effect")}
        from .api import now_rfc3339
        taint["timeAdded"] = before.get("timeAdded") if same and before.get("timeAdded") else now_rfc3339()


def priority_class(obj):
    """Also defaults preemptionPolicy, as kube-apiserver does."""
    out = []
    value = obj.get("value")
    name = (obj.get("metadata") or {}).get("name") or ""
    if not isinstance(value, int) or isinstance(value, bool):
        out.append(required("value"))
    elif name.startswith("system-"):
        if value > SYSTEM_CRITICAL_PRIORITY:
            out.append(forbidden("value", f"maximum allowed value of a "
                                 f"system priority class is "
                                 f"{SYSTEM_CRITICAL_PRIORITY}"))
    elif value > HIGHEST_USER_PRIORITY:
        out.append(forbidden("value", f"maximum allowed value of a user "
                             f"defined priority is {HIGHEST_USER_PRIORITY}"))
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    if obj["preemptionPolicy"] not in PREEMPTION_POLICIES:
        out.append(unsupported("preemptionPolicy", obj["preemptionPolicy"],
                               PREEMPTION_POLICIES))
    if not isinstance(obj.get("globalDefault", False), bool):
        out.append(bad("globalDefault", obj.get("globalDefault"),
                       "must be a boolean"))
    return out


def priority_class_update(old, new):
    out = priority_class(new)
    for key in ("value", "preemptionPolicy"):
        if old.get(key) != new.get(key):
            out.append(forbidden(key, "may not be changed in an update."))
    return out


def lease(obj):
    """coordination.k8s.io/v1 LeaseSpec, as kube-apiserver validates it."""
    out = []
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        return [bad("spec", spec, "must be an object")]
    dur = spec.get("leaseDurationSeconds")
    if dur is not None and (not isinstance(dur, int) or isinstance(dur, bool) or dur <= 0):
        out.append(bad("spec.leaseDurationSeconds", dur, "must be greater than 0"))
    trans = spec.get("leaseTransitions")
    if trans is not None and (not isinstance(trans, int) or isinstance(trans, bool) or trans < 0):
        out.append(bad("spec.leaseTransitions", trans, "must be greater than or equal to 0"))
    holder = spec.get("holderIdentity")
    if holder is not None and not isinstance(holder, str):
        out.append(bad("spec.holderIdentity", holder, "must be a string"))
    return out


def resource_claim_binding(old, new, authz):
    """Kubernetes 1.36 (DRAResourceClaimGranularStatusAuthorization, beta,
    on): a status write that changes `allocation` or `reservedFor` also needs
    the request's verb on the synthetic `resourceclaims/binding`, checked
    cluster-wide (empty namespace and name), so only a ClusterRole bound by a
    ClusterRoleBinding grants it.  Denied, it is a 422 with this cause."""
    ost, nst = old.get("status") or {}, new.get("status") or {}
    if ost.get("allocation") == nst.get("allocation") and \
            (ost.get("reservedFor") or []) == (nst.get("reservedFor") or []):
        return []
    if authz.allows("resourceclaims/binding", ""):
        return []
    return [forbidden(
        "status", "changing status.allocation or status.reservedFor requires"
        f' resource="resourceclaims/binding", verb="{authz.verb}" permission:'
        f' resourceclaims.resource.k8s.io is forbidden: User "{authz.user}"'
        f' cannot {authz.verb} resource "resourceclaims/binding" in API group'
        ' "resource.k8s.io" at the cluster scope')]
