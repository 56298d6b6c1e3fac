# SPDX-License-Identifier: GPL-2.0-or-later
"""core/v1 ConfigMaps and Secrets as kube-apiserver treats them: keys are
config keys, at most 1 MiB of data, `immutable` freezes the data, a
Secret's type defaults to Opaque and cannot change, its `data` (and a
ConfigMap's `binaryData`) must be base64 as Go's decoder wants it (a 400
otherwise, as decoding fails before validation), and `stringData` is merged
into `data` on every write (the v1 conversion does it; it is never stored)."""

import base64
import re

from .status import bad_request
from .validation import bad, forbidden, required

CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric "
                  "characters, '-', '_' or '.' (e.g. 'key.name',  or "
                  "'KEY_NAME',  or 'key-name', regex used for validation is "
                  "'[-._a-zA-Z0-9]+')")
MAX_BYTES = 1024 * 1024   # core.MaxSecretSize, for both kinds
IMMUTABLE = "field is immutable when `immutable` is set"
_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                 b"0123456789+/")
_NL = (0x0a, 0x0d)
# Secret types and the keys their data must hold (ValidateSecret)
REQUIRED_KEYS = {"kubernetes.io/dockercfg": (".dockercfg",),
                 "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
                 "kubernetes.io/ssh-auth": ("ssh-privatekey",),
                 "kubernetes.io/tls": ("tls.crt", "tls.key")}


def b64_error_offset(text):
    """Where Go's base64.StdEncoding refuses `text` (its CorruptInputError
    offset), or None: padding required, newlines skipped."""
    s, si, n = text.encode(), 0, len(text.encode())
    while True:
        j = 0
        while j < 4:
            if si == n:
                return None if j == 0 else si - j
            c = s[si]
            si += 1
            if c in _B64:
                j += 1
                continue
            if c in _NL:
                continue
            if c != 0x3d or j < 2:    # not padding, or padding too early
                return si - 1
            if j == 2:                 # "==" expected
                while si < n and s[si] in _NL:
                    si += 1
                if si == n:
                    return n
                if s[si] != 0x3d:
                    return si - 1
                si += 1
            while si < n and s[si] in _NL:
                si += 1
            return si if si < n else None


def _decoded(kind, values):
    """The byte values of a data map, checked as the decoder would."""
    out = {}
    for key, val in (values or {}).items():
        if val is None:
            out[key] = b""
            continue
        if not isinstance(val, str):
            raise bad_request(f'{kind} in version "v1" cannot be handled as '
                              f"a {kind}: json: cannot unmarshal "
                              f"{type(val).__name__} into Go struct field "
                              f"{kind}.data of type []uint8")
        at = b64_error_offset(val)
        if at is not None:
            raise bad_request(f'{kind} in version "v1" cannot be handled as '
                              f"a {kind}: illegal base64 data at input byte "
                              f"{at}")
        out[key] = base64.b64decode(val.replace("\n", "").replace("\r", ""))
    return out


def _config_key(field, key):
    out = []
    if len(key) > 253:
        out.append(bad(field, key, "must be no more than 253 characters"))
    if not CONFIG_KEY_RE.match(key):
        out.append(bad(field, key, CONFIG_KEY_MSG))
    if key in (".", ".."):
        out.append(bad(field, key, f"must not be '{key}'"))
    elif key.startswith(".."):
        out.append(bad(field, key, "must not start with '..'"))
    return out


def _immutable(old, new, fields):
    if old.get("immutable") is not True:
        return []
    out = []
    if new.get("immutable") is not True:
        out.append(forbidden("immutable", IMMUTABLE))
    for key in fields:
        if (old.get(key) or {}) != (new.get(key) or {}):
            out.append(forbidden(key, IMMUTABLE))
    return out


# ---------------------------------------------------------------- ConfigMaps

def config_map_default(obj, old=None):
    _decoded("ConfigMap", obj.get("binaryData"))


def config_map(obj):
    out, size = [], 0
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    for key, val in data.items():
        out += _config_key(f"data[{key}]", key)
        if key in binary:
            out.append(bad(f"data[{key}]", key, "duplicate of key present "
                           "in binaryData"))
        if not isinstance(val, str):
            out.append(bad(f"data[{key}]", val, "must be a string"))
        else:
            size += len(val.encode())
    for key, val in _decoded("ConfigMap", binary).items():
        out += _config_key(f"binaryData[{key}]", key)
        size += len(val)
    if size > MAX_BYTES:
        out.append(("", "FieldValueTooLong",
                    f"Too long: may not be more than {MAX_BYTES} bytes"))
    return out


def config_map_update(old, new):
    return _immutable(old, new, ("data", "binaryData")) + config_map(new)


# ---------------------------------------------------------------- Secrets

def secret_default(obj, old=None):
    """SetDefaults_Secret (type Opaque) and the v1 conversion: data must
    decode, stringData entries replace data's and are dropped."""
    if not obj.get("type"):
        obj["type"] = "Opaque"
    _decoded("Secret", obj.get("data"))
    strings = obj.pop("stringData", None)
    if strings:
        data = obj.get("data") or {}
        for key, val in strings.items():
            data[key] = base64.b64encode(str(val).encode()).decode()
        obj["data"] = data


def secret(obj):
    data = _decoded("Secret", obj.get("data"))
    out, size = [], 0
    for key, val in data.items():
        out += _config_key(f"data[{key}]", key)
        size += len(val)
    if size > MAX_BYTES:
        out.append(("data", "FieldValueTooLong",
                    f"Too long: may not be more than {MAX_BYTES} bytes"))
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        name = "kubernetes.io/service-account.name"
        if not ((obj.get("metadata") or {}).get("annotations") or {}).get(
                name):
            out.append(required(f"metadata.annotations[{name}]"))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            out += [required("data[username]"), required("data[password]")]
    for key in REQUIRED_KEYS.get(kind, ()):
        if key not in data or (kind == "kubernetes.io/ssh-auth" and
                               not data[key]):
            out.append(required(f"data[{key}]"))
    return out


def secret_update(old, new):
    out = []
    if old.get("type") != new.get("type"):
        out.append(bad("type", new.get("type"), "field is immutable"))
    return out + _immutable(old, new, ("data",)) + secret(new)
