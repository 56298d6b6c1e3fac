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
