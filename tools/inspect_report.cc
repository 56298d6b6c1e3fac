// SPDX-License-Identifier: GPL-2.0-or-later
#include "tools/inspect_report.h"

#include "k8s_sync/claim_owner.h"

#include "core/slurm_map.h"

#include <algorithm>
#include <set>

namespace k8s_cons_tres::inspect {
namespace {

std::string cpu_mode(const CpuTopology &t) {
    if (!t.grouped)
        return "individual";
    // dra.cpu names its group devices cpudevnumaNNN, cpudevsocketNNN, cpudevmachine
    const std::string &d = t.groups.empty() ? std::string() : t.groups.front().device;
    for (const char *kind : {"numa", "socket", "machine"})
        if (d.rfind(std::string("cpudev") + kind, 0) == 0)
            return std::string("grouped-") + kind;
    return "grouped";
}

// Linux ids (individual mode only: grouped ids are the model's own).
std::vector<int32_t> ids_of(const CpuTopology &t, const Words &mask) {
    std::vector<int32_t> out;
    if (t.grouped)
        return out;
    for (size_t i = 0; i < t.cpus.size(); ++i)
        if (bit_test(mask, i))
            out.push_back(t.cpus[i].cpu_id);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<uint32_t> cores_of_numa(const CpuTopology &t, size_t numa) {
    std::vector<uint32_t> out;
    for (uint32_t k = 0; k < t.cores.size(); ++k)
        if (t.cores[k].numa == numa)
            out.push_back(k);
    return out;
}

// CPU ids below the highest published one that are missing: the driver's
// --reserved-cpus (an unpublished top CPU shows as a core short of threads).
std::vector<int32_t> reserved(const CpuTopology &t) {
    std::vector<int32_t> out;
    if (t.grouped || t.cpus.empty())
        return out;
    int32_t max = 0;
    for (const CpuInfo &c : t.cpus)
        max = std::max(max, c.cpu_id);
    for (int32_t id = 0; id < max; ++id)
        if (!t.by_cpu_id.count(id))
            out.push_back(id);
    return out;
}

std::string holder(const ClaimHolding &c, const InventoryOptions &o) {
    auto it = c.labels.find(o.job_label);
    if (it != c.labels.end())
        return "Slurm job " + it->second + " (claim " + c.ns + "/" + c.name + ")";
    return "held by claim " + c.ns + "/" + c.name;
}

void add_claims(NodeReport &r, const NodeEntry &e, const std::vector<ClaimHolding> &claims,
                const InventoryOptions &o) {
    const CpuTopology &t = *e.topology.cpu;
    for (const ClaimHolding &c : claims) {
        if (!c.allocated)
            continue;
        for (const AllocationResult &a : c.results) {
            if ((c.nodeName.empty() ? a.pool : c.nodeName) != e.name)
                continue;
            Unavailable u;
            u.reason = holder(c, o);
            if (a.driver == o.cpu_driver) {
                auto it = t.by_device.find(a.device);
                if (it == t.by_device.end())
                    continue;  // the inventory reports it as a claim error
                u.kind = "cpu";
                u.device = a.device;
                if (!t.grouped)
                    u.cpus.push_back(t.cpus[it->second].cpu_id);
                else if (auto q = a.consumedCapacity.find(o.cpu_driver + "/cpu");
                         q != a.consumedCapacity.end())
                    u.reason += ", " + q->second + " CPUs";
            } else {
                const int g = gpu_index_of(e.topology, a.driver, a.device);
                if (g < 0)
                    continue;
                u.kind = "gpu";
                u.device = e.topology.gpus[static_cast<size_t>(g)].device;
                if (u.device != a.device)
                    u.reason += " through " + a.device;
            }
            r.unavailable.push_back(std::move(u));
        }
    }
}

void add_unavailable(NodeReport &r, const NodeEntry &e) {
    const CpuTopology &t = *e.topology.cpu;
    for (int32_t id : r.reserved_cpus)
        r.unavailable.push_back({"cpu", "cpu" + std::to_string(id), {id},
                                 "reserved: not published by the CPU driver"});
    for (const UnavailableCpus &u : e.topology.unavailable_cpus) {
        std::set<std::string> devices;
        for (uint32_t i : u.cpus)
            devices.insert(t.cpus[i].device);
        for (const std::string &d : devices) {
            Unavailable x{"cpu", d, {}, u.reason};
            for (uint32_t i : u.cpus)
                if (!t.grouped && t.cpus[i].device == d)
                    x.cpus.push_back(t.cpus[i].cpu_id);
            r.unavailable.push_back(std::move(x));
        }
    }
    for (const GpuInfo &g : e.topology.gpus)
        if (!g.unavailable.empty())
            r.unavailable.push_back({"gpu", g.device, {}, g.unavailable});
}

std::string id_list(const std::vector<uint32_t> &v) {
    std::vector<int32_t> ids(v.begin(), v.end());
    return format_cpuset(ids);
}

void slurm_lines(NodeReport &r, const NodeTopology &topo, const std::string &gres_type) {
    r.slurm_conf = "NodeName=" + r.name + " Sockets=" + std::to_string(r.sockets) +
                   " CoresPerSocket=" + std::to_string(r.cores_per_socket) +
                   " ThreadsPerCore=" + std::to_string(r.threads_per_core);
    if (!topo.gpus.empty())
        r.slurm_conf += " Gres=gpu:" + (gres_type.empty() ? "" : gres_type + ":") +
                        std::to_string(topo.gpus.size());
    for (const GpuReport &g : r.gpus) {
        std::string line = "NodeName=" + r.name + " Name=gpu";
        if (!gres_type.empty())
            line += " Type=" + gres_type;
        line += " File=/dev/nvidia" + std::to_string(g.minor);
        if (!g.slurm_cores.empty())
            line += " Cores=" + id_list(g.slurm_cores);
        r.gres_conf.push_back(std::move(line));
    }
}

void add_topology(NodeReport &r, const NodeEntry &e) {
    const CpuTopology &t = *e.topology.cpu;
    r.cpu_mode = cpu_mode(t);
    r.cpus = static_cast<uint32_t>(t.cpus.size());
    const SlurmNodeDef d = slurm_view(e.topology);
    r.sockets = d.sockets;
    r.cores_per_socket = d.cores_per_socket;
    r.threads_per_core = d.threads_per_core;
    if (!r.cores_per_socket || !r.threads_per_core) {
        // Slurm describes the hardware; the largest socket and core stand for it.
        for (const SocketInfo &s : t.sockets)
            r.cores_per_socket = std::max(r.cores_per_socket, s.ncores);
        r.threads_per_core = t.max_threads_per_core;
        r.warnings.push_back("sockets or cores differ in size as published; slurm.conf line "
                             "uses the largest");
    }
    for (size_t i = 0; i < t.numas.size(); ++i) {
        const NumaInfo &n = t.numas[i];
        r.numa_nodes.push_back({n.id, t.sockets[n.socket].id, n.ncpus, ids_of(t, n.mask),
                                cores_of_numa(t, i), n.pcie_roots});
    }
    for (const CellInfo &c : t.cells)
        r.l3_groups.push_back({t.numas[c.numa].id, c.l3_id, ids_of(t, c.mask)});
    std::string unknown;  // GPUs of unknown CPU affinity
    for (size_t i = 0; i < e.topology.gpus.size(); ++i) {
        const GpuInfo &g = e.topology.gpus[i];
        GpuReport x;
        x.index = static_cast<uint32_t>(i);
        x.device = g.device;
        x.driver = g.driver.str();
        x.uuid = g.uuid;
        x.model = g.model.str();
        x.pci_bus_id = g.pci_bus_id.str();
        x.pcie_root = g.pcie_root.str();
        x.minor = g.minor;
        x.numa = g.numa == kUnknown ? -1 : g.numa_id;
        x.affinity_source = affinity_source_name(g.affinity_source);
        if (g.numa != kUnknown)
            x.slurm_cores = cores_of_numa(t, static_cast<size_t>(g.numa));
        else
            unknown += (unknown.empty() ? "" : ", ") + g.device;
        x.partitions = g.children;
        r.gpus.push_back(std::move(x));
    }
    // The core's notes say why per device; this says what it means here.
    if (!unknown.empty())
        r.warnings.push_back("GPUs of unknown CPU affinity (" + unknown +
                             "): placement treats them as near no NUMA node and their "
                             "gres.conf lines have no Cores=; add Cores= if you know it");
    if (t.grouped)
        r.warnings.push_back("grouped mode (" + r.cpu_mode.substr(8) +
                             "): the CPU driver publishes counts per group, so Slurm's claims "
                             "isolate CPU counts per group, not individual CPUs; run dra.cpu in "
                             "individual mode for exact CPUs");
}

std::string selector_text(const Discovery &d) {
    return d.node_selector.empty() ? std::string("NodeSelector (unset: every node)")
                                   : "NodeSelector=" + d.node_selector;
}

// The node's mode under opts, and for an external node its definition or
// what keeps the plugin from creating it. The same rules as the plugin's
// (external_spec, kube_drain_cause); what slurmctld already has is not
// known here, so a node's Slurm state is not.
void add_mode(NodeReport &r, const NodeEntry *e, const std::optional<Discovery> &d) {
    if (!d) {
        r.mode = "slurmd";
        r.mode_note = "NodeDiscovery=none: needs a slurmd and the slurm.conf line below";
        return;
    }
    auto k = d->nodes.find(r.name);
    if (k == d->nodes.end()) {
        r.mode = "slurmd";
        r.mode_note = "not matched by " + selector_text(*d) +
                      ": needs a slurmd and the slurm.conf line below";
        return;
    }
    r.mode = "external";
    const std::string matched = "matched by " + selector_text(*d);
    std::string why;
    if (!e)
        why = "publishes no ResourceSlices of the configured drivers";
    else if (!e->invalid.empty())
        why = e->invalid;
    std::optional<ExternalNodeSpec> spec;
    if (why.empty())
        spec = external_spec(e->topology, k->second, d->features, &why);
    if (!spec) {
        r.mode_note = matched + ", but not created: " + why;
        return;
    }
    r.external_node = nodeline(*spec, true);
    r.slurm_conf.clear();  // nothing to write: the plugin makes the node
    r.gres_conf.clear();
    if (const std::string cause = kube_drain_cause(k->second); !cause.empty())
        r.mode_note = matched + "; " + cause +
                      ": not created while that lasts, and drained if it exists";
    else
        r.mode_note = matched + ": an EXTERNAL Slurm node, no slurmd";
}

}  // namespace

Report build_report(const std::vector<ResourceSlice> &slices,
                    const std::vector<ClaimHolding> &claims, const ReportOptions &opts) {
    Report rep;
    std::vector<ClaimHolding> held;
    held.reserve(claims.size());
    for (const ClaimHolding &c : claims) held.push_back(k8s::asHeld(c, opts.owner));
    const Inventory inv = Inventory::build(slices, held, opts.inventory);
    rep.claim_errors = inv.claim_errors();
    std::vector<const NodeEntry *> nodes;
    for (const NodeEntry &e : inv.nodes())
        nodes.push_back(&e);
    std::sort(nodes.begin(), nodes.end(),
              [](const NodeEntry *a, const NodeEntry *b) { return a->name < b->name; });
    for (const NodeEntry *e : nodes) {
        NodeReport r;
        r.name = e->name;
        r.invalid = e->invalid;
        r.overlaps = e->overlaps;
        if (e->topology.cpu) {
            add_topology(r, *e);
            r.reserved_cpus = reserved(*e->topology.cpu);
            add_unavailable(r, *e);
            add_claims(r, *e, held, opts.inventory);
            slurm_lines(r, e->topology, opts.gres_type);
        }
        r.warnings.insert(r.warnings.end(), e->warnings.begin(), e->warnings.end());
        add_mode(r, e, opts.discovery);
        rep.nodes.push_back(std::move(r));
    }
    // Matched nodes without slices: discovery waits for them.
    if (opts.discovery) {
        for (const auto &[name, k] : opts.discovery->nodes) {
            if (inv.node(name))
                continue;
            NodeReport r;
            r.name = name;
            add_mode(r, nullptr, opts.discovery);
            rep.nodes.push_back(std::move(r));
        }
        std::sort(rep.nodes.begin(), rep.nodes.end(),
                  [](const NodeReport &a, const NodeReport &b) { return a.name < b.name; });
    }
    return rep;
}

}  // namespace k8s_cons_tres::inspect
