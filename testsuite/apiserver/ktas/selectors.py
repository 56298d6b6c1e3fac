# SPDX-License-Identifier: GPL-2.0-or-later
"""Label selectors (=, ==, !=, in, notin, exists, !key) and field selectors
(=, ==, !=), parsed once per request into a predicate."""

import re

from .status import bad_request

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(in|notin)\s*"
                     r"\((.*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)"
                    r"\s*$")


def _split_terms(text):
    """Split on commas that are not inside parentheses."""
    terms, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    terms.append("".join(cur))
    return [t for t in terms if t.strip()]


def parse_label_selector(text):
    """Returns a predicate over a labels dict, or None for 'everything'."""
    if not text or not text.strip():
        return None
    reqs = [_label_term(t) for t in _split_terms(text)]
    return lambda labels: all(r(labels) for r in reqs)


def _label_term(term):
    m = _EQ_RE.match(term)
    if m:
        key, op, val = m.groups()
        if op == "!=":
            return lambda l: l.get(key) != val
        return lambda l: l.get(key) == val
    m = _SET_RE.match(term)
    if not m:
        raise bad_request(f"unable to parse requirement: {term!r}")
    neg, key, op, vals = m.groups()
    if op:
        if neg:
            raise bad_request(f"unable to parse requirement: {term!r}")
        values = {v.strip() for v in vals.split(",") if v.strip()}
        if op == "in":
            return lambda l: l.get(key) in values
        return lambda l: l.get(key) not in values
    if neg:
        return lambda l: key not in l
    return lambda l: key in l


def parse_field_selector(text, supported):
    """Returns a predicate over a fields dict, or None.  `supported` is the
    set of field names this resource can be selected on."""
    if not text or not text.strip():
        return None
    reqs = []
    for term in _split_terms(text):
        m = _EQ_RE.match(term) or re.match(
            r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*(.*?)\s*$", term)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand "
                              f"'{term}'")
        key, op, val = m.groups()
        if key not in supported:
            raise bad_request(f'field label not supported: {key}')
        reqs.append((key, op == "!=", val))
    return lambda f: all((f.get(k, "") != v) if neg else (f.get(k, "") == v)
                         for k, neg, v in reqs)


def node_selector_matches(selector, name, labels):
    """A v1 NodeSelector: one of its terms whose requirements all hold (a
    term without any matches nothing); matchFields knows metadata.name."""
    for term in selector.get("nodeSelectorTerms") or []:
        exprs, fields = term.get("matchExpressions") or [], \
            term.get("matchFields") or []
        if (exprs or fields) and \
                all(_requirement(r, labels) for r in exprs) and \
                all(_requirement(r, {"metadata.name": name}) for r in fields):
            return True
    return False


def _requirement(req, labels):
    key, op, vals = req.get("key"), req.get("operator"), \
        req.get("values") or []
    has, val = key in labels, labels.get(key)
    if op == "In":
        return has and val in vals
    if op == "NotIn":
        return not has or val not in vals
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(vals) == 1:
        try:
            mine, theirs = int(val), int(vals[0])
        except ValueError:
            return False
        return mine > theirs if op == "Gt" else mine < theirs
    return False
