# SPDX-License-Identifier: GPL-2.0-or-later
"""Create / update / status / patch / delete with kube-apiserver semantics
on top of the Store: metadata defaulting, optimistic concurrency, status
subresource rules, validation (422), finalizers."""

import copy
import datetime
import random
import uuid

from . import status as st
from . import validation
from .patching import apply_patch
from .resources import NAMESPACES
from .store import object_key

_GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_KEEP_ON_UPDATE = ("uid", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "generation", "name",
                   "namespace")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _keep_meta(meta, old_meta):
    """What an update cannot change in metadata comes from the old object."""
    for key in _KEEP_ON_UPDATE:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if "managedFields" not in meta and "managedFields" in old_meta:
        meta["managedFields"] = old_meta["managedFields"]


class Api:
    def __init__(self, store):
        self.store = store
        self.kubelet = None   # the node agents, when they run (app.py)
        self._controlling = False   # a controller's own writes trigger none

    def _committed(self, rtype, entry):
        """Under the store lock, after a write: the kind's controller reacts
        before the request is answered (its writes are their own events)."""
        if rtype.controller and not self._controlling:
            self._controlling = True
            try:
                rtype.controller(self, rtype, entry)
            finally:
                self._controlling = False
        return entry

    # ------------------------------------------------------------ helpers
    def existing(self, rtype, ns, name):
        entry = self.store.get(rtype, object_key(ns, name))
        if entry is None:
            raise st.not_found(rtype, name)
        return entry

    def _check_type(self, rtype, obj):
        if not isinstance(obj, dict):
            raise st.bad_request("the body of the request must be a JSON "
                                 "object")
        api_version = obj.get("apiVersion")
        if api_version and api_version != rtype.api_version:
            raise st.bad_request(
                f"the API version in the data ({api_version}) does not match "
                f"the expected API version ({rtype.api_version})")
        if obj.get("kind") and obj["kind"] != rtype.kind:
            raise st.bad_request(
                f"the kind in the data ({obj['kind']}) does not match the "
                f"expected kind ({rtype.kind})")
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind
        if not isinstance(obj.setdefault("metadata", {}), dict):
            raise st.bad_request("metadata must be an object")

    def _check_namespace(self, rtype, ns, meta):
        if not rtype.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace") and meta["namespace"] != ns:
            raise st.bad_request("the namespace of the provided object does "
                                 "not match the namespace sent on the request")
        meta["namespace"] = ns

    def _validate(self, rtype, name, causes):
        if causes:
            raise st.invalid(rtype, name, causes)

    # ------------------------------------------------------------ create
    def create(self, rtype, ns, obj, keep_status=False, dry_run=False,
               managed_fields=None):
        self._check_type(rtype, obj)
        meta = obj["metadata"]
        self._check_namespace(rtype, ns, meta)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                random.choice(_GEN_CHARS) for _ in range(5))
        if rtype.default:
            rtype.default(obj, None)
        if rtype.admit:
            rtype.admit(self, obj)   # mutating admission: before validation
        causes = validation.object_meta(meta, rtype.namespaced)
        if rtype.validate_create:
            causes += rtype.validate_create(obj)
        self._validate(rtype, meta.get("name") or "", causes)
        for key in ("resourceVersion", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(key, None)
        if managed_fields:
            meta["managedFields"] = managed_fields
        meta["uid"] = str(uuid.uuid4())
        meta["generation"] = 1
        meta["creationTimestamp"] = now_rfc3339()
        if rtype is NAMESPACES:
            obj["spec"] = obj.get("spec") or {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
        elif rtype.has_status and not keep_status:
            obj["status"] = rtype.initial_status(obj) if rtype.initial_status \
                else {}
        with self.store.lock:
            if rtype.namespaced and not self.store.get(NAMESPACES, ns):
                raise st.namespace_not_found(ns)
            if self.store.get(rtype, object_key(ns, meta["name"])):
                raise st.already_exists(rtype, meta["name"])
            if dry_run:
                meta["resourceVersion"] = str(self.store.rv)
                return obj
            return self._committed(rtype,
                                   self.store.commit(rtype, "ADDED", obj))

    # ------------------------------------------------------------ update
    def update(self, rtype, ns, name, obj, dry_run=False):
        self._check_type(rtype, obj)
        meta = obj["metadata"]
        if meta.get("name") not in (None, "", name):
            raise st.bad_request(
                f"the name of the object ({meta['name']}) does not match the "
                f"name on the URL ({name})")
        meta["name"] = name
        self._check_namespace(rtype, ns, meta)
        with self.store.lock:
            old = self.existing(rtype, ns, name)
            old_obj = old.obj()
            self._precondition(rtype, name, meta, old)
            _keep_meta(meta, old_obj["metadata"])
            if rtype.has_status:
                if "status" in old_obj:
                    obj["status"] = old_obj["status"]
                else:
                    obj.pop("status", None)
            if rtype.default:
                rtype.default(obj, old_obj)
            if obj.get("spec") != old_obj.get("spec"):
                meta["generation"] = old_obj["metadata"].get(
                    "generation", 1) + 1
            causes = validation.object_meta(meta, rtype.namespaced)
            if rtype.validate_update:
                causes += rtype.validate_update(old_obj, obj)
            self._validate(rtype, name, causes)
            return self._store_update(rtype, obj, old, old_obj, dry_run)

    def _precondition(self, rtype, name, meta, old):
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and str(rv) != str(old.rv):
            raise st.conflict(rtype, name)

    def _store_update(self, rtype, obj, old, old_obj, dry_run):
        """No-op updates keep the RV; an object whose deletion waited for
        finalizers goes away when the last one is removed."""
        obj["metadata"]["resourceVersion"] = old_obj["metadata"][
            "resourceVersion"]
        if obj == old_obj:
            return old
        if dry_run:
            return obj
        if obj["metadata"].get("deletionTimestamp") and \
                not obj["metadata"].get("finalizers"):
            return self.store.commit(rtype, "DELETED", obj, old)
        return self._committed(rtype, self.store.commit(rtype, "MODIFIED",
                                                        obj, old))

    # ------------------------------------------------------------ status
    def update_status(self, rtype, ns, name, obj, dry_run=False, authz=None):
        """authz: the request's RequestAuthz (None for the server's own
        writes), for checks on synthetic subresources."""
        if not rtype.has_status:
            raise st.not_found(rtype, name)
        self._check_type(rtype, obj)
        meta = obj["metadata"]
        if meta.get("name") not in (None, "", name):
            raise st.bad_request(
                f"the name of the object ({meta['name']}) does not match the "
                f"name on the URL ({name})")
        with self.store.lock:
            old = self.existing(rtype, ns, name)
            old_obj = old.obj()
            self._precondition(rtype, name, meta, old)
            new = copy.deepcopy(old_obj)
            if obj.get("status") is None:
                new.pop("status", None)
            else:
                new["status"] = obj["status"]
            causes = []
            if rtype.status_keeps_meta:
                _keep_meta(meta, old_obj["metadata"])
                new["metadata"] = meta
                causes += validation.object_meta(meta, rtype.namespaced)
            if rtype.validate_status:
                causes += rtype.validate_status(old_obj, new)
            if authz is not None and rtype.status_authz:
                causes += rtype.status_authz(old_obj, new, authz)
            self._validate(rtype, name, causes)
            return self._store_update(rtype, new, old, old_obj, dry_run)

    # ------------------------------------------------------------ patch
    def patch(self, rtype, ns, name, ctype, body, subresource="",
              dry_run=False, authz=None):
        with self.store.lock:
            old = self.existing(rtype, ns, name)
            patched = apply_patch(ctype, old.obj(), body)
            if not isinstance(patched, dict):
                raise st.bad_request("patch result is not an object")
            patched.setdefault("metadata", {})
            if subresource == "status":
                return self.update_status(rtype, ns, name, patched, dry_run,
                                          authz)
            return self.update(rtype, ns, name, patched, dry_run)

    # ------------------------------------------------------------ apply
    def apply(self, rtype, ns, name, body, manager, force=False,
              dry_run=False, subresource=""):
        """Server-side apply; returns (result, created)."""
        from .apply import apply
        return apply(self, rtype, ns, name, body, manager, force, dry_run,
                     subresource)

    # ------------------------------------------------------------ delete
    def delete(self, rtype, ns, name, options=None, dry_run=False):
        """Returns (entry_or_obj, deleted_now)."""
        options = options or {}
        with self.store.lock:
            old = self.existing(rtype, ns, name)
            old_obj = old.obj()
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != old.uid:
                raise st.conflict(rtype, name, "Precondition failed: UID in "
                                  f"precondition: {pre['uid']}, UID in object "
                                  f"meta: {old.uid}")
            if pre.get("resourceVersion") and \
                    str(pre["resourceVersion"]) != str(old.rv):
                raise st.conflict(rtype, name, "Precondition failed: "
                                  "ResourceVersion in precondition: "
                                  f"{pre['resourceVersion']}, ResourceVersion "
                                  f"in object meta: {old.rv}")
            meta = old_obj["metadata"]
            grace = rtype.grace_period(self, old_obj, options) \
                if rtype.grace_period else None
            if grace and meta.get("deletionTimestamp"):
                return old_obj, False   # already terminating
            if grace:   # graceful: whoever runs the object finishes it
                if dry_run:
                    return old_obj, False
                meta["deletionTimestamp"] = (
                    datetime.datetime.now(datetime.timezone.utc) +
                    datetime.timedelta(seconds=grace)).strftime(
                        "%Y-%m-%dT%H:%M:%SZ")
                meta["deletionGracePeriodSeconds"] = grace
                return self.store.commit(rtype, "MODIFIED", old_obj, old), \
                    False
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp") or dry_run:
                    return old_obj, False
                meta["deletionTimestamp"] = now_rfc3339()
                meta["deletionGracePeriodSeconds"] = 0
                return self.store.commit(rtype, "MODIFIED", old_obj, old), \
                    False
            if dry_run:
                return old_obj, True
            return self.store.commit(rtype, "DELETED", old_obj, old), True
