# SPDX-License-Identifier: GPL-2.0-or-later
"""The cluster's Kubernetes side as the tests see it: kubectl (the real
client) against the test API server, and the server's fault controls."""
import json
import urllib.request

CLAIM_LABEL_JOB = "k8s-cons-tres.slurm.io/job-id"
CLAIM_LABEL_CLUSTER = "k8s-cons-tres.slurm.io/cluster"


def kubectl(cluster, *args, check=True, timeout=60, **kw):
    return cluster.run("kubectl", *args, check=check, timeout=timeout, **kw)


def get_json(cluster, *args) -> dict:
    return json.loads(kubectl(cluster, "get", *args, "-o", "json").stdout)


def job_claims(cluster, job_id=None) -> list:
    selector = CLAIM_LABEL_JOB + (f"={job_id}" if job_id is not None else "")
    return get_json(cluster, "resourceclaims", "-n", "slurm", "-l", selector)["items"]


def pod_claims(cluster) -> list:
    return [c for c in get_json(cluster, "resourceclaims", "-A")["items"]
            if CLAIM_LABEL_JOB not in c["metadata"].get("labels", {})]


def cpu_ids_of_slices(slices) -> dict:
    """(node, device name) -> dra.cpu/cpuID, from ResourceSlice objects."""
    out = {}
    for s in slices:
        if s["spec"]["driver"] != "dra.cpu":
            continue
        for d in s["spec"].get("devices", []):
            cpu = d.get("attributes", {}).get("dra.cpu/cpuID")
            if cpu:
                out[(s["spec"]["nodeName"], d["name"])] = cpu["int"]
    return out


def cpu_ids_by_device(cluster) -> dict:
    """(node, device name) -> dra.cpu/cpuID, from the published slices."""
    return cpu_ids_of_slices(get_json(cluster, "resourceslices")["items"])


def claim_devices(claim: dict, cpu_ids: dict) -> tuple:
    """(node, CPU ids, GPU minor numbers) a claim holds."""
    alloc = claim.get("status", {}).get("allocation")
    if not alloc:
        return None, [], []
    node = alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
    cpus, gpus = [], []
    for r in alloc["devices"]["results"]:
        if r["driver"] == "dra.cpu" and (node, r["device"]) in cpu_ids:
            cpus.append(cpu_ids[(node, r["device"])])
        elif r["driver"] != "dra.cpu":
            gpus.append(int(r["device"].split("-")[1]))
    for cfg in alloc["devices"].get("config", []):
        cpuset = cfg.get("opaque", {}).get("parameters", {}).get("cpuConfig", {}).get("cpuset")
        if cpuset:
            from .alignment import parse_id_list
            cpus.extend(parse_id_list(cpuset))
    return node, sorted(cpus), sorted(gpus)


def holder_pods(cluster, job_id=None) -> list:
    """The holder pods of a job (of every job: None) in the claim namespace."""
    selector = CLAIM_LABEL_JOB + (f"={job_id}" if job_id is not None else "")
    return get_json(cluster, "pods", "-n", "slurm", "-l", selector)["items"]


def pod_held(cluster) -> dict:
    """node -> (CPU ids, GPU indices) that pods hold, as Kubernetes says now."""
    cpu_ids = cpu_ids_by_device(cluster)
    held = {}
    for c in pod_claims(cluster):
        node, cpus, gpus = claim_devices(c, cpu_ids)
        if node:
            h = held.setdefault(node, (set(), set()))
            h[0].update(cpus)
            h[1].update(gpus)
    return held


def job_claimed(cluster, job_id, cpu_ids) -> dict:
    """node -> (CPU ids, GPU indices) that a job's claims hold."""
    per_node = {}
    for c in job_claims(cluster, job_id):
        node, cpus, gpus = claim_devices(c, cpu_ids)
        if node:
            p = per_node.setdefault(node, ([], []))
            p[0].extend(cpus)
            p[1].extend(gpus)
    return per_node


def control(cluster, path, body=None):
    """A request to the test API server's control endpoint: POST with body
    (a dict), GET without; its JSON answer."""
    url = cluster.apiserver()["controlUrl"] + path
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def faults(cluster, **settings):
    """Set the test API server's faults (refuse, hang, status, ...)."""
    return control(cluster, "/_test/faults", settings)


def reset_faults(cluster):
    return control(cluster, "/_test/faults/reset", {})


def api_stats(cluster, reset=False):
    """The test API server's request counts ("verb resource": n), or reset them."""
    return control(cluster, "/_test/stats/reset", {}) if reset else control(cluster, "/_test/stats")
