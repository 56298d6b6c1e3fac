# SPDX-License-Identifier: GPL-2.0-or-later
"""The resource types this server knows: names, scope, selectable fields,
validation hooks and the discovery entries derived from them."""

from dataclasses import dataclass, field
from typing import Callable, Optional

from . import apps, configmaps, nodes, pods, validation

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch",
             "update", "watch"]


@dataclass(frozen=True)
class ResourceType:
    name: str            # plural, e.g. "resourceslices"
    singular: str
    kind: str
    group: str           # "" for core
    version: str
    namespaced: bool
    has_status: bool = False
    fields: tuple = ()   # selectable fields beyond metadata.name/namespace
    field_defaults: tuple = ()   # (field, value when unset), e.g. a bool's
    validate_create: Optional[Callable] = None
    validate_update: Optional[Callable] = None
    validate_status: Optional[Callable] = None
    short_names: tuple = field(default=())
    # Optional per-kind steps of kube-apiserver's pipeline (see api.py).
    default: Optional[Callable] = None         # (obj, old_or_None)
    admit: Optional[Callable] = None           # (api, obj) on create
    initial_status: Optional[Callable] = None  # (obj) -> status on create
    grace_period: Optional[Callable] = None    # (api, obj, options) -> s|None
    status_authz: Optional[Callable] = None    # (old, new, authz) -> causes
    # (api, rtype, entry) after each write: what a controller does next
    controller: Optional[Callable] = None
    # /status writes keep the request's metadata: Nodes' do, as their
    # strategy resets only the spec (the others' ResetObjectMetaForStatus)
    status_keeps_meta: bool = False

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self):
        return f"{self.name}.{self.group}" if self.group else self.name

    @property
    def selectable(self):
        return {"metadata.name", "metadata.namespace"} | set(self.fields)

    def field_values(self, obj):
        meta = obj.get("metadata") or {}
        out = {"metadata.name": meta.get("name", ""),
               "metadata.namespace": meta.get("namespace", "")}
        defaults = dict(self.field_defaults)
        for path in self.fields:
            cur = obj
            for part in path.split("."):
                cur = cur.get(part) if isinstance(cur, dict) else None
            if isinstance(cur, bool):   # as Go's fmt.Sprint prints it
                cur = "true" if cur else "false"
            out[path] = defaults.get(path, "") if cur is None else str(cur)
        return out


RESOURCE_SLICES = ResourceType(
    "resourceslices", "resourceslice", "ResourceSlice", "resource.k8s.io",
    "v1", False, fields=("spec.driver", "spec.nodeName"),
    validate_create=validation.resource_slice,
    validate_update=validation.resource_slice_update)

DEVICE_CLASSES = ResourceType(
    "deviceclasses", "deviceclass", "DeviceClass", "resource.k8s.io", "v1",
    False, validate_create=validation.device_class,
    validate_update=lambda old, new: validation.device_class(new))

RESOURCE_CLAIMS = ResourceType(
    "resourceclaims", "resourceclaim", "ResourceClaim", "resource.k8s.io",
    "v1", True, has_status=True,
    validate_create=validation.resource_claim,
    validate_update=validation.resource_claim_update,
    validate_status=validation.resource_claim_status,
    status_authz=validation.resource_claim_binding)

NAMESPACES = ResourceType(
    "namespaces", "namespace", "Namespace", "", "v1", False,
    has_status=True, short_names=("ns",))

# The cluster's nodes (the plugin's EXTERNAL nodes): kubelet registers them
# (app.py does, for every node the slices name), the node lifecycle
# controller taints them (nodes.lifecycle).
NODES = ResourceType(
    "nodes", "node", "Node", "", "v1", False, has_status=True,
    fields=("spec.unschedulable",),
    field_defaults=(("spec.unschedulable", "false"),),
    validate_create=nodes.validate, validate_update=nodes.validate_update,
    validate_status=nodes.validate_status, short_names=("no",),
    initial_status=nodes.initial_status, controller=nodes.lifecycle,
    status_keeps_meta=True)

# What the plugin's Kubernetes manifests (etc/kubernetes) hold besides
# DeviceClasses and Namespaces: accepted, validated and stored; the RBAC kinds
# are never enforced (tokens carry their own rules, see README.md).
SERVICE_ACCOUNTS = ResourceType(
    "serviceaccounts", "serviceaccount", "ServiceAccount", "", "v1", True,
    short_names=("sa",))

RBAC = "rbac.authorization.k8s.io"
ROLES = ResourceType(
    "roles", "role", "Role", RBAC, "v1", True,
    validate_create=validation.role,
    validate_update=lambda old, new: validation.role(new))
CLUSTER_ROLES = ResourceType(
    "clusterroles", "clusterrole", "ClusterRole", RBAC, "v1", False,
    validate_create=validation.cluster_role,
    validate_update=lambda old, new: validation.cluster_role(new))
ROLE_BINDINGS = ResourceType(
    "rolebindings", "rolebinding", "RoleBinding", RBAC, "v1", True,
    validate_create=validation.role_binding,
    validate_update=validation.role_binding_update)
CLUSTER_ROLE_BINDINGS = ResourceType(
    "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", RBAC,
    "v1", False, validate_create=validation.cluster_role_binding,
    validate_update=validation.cluster_role_binding_update)

PRIORITY_CLASSES = ResourceType(
    "priorityclasses", "priorityclass", "PriorityClass", "scheduling.k8s.io",
    "v1", False, validate_create=validation.priority_class,
    validate_update=validation.priority_class_update, short_names=("pc",))

# The plugin's leader election (k8s_sync/lease.cc): optimistic
# concurrency through resourceVersion, like any object here.
LEASES = ResourceType(
    "leases", "lease", "Lease", "coordination.k8s.io", "v1", True,
    validate_create=validation.lease,
    validate_update=lambda old, new: validation.lease(new))

# Holder pods and the node agents' (ktas/kubelet.py) view of them.
PODS = ResourceType(
    "pods", "pod", "Pod", "", "v1", True, has_status=True,
    fields=("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
            "spec.serviceAccountName", "status.phase", "status.podIP",
            "status.nominatedNodeName"),
    validate_create=pods.validate, validate_update=pods.validate_update,
    validate_status=pods.validate_status, short_names=("po",),
    default=pods.default, admit=pods.admit,
    initial_status=pods.initial_status, grace_period=pods.grace_period)

# What the node agents report (kubelet's FailedPrepareDynamicResources) and
# `kubectl describe` lists.
EVENTS = ResourceType(
    "events", "event", "Event", "", "v1", True,
    fields=("involvedObject.kind", "involvedObject.namespace",
            "involvedObject.name", "involvedObject.uid",
            "involvedObject.apiVersion", "involvedObject.resourceVersion",
            "involvedObject.fieldPath", "reason", "reportingComponent",
            "type"), short_names=("ev",))

# What the slurmd component (etc/kubernetes/components/slurmd) and its
# overlays hold: slurm.conf in a ConfigMap, the munge key in a Secret, one
# slurmd pod per labelled node from a DaemonSet (ktas/daemonsets.py plays
# its controller).
CONFIG_MAPS = ResourceType(
    "configmaps", "configmap", "ConfigMap", "", "v1", True,
    validate_create=configmaps.config_map,
    validate_update=configmaps.config_map_update, short_names=("cm",),
    default=configmaps.config_map_default)

SECRETS = ResourceType(
    "secrets", "secret", "Secret", "", "v1", True, fields=("type",),
    validate_create=configmaps.secret,
    validate_update=configmaps.secret_update,
    default=configmaps.secret_default)

DAEMON_SETS = ResourceType(
    "daemonsets", "daemonset", "DaemonSet", "apps", "v1", True,
    has_status=True, validate_create=apps.validate,
    validate_update=apps.validate_update, validate_status=apps.validate_status,
    short_names=("ds",), default=apps.default,
    initial_status=apps.initial_status)

# An admin's taints on devices outside the slices (KEP 5055): v1alpha3 in
# Kubernetes 1.33-1.35, v1beta2 in 1.36, each behind feature gates. Served
# in the versions --device-taint-rules names (serve_taint_rules below).
def _taint_rule_type(version):
    return ResourceType(
        "devicetaintrules", "devicetaintrule", "DeviceTaintRule",
        "resource.k8s.io", version, False, has_status=True,
        validate_create=validation.device_taint_rule,
        validate_update=lambda old, new: validation.device_taint_rule(new),
        default=validation.device_taint_rule_default)


DEVICE_TAINT_RULES = {v: _taint_rule_type(v) for v in ("v1beta2", "v1alpha3")}

TYPES = [RESOURCE_SLICES, DEVICE_CLASSES, RESOURCE_CLAIMS, NAMESPACES,
         NODES, SERVICE_ACCOUNTS, ROLES, CLUSTER_ROLES, ROLE_BINDINGS,
         CLUSTER_ROLE_BINDINGS, PRIORITY_CLASSES, LEASES, PODS, EVENTS,
         CONFIG_MAPS, SECRETS, DAEMON_SETS]
# Insertion order: resource.k8s.io is the first group in discovery.
BY_GROUP_VERSION = {}
for _t in TYPES:
    BY_GROUP_VERSION.setdefault((_t.group, _t.version), {})[_t.name] = _t


def serve_taint_rules(versions):
    """Serve DeviceTaintRules in these versions ("v1beta2", "v1alpha3"),
    as an API server with the DRADeviceTaintRules gate does; none by
    default. One stored object, whichever version it is written through."""
    for v in versions:
        rt = DEVICE_TAINT_RULES[v]
        BY_GROUP_VERSION.setdefault((rt.group, rt.version), {})[rt.name] = rt


def lookup(group, version, name):
    return BY_GROUP_VERSION.get((group, version), {}).get(name)


def api_resource_list(group, version):
    types = BY_GROUP_VERSION.get((group, version), {})
    resources = []
    for rt in types.values():
        resources.append({"name": rt.name, "singularName": rt.singular,
                          "namespaced": rt.namespaced, "kind": rt.kind,
                          "verbs": ALL_VERBS,
                          **({"shortNames": list(rt.short_names)}
                             if rt.short_names else {})})
        if rt.has_status:
            resources.append({"name": rt.name + "/status", "singularName": "",
                              "namespaced": rt.namespaced, "kind": rt.kind,
                              "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources}


def api_group(group):
    versions = sorted({v for (g, v) in BY_GROUP_VERSION if g == group})
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list():
    groups = list(dict.fromkeys(g for (g, _) in BY_GROUP_VERSION if g))
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [api_group(g) for g in groups]}


def api_versions():
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": "127.0.0.1"}]}
