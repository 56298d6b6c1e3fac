// SPDX-License-Identifier: GPL-2.0-or-later
// The GPU side of the topology builder. Every GPU driver variant names the
// whole GPU "gpu-N" (NVIDIA, example driver) or "gpu-N-full" (example
// driver in partition mode) and its partitions "gpu-N-<something>" (MIG,
// partitions), which may also consume the counter set "gpu-N-..." of their
// GPU. Slurm hands out whole GPUs, so only physical GPUs are listed.
#include "core/topology_build_attrs.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace k8s_cons_tres::detail {
namespace {

// N of "gpu-N" or "gpu-N-<rest>", with rest ("" for "gpu-N").
std::optional<int64_t> gpu_number(const std::string &name, std::string *rest) {
    if (name.rfind("gpu-", 0) != 0)
        return std::nullopt;
    size_t end = 4;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])))
        ++end;
    if (end < name.size() && name[end] != '-')
        return std::nullopt;
    *rest = end < name.size() ? name.substr(end + 1) : "";
    return parse_count(name.substr(4, end - 4));
}

// One device of a slice.
struct DeviceRef {
    const SliceDevices *slice = nullptr;
    size_t index = 0;
    explicit operator bool() const { return slice != nullptr; }
};

struct Physical {
    DeviceRef whole;        // gpu-N, or gpu-N-full
    DeviceRef first_child;  // stands in when there is no whole device
    std::vector<std::string> children;
    std::string unavailable;
};

using Key = std::pair<std::string, int64_t>;  // driver, N

// Files a device under its physical GPU; false when it is none of ours.
bool classify(const DeviceRef &d, const std::string &drv, std::map<Key, Physical> &gpus,
              Notes &notes) {
    const std::string &name = d.slice->name(d.index);
    std::string rest;
    auto n = gpu_number(name, &rest);
    bool whole = n && (rest.empty() || rest == "full");
    if (n && rest.empty()) {
        auto type = d.slice->attribute(d.index, drv + "/type");
        const auto *t = type ? std::get_if<std::string>(&*type) : nullptr;
        if (t && *t != "gpu") {
            notes.add(name, "type " + *t + " is not a whole GPU; ignored");
            return false;
        }
    }
    const auto &consumes = d.slice->consumes_counters(d.index);
    for (size_t i = 0; !n && i < consumes.size(); ++i)
        n = gpu_number(consumes[i].counterSet, &rest);
    if (!n)
        return false;
    Physical &p = gpus[{drv, *n}];
    if (whole && !p.whole) {
        p.whole = d;
    } else {
        p.children.push_back(name);
        if (!p.first_child)
            p.first_child = d;
    }
    for (const DeviceTaint &t : d.slice->taints(d.index)) {
        std::string r = taint_reason(t);
        if (!r.empty() && p.unavailable.empty())
            p.unavailable = whole ? r : r + " on " + name;
    }
    return true;
}

// One GPU from its device; `whole` false: from one of its partitions.
std::optional<GpuInfo> read_gpu(const DeviceRef &d, const std::string &drv, int64_t n, bool whole,
                                std::string &err, Notes &notes) {
    const SliceDevices &s = *d.slice;
    const std::string &name = s.name(d.index);
    AttrReader r(s, d.index, err, notes);
    GpuInfo g;
    g.driver = drv;
    g.device = whole ? name : "gpu-" + std::to_string(n);
    // v25.3 publishes minor; later releases only name the device after it.
    g.minor = r.int_attr(drv + "/minor", false).value_or(n);
    g.uuid = r.str_attr(drv + (whole ? "/uuid" : "/parentUUID"), whole).value_or("");
    auto model = r.str_attr(drv + "/productName", false);
    g.model = model ? *model : r.str_attr(drv + "/model", false).value_or("");
    // pciBusID from v25.12; bare pcieBusID up to v25.8.
    auto bus = r.str_attr(kPciBusAttr, false);
    g.pci_bus_id = bus ? *bus : r.str_attr(drv + "/pcieBusID", false).value_or("");
    std::vector<std::string> roots = r.str_list(kPcieRootAttr);
    if (roots.size() > 1)
        notes.add(name, std::string("attribute ") + kPcieRootAttr + " has " +
                              std::to_string(roots.size()) + " values; the first is used");
    g.pcie_root = roots.empty() ? "" : roots.front();
    auto numa = r.int_attr(kNumaAttr, false);
    if (!err.empty())
        return std::nullopt;
    if (numa && *numa >= 0 && fits_int32(*numa)) {
        g.numa_id = static_cast<int32_t>(*numa);
        g.affinity_source = AffinitySource::NumaAttribute;
    }
    const std::string *mem = s.capacity(d.index, drv + "/memory");
    if (!mem)
        mem = s.capacity(d.index, "memory");
    if (mem)
        g.memory = *mem;
    if (s.allow_multiple_allocations(d.index)) {
        g.shared = true;
        g.capacity = s.capacities(d.index);
    }
    return g;
}

}  // namespace

bool read_gpus(const std::vector<const SliceDevices *> &slices, const BuildOptions &opts,
               std::vector<GpuInfo> &out, std::string &err, Notes &notes) {
    std::map<Key, Physical> gpus;
    std::set<std::string> names;
    for (const SliceDevices *s : slices) {
        const auto &drivers = opts.gpu_drivers;
        if (std::find(drivers.begin(), drivers.end(), s->driver()) == drivers.end())
            continue;
        for (size_t i = 0; i < s->size(); ++i) {
            const std::string &name = s->name(i);
            if (!names.insert(s->driver() + "/" + name).second) {
                err = "device " + name + ": duplicate GPU";
                return false;
            }
            if (!classify({s, i}, s->driver(), gpus, notes))
                notes.add(name, "not a GPU nor a partition of one; ignored");
        }
    }
    for (auto &[key, p] : gpus) {
        const bool whole = static_cast<bool>(p.whole);
        auto g = read_gpu(whole ? p.whole : p.first_child, key.first, key.second, whole, err,
                          notes);
        if (!g)
            return false;
        g->children = std::move(p.children);
        g->unavailable = std::move(p.unavailable);
        if (!whole && g->unavailable.empty())
            g->unavailable = "only partitions published, no whole-GPU device";
        out.push_back(std::move(*g));
    }
    if (out.size() > 64) {
        err = "device " + out[64].device + ": more than 64 GPUs";
        return false;
    }
    return true;
}

void resolve_gpu_affinity(NodeTopology &t, Notes &notes) {
    for (GpuInfo &g : t.gpus) {
        if (g.numa != kUnknown || !t.cpu)
            continue;
        std::vector<size_t> local;
        for (size_t i = 0; i < t.cpu->numas.size() && !g.pcie_root.empty(); ++i) {
            const auto &roots = t.cpu->numas[i].pcie_roots;
            if (std::find(roots.begin(), roots.end(), g.pcie_root.str()) != roots.end())
                local.push_back(i);
        }
        if (local.size() == 1) {
            const NumaInfo &n = t.cpu->numas[local[0]];
            g.numa = static_cast<int32_t>(local[0]);
            g.numa_id = n.id;
            g.socket = static_cast<int32_t>(n.socket);
            g.affinity_source = AffinitySource::PcieRoot;
        } else if (local.size() > 1) {
            notes.add(g.device, "pcieRoot " + g.pcie_root.str() + " is listed by " +
                                    std::to_string(local.size()) +
                                    " NUMA nodes' CPUs; CPU affinity unknown");
        } else {
            notes.add(g.device, "CPU affinity unknown: no NUMA attribute, and no CPU device "
                                "lists its pcieRoot");
        }
    }
}

}  // namespace k8s_cons_tres::detail
