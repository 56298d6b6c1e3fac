# SPDX-License-Identifier: GPL-2.0-or-later
"""Kubernetes Status error bodies, raised as ApiError and turned into JSON."""


class ApiError(Exception):
    """An error answered with a kube-style Status body."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self):
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason}
    if details:
        body["details"] = details
    body["code"] = code
    return body



def _details(rtype, name):
    return {"name": name, "group": rtype.group, "kind": rtype.name}


def not_found(rtype, name):
    return ApiError(404, "NotFound", f'{rtype.qualified} "{name}" not found',
                    _details(rtype, name))


def namespace_not_found(ns):
    return ApiError(404, "NotFound", f'namespaces "{ns}" not found',
                    {"name": ns, "kind": "namespaces"})


def already_exists(rtype, name):
    return ApiError(409, "AlreadyExists",
                    f'{rtype.qualified} "{name}" already exists',
                    _details(rtype, name))


def conflict(rtype, name, why=None):
    why = why or ("the object has been modified; please apply your changes "
                  "to the latest version and try again")
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {rtype.qualified} '
                    f'"{name}": {why}', _details(rtype, name))


def invalid(rtype, name, causes):
    """causes: list of (field, reason, message) as produced by validation."""
    texts = [f"{field}: {msg}" for field, _, msg in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    gk = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
    details = {"name": name, "group": rtype.group, "kind": rtype.kind,
               "causes": [{"reason": r, "message": m, "field": f}
                          for f, r, m in causes]}
    return ApiError(422, "Invalid", f'{gk} "{name}" is invalid: {joined}',
                    details)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(user, verb, rtype_name, group, namespace, sub=None, name=""):
    res = rtype_name + (f"/{sub}" if sub else "")
    qual = f"{rtype_name}.{group}" if group else rtype_name
    if name:
        qual += f' "{name}"'
    scope = (f'in the namespace "{namespace}"' if namespace
             else "at the cluster scope")
    return ApiError(403, "Forbidden",
                    f'{qual} is forbidden: User "{user}" cannot {verb} '
                    f'resource "{res}" in API group "{group}" {scope}',
                    {"name": name, "group": group, "kind": rtype_name}
                    if name else {"group": group, "kind": rtype_name})


def expired(message):
    return ApiError(410, "Expired", message)


def too_old(rv, current):
    return expired(f"too old resource version: {rv} ({current})")


def method_not_allowed(message="the server does not allow this method on "
                       "the requested resource"):
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media(ctype):
    return ApiError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format - '
                    f'accepted media types include: application/json-patch+json, '
                    f'application/merge-patch+json, '
                    f'application/strategic-merge-patch+json (got "{ctype}")')


def injected(code, retry_after=None):
    """A fault-injected answer (500, 429, 503, 409 ...)."""
    headers = {}
    details = None
    if code == 429:
        reason, msg = "TooManyRequests", \
            "Too many requests, please try again later."
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
            details = {"retryAfterSeconds": int(retry_after)}
    elif code == 409:
        reason, msg = "Conflict", "Operation cannot be fulfilled: injected conflict"
    elif code == 503:
        reason, msg = "ServiceUnavailable", "injected: service unavailable"
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
    elif code == 504:
        reason, msg = "Timeout", "injected: timeout"
    elif code >= 500:
        reason, msg = "InternalError", "Internal error occurred: injected fault"
    else:
        reason, msg = "BadRequest", "injected fault"
    return ApiError(code, reason, msg, details, headers)
