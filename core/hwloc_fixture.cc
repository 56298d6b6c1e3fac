// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/hwloc_fixture.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

namespace k8sdra {
namespace {

struct TopologyDeleter {
    void operator()(hwloc_topology *t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct Pu {
    int64_t cpu, core, socket, numa, l3;
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

std::vector<Pu> read_pus(hwloc_topology_t t) {
    std::vector<hwloc_obj_t> numas;
    for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));)
        numas.push_back(n);
    std::vector<Pu> out;
    for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, p));) {
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, p);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, p);
        hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L3CACHE, p);
        Pu u;
        u.cpu = p->os_index;
        u.core = core ? os_or_logical(core) : u.cpu;
        u.socket = pkg ? os_or_logical(pkg) : 0;
        u.numa = 0;
        for (hwloc_obj_t n : numas) {
            if (hwloc_bitmap_isset(n->cpuset, p->os_index)) {
                u.numa = os_or_logical(n);
                break;
            }
        }
        u.l3 = l3 ? static_cast<int64_t>(l3->logical_index) : -1;
        u.smt = core && core->arity > 1;
        out.push_back(u);
    }
    // The driver numbers devices by socket, then core, siblings adjacent.
    std::sort(out.begin(), out.end(), [](const Pu &a, const Pu &b) {
        return std::tie(a.socket, a.core, a.cpu) < std::tie(b.socket, b.core, b.cpu);
    });
    return out;
}

Device individual_device(size_t index, const Pu &u) {
    Device d;
    d.name = fmt3("cpudev", static_cast<int64_t>(index));
    d.attributes["dra.cpu/cpuID"] = u.cpu;
    d.attributes["dra.cpu/coreID"] = u.core;
    d.attributes["dra.cpu/socketID"] = u.socket;
    if (u.l3 >= 0)
        d.attributes["dra.cpu/cacheL3ID"] = u.l3;
    d.attributes["dra.cpu/coreType"] = std::string("standard");
    d.attributes["dra.cpu/smtEnabled"] = u.smt;
    d.attributes["resource.kubernetes.io/numaNode"] = u.numa;
    d.attributes["dra.cpu/numaNodeID"] = u.numa;
    d.attributes["dra.net/numaNode"] = u.numa;
    return d;
}

std::vector<Device> group_devices(const std::vector<Pu> &pus, CpuMode mode) {
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
            d.attributes["resource.kubernetes.io/numaNode"] = id;
            d.attributes["dra.cpu/socketID"] = members.front()->socket;
        } else if (mode == CpuMode::GroupSocket) {
            d.name = fmt3("cpudevsocket", id);
            d.attributes["dra.cpu/socketID"] = id;
        } else {
            d.name = "cpudevmachine";
        }
        const auto n = static_cast<int64_t>(members.size());
        d.attributes["dra.cpu/numCPUs"] = n;
        d.attributes["dra.cpu/smtEnabled"] = members.front()->smt;
        d.capacity["dra.cpu/cpu"] = std::to_string(n);
        out.push_back(std::move(d));
    }
    return out;
}

// Splits devices into slices of one pool, at most `per` devices each.
void add_pool(std::vector<ResourceSlice> &out, const FixtureOptions &o,
              const std::string &driver, std::vector<Device> devices) {
    const size_t per = std::max<size_t>(1, o.max_devices_per_slice);
    const size_t count = std::max<size_t>(1, (devices.size() + per - 1) / per);
    for (size_t i = 0; i < count; ++i) {
        ResourceSlice s;
        s.name = o.node + "-" + driver + "-" + fmt3("s", static_cast<int64_t>(i));
        s.driver = driver;
        s.nodeName = o.node;
        s.pool = {o.node, o.generation, static_cast<int64_t>(count)};
        const size_t lo = i * per, hi = std::min(devices.size(), lo + per);
        s.devices.assign(std::make_move_iterator(devices.begin() + static_cast<long>(lo)),
                         std::make_move_iterator(devices.begin() + static_cast<long>(hi)));
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

std::vector<Device> gpu_devices(const FixtureOptions &o, const std::vector<int64_t> &numa_ids) {
    std::vector<Device> out;
    const std::string p = "gpu.nvidia.com/";
    const std::vector<FixtureGpu> layout = gpu_layout(o, numa_ids);
    for (uint32_t i = 0; i < layout.size(); ++i) {
        char bus[32], root[32];
        std::snprintf(bus, sizeof bus, "0000:%02x:00.0", (0x11U + 0x10U * i) & 0xffU);
        std::snprintf(root, sizeof root, "pci0000:%02x", (0x10U + 0x10U * i) & 0xffU);
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
        d.attributes["resource.kubernetes.io/pciBusID"] = std::string(bus);
        d.attributes["resource.kubernetes.io/pcieRoot"] =
            layout[i].pcie_root.empty() ? std::string(root) : layout[i].pcie_root;
        if (layout[i].numa >= 0)
            d.attributes["resource.kubernetes.io/numaNode"] = layout[i].numa;
        d.capacity[p + "memory"] = "80Gi";
        out.push_back(std::move(d));
    }
    return out;
}

FixtureResult generate(hwloc_topology_t t, const FixtureOptions &o) {
    FixtureResult r;
    const std::vector<Pu> pus = read_pus(t);
    if (pus.empty()) {
        r.error = "topology has no processing units";
        return r;
    }
    std::vector<Device> cpus;
    if (o.mode == CpuMode::Individual) {
        for (size_t i = 0; i < pus.size(); ++i)
            cpus.push_back(individual_device(i, pus[i]));
    } else {
        cpus = group_devices(pus, o.mode);
    }
    add_pool(r.slices, o, "dra.cpu", std::move(cpus));
    if (o.gpus > 0 || !o.gpu_list.empty()) {
        std::vector<int64_t> numa_ids;
        for (const Pu &u : pus)
            if (std::find(numa_ids.begin(), numa_ids.end(), u.numa) == numa_ids.end())
                numa_ids.push_back(u.numa);
        std::sort(numa_ids.begin(), numa_ids.end());
        add_pool(r.slices, o, "gpu.nvidia.com", gpu_devices(o, numa_ids));
    }
    r.ok = true;
    return r;
}

template <class Setup>
FixtureResult load_and_generate(const FixtureOptions &o, Setup &&setup, const std::string &what) {
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
    return generate(raw, o);
}

}  // namespace

FixtureResult fixture_from_synthetic(const std::string &description, const FixtureOptions &o) {
    return load_and_generate(
        o, [&](hwloc_topology_t t) { return hwloc_topology_set_synthetic(t, description.c_str()); },
        "synthetic topology \"" + description + "\"");
}

FixtureResult fixture_from_xml(const std::string &path, const FixtureOptions &o) {
    return load_and_generate(
        o, [&](hwloc_topology_t t) { return hwloc_topology_set_xml(t, path.c_str()); },
        "XML file " + path);
}

FixtureResult fixture_from_this_machine(const FixtureOptions &o) {
    return load_and_generate(o, [](hwloc_topology_t) { return 0; }, "this machine's topology");
}

}  // namespace k8sdra
