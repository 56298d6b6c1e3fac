// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/topology_build.h"

#include "core/topology_build_attrs.h"
#include "core/topology_reserved.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace k8s_cons_tres {
namespace {

using namespace detail;
constexpr uint32_t kMaxThreadsPerCore = 8;  // placement keeps caps in 4 bits

// The NUMA node of a dra.cpu device, from whichever attribute it publishes.
std::optional<int64_t> cpu_numa(AttrReader &r, const std::string &drv) {
    return r.first_int({kNumaAttr, drv + "/numaNodeID", kNetNumaAttr});
}

std::optional<RawCpu> read_individual_cpu(const SliceDevices &s, size_t i, const std::string &drv,
                                          std::string &err, Notes &notes) {
    AttrReader r(s, i, err, notes);
    const std::string &name = s.name(i);
    auto cpu = r.int_attr(drv + "/cpuID", true);
    auto core = r.int_attr(drv + "/coreID", true);
    auto socket = r.int_attr(drv + "/socketID", true);
    auto numa = cpu_numa(r, drv);
    if (!numa && err.empty())
        err = "device " + name + ": missing attribute " + kNumaAttr + " (nor " + drv +
              "/numaNodeID, " + kNetNumaAttr + ")";
    auto l3 = r.int_attr(drv + "/cacheL3ID", false);
    auto type = r.str_attr(drv + "/coreType", false);
    r.bool_attr(drv + "/smtEnabled", false);  // type check only
    std::vector<std::string> roots = r.str_list(kPcieRootAttr);
    if (!err.empty())
        return std::nullopt;
    for (int64_t v : {*cpu, *core, *socket, *numa}) {
        if (v < 0 || !fits_int32(v)) {
            err = "device " + name + ": topology id out of range";
            return std::nullopt;
        }
    }
    RawCpu c;
    c.cpu_id = static_cast<int32_t>(*cpu);
    c.core_id = static_cast<int32_t>(*core);
    c.socket_id = static_cast<int32_t>(*socket);
    c.numa_id = static_cast<int32_t>(*numa);
    // cacheL3ID -1 (no L3) or absent: each NUMA node counts as one L3 group.
    c.l3_id = l3 && *l3 >= 0 && fits_int32(*l3) ? static_cast<int32_t>(*l3) : c.numa_id;
    c.core_type = type.value_or("standard");
    c.device = name;
    c.pcie_roots = std::move(roots);
    return c;
}

struct GroupDev {
    std::string name;
    int32_t socket = 0;
    int32_t numa = 0;
    int64_t ncpus = 0;     // every CPU of the group (numCPUs)
    int64_t reserved = 0;  // of them not published as capacity
    bool smt = false;
    std::vector<std::string> pcie_roots;
};

std::optional<GroupDev> read_group(const SliceDevices &s, size_t i, const std::string &drv,
                                   std::string &err, Notes &notes) {
    AttrReader r(s, i, err, notes);
    const std::string &name = s.name(i);
    auto numa = cpu_numa(r, drv);
    auto socket = r.int_attr(drv + "/socketID", false);
    auto smt = r.bool_attr(drv + "/smtEnabled", false);
    auto num = r.int_attr(drv + "/numCPUs", false);
    std::vector<std::string> roots = r.str_list(kPcieRootAttr);
    if (!err.empty())
        return std::nullopt;
    auto cap = parse_count(*s.capacity(i, drv + "/cpu"));
    if (!cap && !num) {
        err = "device " + name + ": capacity " + drv + "/cpu is not a CPU count";
        return std::nullopt;
    }
    GroupDev g;
    g.name = name;
    // numCPUs counts the group's CPUs; the capacity leaves out those the
    // driver reserves, which still occupy Slurm core indices.
    g.ncpus = num && *num > 0 ? *num : *cap;
    g.reserved = cap && num && *num > *cap ? *num - *cap : 0;
    g.smt = smt.value_or(false);
    g.socket = socket && fits_int32(*socket) ? static_cast<int32_t>(*socket) : 0;
    // A socket group stands for its own NUMA domain.
    g.numa = numa && fits_int32(*numa) ? static_cast<int32_t>(*numa) : g.socket;
    g.pcie_roots = std::move(roots);
    if (g.ncpus <= 0 || g.ncpus > 65536) {
        err = "device " + name + ": capacity " + drv + "/cpu out of range";
        return std::nullopt;
    }
    return g;
}

// Grouped mode publishes counts only; the CPUs are laid out here, siblings
// adjacent, ids in group order. The ids are ours: they travel as the cpuset.
std::vector<RawCpu> synthesize_cpus(std::vector<GroupDev> &groups) {
    std::sort(groups.begin(), groups.end(), [](const GroupDev &a, const GroupDev &b) {
        return std::tie(a.socket, a.numa, a.name) < std::tie(b.socket, b.numa, b.name);
    });
    std::vector<RawCpu> out;
    int32_t next_id = 0;
    std::map<int32_t, int32_t> next_core;  // per socket
    for (const GroupDev &g : groups) {
        const int64_t tpc = g.smt && g.ncpus % 2 == 0 ? 2 : 1;
        for (int64_t i = 0; i < g.ncpus; ++i) {
            RawCpu c;
            // the reserved ones last: the driver's own order is not known
            c.cpu_id = i >= g.ncpus - g.reserved ? -(next_id++) - 1 : next_id++;
            c.core_id = next_core[g.socket] + static_cast<int32_t>(i / tpc);
            c.socket_id = g.socket;
            c.numa_id = g.numa;
            c.l3_id = g.numa;
            c.device = g.name;
            c.pcie_roots = g.pcie_roots;
            out.push_back(c);
        }
        next_core[g.socket] += static_cast<int32_t>(g.ncpus / tpc);
    }
    return out;
}

void index_groups(CpuTopology &t) {
    std::map<std::string, Words> masks;
    for (size_t i = 0; i < t.cpus.size(); ++i) {
        Words &m = masks[t.cpus[i].device];
        m.resize(t.words);
        bit_set(m, i);
    }
    for (auto &[name, mask] : masks) {
        t.by_device[name] = static_cast<uint32_t>(t.groups.size());
        t.groups.push_back({name, std::move(mask)});
    }
}

}  // namespace

int64_t CpuTopology::cpu_index(int32_t cpu_id) const {
    auto it = by_cpu_id.find(cpu_id);
    return it == by_cpu_id.end() ? -1 : static_cast<int64_t>(it->second);
}

bool CpuTopology::cpuset_honoured() const {
    return grouped && groups.size() == 1 &&
           popcount_and(groups.front().mask.data(), groups.front().mask.data(), words) == cpus.size();
}

std::string CpuTopology::fingerprint() const {
    std::string s = grouped ? "G" : "I";
    for (const CpuInfo &c : cpus) {
        const CoreInfo &k = cores[c.core];
        s += std::to_string(c.cpu_id) + ',' + std::to_string(k.core_id) + ',' +
             std::to_string(sockets[k.socket].id) + ',' +
             std::to_string(numas[k.numa].id) + ',' +
             std::to_string(cells[k.cell].l3_id) + ',' + k.core_type + ',' +
             c.device + ';';
    }
    for (const NumaInfo &n : numas)
        for (const std::string &r : n.pcie_roots)
            s += 'r' + std::to_string(n.id) + '=' + r + ';';
    return s;
}

std::shared_ptr<CpuTopology> make_cpu_topology(std::vector<RawCpu> raw,
                                               std::string *err) {
    auto t = std::make_shared<CpuTopology>();
    std::sort(raw.begin(), raw.end(), [](const RawCpu &a, const RawCpu &b) {
        return std::tie(a.socket_id, a.core_id, a.cpu_id) <
               std::tie(b.socket_id, b.core_id, b.cpu_id);
    });
    t->words = words_for(raw.size());
    std::map<int32_t, uint32_t> numa_index;
    std::map<std::pair<uint32_t, int32_t>, uint32_t> cell_index;
    std::set<int32_t> numa_ids;
    for (const RawCpu &c : raw)
        numa_ids.insert(c.numa_id);
    for (int32_t id : numa_ids) {
        numa_index[id] = static_cast<uint32_t>(t->numas.size());
        NumaInfo n;
        n.id = id;
        n.mask.assign(t->words, 0);
        t->numas.push_back(std::move(n));
    }
    for (size_t i = 0; i < raw.size(); ++i) {
        const RawCpu &c = raw[i];
        if (t->by_cpu_id.count(c.cpu_id)) {
            *err = "device " + c.device + ": duplicate dra.cpu/cpuID " +
                   std::to_string(c.cpu_id);
            return nullptr;
        }
        const bool new_socket = t->sockets.empty() || t->sockets.back().id != c.socket_id;
        if (new_socket)
            t->sockets.push_back({c.socket_id, static_cast<uint32_t>(t->cores.size()), 0});
        const uint32_t numa = numa_index[c.numa_id];
        const bool new_core = new_socket || raw[i - 1].core_id != c.core_id;
        if (new_core) {
            auto key = std::make_pair(numa, c.l3_id);
            if (!cell_index.count(key)) {
                cell_index[key] = static_cast<uint32_t>(t->cells.size());
                t->cells.push_back({numa, c.l3_id, {}, Words(t->words, 0)});
            }
            CoreInfo k;
            k.first_cpu = static_cast<uint32_t>(i);
            k.socket = static_cast<uint32_t>(t->sockets.size() - 1);
            k.numa = numa;
            k.cell = cell_index[key];
            k.core_id = c.core_id;
            k.core_type = c.core_type;
            t->cells[k.cell].cores.push_back(static_cast<uint32_t>(t->cores.size()));
            t->cores.push_back(k);
            t->sockets.back().ncores++;
        }
        CoreInfo &k = t->cores.back();
        if (k.numa != numa || t->cells[k.cell].l3_id != c.l3_id) {
            *err = "device " + c.device + ": core " + std::to_string(c.core_id) +
                   " of socket " + std::to_string(c.socket_id) +
                   " spans NUMA nodes or L3 groups";
            return nullptr;
        }
        NumaInfo &n = t->numas[numa];
        if (n.ncpus == 0)
            n.socket = k.socket;
        else if (n.socket != k.socket) {
            *err = "device " + c.device + ": NUMA node " + std::to_string(c.numa_id) +
                   " spans sockets";
            return nullptr;
        }
        auto add_root = [&n](const std::string &r) {
            if (!r.empty() && std::find(n.pcie_roots.begin(), n.pcie_roots.end(), r) ==
                                  n.pcie_roots.end())
                n.pcie_roots.push_back(r);
        };
        add_root(c.pcie_root);
        for (const std::string &r : c.pcie_roots)
            add_root(r);
        n.ncpus++;
        bit_set(n.mask, i);
        bit_set(t->cells[k.cell].mask, i);
        CpuInfo ci;
        ci.cpu_id = c.cpu_id;
        ci.core = static_cast<uint32_t>(t->cores.size() - 1);
        ci.thread = k.nthreads++;
        ci.device = c.device;
        if (k.nthreads > kMaxThreadsPerCore) {
            *err = "device " + c.device + ": more than 8 threads in one core";
            return nullptr;
        }
        t->max_threads_per_core = std::max(t->max_threads_per_core, k.nthreads);
        t->by_cpu_id[c.cpu_id] = static_cast<uint32_t>(i);
        t->cpus.push_back(std::move(ci));
    }
    t->core_leads.assign(t->words, 0);
    t->uniform_threads = t->max_threads_per_core;
    for (const CoreInfo &k : t->cores) {
        bit_set(t->core_leads, k.first_cpu);
        if (k.nthreads != t->max_threads_per_core)
            t->uniform_threads = 0;
    }
    if (!std::has_single_bit(t->uniform_threads))
        t->uniform_threads = 0;
    if (t->numas.size() > 64 || t->cells.size() > 64 || t->sockets.size() > 64) {
        *err = "more than 64 sockets, NUMA nodes or L3 groups";
        return nullptr;
    }
    return t;
}

namespace {

// "0000:65:00.0" -> one number, so that ids written with other domain
// widths or case (bare pcieBusID of older NVIDIA releases) sort alike.
uint64_t pci_key(const std::string &id) {
    unsigned long long dom = 0, bus = 0, dev = 0, fn = 0;
    if (std::sscanf(id.c_str(), "%llx:%llx:%llx.%llx", &dom, &bus, &dev, &fn) == 4)
        return (dom << 24) | (bus << 16) | (dev << 8) | fn;
    return UINT64_MAX;  // unparsable ids sort last, by text among themselves
}

}  // namespace

const char *affinity_source_name(AffinitySource s) {
    switch (s) {
    case AffinitySource::NumaAttribute:
        return "numa-attribute";
    case AffinitySource::PcieRoot:
        return "pcie-root";
    case AffinitySource::Unknown:
        break;
    }
    return "unknown";
}

int gpu_index_of(const NodeTopology &t, const std::string &driver, const std::string &device) {
    for (size_t i = 0; i < t.gpus.size(); ++i) {
        const GpuInfo &g = t.gpus[i];
        if (g.driver != driver)
            continue;
        if (g.device == device ||
            std::find(g.children.begin(), g.children.end(), device) != g.children.end())
            return static_cast<int>(i);
    }
    return -1;
}

void attach_gpus(NodeTopology &t, GresOrder order) {
    auto by_minor = [](const GpuInfo &a, const GpuInfo &b) {
        return std::tie(a.minor, a.device) < std::tie(b.minor, b.device);
    };
    auto by_pci = [](const GpuInfo &a, const GpuInfo &b) {
        const uint64_t ka = pci_key(a.pci_bus_id), kb = pci_key(b.pci_bus_id);
        return std::tie(ka, a.pci_bus_id, a.minor) < std::tie(kb, b.pci_bus_id, b.minor);
    };
    if (order == GresOrder::PciBusId)
        std::sort(t.gpus.begin(), t.gpus.end(), by_pci);
    else
        std::sort(t.gpus.begin(), t.gpus.end(), by_minor);
    for (GpuInfo &g : t.gpus) {
        g.numa = g.socket = kUnknown;
        for (size_t i = 0; t.cpu && i < t.cpu->numas.size(); ++i) {
            if (t.cpu->numas[i].id == g.numa_id && g.numa_id != kUnknown) {
                g.numa = static_cast<int32_t>(i);
                g.socket = static_cast<int32_t>(t.cpu->numas[i].socket);
            }
        }
        if (g.numa == kUnknown)
            g.affinity_source = AffinitySource::Unknown;
        else if (g.affinity_source == AffinitySource::Unknown)
            g.affinity_source = AffinitySource::NumaAttribute;
    }
}

namespace {

// Marks the CPUs of tainted dra.cpu devices (a CPU, or a whole group).
void mark_tainted_cpus(const CpuTopology &c,
                       const std::map<std::string, std::vector<std::string>> &tainted,
                       std::vector<UnavailableCpus> &out) {
    for (const auto &[reason, devices] : tainted) {
        UnavailableCpus u;
        u.reason = reason;
        for (const std::string &d : devices) {
            auto it = c.by_device.find(d);
            if (it == c.by_device.end())
                continue;
            if (!c.grouped) {
                u.cpus.push_back(it->second);
                continue;
            }
            for (size_t i = 0; i < c.cpus.size(); ++i)
                if (bit_test(c.groups[it->second].mask, i))
                    u.cpus.push_back(static_cast<uint32_t>(i));
        }
        std::sort(u.cpus.begin(), u.cpus.end());
        u.cpus.erase(std::unique(u.cpus.begin(), u.cpus.end()), u.cpus.end());
        out.push_back(std::move(u));
    }
}

// The first taint of a device that keeps new users away, "" if none.
std::string device_taint(const SliceDevices &s, size_t i) {
    for (const DeviceTaint &x : s.taints(i))
        if (std::string r = taint_reason(x); !r.empty())
            return r;
    return "";
}

struct CpuDevices {
    std::vector<RawCpu> cpus;
    std::vector<GroupDev> groups;
    std::map<std::string, std::vector<std::string>> tainted;  // reason -> devices
};

bool read_cpu_devices(const std::vector<const SliceDevices *> &slices, const std::string &drv,
                      CpuDevices &out, std::string &err, Notes &notes) {
    const std::string cpu_capacity = drv + "/cpu";
    for (const SliceDevices *s : slices) {
        if (s->driver() != drv)
            continue;
        for (size_t i = 0; i < s->size(); ++i) {
            if (s->capacity(i, cpu_capacity)) {
                if (auto g = read_group(*s, i, drv, err, notes))
                    out.groups.push_back(std::move(*g));
            } else if (auto c = read_individual_cpu(*s, i, drv, err, notes)) {
                out.cpus.push_back(std::move(*c));
            }
            if (!err.empty())
                return false;
            if (std::string r = device_taint(*s, i); !r.empty())
                out.tainted[r].push_back(s->name(i));
        }
    }
    if (!out.cpus.empty() && !out.groups.empty()) {
        err = "device " + out.groups.front().name + ": " + drv +
              " publishes both individual and grouped devices";
        return false;
    }
    return true;
}

}  // namespace

CpuPart build_cpu_part(const std::vector<const SliceDevices *> &slices, const BuildOptions &opts) {
    CpuPart part;
    CpuDevices cd;
    if (!read_cpu_devices(slices, opts.cpu_driver, cd, part.error, part.notes))
        return part;
    const bool grouped = cd.cpus.empty() && !cd.groups.empty();
    if (grouped)
        cd.cpus = synthesize_cpus(cd.groups);
    else
        add_reserved_placeholders(cd.cpus);
    if (cd.cpus.empty())  // no CPU pool (yet)
        return part;
    auto topo = make_cpu_topology(std::move(cd.cpus), &part.model_error);
    if (!topo)
        return part;
    topo->grouped = grouped;
    if (grouped)
        index_groups(*topo);
    else
        for (size_t i = 0; i < topo->cpus.size(); ++i)
            if (!topo->cpus[i].device.empty())
                topo->by_device[topo->cpus[i].device] = static_cast<uint32_t>(i);
    if (auto reserved = reserved_cpu_indices(*topo); !reserved.empty())
        part.unavailable.push_back({std::move(reserved), kReservedReason});
    mark_tainted_cpus(*topo, cd.tainted, part.unavailable);
    part.cpu = std::move(topo);
    return part;
}

BuildResult build_node_topology(const std::string &node, const CpuPart &cpu,
                                const std::vector<const SliceDevices *> &slices,
                                const BuildOptions &opts) {
    BuildResult res;
    res.topology.node = node;
    if (!cpu.error.empty()) {
        res.error = cpu.error;
        return res;
    }
    Notes notes = cpu.notes;
    std::string err;
    if (!read_gpus(slices, opts, res.topology.gpus, err, notes)) {
        res.error = err;
        return res;
    }
    if (!cpu.cpu && cpu.model_error.empty()) {  // no CPU pool: GPUs alone are not placeable
        res.ok = true;
        res.warnings = notes.lines();
        return res;
    }
    if (!cpu.cpu) {
        res.error = cpu.model_error;
        return res;
    }
    res.topology.cpu = cpu.cpu;
    res.topology.unavailable_cpus = cpu.unavailable;
    for (const GpuInfo &g : res.topology.gpus) {
        if (opts.gres_order == GresOrder::PciBusId && g.pci_bus_id.empty()) {
            res.error = "device " + g.device + ": missing attribute " +
                        std::string(kPciBusAttr) + " (GRES order is by PCI bus id)";
            return res;
        }
    }
    attach_gpus(res.topology, opts.gres_order);
    for (const GpuInfo &g : res.topology.gpus)
        if (g.numa_id != kUnknown && g.numa == kUnknown)
            notes.add(g.device, "NUMA node " + std::to_string(g.numa_id) + " has no CPUs");
    resolve_gpu_affinity(res.topology, notes);
    res.warnings = notes.lines();
    res.ok = true;
    return res;
}

BuildResult build_node_topology(const std::string &node,
                                const std::vector<const ResourceSlice *> &slices,
                                const BuildOptions &opts) {
    std::vector<PlainSliceDevices> views;
    views.reserve(slices.size());
    std::vector<const SliceDevices *> devices;
    for (const ResourceSlice *s : slices)
        devices.push_back(&views.emplace_back(*s));
    return build_node_topology(node, build_cpu_part(devices, opts), devices, opts);
}

}  // namespace k8s_cons_tres
