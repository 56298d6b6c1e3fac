// SPDX-License-Identifier: GPL-2.0-or-later
#include "testsuite/support/hwloc_fixture.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <tuple>

namespace k8s_cons_tres {
namespace {

struct TopologyDeleter {
    void operator()(hwloc_topology *t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct Pu {
    int64_t cpu, core, socket, numa, l3;
    int64_t first;  // lowest CPU id of its core
    bool smt;
};

std::string fmt3(const char *prefix, int64_t n) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%03lld", prefix, static_cast<long long>(n));
    return buf;
}

int64_t os_or_logical(hwloc_obj_t o) {
    return o->os_index == HWLOC_UNKNOWN_INDEX ? o->logical_index : o->os_index;
}

// The PUs in the driver's device order: cores by their lowest CPU id,
// siblings adjacent (cpu0, cpu16, cpu1, cpu17, ... when siblings are N and
// N+16). coreID is sysfs core_id, which counts per socket: hwloc gives it
// as the core's os index on a real machine; synthetic topologies number
// cores machine-wide, so there it is the core's rank in its package.
std::vector<Pu> read_pus(hwloc_topology_t t, bool synthetic) {
    std::vector<hwloc_obj_t> numas;
    for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));)
        numas.push_back(n);
    std::map<hwloc_obj_t, int64_t> rank_in_package;
    std::map<int64_t, int64_t> next_rank;
    for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, c));) {
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, c);
        rank_in_package[c] = next_rank[pkg ? os_or_logical(pkg) : 0]++;
    }
    std::vector<Pu> out;
    std::map<hwloc_obj_t, int64_t> lowest;  // core -> its lowest CPU id
    bool smt = false;
    for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, p));) {
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, p);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, p);
        hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L3CACHE, p);
        Pu u;
        u.cpu = p->os_index;
        u.core = !core ? u.cpu : synthetic ? rank_in_package[core] : os_or_logical(core);
        u.socket = pkg ? os_or_logical(pkg) : 0;
        u.numa = 0;
        for (hwloc_obj_t n : numas) {
            if (hwloc_bitmap_isset(n->cpuset, p->os_index)) {
                u.numa = os_or_logical(n);
                break;
            }
        }
        u.l3 = l3 ? static_cast<int64_t>(l3->logical_index) : -1;
        u.first = core ? static_cast<int64_t>(hwloc_bitmap_first(core->cpuset)) : u.cpu;
        smt = smt || (core && core->arity > 1);
        out.push_back(u);
    }
    for (Pu &u : out)
        u.smt = smt;  // smtEnabled is one value for the node
    std::sort(out.begin(), out.end(), [](const Pu &a, const Pu &b) {
        return std::tie(a.first, a.cpu) < std::tie(b.first, b.cpu);
    });
    return out;
}

void add_numa(Device &d, int64_t numa, CpuDriverVariant v) {
    if (v == CpuDriverVariant::Main)
        d.attributes["resource.kubernetes.io/numaNode"] = numa;
    d.attributes["dra.cpu/numaNodeID"] = numa;
    d.attributes["dra.net/numaNode"] = numa;
}

Device individual_device(size_t index, const Pu &u, const FixtureOptions &o,
                         const std::vector<std::string> &roots) {
    Device d;
    d.name = fmt3("cpudev", static_cast<int64_t>(index));
    d.attributes["dra.cpu/cpuID"] = u.cpu;
    d.attributes["dra.cpu/coreID"] = u.core;
    d.attributes["dra.cpu/socketID"] = u.socket;
    d.attributes["dra.cpu/cacheL3ID"] = u.l3;  // -1: no L3
    d.attributes["dra.cpu/coreType"] = std::string("standard");
    d.attributes["dra.cpu/smtEnabled"] = u.smt;
    add_numa(d, u.numa, o.cpu_driver);
    if (o.expose_pcie_roots && !roots.empty())
        d.attributes["resource.kubernetes.io/pcieRoot"] = roots;
    return d;
}

std::vector<Device> group_devices(const std::vector<Pu> &pus, const FixtureOptions &o) {
    const CpuMode mode = o.mode;
    std::map<int64_t, std::vector<const Pu *>> groups;
    for (const Pu &u : pus)
        groups[mode == CpuMode::GroupNuma ? u.numa : mode == CpuMode::GroupSocket ? u.socket : 0]
            .push_back(&u);
    std::vector<Device> out;
    for (const auto &[id, members] : groups) {
        Device d;
        d.allowMultipleAllocations = true;
        if (mode == CpuMode::GroupNuma) {
            d.name = fmt3("cpudevnuma", id);
            add_numa(d, id, o.cpu_driver);
            d.attributes["dra.cpu/socketID"] = members.front()->socket;
        } else if (mode == CpuMode::GroupSocket) {
            d.name = fmt3("cpudevsocket", id);
            d.attributes["dra.cpu/socketID"] = id;
        } else {
            d.name = "cpudevmachine";
        }
        // numCPUs counts the group's CPUs, the capacity only those not
        // reserved (--reserved-cpus)
        const auto n = static_cast<int64_t>(members.size());
        const auto reserved = static_cast<int64_t>(std::count_if(members.begin(), members.end(),
            [&](const Pu *u) { return std::find(o.reserved_cpus.begin(), o.reserved_cpus.end(), u->cpu) !=
                                      o.reserved_cpus.end(); }));
        d.attributes["dra.cpu/numCPUs"] = n;
        d.attributes["dra.cpu/smtEnabled"] = members.front()->smt;
        d.capacity["dra.cpu/cpu"] = std::to_string(n - reserved);
        out.push_back(std::move(d));
    }
    return out;
}

// Splits devices into slices of one pool, at most `per` devices each;
// shared counter sets go into one more slice of their own (the API keeps
// devices and sharedCounters apart).
void add_pool(std::vector<ResourceSlice> &out, const FixtureOptions &o,
              const std::string &driver, std::vector<Device> devices, size_t per,
              std::vector<CounterSet> counters = {}) {
    per = std::max<size_t>(1, per);
    const size_t ndev = std::max<size_t>(1, (devices.size() + per - 1) / per);
    const size_t count = ndev + (counters.empty() ? 0 : 1);
    for (size_t i = 0; i < count; ++i) {
        ResourceSlice s;
        s.name = o.node + "-" + driver + "-" + fmt3("s", static_cast<int64_t>(i));
        s.driver = driver;
        s.nodeName = o.node;
        s.pool = {o.node, o.generation, static_cast<int64_t>(count)};
        if (i == ndev) {
            s.sharedCounters = std::move(counters);
        } else {
            const size_t lo = i * per, hi = std::min(devices.size(), lo + per);
            s.devices.assign(std::make_move_iterator(devices.begin() + static_cast<long>(lo)),
                             std::make_move_iterator(devices.begin() + static_cast<long>(hi)));
        }
        out.push_back(std::move(s));
    }
}

std::string fake_uuid(const std::string &node, uint32_t i) {
    const size_t h = std::hash<std::string>{}(node);
    char buf[64];
    std::snprintf(buf, sizeof buf, "GPU-%08x-%04x-%04x-%04x-%012llx",
                  static_cast<unsigned>(h & 0xffffffffU), static_cast<unsigned>((h >> 32) & 0xffffU),
                  i, 0x4000U | (i & 0xfffU), static_cast<unsigned long long>(i) * 0x1111ULL);
    return buf;
}

// The GPUs to publish: the explicit list, or `gpus` spread evenly.
std::vector<FixtureGpu> gpu_layout(const FixtureOptions &o, const std::vector<int64_t> &numa_ids) {
    if (!o.gpu_list.empty())
        return o.gpu_list;
    std::vector<FixtureGpu> out(o.gpus);
    for (uint32_t i = 0; i < o.gpus && !numa_ids.empty(); ++i)
        out[i].numa = numa_ids[i * numa_ids.size() / o.gpus];
    return out;
}

Device nvidia_gpu(const FixtureOptions &o, uint32_t i, const FixtureGpu &at) {
    char bus[32], root[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", (0x11U + 0x10U * i) & 0xffU);
    std::snprintf(root, sizeof root, "pci0000:%02x", (0x10U + 0x10U * i) & 0xffU);
    const std::string p = "gpu.nvidia.com/";
    const GpuDriverVariant v = o.gpu_driver;
    Device d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes[p + "type"] = std::string("gpu");
    d.attributes[p + "uuid"] = fake_uuid(o.node, i);
    d.attributes[p + "productName"] = o.gpu_product;
    d.attributes[p + "brand"] = std::string("Nvidia");
    d.attributes[p + "architecture"] = std::string("Ampere");
    d.attributes[p + "cudaComputeCapability"] = AttrVersion{"8.0.0"};
    d.attributes[p + "driverVersion"] = AttrVersion{"580.126.20"};
    d.attributes[p + "cudaDriverVersion"] = AttrVersion{"13.0.0"};
    if (v == GpuDriverVariant::V25_3) {
        d.attributes[p + "index"] = int64_t{i};
        d.attributes[p + "minor"] = int64_t{i};
    }
    if (v == GpuDriverVariant::V25_3 || v == GpuDriverVariant::V25_8)
        d.attributes[p + "pcieBusID"] = std::string(bus);
    else
        d.attributes["resource.kubernetes.io/pciBusID"] = std::string(bus);
    d.attributes["resource.kubernetes.io/pcieRoot"] =
        at.pcie_root.empty() ? std::string(root) : at.pcie_root;
    if (v == GpuDriverVariant::Main && at.numa >= 0) {
        if (o.list_attributes)
            d.attributes["resource.kubernetes.io/numaNode"] = AttrInts{at.numa};
        else
            d.attributes["resource.kubernetes.io/numaNode"] = at.numa;
    }
    d.capacity[p + "memory"] = "80Gi";
    return d;
}

Device example_gpu(const FixtureOptions &o, uint32_t i, const std::string &name) {
    const std::string p = "gpu.example.com/";
    Device d;
    d.name = name;
    d.attributes[p + "index"] = int64_t{i};
    std::string uuid = fake_uuid(o.node, i);
    std::transform(uuid.begin(), uuid.end(), uuid.begin(), ::tolower);
    d.attributes[p + "uuid"] = uuid;
    d.attributes[p + "model"] = std::string("LATEST-GPU-MODEL");
    d.attributes[p + "driverVersion"] = AttrVersion{"1.0.0"};
    d.capacity[p + "memory"] = "80Gi";
    d.capacity[p + "compute"] = "100";
    return d;
}

// Partitions of GPU i over its counter set: NVIDIA DynamicMIG devices
// (gpu-N-mig-<profile>-<id>-<start>, counters gpu-N-counter-set) or
// example-driver partitions (gpu-N-partition-M, counters gpu-N-counters).
void add_partitions(const FixtureOptions &o, uint32_t i, Device whole, std::vector<Device> &out,
                    std::vector<CounterSet> &sets) {
    const bool nv = o.gpu_driver != GpuDriverVariant::Example;
    const std::string n = std::to_string(i);
    const std::string set = "gpu-" + n + (nv ? "-counter-set" : "-counters");
    const uint32_t parts = o.partitions_per_gpu;
    sets.push_back({set, {{"memory", "80Gi"}, {"slices", std::to_string(parts)}}});
    whole.consumesCounters = {{set, {{"memory", "80Gi"}, {"slices", std::to_string(parts)}}}};
    for (uint32_t m = 0; m < parts; ++m) {
        Device d = whole;
        const std::string mem = std::to_string(80 / parts) + "Gi";
        d.consumesCounters = {{set, {{"memory", mem}, {"slices", "1"}}}};
        for (auto &[name, value] : d.capacity)
            if (name.ends_with("/memory"))
                value = mem;
        if (nv) {
            // the driver drops the dots of the profile name: DRA device
            // names are DNS labels ("1g.10gb" -> "1g10gb")
            d.name = "gpu-" + n + "-mig-1g" + std::to_string(80 / parts) + "gb-" +
                     std::to_string(m + 9) + "-" + std::to_string(m);
            d.attributes["gpu.nvidia.com/type"] = std::string("mig");
            d.attributes["gpu.nvidia.com/uuid"] = "MIG-" + fake_uuid(o.node, i * 64 + m + 1);
        } else {
            d.name = "gpu-" + n + "-partition-" + std::to_string(m);
        }
        out.push_back(std::move(d));
    }
    out.push_back(std::move(whole));
}

std::vector<Device> gpu_devices(const FixtureOptions &o, const std::vector<int64_t> &numa_ids,
                                std::vector<CounterSet> &sets) {
    std::vector<Device> out;
    const std::vector<FixtureGpu> layout = gpu_layout(o, numa_ids);
    const bool example = o.gpu_driver == GpuDriverVariant::Example;
    for (uint32_t i = 0; i < layout.size(); ++i) {
        Device d;
        if (example)
            d = example_gpu(o, i, "gpu-" + std::to_string(i) + (o.partitions_per_gpu ? "-full" : ""));
        else
            d = nvidia_gpu(o, i, layout[i]);
        if (o.partitions_per_gpu)
            add_partitions(o, i, std::move(d), out, sets);
        else
            out.push_back(std::move(d));
    }
    if (o.shuffle_gpus && !example)
        std::shuffle(out.begin(), out.end(), std::mt19937(static_cast<uint32_t>(
                                                 std::hash<std::string>{}(o.node))));
    return out;
}

// The pcieRoots local to each NUMA node: those of the GPUs placed there.
std::map<int64_t, std::vector<std::string>> roots_by_numa(const FixtureOptions &o,
                                                          const std::vector<int64_t> &numa_ids) {
    std::map<int64_t, std::vector<std::string>> out;
    const std::vector<FixtureGpu> layout = gpu_layout(o, numa_ids);
    for (uint32_t i = 0; i < layout.size(); ++i) {
        char root[32];
        std::snprintf(root, sizeof root, "pci0000:%02x", (0x10U + 0x10U * i) & 0xffU);
        auto &v = out[layout[i].numa];
        const std::string r = layout[i].pcie_root.empty() ? root : layout[i].pcie_root;
        if (std::find(v.begin(), v.end(), r) == v.end())
            v.push_back(r);
    }
    return out;
}

void apply_taints(const FixtureOptions &o, std::vector<ResourceSlice> &slices) {
    for (const FixtureTaint &t : o.taints)
        for (ResourceSlice &s : slices)
            for (Device &d : s.devices)
                if (d.name == t.device)
                    d.taints.push_back(t.taint);
}

FixtureResult generate(hwloc_topology_t t, const FixtureOptions &o, bool synthetic) {
    FixtureResult r;
    std::vector<Pu> pus = read_pus(t, synthetic);
    std::vector<int64_t> numa_ids;
    for (const Pu &u : pus)
        if (std::find(numa_ids.begin(), numa_ids.end(), u.numa) == numa_ids.end())
            numa_ids.push_back(u.numa);
    std::sort(numa_ids.begin(), numa_ids.end());
    // Reserved CPUs: no device in individual mode (grouped mode counts
    // them in numCPUs but not in the capacity, see group_devices).
    if (o.mode == CpuMode::Individual)
        std::erase_if(pus, [&](const Pu &u) {
            return std::find(o.reserved_cpus.begin(), o.reserved_cpus.end(), u.cpu) !=
                   o.reserved_cpus.end();
        });
    if (pus.empty()) {
        r.error = "topology has no processing units";
        return r;
    }
    std::vector<Device> cpus;
    size_t per = o.max_devices_per_slice;
    if (o.mode == CpuMode::Individual) {
        const auto roots = roots_by_numa(o, numa_ids);
        for (size_t i = 0; i < pus.size(); ++i) {
            auto it = roots.find(pus[i].numa);
            cpus.push_back(individual_device(i, pus[i], o,
                                             it == roots.end() ? AttrStrings{} : it->second));
        }
        if (o.expose_pcie_roots)
            per = std::min<size_t>(per, 64);  // list attributes: 64 devices per slice
    } else {
        cpus = group_devices(pus, o);
    }
    add_pool(r.slices, o, "dra.cpu", std::move(cpus), per);
    if (o.gpus > 0 || !o.gpu_list.empty()) {
        std::vector<CounterSet> sets;
        std::vector<Device> gpus = gpu_devices(o, numa_ids, sets);
        const bool example = o.gpu_driver == GpuDriverVariant::Example;
        // Taints or counters: at most 64 devices per slice.
        const bool advanced = !sets.empty() || !o.taints.empty() || o.list_attributes;
        add_pool(r.slices, o, example ? "gpu.example.com" : "gpu.nvidia.com", std::move(gpus),
                 std::min<size_t>(o.max_devices_per_slice, advanced ? 64 : 128),
                 std::move(sets));
    }
    apply_taints(o, r.slices);
    r.ok = true;
    return r;
}

template <class Setup>
FixtureResult load_and_generate(const FixtureOptions &o, Setup &&setup, const std::string &what,
                                bool synthetic = false) {
    FixtureResult r;
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) {
        r.error = "hwloc_topology_init failed";
        return r;
    }
    TopologyPtr t(raw);
    if (setup(raw) != 0) {
        r.error = "hwloc rejected " + what;
        return r;
    }
    if (hwloc_topology_load(raw) != 0) {
        r.error = "hwloc could not load " + what;
        return r;
    }
    return generate(raw, o, synthetic);
}

}  // namespace

FixtureResult fixture_from_synthetic(const std::string &description, const FixtureOptions &o) {
    return load_and_generate(
        o, [&](hwloc_topology_t t) { return hwloc_topology_set_synthetic(t, description.c_str()); },
        "synthetic topology \"" + description + "\"", true);
}

FixtureResult fixture_from_xml(const std::string &path, const FixtureOptions &o) {
    return load_and_generate(
        o, [&](hwloc_topology_t t) { return hwloc_topology_set_xml(t, path.c_str()); },
        "XML file " + path);
}

FixtureResult fixture_from_this_machine(const FixtureOptions &o) {
    return load_and_generate(o, [](hwloc_topology_t) { return 0; }, "this machine's topology");
}

}  // namespace k8s_cons_tres
