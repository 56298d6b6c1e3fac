# SPDX-License-Identifier: GPL-2.0-or-later
"""apps/v1 DaemonSets as kube-apiserver's registry treats them: the
defaults (SetDefaults_DaemonSet, and SetDefaults_PodSpec on the template),
the template generation (PrepareForCreate/PrepareForUpdate, shown in v1 as
the deprecated.daemonset.template.generation annotation), the initial
status and ValidateDaemonSet's checks that matter here.  The controller is
ktas/daemonsets.py."""

import json

from . import pods
from .validation import bad, forbidden, required, unsupported

TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
STRATEGIES = ("RollingUpdate", "OnDelete")
SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


# ---------------------------------------------------------------- defaults

def default(obj, old=None):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            rolling = strategy["rollingUpdate"] = {}
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        # SetDefaults_PodSpec; enableServiceLinks is SetDefaults_Pod's, so
        # only the pods get it
        links = "enableServiceLinks" in template["spec"]
        pods.default(template)
        if not links:
            template["spec"].pop("enableServiceLinks", None)
    _template_generation(obj, old)


def _template_generation(obj, old):
    """1 on create; on update the old one, plus one when the template
    changed.  A client cannot set it (v1 conversion reads the annotation,
    PrepareForUpdate overwrites what it read)."""
    gen = 1
    if old is not None:
        try:
            gen = int(((old.get("metadata") or {}).get("annotations") or {})
                      .get(TEMPLATE_GENERATION, 1))
        except (TypeError, ValueError):
            gen = 1
        if (old.get("spec") or {}).get("template") != \
                obj["spec"].get("template"):
            gen += 1
    meta = obj.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}),
                           TEMPLATE_GENERATION: str(gen)}


def template_generation(ds):
    try:
        return int(ds["metadata"]["annotations"][TEMPLATE_GENERATION])
    except (KeyError, TypeError, ValueError):
        return None


def initial_status(obj):
    """PrepareForCreate clears the status; v1 always shows these four."""
    return {"currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0}


# ---------------------------------------------------------------- selectors

def selector_matches(selector, labels):
    """metav1.LabelSelectorAsSelector(selector).Matches(labels); a nil
    selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    labels = labels or {}
    for key, val in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != val:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op = req.get("key"), req.get("operator")
        vals = req.get("values") or []
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def format_selector(selector):
    """metav1.FormatLabelSelector, for `kubectl get ds -o wide`."""
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted(
        (selector.get("matchLabels") or {}).items())]
    for req in selector.get("matchExpressions") or []:
        op, key = req.get("operator"), req.get("key")
        vals = ",".join(sorted(req.get("values") or []))
        parts.append({"In": f"{key} in ({vals})",
                      "NotIn": f"{key} notin ({vals})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(op, key))
    return ",".join(parts) or "<none>"


def go_map(labels):
    """A map[string]string as Go's %#v prints it in field errors."""
    if labels is None:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(
        f"{json.dumps(k)}:{json.dumps(v)}"
        for k, v in sorted(labels.items())) + "}"


def go_selector(selector):
    """An empty metav1.LabelSelector as Go's %#v prints it."""
    labels = "map[string]string{}" if "matchLabels" in selector and \
        selector["matchLabels"] is not None else "map[string]string(nil)"
    exprs = "[]v1.LabelSelectorRequirement{}" if \
        selector.get("matchExpressions") is not None else \
        "[]v1.LabelSelectorRequirement(nil)"
    return (f"v1.LabelSelector{{MatchLabels:{labels}, "
            f"MatchExpressions:{exprs}}}")


# ---------------------------------------------------------------- validation

def validate(obj):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec.template.spec.containers")]
    out = []
    selector = spec.get("selector")
    template = spec.get("template") if isinstance(spec.get("template"),
                                                   dict) else {}
    labels = (template.get("metadata") or {}).get("labels")
    if selector is not None and not isinstance(selector, dict):
        out.append(bad("spec.selector", selector, "must be an object"))
        selector = {}
    out += _selector("spec.selector", selector)
    # a missing selector selects nothing: the template never matches it
    if not selector_matches(selector, labels):
        out.append(("spec.template.metadata.labels", "FieldValueInvalid",
                    f"Invalid value: {go_map(labels)}: `selector` does not "
                    "match template `labels`"))
    if selector is not None and not (selector.get("matchLabels") or
                                     selector.get("matchExpressions")):
        out.append(("spec.selector", "FieldValueInvalid",
                    f"Invalid value: {go_selector(selector)}: empty "
                    "selector is invalid for daemonset"))
    out += _template(template)
    for key in ("minReadySeconds", "revisionHistoryLimit"):
        val = spec.get(key, 0)
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            out.append(bad(f"spec.{key}", val, "must be greater than or "
                           "equal to 0"))
    out += _strategy(spec.get("updateStrategy") or {})
    return out


def _selector(path, selector):
    out = []
    for i, req in enumerate((selector or {}).get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{i}]"
        op = (req or {}).get("operator")
        if op not in SELECTOR_OPS:
            out.append(unsupported(p + ".operator", op, SELECTOR_OPS))
        elif op in ("In", "NotIn") and not req.get("values"):
            out.append(required(p + ".values", "must be specified when "
                                "`operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and req.get("values"):
            out.append(forbidden(p + ".values", "may not be specified when "
                                 "`operator` is 'Exists' or 'DoesNotExist'"))
    return out


def _template(template):
    """ValidatePodTemplateSpec (the pod's rules, under spec.template) and
    what a DaemonSet adds: restartPolicy Always, no activeDeadlineSeconds."""
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return [required("spec.template.spec.containers")]
    out = [("spec.template." + f, r, m) for f, r, m in
           pods.validate({"spec": spec})]
    policy = spec.get("restartPolicy")
    if policy != "Always" and policy in pods.RESTART_POLICIES:
        out.append(unsupported("spec.template.spec.restartPolicy", policy,
                               ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        out.append(forbidden("spec.template.spec.activeDeadlineSeconds",
                             "activeDeadlineSeconds in DaemonSet is not "
                             "Supported"))
    return out


def int_or_percent(value, total, round_up=True):
    """intstr.GetScaledValueFromIntOrPercent; None when malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and \
            value[:-1].isdigit():
        scaled = int(value[:-1]) * total
        return -(-scaled // 100) if round_up else scaled // 100
    return None


def _strategy(strategy):
    path = "spec.updateStrategy"
    kind = strategy.get("type")
    if kind not in STRATEGIES:
        return [unsupported(path, kind, STRATEGIES)]
    if kind == "OnDelete":
        return []
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, dict):
        return [required(path + ".rollingUpdate")]
    out, vals = [], {}
    for key in ("maxUnavailable", "maxSurge"):
        val = rolling.get(key, 0)
        num = int_or_percent(val, 100)
        if num is None or num < 0:
            out.append(bad(f"{path}.rollingUpdate.{key}", val, "must be an "
                           "integer or percentage (e.g '5%')" if num is None
                           else "must be greater than or equal to 0"))
        elif isinstance(val, str) and num > 100:
            out.append(bad(f"{path}.rollingUpdate.{key}", val,
                           "must not be greater than 100%"))
        vals[key] = num or 0
    if vals["maxUnavailable"] and vals["maxSurge"]:
        out.append(bad(path + ".rollingUpdate.maxSurge", rolling["maxSurge"],
                       "may not be set when maxUnavailable is non-zero"))
    elif not out and not vals["maxUnavailable"] and not vals["maxSurge"]:
        out.append(required(path + ".rollingUpdate.maxUnavailable",
                            "cannot be 0 when maxSurge is 0"))
    return out


def validate_update(old, new):
    """apps/v1 forbids changing the selector (the strategy's check)."""
    out = validate(new)
    oselector = (old.get("spec") or {}).get("selector")
    nselector = (new.get("spec") or {}).get("selector")
    if oselector != nselector:
        out.append(bad("spec.selector", nselector, "field is immutable"))
    return out


def validate_status(old, new):
    status = new.get("status") or {}
    out = []
    for key in ("currentNumberScheduled", "numberMisscheduled",
                "desiredNumberScheduled", "numberReady", "observedGeneration",
                "updatedNumberScheduled", "numberAvailable",
                "numberUnavailable"):
        val = status.get(key, 0)
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            out.append(bad(f"status.{key}", val, "must be greater than or "
                           "equal to 0"))
    return out
