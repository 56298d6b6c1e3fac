# SPDX-License-Identifier: GPL-2.0-or-later
"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
strategic merge patch with the patch strategies the served types declare
(status.reservedFor and metadata.ownerReferences merge by uid,
metadata.finalizers merges as a set, a pod's (and a DaemonSet template's)
containers, resourceClaims and volumes merge by name, and within a container
env by name, volumeMounts by mountPath and ports by containerPort; a pod's
status.conditions by type and podIPs/hostIPs by ip; a node's
status.conditions and status.addresses merge by type and its spec.podCIDRs
as a set; every other list, spec.taints included, is replaced)."""

import copy
import json

from .status import bad_request, unsupported_media, ApiError

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def apply_patch(content_type, doc, body):
    ctype = (content_type or "").split(";")[0].strip()
    try:
        patch = json.loads(body or b"null")
    except ValueError as err:
        raise bad_request(f"error decoding patch: {err}") from None
    if ctype == MERGE:
        return merge_patch(doc, patch)
    if ctype == STRATEGIC:
        if not isinstance(patch, dict):
            raise bad_request("strategic merge patch must be an object")
        return strategic_merge(doc, patch)
    if ctype == JSON_PATCH:
        return json_patch(doc, patch)
    raise unsupported_media(ctype)


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, val in patch.items():
        if val is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), val)
    return result


# A PodSpec's lists and their merge keys: a pod's under spec, a
# DaemonSet's under spec.template.spec.
_POD_SPEC_LISTS = {"containers": "name", "initContainers": "name",
                   "resourceClaims": "name", "volumes": "name",
                   "imagePullSecrets": "name"}
# list path -> merge key (None: a list of scalars merged as a set).  Paths
# inside a merged list's item start at the item: a container's lists.
MERGE_LISTS = {("status", "reservedFor"): "uid",
               ("metadata", "ownerReferences"): "uid",
               ("metadata", "finalizers"): None,
               **{("spec", k): v for k, v in _POD_SPEC_LISTS.items()},
               **{("spec", "template", "spec", k): v
                  for k, v in _POD_SPEC_LISTS.items()},
               ("env",): "name", ("volumeMounts",): "mountPath",
               ("ports",): "containerPort", ("volumeDevices",): "devicePath",
               ("status", "conditions"): "type",
               ("status", "podIPs"): "ip",
               ("status", "hostIPs"): "ip",
               ("status", "resourceClaimStatuses"): "name",
               ("status", "addresses"): "type",   # a Node's
               ("spec", "podCIDRs"): None}


def _strip_directives(patch):
    if isinstance(patch, dict):
        return {k: _strip_directives(v) for k, v in patch.items()
                if not k.startswith("$")}
    if isinstance(patch, list):
        return [_strip_directives(v) for v in patch]
    return patch


def strategic_merge(target, patch, path=()):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return _strip_directives(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, val in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [x for x in result.get(field) or []
                             if x not in val]
        elif key.startswith("$"):
            continue   # $setElementOrder, $retainKeys: order/pruning hints
        elif val is None or (isinstance(val, dict) and
                             val.get("$patch") == "delete"):
            result.pop(key, None)
        elif isinstance(val, list) and path + (key,) in MERGE_LISTS:
            result[key] = _merge_list(result.get(key) or [], val,
                                      MERGE_LISTS[path + (key,)])
        elif isinstance(val, list):
            result[key] = _strip_directives(val)
        else:
            result[key] = strategic_merge(result.get(key), val, path + (key,))
    return result


def _merge_list(current, patch, key):
    if any(isinstance(p, dict) and p.get("$patch") == "replace"
           for p in patch):
        return [_strip_directives(p) for p in patch
                if not (isinstance(p, dict) and "$patch" in p)]
    out = copy.deepcopy(current)
    for item in patch:
        if key is None:
            if item not in out:
                out.append(item)
            continue
        if not isinstance(item, dict):
            raise bad_request(f"strategic merge patch: list items need "
                              f"the merge key {key!r}")
        at = next((i for i, x in enumerate(out)
                   if isinstance(x, dict) and x.get(key) == item.get(key)),
                  None)
        if item.get("$patch") == "delete":
            if at is not None:
                del out[at]
        elif at is None:
            out.append(_strip_directives(item))
        else:
            out[at] = strategic_merge(out[at], item)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_error(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in
            path[1:].split("/")]


def _patch_error(msg):
    return ApiError(422, "Invalid", f"the server rejected our request due to "
                    f"an error in our request: {msg}")


def _walk(doc, parts):
    cur = doc
    for p in parts:
        if isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError):
                raise _patch_error(f"index {p} out of range") from None
        elif isinstance(cur, dict) and p in cur:
            cur = cur[p]
        else:
            raise _patch_error(f"doc is missing path: /{'/'.join(parts)}")
    return cur


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        idx = len(parent) if last == "-" else int(last)
        if idx > len(parent):
            raise _patch_error(f"index {idx} out of range")
        parent.insert(idx, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise _patch_error("cannot add to a scalar")
    return doc


def _remove(doc, parts):
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    try:
        if isinstance(parent, list):
            return parent.pop(int(last))
        return parent.pop(last)
    except (KeyError, IndexError, ValueError):
        raise _patch_error(f"doc is missing path: /{'/'.join(parts)}") \
            from None


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _remove(doc, parts) if parts else None
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            val = _remove(doc, src) if kind == "move" else \
                copy.deepcopy(_walk(doc, src))
            doc = _add(doc, parts, val)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise _patch_error(f"testing value /{'/'.join(parts)} "
                                   "failed")
        else:
            raise _patch_error(f"Unexpected kind: {kind}")
    return doc
