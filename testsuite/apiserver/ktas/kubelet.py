# SPDX-License-Identifier: GPL-2.0-or-later
"""Node agents (--node-agents): one per Kubernetes node, i.e. per node some
ResourceSlice names.  Each plays that node's kubelet and DRA drivers, seeing
only what they see: pods with spec.nodeName = the node, their claims, the
node's slices.

A pod starts (Running, Ready) once every claim it names exists, lists the
pod (uid, and here also name and resource "pods") in status.reservedFor, is
allocated on this node and the drivers prepare it.  Otherwise it stays
Pending (container waiting in ContainerCreating) and kubelet's
FailedPrepareDynamicResources event says why; any later change of a claim,
pod or slice retries at once (kubelet would back off).  A running pod keeps
its claims prepared whatever happens to them; they are unprepared when the
pod goes.  A pod being deleted gracefully is stopped, its claims unprepared,
then deleted for good (grace 0), as kubelet's status manager does.

The agents wake on every store event (store.listeners) and work on their
own thread; GET /_test/nodes/NODE/agent shows each one's view.  Pods whose
images --run-image names have their containers run as host processes
(ktas/containers.py)."""

import hashlib
import threading
import traceback

from . import drivers, events, nodes, resources
from .api import now_rfc3339
from .containers import lookup_in
from .resources import NODES, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from .selectors import node_selector_matches
from .status import ApiError
from .store import object_key, parsed

FAILED_PREPARE = "FailedPrepareDynamicResources"
FAILED_MOUNT = "FailedMount"
# kubelet's kuberuntime event text around the DRA manager's error
PREPARE_PREFIX = ("Failed to prepare dynamic resources: prepare dynamic "
                  "resources: ")
HOSTNAME_LABEL = "kubernetes.io/hostname"


class PodState:
    """What the agent knows of one pod it has seen."""

    def __init__(self, pod):
        meta = pod["metadata"]
        self.uid, self.ns, self.name = meta["uid"], meta["namespace"], \
            meta["name"]
        self.phase = "Pending"
        self.claims = []     # uids of the claims prepared for it
        self.message = ""    # why it is not running (the event's text)
        self.events = set()  # messages already reported
        self.wanted = set()   # names of the claims it uses
        self.seen = now_rfc3339()
        self.started = None
        self.ip = None

    @property
    def key(self):
        return f"{self.ns}/{self.name}"


class NodeAgents:
    """The agents of every node, woken by store events.  A pass works on
    the nodes the events since the last one touched (a pod bound there, a
    claim one of its pending pods waits for), so that its cost follows the
    changes, not the node count (a kubelet sees only its own node); a
    change of any slice (which node owns which pool) makes a full pass."""

    def __init__(self, app):
        self.app, self.api, self.store = app, app.api, app.store
        self.lock = threading.Lock()     # the agents' state; before store.lock
        self.agents = {}                 # node -> NodeAgent
        self.cond = threading.Condition()
        # work to do (under cond): every node, or these nodes
        self.full, self.dirty_nodes = True, set()
        self.busy, self.stopping = False, False
        self.claims_in_pass = set()   # claims written while a pass ran
        self.relevant_rv = 0   # newest event an agent may act on
        self.done_rv = 0       # store RV of the last finished pass
        self.waiting = {}      # ns/name of a claim -> nodes waiting for it
        self._waiting_by_node = {}   # node -> claims its pending pods want
        # key -> (rv, obj): parse each version once
        self._parsed_slices, self._parsed_pods = {}, {}
        self._inventories = {}             # node -> (slice versions, inv)
        self._slices = {}      # node -> [(entry, slice)], from a full pass
        self._pool_nodes = {}  # (driver, pool) -> node, from a full pass
        # ktas/containers.py's Runtime (--run-image), else None
        self.runtime = None
        self.lookup = lookup_in(self.store, {
            "configmap": getattr(resources, "CONFIG_MAPS", None),
            "secret": getattr(resources, "SECRETS", None)})
        self.store.listeners.append(self._on_event)
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="node-agents")

    def start(self):
        self.thread.start()

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify()
        if self.runtime:
            self.runtime.shutdown()

    def poke(self, node):
        """A container of the node's pods ended, or a back-off or grace
        period is over: look at the node's pods again."""
        with self.cond:
            self.dirty_nodes.add(node)
            self.cond.notify()

    @property
    def dirty(self):
        return self.full or bool(self.dirty_nodes)

    def _on_event(self, ev):
        """Under the store lock: only take note of the nodes to look at
        again, so that claim writes of running jobs (the plugin's
        benchmarks) cost the server nothing more."""
        nodes = {e.fields.get("spec.nodeName") for e in (ev.entry, ev.old)
                 if e is not None} - {None}
        with self.cond:
            if ev.rtype is RESOURCE_SLICES:
                self.full = self.full or bool(nodes)
            elif ev.rtype is PODS:
                # while a pass runs, its new agents may want the pod too
                self.dirty_nodes |= {n for n in nodes
                                     if self.busy or n in self.agents}
            elif ev.rtype is RESOURCE_CLAIMS:
                self.dirty_nodes |= self.waiting.get(ev.entry.key, set())
                if self.busy:   # the pass may wait for it only from now on
                    self.claims_in_pass.add(ev.entry.key)
            else:
                return
            if self.dirty or self.busy:
                self.relevant_rv = ev.rv
                self.cond.notify()

    def owns(self, node):
        return node in self.agents

    def nodes(self):
        return sorted(self.agents)

    def view(self, node):
        with self.store.lock, self.cond:   # no commit half-way
            idle = not (self.dirty or self.busy) and \
                self.done_rv >= self.relevant_rv
            observed = self.store.rv if idle else self.done_rv
        with self.lock:
            agent = self.agents.get(node)
            return agent.view(observed) if agent else None

    def _run(self):
        while True:
            with self.cond:
                if not self.dirty and not self.stopping:
                    self.cond.wait(2.0)   # events wake it; this is a backstop
                if self.stopping:
                    return
                full, nodes = self.full, self.dirty_nodes
                self.full, self.dirty_nodes = False, set()
                self.busy, self.claims_in_pass = True, set()
            rv = 0
            try:
                rv = self.reconcile(full, nodes)
            except Exception:   # keep the agents alive; the log says why
                traceback.print_exc()
            with self.cond:
                self.busy = False
                self.done_rv = max(self.done_rv, rv)
                # claims written during the pass that it now waits for
                for key in self.claims_in_pass:
                    self.dirty_nodes |= self.waiting.get(key, set())
                if not rv:   # failed: all again, after the backstop's wait
                    self.cond.wait(2.0)
                    self.full = True

    def reconcile(self, full=True, dirty=()):
        """One pass over one snapshot: every agent, or those of the nodes
        in `dirty`; returns the snapshot's RV."""
        with self.lock:
            with self.store.lock:
                rv = self.store.rv
                if full:
                    slices = [(e, parsed(e, self._parsed_slices))
                              for e in self._entries(RESOURCE_SLICES)
                              if e.fields.get("spec.nodeName")]
                    nodes = {e.fields["spec.nodeName"] for e, _ in slices} \
                        | set(self.agents)
                else:
                    nodes = {n for n in dirty if n in self.agents}
                pod_table = self.store.tables[PODS.name]
                pods = [parsed(e, self._parsed_pods)
                        for e in self._entries(PODS)
                        if e.fields.get("spec.nodeName") in nodes]
                self._parsed_pods = {k: v for k, v in
                                     self._parsed_pods.items()
                                     if k in pod_table.entries}
            if full:
                self._index_slices(slices)
            by_node = {}
            for p in pods:
                by_node.setdefault(p["spec"]["nodeName"], []).append(p)
            for agent in sorted((self.agents[n] for n in nodes),
                                key=lambda a: a.index):
                node = agent.node
                agent.reconcile(self._inventory(node,
                                                self._slices.get(node, [])),
                                by_node.get(node, []), self._pool_nodes)
                wanted = agent.waiting_claims()
                if wanted:
                    self._waiting_by_node[node] = wanted
                else:
                    self._waiting_by_node.pop(node, None)
            waiting = {}
            for node, claims in self._waiting_by_node.items():
                for key in claims:
                    waiting.setdefault(key, set()).add(node)
            with self.cond:
                self.waiting = waiting
            return rv

    def _index_slices(self, slices):
        """A full pass: each node's slices, pool owners, new agents."""
        self._pool_nodes, self._slices = {}, {}
        for e, s in slices:
            spec = s["spec"]
            self._pool_nodes[(spec.get("driver"),
                              (spec.get("pool") or {}).get("name"))] = \
                spec["nodeName"]
            self._slices.setdefault(spec["nodeName"], []).append((e, s))
        live = {e.key for e, _ in slices}
        self._parsed_slices = {k: v for k, v in self._parsed_slices.items()
                               if k in live}
        for node in sorted(self._slices):
            if node not in self.agents:
                entry = self.store.get(NODES, node)
                self.agents[node] = NodeAgent(
                    self, node, len(self.agents) + 1,
                    entry.obj() if entry else None)

    def _entries(self, rtype):
        table = self.store.tables[rtype.name]
        return [table.entries[k] for k in table.keys]

    def _inventory(self, node, slices):
        versions = tuple((e.key, e.rv) for e, _ in slices)
        hit = self._inventories.get(node)
        if hit is None or hit[0] != versions:
            hit = self._inventories[node] = (
                versions, drivers.Inventory([s for _, s in slices]))
        return hit[1]


class NodeAgent:
    """One node's kubelet (DRA manager, pod status) and drivers."""

    def __init__(self, mgr, node, index, node_obj=None):
        """node_obj: the Node, if registered: its InternalIP and podCIDR
        are the agent's host and pod addresses."""
        self.mgr, self.api, self.node = mgr, mgr.api, node
        self.index = index
        node_obj = node_obj or {}
        self.host_ip = nodes.address(node_obj, "InternalIP", None) or \
            nodes.host_ip(index)
        cidr = (node_obj.get("spec") or {}).get("podCIDR") or ""
        if not (cidr.count(".") == 3 and cidr.endswith(".0/24")):
            cidr = nodes.pod_cidr(index)
        self.subnet = cidr[:-len("0/24")]
        self.inv = drivers.Inventory([])
        self.prepared = {}   # claim uid -> drivers.Prepared
        self.pods = {}       # pod uid -> PodState
        self.deleting = set()
        self.next_ip = 0

    # ------------------------------------------------------------ sync
    def reconcile(self, inv, pods, pool_nodes):
        self.inv = inv
        current = {p["metadata"]["uid"] for p in pods}
        for uid in list(self.pods):
            if uid not in current:
                self._forget(uid)   # deleted (even forcibly): unprepare
        self.deleting &= current
        for pod in sorted(pods, key=lambda p: (
                p["metadata"].get("creationTimestamp", ""),
                p["metadata"]["name"])):
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                self._terminate(pod)
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded",
                                                           "Failed"):
                self._forget(meta["uid"])
                continue
            st = self.pods.get(meta["uid"])
            if st is None:
                st = self.pods[meta["uid"]] = PodState(pod)
            runtime = self.mgr.runtime
            if st.phase == "Running" and runtime:
                st.phase = runtime.sync(meta["uid"]) or st.phase
            st.wanted = {c.get("resourceClaimName") for c in
                         (pod["spec"].get("resourceClaims") or []) +
                         ((pod.get("status") or {}).get(
                             "resourceClaimStatuses") or [])} - {None}
            if st.phase == "Pending":
                self._try_start(pod, st, pool_nodes)
            self._write_status(pod, st)

    def waiting_claims(self):
        """ns/name of the claims the node's pending pods wait for."""
        return {f"{st.ns}/{name}" for st in self.pods.values()
                if st.phase != "Running" for name in st.wanted}

    def _forget(self, uid):
        st = self.pods.pop(uid, None)
        if self.mgr.runtime:   # gone, even forcibly: its containers stop
            self.mgr.runtime.stop(uid)
        for cuid in list(self.prepared):
            rec = self.prepared[cuid]
            rec.pods.pop(uid, None)
            if not rec.pods:   # no pod left: NodeUnprepareResources
                del self.prepared[cuid]
        return st

    def _terminate(self, pod):
        """Containers stopped, claims unprepared, then the final delete."""
        meta = pod["metadata"]
        runtime = self.mgr.runtime
        if runtime and not runtime.stop(
                meta["uid"], meta.get("deletionGracePeriodSeconds")):
            return   # still stopping: the runtime wakes the agent
        self._forget(meta["uid"])
        if meta["uid"] in self.deleting:
            return
        self.deleting.add(meta["uid"])
        try:
            self.api.delete(PODS, meta["namespace"], meta["name"],
                            {"gracePeriodSeconds": 0,
                             "preconditions": {"uid": meta["uid"]}})
        except ApiError:
            pass   # gone or replaced meanwhile

    # ------------------------------------------------------------ start
    def _try_start(self, pod, st, pool_nodes):
        msg = self._prepare(pod, st, pool_nodes)
        reason = FAILED_PREPARE
        if msg is None:
            if pod["spec"].get("hostNetwork"):
                ip = self.host_ip
            else:
                ip = f"{self.subnet}{(self.next_ip + 1) % 254 + 1}"
            runtime = self.mgr.runtime
            if runtime and runtime.runs(pod):
                msg = runtime.start(pod, self.node, self.host_ip, ip,
                                    self.mgr.lookup)
                reason = FAILED_MOUNT
                if msg:   # kubelet's volume manager tries again
                    timer = threading.Timer(1.0, self.mgr.poke, (self.node,))
                    timer.daemon = True
                    timer.start()
            if msg is None:
                if not pod["spec"].get("hostNetwork"):
                    self.next_ip += 1
                st.phase, st.message, st.started = "Running", "", \
                    now_rfc3339()
                st.ip = ip
                return
        else:
            msg = PREPARE_PREFIX + msg
        st.message = msg
        if st.message not in st.events:
            st.events.add(st.message)
            self._event(pod, reason, st.message)

    def _prepare(self, pod, st, pool_nodes):
        """kubelet's DRA manager: check every claim, then have the drivers
        prepare those not prepared yet.  Returns the error text or None."""
        meta, spec = pod["metadata"], pod["spec"]
        ns, uid = meta["namespace"], meta["uid"]
        claims = []
        for pc in spec.get("resourceClaims") or []:
            name = pc.get("resourceClaimName")
            if not name:   # from a template: the name is in the pod status
                known = {s.get("name"): s for s in (pod.get("status") or {})
                         .get("resourceClaimStatuses") or []}
                if pc.get("name") not in known:
                    return (f'pod "{ns}/{meta["name"]}": ResourceClaim not '
                            "created yet")
                name = known[pc["name"]].get("resourceClaimName")
                if not name:
                    continue
            entry = self.mgr.store.get(RESOURCE_CLAIMS, object_key(ns, name))
            if entry is None:
                return (f"fetch ResourceClaim {name}: resourceclaims."
                        f'resource.k8s.io "{name}" not found')
            claim = entry.obj()
            if not reserved_for(claim, pod):
                return (f"pod {meta['name']} ({uid}) is not allowed to use "
                        f"ResourceClaim {name} ({claim['metadata']['uid']})")
            why = self._elsewhere(claim, pool_nodes)
            if why:
                return f"NodePrepareResources failed for ResourceClaim " \
                    f"{name}: {why}"
            claims.append(claim)
        for claim in claims:
            cmeta = claim["metadata"]
            rec = self.prepared.get(cmeta["uid"])
            if rec is None:
                stale = next((p for p in self.prepared.values()
                              if (p.ns, p.name) == (ns, cmeta["name"])), None)
                if stale:
                    return (f"old ResourceClaim with same name "
                            f"{cmeta['name']} and different UID {stale.uid} "
                            "still exists (previous pod force-deleted?!)")
                try:
                    rec = drivers.prepare(self.inv, claim, self.prepared,
                                          self._shared_running())
                except drivers.PrepareError as err:
                    return ("NodePrepareResources failed for ResourceClaim "
                            f"{cmeta['name']}: {err}")
                self.prepared[cmeta["uid"]] = rec
            rec.pods[uid] = st.key
            if cmeta["uid"] not in st.claims:
                st.claims.append(cmeta["uid"])
        return None

    def _elsewhere(self, claim, pool_nodes):
        """Why the claim's allocation is not for this node, or None.  (The
        agent's own check and wording: a real driver trusts the scheduler.)"""
        alloc = (claim.get("status") or {}).get("allocation") or {}
        sel = alloc.get("nodeSelector")
        if sel and not selects(sel, self.node):
            return f"the allocation's nodeSelector does not select node " \
                f"{self.node}"
        for r in (alloc.get("devices") or {}).get("results") or []:
            key = (r.get("driver"), r.get("pool"))
            if key in self.inv.devices:
                continue
            owner = pool_nodes.get(key)
            dev = f"device {key[0]}/{key[1]}/{r.get('device')}"
            if owner:
                return f"{dev} is on node {owner}, not on node {self.node}"
            if not sel or any(d == key[0] for d, _ in self.inv.devices):
                return f"{dev} is not published on node {self.node}"
        return None

    def _shared_running(self):
        """Whether a running container gets the shared CPU pool."""
        return any(st.phase == "Running" and not any(
            self.prepared[c].has_cpus for c in st.claims
            if c in self.prepared) for st in self.pods.values())

    # ------------------------------------------------------------ status
    def _write_status(self, pod, st):
        status = self._status(pod, st)
        if status == pod.get("status"):
            return
        meta = pod["metadata"]
        with self.mgr.store.lock:   # only the pod we saw, not a successor
            entry = self.mgr.store.get(PODS, object_key(meta["namespace"],
                                                        meta["name"]))
            if entry is None or entry.uid != meta["uid"]:
                return
            self.api.update_status(PODS, meta["namespace"], meta["name"], {
                "metadata": {"name": meta["name"]}, "status": status})

    def _status(self, pod, st):
        old = pod.get("status") or {}
        spec = pod["spec"]
        running = st.phase == "Running"
        runtime = self.mgr.runtime
        run = runtime.get(st.uid) if runtime else None
        containers = runtime.statuses(st.uid, pod) if run else None
        ready = running and all(c["ready"] for c in containers or [])
        inits = [c["name"] for c in spec.get("initContainers") or []]
        names = [c["name"] for c in spec.get("containers") or []]
        status = {k: old[k] for k in ("qosClass", "resourceClaimStatuses",
                                      "nominatedNodeName") if k in old}
        if containers:   # run for real: those not running
            names = [c["name"] for c in containers if not c["ready"]]
        unready = f"containers with unready status: [{' '.join(names)}]"
        init_ok = running or not inits
        status["conditions"] = [
            _cond(old, "PodReadyToStartContainers", running),
            _cond(old, "Initialized", init_ok, *(() if init_ok else (
                "ContainersNotInitialized", "containers with incomplete "
                f"status: [{' '.join(inits)}]"))),
            _cond(old, "Ready", ready,
                  *(() if ready else ("ContainersNotReady", unready))),
            _cond(old, "ContainersReady", ready,
                  *(() if ready else ("ContainersNotReady", unready))),
            _cond(old, "PodScheduled", True)]
        status["phase"] = st.phase
        status["hostIP"] = self.host_ip
        status["hostIPs"] = [{"ip": self.host_ip}]
        if running:
            status["podIP"] = st.ip
            status["podIPs"] = [{"ip": st.ip}]
        status["startTime"] = st.seen
        if inits:
            status["initContainerStatuses"] = [
                self._container(pod, c, "done" if running else "init")
                for c in spec["initContainers"]]
        status["containerStatuses"] = containers or [
            self._container(pod, c, "running" if running else
                            "creating" if init_ok else "init")
            for c in spec.get("containers") or []]
        return status

    def _container(self, pod, c, state):
        st = self.pods[pod["metadata"]["uid"]]
        out = {"name": c["name"], "image": c.get("image", ""), "imageID": "",
               "lastState": {}, "ready": state == "running",
               "restartCount": 0, "started": state == "running"}
        if state in ("running", "done"):
            out["imageID"] = "sha256:" + _hash(c.get("image", ""))
            out["containerID"] = "containerd://" + _hash(st.uid + c["name"])
        if state == "running":
            out["state"] = {"running": {"startedAt": st.started}}
        elif state == "done":
            out["state"] = {"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": st.started,
                "finishedAt": st.started, "containerID": out["containerID"]}}
        else:
            out["state"] = {"waiting": {"reason": "ContainerCreating"
                                        if state == "creating" else
                                        "PodInitializing"}}
        return out

    def _event(self, pod, reason, message, etype="Warning"):
        events.record(self.api, pod, "Pod", "v1", etype, reason, message,
                      "kubelet", host=self.node)

    # ------------------------------------------------------------ view
    def view(self, observed_rv):
        inv, prepared = self.inv, self.prepared
        used = set()
        for rec in prepared.values():
            used |= rec.cpus or set()
        shared = inv.published_cpus - used if inv.mode == "individual" \
            else None
        grouped = None
        if inv.mode == "grouped":
            grouped = {}
            for dev, cap in sorted(inv.groups.items()):
                n = sum(r.groups.get(dev, 0) for r in prepared.values())
                grouped[dev] = {"capacity": cap, "used": n, "free": cap - n}
        holders = {}
        for rec in prepared.values():
            for name in rec.gpus:
                holders.setdefault(name, []).append(rec)
        gpus = [name for _, name in inv.gpus()]
        out_prep = {}
        for rec in sorted(prepared.values(), key=lambda r: (r.ns, r.name)):
            key = f"{rec.ns}/{rec.name}"
            if key in out_prep:   # an older claim of that name, still used
                key += f"@{rec.uid}"
            pods = sorted(rec.pods.items(), key=lambda kv: kv[1])
            out_prep[key] = {
                "uid": rec.uid, "pod": pods[0][1] if pods else None,
                "podUid": pods[0][0] if pods else None,
                "pods": [k for _, k in pods],
                "cpus": None if rec.cpus is None else
                drivers.format_cpuset(rec.cpus),
                "cpuCount": len(rec.cpus) if rec.cpus is not None else
                sum(rec.groups.values()),
                "groups": dict(rec.groups), "gpus": list(rec.gpus)}
        out_pods = {}
        for st in sorted(self.pods.values(), key=lambda s: s.key):
            recs = [prepared[c] for c in st.claims if c in prepared]
            cpuset = None
            if any(r.has_cpus for r in recs):
                if all(r.cpus is not None for r in recs if r.has_cpus):
                    cpuset = drivers.format_cpuset(
                        set().union(*(r.cpus or set() for r in recs)))
            elif st.phase == "Running" and shared is not None:
                cpuset = drivers.format_cpuset(shared)   # NRI keeps it current
            out_pods[st.key] = {
                "uid": st.uid, "phase": st.phase, "cpuset": cpuset,
                "claims": [f"{r.ns}/{r.name}" for r in recs],
                "podIP": st.ip, "message": st.message}
        return {
            "node": self.node,
            "observedResourceVersion": str(observed_rv),
            "cpuMode": inv.mode, "groupBy": inv.group_by,
            "publishedCpus": drivers.format_cpuset(inv.published_cpus)
            if inv.mode == "individual" else None,
            "sharedCpus": None if shared is None else
            drivers.format_cpuset(shared),
            "sharedCpuCount": len(shared) if shared is not None else
            sum(g["free"] for g in grouped.values()) if grouped is not None
            else None,
            "grouped": grouped,
            "gpus": {"published": gpus,
                     "free": [g for g in gpus if g not in holders]},
            "doubleBooked": sorted(n for n, r in holders.items()
                                   if len(r) > 1),
            "prepared": out_prep, "pods": out_pods}


# ---------------------------------------------------------------- helpers

def reserved_for(claim, pod):
    """kubelet checks the uid; the agent also wants the name and the
    resource right, so that a wrong reservedFor entry shows."""
    meta = pod["metadata"]
    return any(r.get("uid") == meta["uid"] and r.get("name") == meta["name"]
               and r.get("resource") == "pods" and not r.get("apiGroup")
               for r in (claim.get("status") or {}).get("reservedFor") or [])


def selects(selector, node):
    """A v1 NodeSelector against a node known only by name (and the
    kubernetes.io/hostname label kubelet gives it)."""
    return node_selector_matches(selector, node, {HOSTNAME_LABEL: node})


def _cond(old, ctype, ok, reason=None, message=None):
    """A pod condition; its transition time moves only when it flips."""
    prev = next((c for c in old.get("conditions") or []
                 if c.get("type") == ctype), {})
    status = "True" if ok else "False"
    out = {"type": ctype, "status": status, "lastProbeTime": None,
           "lastTransitionTime": prev.get("lastTransitionTime")
           if prev.get("status") == status else now_rfc3339()}
    if reason:
        out["reason"], out["message"] = reason, message
    return out


def _hash(text):
    return hashlib.sha256(text.encode()).hexdigest()
