# SPDX-License-Identifier: GPL-2.0-or-later
"""URL -> request info (verb, resource, namespace, name, subresource), or a
discovery document, the way kube-apiserver's RequestInfoResolver does."""

from dataclasses import dataclass
from typing import Optional

from . import resources
from .status import ApiError, method_not_allowed

VERSION = {"major": "1", "minor": "34", "gitVersion": "v1.34.0-ktas",
           "gitCommit": "0000000000000000000000000000000000000000",
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
           "goVersion": "go1.24.0", "compiler": "gc",
           "platform": "linux/amd64"}


@dataclass
class Request:
    verb: str
    rtype: Optional[resources.ResourceType] = None
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    discovery: Optional[dict] = None

    @property
    def resource(self):
        return self.rtype.name if self.rtype else "discovery"


def not_found():
    return ApiError(404, "NotFound", "the server could not find the "
                    "requested resource",
                    {"causes": [{"reason": "UnexpectedServerResponse",
                                 "message": "404 page not found"}]})


# An OpenAPI v2 document with no paths or definitions, protobuf-encoded
# (only field 1, `swagger` = "2.0").  kubectl fetches /openapi/v2 as protobuf for its
# client-side validation; finding no schema for a type, it skips validation
# and leaves it to the server, as it does for types a cluster does not
# describe.
OPENAPI_V2_PB = b"\x0a\x032.0"
OPENAPI_V2_TYPE = "application/octet-stream"


def _discovery(segs):
    if segs == ["version"]:
        return VERSION
    if segs == ["api"]:
        return resources.api_versions()
    if segs == ["apis"]:
        return resources.api_group_list()
    if len(segs) == 2 and segs[0] == "apis":
        if not any(g == segs[1] for g, _ in resources.BY_GROUP_VERSION):
            raise not_found()
        doc = resources.api_group(segs[1])
        return {"kind": "APIGroup", "apiVersion": "v1", **doc}
    if segs == ["api", "v1"]:
        return resources.api_resource_list("", "v1")
    if len(segs) == 3 and segs[0] == "apis":
        if (segs[1], segs[2]) not in resources.BY_GROUP_VERSION:
            raise not_found()
        return resources.api_resource_list(segs[1], segs[2])
    return None


def resolve(method, path, watch):
    segs = [s for s in path.split("/") if s]
    if method == "GET":
        doc = _discovery(segs)
        if doc is not None:
            return Request("get", discovery=doc)
    if len(segs) >= 2 and segs[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        raise not_found()
    ns = ""
    # /api/v1/namespaces/NAME/status is the Namespace's own subresource;
    # /api/v1/namespaces/NS/serviceaccounts a namespaced collection.
    if rest and rest[0] == "namespaces" and len(rest) >= 3 and \
            not (group == "" and len(rest) == 3 and rest[2] == "status"):
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise not_found()
    rtype = resources.lookup(group, version, rest[0])
    if rtype is None:
        raise not_found()
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and (sub != "status" or not rtype.has_status):
        raise not_found()
    if ns and not rtype.namespaced:
        raise not_found()
    verb = _verb(method, bool(name), watch)
    if rtype.namespaced and not ns and verb not in ("list", "watch"):
        raise not_found() if name else method_not_allowed()
    return Request(verb, rtype, ns, name, sub)


def _verb(method, named, watch):
    table = {("GET", True): "get", ("GET", False): "list",
             ("POST", False): "create", ("PUT", True): "update",
             ("PATCH", True): "patch", ("DELETE", True): "delete",
             ("DELETE", False): "deletecollection"}
    verb = table.get((method, named))
    if verb is None:
        raise method_not_allowed()
    if watch and verb in ("get", "list"):
        return "watch"
    return verb
