// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/topology_build.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace k8sdra {
namespace {

constexpr const char *kNumaAttr = "resource.kubernetes.io/numaNode";
constexpr const char *kPciBusAttr = "resource.kubernetes.io/pciBusID";
constexpr const char *kPcieRootAttr = "resource.kubernetes.io/pcieRoot";
constexpr uint32_t kMaxThreadsPerCore = 8;  // placement keeps caps in 4 bits

// Reads typed attributes of one device; the first problem is kept in error.
class AttrReader {
public:
    AttrReader(const Device &d, std::string &error) : d_(d), error_(error) {}

    std::optional<int64_t> int_attr(const std::string &name, bool required) {
        return get<int64_t>(name, required, "int");
    }
    std::optional<std::string> str_attr(const std::string &name, bool required) {
        return get<std::string>(name, required, "string");
    }
    std::optional<bool> bool_attr(const std::string &name, bool required) {
        return get<bool>(name, required, "bool");
    }

private:
    template <class T>
    std::optional<T> get(const std::string &name, bool required, const char *type) {
        auto it = d_.attributes.find(name);
        if (it == d_.attributes.end()) {
            if (required)
                fail("device " + d_.name + ": missing attribute " + name);
            return std::nullopt;
        }
        if (const T *v = std::get_if<T>(&it->second))
            return *v;
        fail("device " + d_.name + ": attribute " + name + " is not " + type);
        return std::nullopt;
    }
    void fail(const std::string &msg) {
        if (error_.empty())
            error_ = msg;
    }
    const Device &d_;
    std::string &error_;
};

bool fits_int32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

// "64", "64k" etc.: CPU capacities are plain integers; accept only those.
std::optional<int64_t> parse_count(const std::string &q) {
    if (q.empty() || q.size() > 9)
        return std::nullopt;
    int64_t v = 0;
    for (char c : q) {
        if (c < '0' || c > '9')
            return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v;
}

// The integer N of a name "gpu-N"; nullopt for MIG, partitions and others.
std::optional<int64_t> gpu_minor(const std::string &name) {
    if (name.rfind("gpu-", 0) != 0)
        return std::nullopt;
    return parse_count(name.substr(4));
}

std::optional<RawCpu> read_individual_cpu(const Device &d, std::string &err) {
    AttrReader r(d, err);
    auto cpu = r.int_attr("dra.cpu/cpuID", true);
    auto core = r.int_attr("dra.cpu/coreID", true);
    auto socket = r.int_attr("dra.cpu/socketID", true);
    std::optional<int64_t> numa;
    if (d.attributes.count(kNumaAttr))
        numa = r.int_attr(kNumaAttr, true);
    else if (d.attributes.count("dra.cpu/numaNodeID"))
        numa = r.int_attr("dra.cpu/numaNodeID", true);
    else
        numa = r.int_attr(kNumaAttr, true);  // reports it missing
    auto l3 = r.int_attr("dra.cpu/cacheL3ID", false);
    auto type = r.str_attr("dra.cpu/coreType", false);
    r.bool_attr("dra.cpu/smtEnabled", false);  // type check only
    auto root = r.str_attr(kPcieRootAttr, false);
    if (!err.empty())
        return std::nullopt;
    for (int64_t v : {*cpu, *core, *socket, *numa}) {
        if (v < 0 || !fits_int32(v)) {
            err = "device " + d.name + ": topology id out of range";
            return std::nullopt;
        }
    }
    RawCpu c;
    c.cpu_id = static_cast<int32_t>(*cpu);
    c.core_id = static_cast<int32_t>(*core);
    c.socket_id = static_cast<int32_t>(*socket);
    c.numa_id = static_cast<int32_t>(*numa);
    // Without an L3 id, each NUMA node counts as one L3 group.
    c.l3_id = l3 && fits_int32(*l3) ? static_cast<int32_t>(*l3) : c.numa_id;
    c.core_type = type.value_or("standard");
    c.device = d.name;
    c.pcie_root = root.value_or("");
    return c;
}

struct GroupDev {
    std::string name;
    int32_t socket = 0;
    int32_t numa = 0;
    int64_t ncpus = 0;
    bool smt = false;
};

std::optional<GroupDev> read_group(const Device &d, std::string &err) {
    AttrReader r(d, err);
    auto numa = r.int_attr(kNumaAttr, false);
    auto socket = r.int_attr("dra.cpu/socketID", false);
    auto smt = r.bool_attr("dra.cpu/smtEnabled", false);
    auto num = r.int_attr("dra.cpu/numCPUs", false);
    if (!err.empty())
        return std::nullopt;
    auto cap = parse_count(d.capacity.at("dra.cpu/cpu"));
    if (!cap && !num) {
        err = "device " + d.name + ": capacity dra.cpu/cpu is not a CPU count";
        return std::nullopt;
    }
    GroupDev g;
    g.name = d.name;
    g.ncpus = cap ? *cap : *num;
    g.smt = smt.value_or(false);
    g.socket = socket && fits_int32(*socket) ? static_cast<int32_t>(*socket) : 0;
    // A socket group stands for its own NUMA domain.
    g.numa = numa && fits_int32(*numa) ? static_cast<int32_t>(*numa) : g.socket;
    if (g.ncpus <= 0 || g.ncpus > 65536) {
        err = "device " + d.name + ": capacity dra.cpu/cpu out of range";
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
            c.cpu_id = next_id++;
            c.core_id = next_core[g.socket] + static_cast<int32_t>(i / tpc);
            c.socket_id = g.socket;
            c.numa_id = g.numa;
            c.l3_id = g.numa;
            c.device = g.name;
            out.push_back(c);
        }
        next_core[g.socket] += static_cast<int32_t>(g.ncpus / tpc);
    }
    return out;
}

bool is_full_gpu(const Device &d, const std::string &driver) {
    if (!gpu_minor(d.name))
        return false;
    if (driver == kNvidiaDriver) {
        auto it = d.attributes.find(driver + "/type");
        if (it != d.attributes.end()) {
            const auto *s = std::get_if<std::string>(&it->second);
            return s && *s == "gpu";
        }
    }
    return true;
}

std::optional<GpuInfo> read_gpu(const Device &d, const std::string &driver,
                                std::string &err) {
    AttrReader r(d, err);
    GpuInfo g;
    g.driver = driver;
    g.device = d.name;
    g.minor = *gpu_minor(d.name);
    g.uuid = r.str_attr(driver + "/uuid", true).value_or("");
    if (driver == kNvidiaDriver) {
        g.model = r.str_attr(driver + "/productName", false).value_or("");
    } else {
        auto idx = r.int_attr(driver + "/index", true);
        g.minor = idx.value_or(g.minor);
        g.model = r.str_attr(driver + "/model", false).value_or("");
    }
    g.pci_bus_id = r.str_attr(kPciBusAttr, false).value_or("");
    g.pcie_root = r.str_attr(kPcieRootAttr, false).value_or("");
    auto numa = r.int_attr(kNumaAttr, false);
    if (!err.empty())
        return std::nullopt;
    if (numa && *numa >= 0 && fits_int32(*numa))
        g.numa_id = static_cast<int32_t>(*numa);
    auto mem = d.capacity.find(driver + "/memory");
    if (mem == d.capacity.end())
        mem = d.capacity.find("memory");
    if (mem != d.capacity.end())
        g.memory = mem->second;
    return g;
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
        if (!c.pcie_root.empty() &&
            std::find(n.pcie_roots.begin(), n.pcie_roots.end(), c.pcie_root) ==
                n.pcie_roots.end())
            n.pcie_roots.push_back(c.pcie_root);
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

void attach_gpus(NodeTopology &t, GresOrder order) {
    auto by_minor = [](const GpuInfo &a, const GpuInfo &b) {
        return std::tie(a.minor, a.device) < std::tie(b.minor, b.device);
    };
    auto by_pci = [](const GpuInfo &a, const GpuInfo &b) {
        return std::tie(a.pci_bus_id, a.minor) < std::tie(b.pci_bus_id, b.minor);
    };
    if (order == GresOrder::PciBusId)
        std::sort(t.gpus.begin(), t.gpus.end(), by_pci);
    else
        std::sort(t.gpus.begin(), t.gpus.end(), by_minor);
    for (GpuInfo &g : t.gpus) {
        g.numa = g.socket = kUnknown;
        if (!t.cpu)
            continue;
        for (size_t i = 0; i < t.cpu->numas.size(); ++i) {
            if (t.cpu->numas[i].id == g.numa_id && g.numa_id != kUnknown) {
                g.numa = static_cast<int32_t>(i);
                g.socket = static_cast<int32_t>(t.cpu->numas[i].socket);
            }
        }
    }
}

BuildResult build_node_topology(const std::string &node,
                                const std::vector<const ResourceSlice *> &slices,
                                const BuildOptions &opts) {
    BuildResult res;
    res.topology.node = node;
    std::vector<RawCpu> cpus;
    std::vector<GroupDev> groups;
    std::string err;
    for (const ResourceSlice *s : slices) {
        const bool gpu_driver = s->driver == kNvidiaDriver || s->driver == kExampleGpuDriver;
        if (s->driver != kCpuDriver && !gpu_driver)
            continue;  // other drivers do not shape placement
        for (const Device &d : s->devices) {
            if (s->driver == kCpuDriver) {
                if (d.capacity.count("dra.cpu/cpu")) {
                    if (auto g = read_group(d, err))
                        groups.push_back(*g);
                } else if (auto c = read_individual_cpu(d, err)) {
                    cpus.push_back(*c);
                }
            } else if (is_full_gpu(d, s->driver)) {
                if (auto g = read_gpu(d, s->driver, err))
                    res.topology.gpus.push_back(*g);
            }
            if (!err.empty()) {
                res.error = err;
                return res;
            }
        }
    }
    if (!cpus.empty() && !groups.empty()) {
        res.error = "device " + groups.front().name +
                    ": dra.cpu publishes both individual and grouped devices";
        return res;
    }
    const bool grouped = cpus.empty() && !groups.empty();
    if (grouped)
        cpus = synthesize_cpus(groups);
    if (cpus.empty()) {  // no dra.cpu pool (yet): GPUs alone are not placeable
        res.ok = true;
        return res;
    }
    auto topo = make_cpu_topology(std::move(cpus), &err);
    if (!topo) {
        res.error = err;
        return res;
    }
    topo->grouped = grouped;
    if (grouped)
        index_groups(*topo);
    else
        for (size_t i = 0; i < topo->cpus.size(); ++i)
            topo->by_device[topo->cpus[i].device] = static_cast<uint32_t>(i);
    res.topology.cpu = std::move(topo);
    std::set<std::string> names;
    for (const GpuInfo &g : res.topology.gpus) {
        if (!names.insert(g.driver + "/" + g.device).second) {
            res.error = "device " + g.device + ": duplicate GPU";
            return res;
        }
        if (opts.gres_order == GresOrder::PciBusId && g.pci_bus_id.empty()) {
            res.error = "device " + g.device + ": missing attribute " +
                        std::string(kPciBusAttr) + " (GRES order is by PCI bus id)";
            return res;
        }
    }
    if (res.topology.gpus.size() > 64) {
        res.error = "device " + res.topology.gpus[64].device + ": more than 64 GPUs";
        return res;
    }
    attach_gpus(res.topology, opts.gres_order);
    for (const GpuInfo &g : res.topology.gpus)
        if (g.numa_id != kUnknown && g.numa == kUnknown)
            res.warnings.push_back("device " + g.device + ": NUMA node " +
                                   std::to_string(g.numa_id) + " has no CPUs");
    res.ok = true;
    return res;
}

}  // namespace k8sdra
