// SPDX-License-Identifier: GPL-2.0-or-later
// The inspect report as text for people and as JSON for scripts.
#include "k8s_client/json.h"
#include "tools/inspect_report.h"

#include <rapidjson/prettywriter.h>

namespace k8s_cons_tres::inspect {
namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void str(Writer &w, const std::string &s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

template <class T>
void ints(Writer &w, const char *key, const std::vector<T> &v) {
    w.Key(key);
    w.StartArray();
    for (T x : v)
        w.Int64(static_cast<int64_t>(x));
    w.EndArray();
}

void strings(Writer &w, const char *key, const std::vector<std::string> &v) {
    w.Key(key);
    w.StartArray();
    for (const std::string &s : v)
        str(w, s);
    w.EndArray();
}

void kv(Writer &w, const char *key, const std::string &v) {
    w.Key(key);
    str(w, v);
}

// A string, or null when empty (unknown).
void nullable(Writer &w, const char *key, const std::string &v) {
    w.Key(key);
    if (v.empty())
        w.Null();
    else
        str(w, v);
}

void kv(Writer &w, const char *key, int64_t v) {
    w.Key(key);
    w.Int64(v);
}

void write_gpu(Writer &w, const GpuReport &g) {
    w.StartObject();
    kv(w, "index", g.index);
    kv(w, "device", g.device);
    kv(w, "driver", g.driver);
    kv(w, "minor", g.minor);
    kv(w, "uuid", g.uuid);
    kv(w, "model", g.model);
    kv(w, "pci_bus_id", g.pci_bus_id);
    nullable(w, "pcie_root", g.pcie_root);
    w.Key("numa");
    if (g.numa < 0)
        w.Null();
    else
        w.Int(g.numa);
    kv(w, "affinity_source", g.affinity_source);
    ints(w, "slurm_cores", g.slurm_cores);
    strings(w, "partitions", g.partitions);
    w.EndObject();
}

void write_node(Writer &w, const NodeReport &n) {
    w.StartObject();
    kv(w, "name", n.name);
    w.Key("usable");
    w.Bool(n.invalid.empty());
    nullable(w, "invalid", n.invalid);
    strings(w, "overlaps", n.overlaps);
    kv(w, "mode", n.mode);
    kv(w, "mode_note", n.mode_note);
    nullable(w, "external_node", n.external_node);
    kv(w, "cpu_mode", n.cpu_mode);
    kv(w, "sockets", n.sockets);
    kv(w, "cores_per_socket", n.cores_per_socket);
    kv(w, "threads_per_core", n.threads_per_core);
    kv(w, "cpus", n.cpus);
    w.Key("numa_nodes");
    w.StartArray();
    for (const NumaReport &m : n.numa_nodes) {
        w.StartObject();
        kv(w, "id", m.id);
        kv(w, "socket", m.socket);
        kv(w, "ncpus", m.ncpus);
        ints(w, "cpus", m.cpus);
        ints(w, "slurm_cores", m.slurm_cores);
        strings(w, "pcie_roots", m.pcie_roots);
        w.EndObject();
    }
    w.EndArray();
    w.Key("l3_groups");
    w.StartArray();
    for (const L3Report &l : n.l3_groups) {
        w.StartObject();
        kv(w, "numa", l.numa);
        kv(w, "l3_id", l.l3_id);
        ints(w, "cpus", l.cpus);
        w.EndObject();
    }
    w.EndArray();
    w.Key("gpus");
    w.StartArray();
    for (const GpuReport &g : n.gpus)
        write_gpu(w, g);
    w.EndArray();
    ints(w, "reserved_cpus", n.reserved_cpus);
    w.Key("unavailable");
    w.StartArray();
    for (const Unavailable &u : n.unavailable) {
        w.StartObject();
        kv(w, "kind", u.kind);
        kv(w, "device", u.device);
        ints(w, "cpus", u.cpus);
        kv(w, "reason", u.reason);
        w.EndObject();
    }
    w.EndArray();
    strings(w, "warnings", n.warnings);
    kv(w, "slurm_conf", n.slurm_conf);
    strings(w, "gres_conf", n.gres_conf);
    w.EndObject();
}

std::string ids(const std::vector<int32_t> &v) {
    return v.empty() ? "-" : format_cpuset(v);
}

std::string cores(const std::vector<uint32_t> &v) {
    return ids(std::vector<int32_t>(v.begin(), v.end()));
}

std::string joined(const std::vector<std::string> &v) {
    std::string out;
    for (const std::string &s : v)
        out += (out.empty() ? "" : ",") + s;
    return out;
}

void text_node(std::string &o, const NodeReport &n) {
    o += "node " + n.name;
    if (!n.invalid.empty())
        o += ": NOT USABLE: " + n.invalid;
    o += "\n";
    o += "  mode: " + n.mode + "; " + n.mode_note + "\n";
    if (!n.cpu_mode.empty()) {
        o += "  " + std::to_string(n.sockets) + " sockets, " +
             std::to_string(n.numa_nodes.size()) + " NUMA nodes, " +
             std::to_string(n.l3_groups.size()) + " L3 groups, " + std::to_string(n.cpus) +
             " CPUs, CPU driver mode " + n.cpu_mode + "\n";
    }
    for (const NumaReport &m : n.numa_nodes) {
        o += "  NUMA " + std::to_string(m.id) + " (socket " + std::to_string(m.socket) +
             "): " + std::to_string(m.ncpus) + " CPUs " + ids(m.cpus) + ", Slurm cores " +
             cores(m.slurm_cores);
        if (!m.pcie_roots.empty())
            o += ", pcieRoots " + joined(m.pcie_roots);
        o += "\n";
    }
    for (const L3Report &l : n.l3_groups)
        o += "  L3 " + std::to_string(l.l3_id) + " (NUMA " + std::to_string(l.numa) +
             "): CPUs " + ids(l.cpus) + "\n";
    for (const GpuReport &g : n.gpus) {
        o += "  GPU " + std::to_string(g.index) + " " + g.driver + "/" + g.device + ": NUMA " +
             (g.numa < 0 ? std::string("unknown") : std::to_string(g.numa)) + " (" +
             g.affinity_source + "), pcieRoot " + (g.pcie_root.empty() ? "-" : g.pcie_root);
        if (!g.pci_bus_id.empty())
            o += ", PCI " + g.pci_bus_id;
        if (!g.partitions.empty())
            o += ", partitions " + joined(g.partitions);
        o += "\n";
    }
    if (!n.reserved_cpus.empty())
        o += "  reserved CPUs (not published): " + ids(n.reserved_cpus) + "\n";
    for (const Unavailable &u : n.unavailable) {
        o += "  unavailable " + u.kind + " " + u.device;
        if (!u.cpus.empty() && u.device != "cpu" + std::to_string(u.cpus.front()))
            o += " (CPU " + ids(u.cpus) + ")";
        o += ": " + u.reason + "\n";
    }
    for (const std::string &x : n.warnings)
        o += "  warning: " + x + "\n";
    if (!n.external_node.empty())
        o += "  created as: " + n.external_node + "\n";
    if (!n.slurm_conf.empty())
        o += "  slurm.conf: " + n.slurm_conf + "\n";
    for (const std::string &l : n.gres_conf)
        o += "  gres.conf:  " + l + "\n";
}

}  // namespace

std::string report_json(const Report &r) {
    rapidjson::StringBuffer buf;
    Writer w(buf);
    w.SetIndent(' ', 1);
    w.StartObject();
    w.Key("nodes");
    w.StartArray();
    for (const NodeReport &n : r.nodes)
        write_node(w, n);
    w.EndArray();
    strings(w, "claim_errors", r.claim_errors);
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

std::string report_text(const Report &r) {
    std::string o;
    for (const NodeReport &n : r.nodes)
        text_node(o, n);
    for (const std::string &e : r.claim_errors)
        o += "claim error: " + e + "\n";
    if (r.nodes.empty())
        o += "no node publishes ResourceSlices of the configured drivers\n";
    return o;
}

}  // namespace k8s_cons_tres::inspect
