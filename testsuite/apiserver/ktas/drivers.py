# SPDX-License-Identifier: GPL-2.0-or-later
"""What the DRA drivers on one node make of a claim at NodePrepareResources,
after their sources (kubernetes-sigs/dra-driver-cpu; the NVIDIA and example
GPU drivers).  The error texts are theirs; kubelet wraps them.

dra.cpu keeps the CPUs of prepared claims away from every other claim and
from the shared pool, which is all CPUs it publishes (reserved CPUs are not
published) minus those.  In grouped mode it counts CPUs per group device
(consumedCapacity) and picks the CPUs itself; only machine grouping, which
forces its external allocator, takes the claim's opaque cpuset.  GPU drivers
record the devices per claim and check nothing against other claims."""

from .pods import quantity

CPU_DRIVER = "dra.cpu"
CPU_ID = "dra.cpu/cpuID"
CPU_CAPACITY = "dra.cpu/cpu"


class PrepareError(Exception):
    """A driver's NodePrepareResources error for one claim."""


def parse_cpuset(text):
    out = set()
    for part in filter(None, (text or "").replace(" ", "").split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def format_cpuset(cpus):
    ids, parts, i = sorted(cpus), [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def _attr(dev, name):
    val = (dev.get("attributes") or {}).get(name)
    return next(iter(val.values()), None) if isinstance(val, dict) and val \
        else None


class Inventory:
    """The devices one node's slices publish (each pool at its highest
    generation)."""

    def __init__(self, slices):
        newest = {}
        for s in slices:
            spec = s.get("spec") or {}
            pool = spec.get("pool") or {}
            key = (spec.get("driver"), pool.get("name"))
            gen = pool.get("generation", 0)
            if key not in newest or gen > newest[key][0]:
                newest[key] = (gen, [])
            if gen == newest[key][0]:
                newest[key][1].append(spec)
        self.devices = {}   # (driver, pool) -> {device name: device}
        self.cpu_ids = {}   # individual mode: device name -> CPU id
        self.groups = {}    # grouped mode: device name -> CPUs it holds
        for key, (_, specs) in newest.items():
            devs = self.devices.setdefault(key, {})
            for spec in specs:
                for dev in spec.get("devices") or []:
                    devs[dev.get("name")] = dev
                    if key[0] != CPU_DRIVER:
                        continue
                    cap = ((dev.get("capacity") or {}).get(CPU_CAPACITY) or
                           {}).get("value")
                    if _attr(dev, CPU_ID) is not None:
                        self.cpu_ids[dev["name"]] = _attr(dev, CPU_ID)
                    elif cap is not None:
                        self.groups[dev["name"]] = int(quantity(cap) or 0)

    @property
    def mode(self):
        return "individual" if self.cpu_ids else \
            "grouped" if self.groups else None

    @property
    def group_by(self):
        for name in self.groups:
            for kind in ("machine", "numa", "socket"):
                if name.startswith("cpudev" + kind):
                    return kind
        return None

    @property
    def published_cpus(self):
        return set(self.cpu_ids.values())

    def gpus(self):
        """(driver, device) of every device of a driver other than dra.cpu."""
        return sorted((drv, name) for (drv, _), devs in self.devices.items()
                      if drv != CPU_DRIVER for name in devs)


class Prepared:
    """One claim prepared on the node, as the drivers recorded it."""

    def __init__(self, claim):
        meta = claim["metadata"]
        self.uid, self.ns, self.name = meta["uid"], meta["namespace"], \
            meta["name"]
        self.pods = {}      # pod uid -> "ns/name" (kubelet's claim info)
        self.cpus = None    # CPU ids held, when known
        self.groups = {}    # grouped mode: group device -> CPUs
        self.gpus = []      # other drivers' device names

    @property
    def has_cpus(self):
        return bool(self.cpus or self.groups)


def prepare(inv, claim, prepared, shared_running):
    """The drivers' NodePrepareResources for `claim` next to the claims
    already `prepared` here; raises PrepareError."""
    rec = Prepared(claim)
    alloc = (claim.get("status") or {}).get("allocation") or {}
    results = (alloc.get("devices") or {}).get("results") or []
    cpu_results = [r for r in results if r.get("driver") == CPU_DRIVER]
    if cpu_results and inv.mode == "individual":
        rec.cpus = _individual(inv, rec, cpu_results, prepared,
                               shared_running)
    elif cpu_results and inv.mode == "grouped":
        _grouped(inv, rec, alloc, cpu_results, prepared)
    elif cpu_results:
        raise PrepareError(f"DRA driver {CPU_DRIVER} is not registered")
    for r in results:
        if r.get("driver") == CPU_DRIVER:
            continue
        devs = inv.devices.get((r.get("driver"), r.get("pool")))
        if devs is not None and r.get("device") not in devs:
            raise PrepareError("requested GPU is not allocatable: "
                               f"{r.get('device')}")
        rec.gpus.append(r.get("device"))
    return rec


def _used_cpus(prepared):
    used = set()
    for p in prepared.values():
        used |= p.cpus or set()
    return used


def _individual(inv, rec, results, prepared, shared_running):
    cpus = set()
    for r in results:
        if r.get("device") not in inv.cpu_ids:
            raise PrepareError(f'device "{r.get("device")}" not found in '
                               'device to CPU ID map')
        cpus.add(inv.cpu_ids[r["device"]])
    shared = inv.published_cpus - _used_cpus(prepared)
    if not cpus <= shared:
        raise PrepareError(f"claim {rec.ns}/{rec.name} has overlapping "
                           "device assignment with other claims")
    if shared_running and not shared - cpus:
        raise PrepareError(f'claim "{rec.uid}" would exhaust the shared CPU '
                           'pool while shared containers are running')
    return cpus


def _grouped(inv, rec, alloc, results, prepared):
    by_request = {}
    for r in results:
        dev, q = r.get("device"), (r.get("consumedCapacity") or {}).get(
            CPU_CAPACITY)
        if q is None:
            raise PrepareError(f'CPU capacity "{CPU_CAPACITY}" for device '
                               f'"{dev}" is missing')
        n = quantity(q)
        if not n or n <= 0 or n != int(n):
            raise PrepareError(f'CPU capacity for device "{dev}" must be a '
                               f'positive whole number, got {q}')
        if dev not in inv.groups:
            raise PrepareError(f"no valid {inv.group_by or 'NUMA node'} ID "
                               f"found for device {dev}")
        used = sum(p.groups.get(dev, 0) for p in prepared.values())
        free = inv.groups[dev] - used - rec.groups.get(dev, 0)
        if n > free:   # kubelet's CPU manager, which the driver imports
            raise PrepareError("not enough cpus available to satisfy "
                               f"request: requested={int(n)}, "
                               f"available={free}")
        rec.groups[dev] = rec.groups.get(dev, 0) + int(n)
        by_request[r.get("request")] = by_request.get(r.get("request"), 0) \
            + int(n)
    if inv.group_by != "machine":
        return   # the driver's own choice of CPUs: unknown here
    rec.cpus = set()
    for request, total in by_request.items():
        cpus = _opaque_cpuset(alloc, request)
        if len(cpus) != total:
            raise PrepareError(f"opaque cpuset size {len(cpus)} does not "
                               f"match the request total of {total} CPUs")
        taken = cpus & (_used_cpus(prepared) | rec.cpus)
        if taken:
            raise PrepareError(f"requested CPUs {format_cpuset(cpus)} from "
                               "preferred CPUs conflict with already "
                               "allocated claims")
        rec.cpus |= cpus


def _opaque_cpuset(alloc, request):
    """The one FromClaim dra.cpu config that targets `request`."""
    found = []
    for cfg in (alloc.get("devices") or {}).get("config") or []:
        opaque = cfg.get("opaque") or {}
        reqs = cfg.get("requests") or []
        if opaque.get("driver") != CPU_DRIVER or \
                (reqs and request not in reqs and
                 request.split("/")[0] not in reqs):
            continue
        if cfg.get("source") != "FromClaim":
            raise PrepareError("opaque config: configuration from DeviceClass"
                               " is not supported by this driver, custom "
                               "cpusets must be defined per ResourceClaim "
                               "request")
        found.append(opaque)
    if len(found) != 1:
        raise PrepareError(f'opaque config: request "{request}" is targeted '
                           f"by {len(found)} configurations, must be targeted"
                           " by exactly 1")
    cpuset = ((found[0].get("parameters") or {}).get("cpuConfig") or
              {}).get("cpuset")
    if not cpuset:
        raise PrepareError("no opaque cpuset configuration found for "
                           f'allocation request "{request}"')
    try:
        return parse_cpuset(cpuset)
    except ValueError:
        raise PrepareError(f'invalid cpuset "{cpuset}"') from None
