# SPDX-License-Identifier: GPL-2.0-or-later
"""--synthetic-nodes N: a large inventory generated straight into bytes.
Each node gets a dra.cpu individual-mode pool (one slice of 128 CPUs:
2 sockets x 32 cores x 2 threads, SMT siblings numbered consecutively), a
gpu.nvidia.com slice with 8 GPUs and its Node object.  All CPU slices share
one serialized device array, so 15,000 nodes cost little memory."""

import uuid

from . import nodes
from .api import now_rfc3339
from .resources import NODES
from .store import Entry, dumps

SOCKETS, CORES, THREADS = 2, 32, 2
GPUS = 8


def cpu_devices():
    devices = []
    ncpu = SOCKETS * CORES
    for socket in range(SOCKETS):
        for core in range(CORES):
            for thread in range(THREADS):
                cpu = thread * ncpu + socket * CORES + core
                attrs = {
                    "dra.cpu/cpuID": {"int": cpu},
                    "dra.cpu/coreID": {"int": core},
                    "dra.cpu/socketID": {"int": socket},
                    "dra.cpu/cacheL3ID": {"int": socket},
                    "dra.cpu/coreType": {"string": "standard"},
                    "dra.cpu/smtEnabled": {"bool": True},
                    "resource.kubernetes.io/numaNode": {"int": socket},
                    "dra.cpu/numaNodeID": {"int": socket},
                    "dra.net/numaNode": {"int": socket}}
                devices.append({"name": f"cpudev{len(devices):03d}",
                                "attributes": attrs})
    return devices


def gpu_devices(node_index):
    devices = []
    for g in range(GPUS):
        bus = 0x10 + 0x10 * g
        gid = uuid.UUID(int=(node_index << 8) | g)
        devices.append({"name": f"gpu-{g}", "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{gid}"},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Ampere"},
            "cudaComputeCapability": {"version": "8.0.0"},
            "driverVersion": {"version": "580.126.20"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{bus:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{bus - 1:02x}"},
            "resource.kubernetes.io/numaNode": {"int": g * SOCKETS // GPUS}},
            "capacity": {"memory": {"value": "80Gi"}}})
    return devices


def _meta(name, rv, created, index, salt):
    return {"name": name, "uid": str(uuid.UUID(int=(salt << 64) | index)),
            "resourceVersion": str(rv), "generation": 1,
            "creationTimestamp": created}


def generate(n_nodes, first_rv):
    """Returns the list of Entries (2 per node), RVs from first_rv up."""
    created = now_rfc3339()
    shared = dumps(cpu_devices())
    entries = []
    rv = first_rv
    for i in range(n_nodes):
        node = f"node{i:05d}"
        name = f"{node}-dra.cpu-{i:05x}"
        head = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": _meta(name, rv, created, i, 1),
                "spec": {"driver": "dra.cpu", "nodeName": node,
                         "pool": {"name": node, "generation": 1,
                                  "resourceSliceCount": 1}}}
        text = dumps(head)
        # splice the shared devices array into the spec object
        parts = (text[:-2] + b',"devices":', shared, b"}}")
        entries.append(_entry(name, rv, parts, "dra.cpu", node, head))
        rv += 1
        gname = f"{node}-gpu.nvidia.com-{i:05x}"
        gobj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": _meta(gname, rv, created, i, 2),
                "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                         "pool": {"name": node, "generation": 1,
                                  "resourceSliceCount": 1},
                         "devices": gpu_devices(i)}}
        entries.append(_entry(gname, rv, (dumps(gobj),), "gpu.nvidia.com",
                              node, gobj))
        rv += 1
    return entries


def _entry(name, rv, parts, driver, node, obj):
    return Entry(name, name, "", rv, parts, {},
                 {"metadata.name": name, "metadata.namespace": "",
                  "spec.driver": driver, "spec.nodeName": node},
                 obj["metadata"]["uid"])


def node_entries(n_nodes, first_rv, first_index=1):
    """The Node of each synthetic node, as kubelet registers it (128 CPUs),
    RVs from first_rv up.  Their capacity, allocatable and conditions are
    alike: one shared byte segment, spliced into each status."""
    created = now_rfc3339()
    alike = ("capacity", "allocatable", "conditions")
    shared = None
    out = []
    for i in range(n_nodes):
        name = f"node{i:05d}"
        obj = nodes.register(name, first_index + i,
                             cpu=SOCKETS * CORES * THREADS)
        obj["metadata"].update(_meta(name, first_rv + i, created, i, 3))
        status = obj.pop("status")
        if shared is None:
            shared = dumps({k: status[k] for k in alike})[1:-1] + b","
        rest = dumps({k: v for k, v in status.items() if k not in alike})
        parts = (dumps(obj)[:-1] + b',"status":{', shared, rest[1:] + b"}")
        obj["status"] = status
        out.append(Entry(name, name, "", first_rv + i, parts,
                         obj["metadata"]["labels"], NODES.field_values(obj),
                         obj["metadata"]["uid"]))
    return out
