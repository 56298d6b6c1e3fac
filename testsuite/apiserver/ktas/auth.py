# SPDX-License-Identifier: GPL-2.0-or-later
"""Bearer tokens -> users -> rules, a small RBAC: a rule grants verbs on
resources ("*" matches any; a subresource is named "resourceclaims/status"),
in every namespace and at the cluster scope, or with "namespaces" only in
those (like a Role's RoleBinding).  Tokens can be added, replaced or revoked
at run time (POST /_test/tokens)."""

import threading

from . import status as st

READ_VERBS = ["get", "list", "watch"]
BUILTIN_RULES = {
    "admin": [{"verbs": ["*"], "resources": ["*"]}],
    "readonly": [{"verbs": READ_VERBS, "resources": ["*"]}],
    "noaccess": [],
}


class Authenticator:
    def __init__(self):
        self.lock = threading.Lock()
        self.tokens = {}   # token -> (user, rules)
        self.cert_users = {}   # client certificate CN -> (user, rules)

    def add(self, token, user, rules):
        with self.lock:
            self.tokens[token] = (user, [self._rule(r) for r in rules])

    def add_cert_user(self, user, rules):
        with self.lock:
            self.cert_users[user] = (user, [self._rule(r) for r in rules])

    def revoke(self, token):
        with self.lock:
            return self.tokens.pop(token, None) is not None

    @staticmethod
    def _rule(rule):
        nss = rule.get("namespaces")
        return (set(rule.get("verbs") or []), set(rule.get("resources") or []),
                None if nss is None else set(nss))

    def user(self, token, cert_cn=None):
        """(user, rules) for a verified client certificate (checked first,
        as kube-apiserver does) or a bearer token; 401 otherwise."""
        with self.lock:
            found = self.cert_users.get(cert_cn) if cert_cn else None
            if found is None and token:
                found = self.tokens.get(token)
        if found is None:
            raise st.unauthorized()
        return found

    @staticmethod
    def allows(who, verb, resource, namespace):
        """Whether `who` may `verb` `resource` ("kind/sub") in `namespace`
        ("" = the cluster scope, which a namespaced rule never grants)."""
        for verbs, resources, nss in who[1]:
            if ("*" in verbs or verb in verbs) and \
                    ("*" in resources or resource in resources) and \
                    (nss is None or namespace in nss):
                return True
        return False

    def authorize(self, who, req):
        user, _ = who
        if req.rtype is None:
            return   # discovery is open to every authenticated user
        res = req.rtype.name + (f"/{req.subresource}" if req.subresource
                                else "")
        if self.allows(who, req.verb, res, req.namespace):
            return
        raise st.forbidden(user, req.verb, req.rtype.name, req.rtype.group,
                           req.namespace, req.subresource, req.name)


class RequestAuthz:
    """Further checks a request's own verb needs beyond its URL (the
    synthetic subresources of 1.36 DRA status writes)."""

    def __init__(self, who, verb):
        self.user, self.verb, self._who = who[0], verb, who

    def allows(self, resource, namespace):
        return Authenticator.allows(self._who, self.verb, resource, namespace)
