# SPDX-License-Identifier: GPL-2.0-or-later
"""The DaemonSet controller (kube-controller-manager's pkg/controller/daemon)
and, for the pods of a deleted DaemonSet, the garbage collector.

What is Kubernetes' behaviour, each step as syncDaemonSet does it:
* manage: every Node the pod template fits (nodeName, nodeSelector,
  required nodeAffinity, and NoSchedule/NoExecute taints tolerated with the
  controller's own tolerations added) gets one pod; a Failed pod is deleted
  (with failedPodsBackoff) and a Succeeded one too, then recreated by a
  later pass; extra pods on a node go but the oldest; pods on a Node the
  template no longer fits (or that has an untolerated NoExecute taint) go.
  A pod that is terminating (deletionTimestamp set, not yet Failed or
  Succeeded) still counts as the node's pod: its replacement is created
  only once it is gone from the store (podsShouldBeOnNode).
* rolling update (RollingUpdate, maxSurge 0): only when manage wrote
  nothing (the real one waits for its expectations); old pods are deleted
  while fewer than maxUnavailable of the nodes' pods are unavailable (a pod
  is available when Ready for minReadySeconds); a node wanting a pod and
  having none counts as unavailable; OnDelete replaces nothing.
* status through /status: desired/current/misscheduled/ready/updated/
  available/unavailable counts and observedGeneration.
* pods are created through the Api (defaults, Priority admission,
  validation) with generateName "<ds>-", the template's labels plus
  controller-revision-hash and pod-template-generation, a controller
  ownerReference, the template's tolerations plus the daemon tolerations,
  and a required nodeAffinity on metadata.name of the node; events
  SuccessfulCreate/SuccessfulDelete/FailedCreate/FailedDaemonPod go to the
  DaemonSet, as its recorder writes them.

What is simplified:
* No scheduler runs here, so the controller binds the pod itself: it sets
  spec.nodeName at create (the real one leaves that to kube-scheduler).
* No ControllerRevisions: the hash is an fnv32a of the template, encoded
  as the real one is (rand.SafeEncodeString), but not the same value;
  `kubectl rollout history/undo` do not work.
* maxSurge > 0 is accepted but rolled as maxSurge 0 (delete first).
* Pods are found by the pod-template-generation label and their
  controller ownerReference: no adoption of orphans by selector, no
  release of pods that stop matching it.
* Nodes are visited in name order (the real one walks a Go map).
* The garbage collector part deletes (gracefully, background) only the
  pods whose owners are all deleted DaemonSets; propagationPolicy
  Orphan and Foreground are not honoured.
* A failed write is retried after 2 s, not with the workqueue's rate
  limiter.

It wakes on store events (store.listeners) for DaemonSets, Nodes (while a
DaemonSet exists) and labelled pods in a DaemonSet's namespace, and works on
its own thread; any other event costs one set lookup."""

import bisect
import collections
import copy
import datetime
import json
import threading
import time
import traceback

from . import apps, events
from .resources import DAEMON_SETS, NODES, PODS
from .selectors import node_selector_matches
from .status import ApiError
from .store import parsed

HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
COMPONENT = "daemonset-controller"
WATCHED = frozenset((DAEMON_SETS.name, NODES.name, PODS.name))
_SAFE = "bcdfghjklmnpqrstvwxz2456789"   # rand.SafeEncodeString's alphabet
BACKOFF_INITIAL, BACKOFF_MAX = 1.0, 900.0   # failedPodsBackoff
RETRY_SECONDS = 2.0
# util.AddOrUpdateDaemonPodTolerations: NoExecute not-ready/unreachable (no
# tolerationSeconds: never evicted), the condition taints NoSchedule, and
# network-unavailable for hostNetwork pods.
DAEMON_TOLERATIONS = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule")]
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


class DaemonSetController:
    def __init__(self, app):
        self.api, self.store = app.api, app.store
        self.cond = threading.Condition()
        # under the store lock (and cond when changed): what the listener
        # needs to tell relevant events from the others
        self.known = {}              # DaemonSet key -> uid
        self.orphans = {}            # uid of a deleted DaemonSet -> namespace
        self.namespaces = collections.Counter()   # of both
        # under cond: work to do
        self.dirty, self.collect = set(), False
        self.wake_at = None          # monotonic time of a timed resync
        self.busy = self.stopping = False
        self.noted = self.passes = self.created = self.deleted = 0
        # worker thread only
        # key -> (rv, obj), each version parsed once (read-only!)
        self._ds_cache, self._node_cache = {}, {}
        self._pod_cache = {}         # namespace -> key -> (rv, obj)
        self._backoff = {}           # failedPodsBackoff: key -> (delay, at)
        self._reported = set()       # FailedCreate messages already sent
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="daemonset-controller")

    # ------------------------------------------------------------ lifecycle
    def start(self):
        with self.store.lock:
            table = self.store.tables[DAEMON_SETS.name]
            with self.cond:
                for key in table.keys:   # seeded ones
                    self._track(table.entries[key], False)
                self.dirty |= set(self.known)
            self.store.listeners.append(self._on_event)
        self.thread.start()

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify()

    def stats(self):
        with self.cond:
            return {"daemonSets": len(self.known),
                    "orphanedOwners": len(self.orphans),
                    "eventsNoted": self.noted, "passes": self.passes,
                    "podsCreated": self.created, "podsDeleted": self.deleted,
                    "pending": bool(self.dirty or self.collect or self.busy)}

    # ------------------------------------------------------------ events
    def _on_event(self, ev):
        """Under the store lock: only note what to look at again."""
        if ev.rtype.name not in WATCHED:
            return
        if ev.rtype is DAEMON_SETS:
            with self.cond:
                self._track(ev.entry, ev.type == "DELETED")
                self._wake({ev.entry.key})
        elif ev.rtype is NODES:
            if self.known:   # the real one filters on shouldRun changes
                with self.cond:
                    self._wake(set(self.known))
        elif ev.entry.namespace in self.namespaces and \
                GENERATION_LABEL in ev.entry.labels:
            prefix = ev.entry.namespace + "/"
            with self.cond:
                self.collect = self.collect or bool(self.orphans)
                self._wake({k for k in self.known if k.startswith(prefix)})

    def _wake(self, keys):
        self.noted += 1
        self.dirty |= keys
        self.cond.notify()

    def _track(self, entry, deleted):
        """Known DaemonSets and deleted owners, by namespace."""
        key, ns = entry.key, entry.namespace
        if deleted:
            if self.known.pop(key, None) is not None:
                self._ns(ns, -1)
            self.orphans[entry.uid] = ns
            self._ns(ns, 1)
            self.collect = True
        elif key not in self.known:
            self.known[key] = entry.uid
            self._ns(ns, 1)

    def _ns(self, ns, delta):
        self.namespaces[ns] += delta
        if self.namespaces[ns] <= 0:
            del self.namespaces[ns]

    # ------------------------------------------------------------ loop
    def _run(self):
        while True:
            with self.cond:
                while not (self.dirty or self.collect or self.stopping):
                    delay = None if self.wake_at is None else \
                        self.wake_at - time.monotonic()
                    if delay is not None and delay <= 0:
                        self.wake_at = None
                        self.dirty |= set(self.known)
                        break
                    self.cond.wait(delay)
                if self.stopping:
                    return
                keys, self.dirty = self.dirty, set()
                collect, self.collect = self.collect, False
                self.busy = True
                self.passes += 1
            try:
                self.sync(keys, collect)
            except Exception:   # keep the controller alive; the log says why
                traceback.print_exc()
                self._requeue(RETRY_SECONDS)
            finally:
                with self.cond:
                    self.busy = False

    def _requeue(self, seconds):
        with self.cond:
            at = time.monotonic() + seconds
            if self.wake_at is None or at < self.wake_at:
                self.wake_at = at
            self.cond.notify()

    def sync(self, keys, collect=False):
        """One pass over one snapshot of the store."""
        with self.store.lock:
            daemonsets = self._daemonsets(keys)
            with self.cond:
                orphans = dict(self.orphans)
            namespaces = {d["metadata"]["namespace"] for d in daemonsets} | \
                (set(orphans.values()) if collect else set())
            nodes = self._nodes() if daemonsets else []
            pods = {ns: self._pods(ns) for ns in namespaces}
        for ds in daemonsets:
            self._sync_one(ds, nodes, pods[ds["metadata"]["namespace"]])
        if collect:
            self._collect(orphans, pods)

    # ------------------------------------------------------------ snapshot
    def _daemonsets(self, keys):
        out = []
        for key in sorted(keys):
            entry = self.store.get(DAEMON_SETS, key)
            if entry is None:
                self._ds_cache.pop(key, None)
            else:
                out.append(parsed(entry, self._ds_cache))
        return out

    def _nodes(self):
        table = self.store.tables[NODES.name]
        old, self._node_cache = self._node_cache, {}
        out = []
        for key in table.keys:
            if key in old:
                self._node_cache[key] = old[key]
            out.append(parsed(table.entries[key], self._node_cache))
        return out

    def _pods(self, ns):
        """The namespace's DaemonSet pods (by their label)."""
        table = self.store.tables[PODS.name]
        prefix = ns + "/"
        old, cache = self._pod_cache.get(ns, {}), {}
        out = []
        for key in table.keys[bisect.bisect_left(table.keys, prefix):]:
            if not key.startswith(prefix):
                break
            entry = table.entries[key]
            if GENERATION_LABEL in entry.labels:
                if key in old:
                    cache[key] = old[key]
                out.append(parsed(entry, cache))
        self._pod_cache[ns] = cache
        return out

    # ------------------------------------------------------------ sync
    def _sync_one(self, ds, nodes, pods):
        meta = ds["metadata"]
        if meta.get("deletionTimestamp"):
            return   # as the real one: nothing while it is being deleted
        tspec = ds["spec"]["template"]["spec"]
        tolerations = daemon_tolerations(tspec)
        fits = {n["metadata"]["name"]: should_run(tspec, tolerations, n)
                for n in nodes}
        by_node = nodes_to_pods(pods, meta["uid"])
        rev = revision_hash(ds)
        gen = apps.template_generation(ds)
        creates, deletes = [], []
        for name in sorted(fits):
            c, d = self._should_be_on_node(ds, name, fits[name],
                                           by_node.get(name, []))
            creates += c
            deletes += d
        # getUnscheduledPodsWithoutNode: unbound pods aimed at a lost node
        deletes += [p for name, ps in by_node.items() if name not in fits
                    for p in ps if not p["spec"].get("nodeName")]
        wrote = self._sync_nodes(ds, deletes, creates, rev, gen)
        strategy = ds["spec"].get("updateStrategy") or {}
        if not wrote and strategy.get("type") == "RollingUpdate":
            self._sync_nodes(ds, self._rolling_update(ds, fits, by_node, rev,
                                                      gen), [], rev, gen)
        self._update_status(ds, fits, by_node, rev, gen)

    def _should_be_on_node(self, ds, node, fit, pods):
        """podsShouldBeOnNode, maxSurge 0: (nodes needing a pod, pods to
        delete).  Terminating pods are counted (no new pod beside one) but
        never deleted again."""
        run, keep = fit
        if run and not pods:
            return [node], []
        deletes = []
        if keep:
            running = []
            for pod in pods:
                if pod["metadata"].get("deletionTimestamp"):
                    continue
                phase = (pod.get("status") or {}).get("phase")
                if phase == "Failed":
                    if self._failed_pod(ds, node, pod):
                        deletes.append(pod)
                elif phase == "Succeeded":
                    self._event(ds, "Normal", "SucceededDaemonPod",
                                f"Found succeeded daemon pod {_ref(pod)} on "
                                f"node {node}, will try to delete it")
                    deletes.append(pod)
                else:
                    running.append(pod)
            deletes += sorted(running, key=creation_order)[1:]
        elif pods:
            deletes = [p for p in pods
                       if not p["metadata"].get("deletionTimestamp")]
        return [], deletes

    def _failed_pod(self, ds, node, pod):
        """failedPodsBackoff: the first failure is deleted at once, another
        within the delay (1 s, doubling up to 15 min) waits for it."""
        observed = (ds.get("status") or {}).get("observedGeneration", 0)
        key = f"{ds['metadata']['uid']}/{observed}/{node}"
        now = time.monotonic()
        delay, at = self._backoff.get(key, (0.0, 0.0))
        if delay and now - at < delay:
            self._requeue(delay - (now - at))
            return False
        stale = not delay or now - at > 2 * BACKOFF_MAX
        self._backoff[key] = (BACKOFF_INITIAL if stale else
                              min(delay * 2, BACKOFF_MAX), now)
        self._event(ds, "Warning", "FailedDaemonPod",
                    f"Found failed daemon pod {_ref(pod)} on node {node}, "
                    "will try to kill it")
        return True

    def _rolling_update(self, ds, fits, by_node, rev, gen):
        """rollingUpdate with maxSurge 0: the old pods to delete now."""
        desired = [n for n, (run, _) in fits.items() if run]
        nodes = {n: by_node.get(n, []) for n in desired}
        nodes.update(by_node)
        rolling = ds["spec"]["updateStrategy"].get("rollingUpdate") or {}
        unavailable_max = apps.int_or_percent(
            rolling.get("maxUnavailable", 1), len(desired)) or 0
        surge = apps.int_or_percent(rolling.get("maxSurge", 0),
                                    len(desired)) or 0
        if desired and (surge or not unavailable_max):
            unavailable_max = max(unavailable_max, 1)
        min_ready = ds["spec"].get("minReadySeconds", 0)
        unavailable, allowed, candidates = 0, [], []
        for name in sorted(nodes):
            new, old, ok = updated_pods_on_node(nodes[name], rev, gen)
            if not ok or (new is None) == (old is None):
                unavailable += 1   # the manage loop's to settle
            elif new is not None:
                if not available(new, min_ready):
                    unavailable += 1
            elif not available(old, min_ready):
                allowed.append(old)   # replacing it costs nothing
            elif unavailable < unavailable_max:
                candidates.append(old)
        room = max(0, unavailable_max - unavailable)
        return allowed + candidates[:room]

    def _sync_nodes(self, ds, deletes, creates, rev, gen):
        """syncNodes: create the nodes' pods, delete the others; whether
        anything was written."""
        meta = ds["metadata"]
        ns, failed = meta["namespace"], False
        for node in creates:
            try:
                pod = self.api.create(PODS, ns, new_pod(ds, node, rev, gen))
            except ApiError as err:
                failed = True
                msg = f"Error creating: {err.message}"
                if (meta["uid"], msg) not in self._reported:
                    self._reported.add((meta["uid"], msg))
                    self._event(ds, "Warning", "FailedCreate", msg)
                continue
            with self.cond:
                self.created += 1
            self._event(ds, "Normal", "SuccessfulCreate",
                        f"Created pod: {pod.name}")
        for pod in deletes:
            if self._delete(pod):
                self._event(ds, "Normal", "SuccessfulDelete",
                            f"Deleted pod: {pod['metadata']['name']}")
        if failed:
            self._requeue(RETRY_SECONDS)
        return bool(creates or deletes)

    def _delete(self, pod):
        """A graceful delete (the node agent finishes it), of this pod only."""
        meta = pod["metadata"]
        try:
            self.api.delete(PODS, meta["namespace"], meta["name"],
                            {"preconditions": {"uid": meta["uid"]}})
        except ApiError:
            return False   # gone or replaced meanwhile
        with self.cond:
            self.deleted += 1
        return True

    def _update_status(self, ds, fits, by_node, rev, gen):
        """updateDaemonSetStatus, through the status subresource."""
        min_ready = ds["spec"].get("minReadySeconds", 0)
        counts = collections.Counter()
        for name, (run, _) in fits.items():
            pods = by_node.get(name) or []
            if not run:
                counts["numberMisscheduled"] += bool(pods)
                continue
            counts["desiredNumberScheduled"] += 1
            if not pods:
                continue
            counts["currentNumberScheduled"] += 1
            pod = sorted(pods, key=creation_order)[0]
            if ready(pod):
                counts["numberReady"] += 1
                counts["numberAvailable"] += available(pod, min_ready)
            counts["updatedNumberScheduled"] += is_updated(pod, rev, gen)
        counts["numberUnavailable"] = counts["desiredNumberScheduled"] - \
            counts["numberAvailable"]
        old = ds.get("status") or {}
        status = {k: v for k, v in old.items() if k in
                  ("collisionCount", "conditions")}
        status["observedGeneration"] = ds["metadata"].get("generation", 1)
        for key in ("currentNumberScheduled", "numberMisscheduled",
                    "desiredNumberScheduled", "numberReady"):
            status[key] = counts[key]
        for key in ("updatedNumberScheduled", "numberAvailable",
                    "numberUnavailable"):   # omitempty in v1
            if counts[key]:
                status[key] = counts[key]
        if min_ready and counts["numberReady"] != counts["numberAvailable"]:
            self._requeue(min_ready)
        if status == old:
            return
        meta = ds["metadata"]
        try:
            self.api.update_status(DAEMON_SETS, meta["namespace"],
                                   meta["name"], {
                                       "metadata": {
                                           "name": meta["name"],
                                           "resourceVersion":
                                               meta["resourceVersion"]},
                                       "status": status})
        except ApiError:
            pass   # changed meanwhile: its event brings another pass

    # ------------------------------------------------------------ GC
    def _collect(self, orphans, pods):
        """The garbage collector, background propagation: the pods whose
        owners are all deleted DaemonSets are deleted; an owner is
        forgotten once none is left."""
        done = []
        for uid, ns in orphans.items():
            left = [p for p in pods.get(ns, []) if
                    uid in _owner_uids(p) and
                    _owner_uids(p) <= set(orphans)]
            for pod in left:
                if not pod["metadata"].get("deletionTimestamp"):
                    self._delete(pod)
            if not left:
                done.append(uid)
        if done:
            with self.store.lock, self.cond:
                for uid in done:
                    ns = self.orphans.pop(uid, None)
                    if ns is not None:
                        self._ns(ns, -1)

    # ------------------------------------------------------------ events
    def _event(self, ds, etype, reason, message):
        events.record(self.api, ds, "DaemonSet", DAEMON_SETS.api_version,
                      etype, reason, message, COMPONENT)


# ---------------------------------------------------------------- pods

def new_pod(ds, node, rev, gen):
    """CreatePodTemplate + ReplaceDaemonSetPodNodeNameNodeAffinity +
    GetPodFromTemplate, and spec.nodeName (no scheduler here)."""
    meta = ds["metadata"]
    template = copy.deepcopy(ds["spec"]["template"])
    tmeta, spec = template.get("metadata") or {}, template["spec"]
    labels = dict(tmeta.get("labels") or {})
    if gen is not None:
        labels[GENERATION_LABEL] = str(gen)
    labels[HASH_LABEL] = rev
    spec["tolerations"] = daemon_tolerations(spec)
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [{"matchFields": [{
            "key": "metadata.name", "operator": "In", "values": [node]}]}]}
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity
    spec["nodeName"] = node   # what kube-scheduler's binding would set
    pod_meta = {"generateName": meta["name"] + "-", "labels": labels,
                "ownerReferences": [{
                    "apiVersion": DAEMON_SETS.api_version,
                    "kind": DAEMON_SETS.kind, "name": meta["name"],
                    "uid": meta["uid"], "controller": True,
                    "blockOwnerDeletion": True}]}
    for key in ("annotations", "finalizers"):
        if tmeta.get(key):
            pod_meta[key] = tmeta[key]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": spec}


def daemon_tolerations(spec):
    """AddOrUpdateTolerationInPodSpec for each daemon toleration: one that
    matches (key, effect, operator, value) is replaced, else appended."""
    out = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    wanted = DAEMON_TOLERATIONS + ([NETWORK_UNAVAILABLE]
                                   if spec.get("hostNetwork") else [])
    for key, effect in wanted:
        tol = {"key": key, "operator": "Exists", "effect": effect}
        at = next((i for i, t in enumerate(out) if
                   t.get("key", "") == key and t.get("effect", "") == effect
                   and (t.get("operator") or "Equal") == "Exists" and
                   not t.get("value")), None)
        if at is None:
            out.append(tol)
        else:
            out[at] = tol
    return out


def nodes_to_pods(pods, uid):
    """getNodesToDaemonPods(ds, false): the DaemonSet's pods by target
    node, without terminal pods already being deleted."""
    out = {}
    for pod in pods:
        if controller_uid(pod) != uid:
            continue
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Failed", "Succeeded") and \
                pod["metadata"].get("deletionTimestamp"):
            continue
        node = target_node(pod)
        if node:
            out.setdefault(node, []).append(pod)
    return out


def controller_uid(pod):
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == DAEMON_SETS.kind:
            return ref.get("uid")
    return None


def _owner_uids(pod):
    return {r.get("uid") for r in pod["metadata"].get("ownerReferences")
            or []}


def target_node(pod):
    """util.GetTargetNodeName: spec.nodeName, or the node the affinity's
    single metadata.name term names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
             .get("nodeSelectorTerms") or [])
    fields = terms[0].get("matchFields") or [] if len(terms) == 1 else []
    if len(fields) == 1 and fields[0].get("key") == "metadata.name" and \
            fields[0].get("operator") == "In" and \
            len(fields[0].get("values") or []) == 1:
        return fields[0]["values"][0]
    return None


def creation_order(pod):
    """podByCreationTimestampAndPhase: bound pods first, then oldest."""
    meta = pod["metadata"]
    return (not (pod.get("spec") or {}).get("nodeName"),
            meta.get("creationTimestamp", ""), meta["name"])


def _ref(pod):
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def revision_hash(ds):
    """The current revision's hash label: fnv32a of the template (and the
    collisionCount) as rand.SafeEncodeString writes the number."""
    data = json.dumps(ds["spec"].get("template"), sort_keys=True).encode()
    data += str((ds.get("status") or {}).get("collisionCount", "")).encode()
    h = 0x811c9dc5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xffffffff
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(h))


def is_updated(pod, rev, gen):
    """util.IsPodUpdated: the template generation or the hash matches."""
    labels = pod["metadata"].get("labels") or {}
    return (gen is not None and labels.get(GENERATION_LABEL) == str(gen)) \
        or labels.get(HASH_LABEL) == rev


def updated_pods_on_node(pods, rev, gen):
    """findUpdatedPodsOnNode: (new, old, ok); not ok with two of a kind."""
    new = old = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if is_updated(pod, rev, gen):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def _ready_since(pod):
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("lastTransitionTime") \
                if cond.get("status") == "True" else None
    return None


def ready(pod):
    return _ready_since(pod) is not None


def available(pod, min_ready=0):
    """podutil.IsPodAvailable: Ready for more than minReadySeconds."""
    since = _ready_since(pod)
    if since is None:
        return False
    if not min_ready:
        return True
    try:
        then = datetime.datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError):
        return False
    then = then.replace(tzinfo=datetime.timezone.utc)
    return then + datetime.timedelta(seconds=min_ready) < \
        datetime.datetime.now(datetime.timezone.utc)


# ---------------------------------------------------------------- nodes

def should_run(tspec, tolerations, node):
    """NodeShouldRunDaemonPod: (shouldRun, shouldContinueRunning)."""
    name = node["metadata"]["name"]
    if tspec.get("nodeName") not in (None, "", name):
        return False, False
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in
           (tspec.get("nodeSelector") or {}).items()):
        return False, False
    if not affinity_matches(tspec.get("affinity"), name, labels):
        return False, False
    untolerated = [t for t in (node.get("spec") or {}).get("taints") or []
                   if t.get("effect") in ("NoSchedule", "NoExecute") and
                   not any(tolerates(tol, t) for tol in tolerations)]
    if not untolerated:
        return True, True
    # a running pod stays unless a NoExecute taint is not tolerated
    return False, all(t.get("effect") != "NoExecute" for t in untolerated)


def tolerates(tol, taint):
    """Toleration.ToleratesTaint."""
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("key") and tol["key"] != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (tol.get("value") or "") == \
        (taint.get("value") or "")


def affinity_matches(affinity, name, labels):
    """The required node affinity: one term whose requirements all hold
    (a term without any matches nothing)."""
    required = (((affinity or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    return node_selector_matches(required, name, labels)
