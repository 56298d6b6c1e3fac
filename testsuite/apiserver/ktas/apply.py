# SPDX-License-Identifier: GPL-2.0-or-later
"""Server-side apply (PATCH with Content-Type application/apply-patch+yaml),
simplified: field ownership is tracked per Apply field manager in
metadata.managedFields (FieldsV1), every list is atomic (owned and replaced
as a whole, as the RBAC rules and subjects and the DeviceClass selectors
are), maps merge key by key.

* A missing object is created (201).
* Fields the same manager applied before and applies no longer are removed,
  unless another Apply manager owns them too.
* A field another Apply manager owns with a different value is a 409
  Conflict unless force=true, which moves the ownership.
* Fields written by create, update or the other patch types have no owner:
  they never conflict and are overwritten by an apply.
"""

import copy
import json

from . import status as st
from .api import now_rfc3339
from .store import object_key

APPLY = "application/apply-patch+yaml"
# Never owned: identity, server-set metadata, status (the status
# subresource's, not the main resource's).
_UNOWNED_META = {"name", "namespace", "uid", "resourceVersion", "generation",
                 "creationTimestamp", "deletionTimestamp", "managedFields",
                 "deletionGracePeriodSeconds", "selfLink"}


def is_apply(content_type):
    return (content_type or "").split(";")[0].strip() == APPLY


def decode(body):
    """JSON (what kubectl sends) or YAML (with python3-yaml installed)."""
    try:
        return json.loads(body or b"null")
    except ValueError:
        pass
    try:
        import yaml
    except ImportError:
        raise st.bad_request("error decoding YAML: this test server decodes "
                             "apply patches as JSON only (python3-yaml is "
                             "not installed)") from None
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as err:
        raise st.bad_request(f"error decoding YAML: {err}") from None


# ------------------------------------------------------------ field sets

def leaf_paths(obj, has_status):
    """The field paths an applied configuration sets: tuples of keys; a
    list, a scalar or an empty map ends a path."""
    out = set()

    def walk(node, path):
        if isinstance(node, dict) and node:
            for key, val in node.items():
                walk(val, path + (key,))
        else:
            out.add(path)

    for key, val in obj.items():
        if key in ("apiVersion", "kind") or (key == "status" and has_status):
            continue
        if key == "metadata" and isinstance(val, dict):
            for mkey, mval in val.items():
                if mkey not in _UNOWNED_META:
                    walk(mval, ("metadata", mkey))
            continue
        walk(val, (key,))
    return out


def to_fields_v1(paths):
    doc = {}
    for path in sorted(paths):
        cur = doc
        for key in path:
            cur = cur.setdefault("f:" + key, {})
    return doc


def from_fields_v1(doc):
    out = set()

    def walk(node, path):
        keys = [k for k in node if k.startswith("f:")] if \
            isinstance(node, dict) else []
        if not keys:
            if path:
                out.add(path)
            return
        for key in keys:
            walk(node[key], path + (key[2:],))

    walk(doc or {}, ())
    return out


def _get(obj, path):
    cur = obj
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None, False
        cur = cur[key]
    return cur, True


def _remove(obj, path):
    parents = []
    cur = obj
    for key in path[:-1]:
        if not isinstance(cur, dict) or key not in cur:
            return
        parents.append((cur, key))
        cur = cur[key]
    if isinstance(cur, dict):
        cur.pop(path[-1], None)
    # prune maps left empty (never metadata itself)
    for parent, key in reversed(parents):
        if parent[key] == {} and (parent is not obj or key != "metadata"):
            del parent[key]
        else:
            break


def _merge(dst, src):
    for key, val in src.items():
        if isinstance(val, dict) and val and isinstance(dst.get(key), dict):
            _merge(dst[key], val)
        else:
            dst[key] = copy.deepcopy(val)


def _entries(meta):
    return [e for e in (meta.get("managedFields") or [])
            if isinstance(e, dict)]


def _entry(manager, api_version, paths):
    return {"manager": manager, "operation": "Apply",
            "apiVersion": api_version, "time": now_rfc3339(),
            "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}


# ------------------------------------------------------------ apply

def _check_config(rtype, name, cfg):
    if not isinstance(cfg, dict):
        raise st.bad_request("the body of an apply patch must be an object")
    if not cfg.get("apiVersion"):
        raise st.bad_request("apiVersion must be set in apply patch")
    if not cfg.get("kind"):
        raise st.bad_request("kind must be set in apply patch")
    if cfg["apiVersion"] != rtype.api_version or cfg["kind"] != rtype.kind:
        raise st.bad_request(
            f"the kind and API version in the data ({cfg['kind']}, "
            f"{cfg['apiVersion']}) do not match the expected "
            f"({rtype.kind}, {rtype.api_version})")
    meta = cfg.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise st.bad_request("metadata must be an object")
    if meta.get("name") not in (None, "", name):
        raise st.bad_request(f"the name of the object ({meta['name']}) does "
                             f"not match the name on the URL ({name})")


def apply(api, rtype, ns, name, body, manager, force=False, dry_run=False,
          subresource=""):
    """Returns (result, created)."""
    if subresource:
        raise st.unsupported_media(APPLY + " on a subresource")
    if not manager:
        raise st.bad_request("PATCH, fieldManager is required for apply "
                             "requests")
    cfg = decode(body)
    _check_config(rtype, name, cfg)
    meta = cfg["metadata"]
    meta["name"] = name
    cfg.pop("status", None) if rtype.has_status else None
    paths = leaf_paths(cfg, rtype.has_status)
    with api.store.lock:
        entry = api.store.get(rtype, object_key(ns, name))
        if entry is None:
            new = copy.deepcopy(cfg)
            new["metadata"].pop("managedFields", None)
            res = api.create(rtype, ns, new, dry_run=dry_run,
                             managed_fields=[_entry(manager, rtype.api_version,
                                                    paths)])
            return res, True
        old = entry.obj()
        result = copy.deepcopy(old)
        entries = _entries(old["metadata"])
        mine = next((e for e in entries if e.get("manager") == manager and
                     e.get("operation") == "Apply"), None)
        before = from_fields_v1(mine.get("fieldsV1")) if mine else set()
        others = [e for e in entries if e is not mine]
        owned_by_others = {}
        for e in others:
            if e.get("operation") != "Apply":
                continue
            for p in from_fields_v1(e.get("fieldsV1")):
                owned_by_others.setdefault(p, []).append(e)
        conflicts = []
        for p in sorted(paths):
            owners = owned_by_others.get(p)
            if not owners:
                continue
            cur, _ = _get(old, p)
            want, _ = _get(cfg, p)
            if cur != want:
                conflicts.append((p, owners))
        if conflicts and not force:
            causes = [{"reason": "FieldManagerConflict",
                       "message": f'conflict with "{o[0]["manager"]}"',
                       "field": "." + ".".join(p)} for p, o in conflicts]
            text = "; ".join(f'.{".".join(p)}: conflict with '
                             f'"{o[0]["manager"]}"' for p, o in conflicts)
            raise st.ApiError(409, "Conflict",
                              f"Apply failed with {len(conflicts)} "
                              f"conflict{'s' if len(conflicts) > 1 else ''}:"
                              f" {text}",
                              {"name": name, "group": rtype.group,
                               "kind": rtype.name, "causes": causes})
        if force:
            taken = {p for p, _ in conflicts}
            for e in others:
                if e.get("operation") == "Apply" and taken:
                    left = from_fields_v1(e.get("fieldsV1")) - taken
                    e["fieldsV1"] = to_fields_v1(left)
            others = [e for e in others if e.get("operation") != "Apply" or
                      e["fieldsV1"]]
        for p in sorted(before - paths):
            if p not in owned_by_others:
                _remove(result, p)
        applied = copy.deepcopy(cfg)
        applied["metadata"].pop("managedFields", None)
        _merge(result, applied)
        new_entry = _entry(manager, rtype.api_version, paths)
        if mine and all(mine.get(k) == new_entry[k] for k in
                        ("apiVersion", "fieldsType", "fieldsV1")):
            new_entry = mine   # unchanged ownership keeps its time
        result["metadata"]["managedFields"] = others + [new_entry]
        if "resourceVersion" not in meta:
            result["metadata"]["resourceVersion"] = old["metadata"][
                "resourceVersion"]
        return api.update(rtype, ns, name, result, dry_run), False
