// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers shared by the core unit tests: hand-made topologies and devices.
#pragma once

#include "core/dra_types.h"
#include "core/inventory.h"
#include "core/topology_build.h"

#include <string>
#include <vector>

namespace k8s_cons_tres::test {

// One NUMA node: its socket, L3 groups (cores per group) and threads per core.
struct NumaSpec {
    NumaSpec(int32_t s, std::vector<int> cores, int t = 1, std::string root = {})
        : socket(s), cores_per_l3(std::move(cores)), threads(t), pcie_root(std::move(root)) {}
    int32_t socket = 0;
    std::vector<int> cores_per_l3;
    int threads = 1;
    std::string pcie_root;
};

struct GpuSpec {
    GpuSpec(int32_t n = kUnknown, std::string root = {}) : numa(n), pcie_root(std::move(root)) {}
    int32_t numa = kUnknown;
    std::string pcie_root;
};

// CPU ids run core-major (siblings adjacent) unless sibling_stride is set,
// in which case thread t of global core c gets id c + t * sibling_stride.
inline NodeTopology make_node(const std::string &name, const std::vector<NumaSpec> &numas,
                              const std::vector<GpuSpec> &gpus = {},
                              int32_t sibling_stride = 0) {
    std::vector<RawCpu> raw;
    int32_t next = 0, core = 0, l3 = 0;
    for (size_t n = 0; n < numas.size(); ++n) {
        for (int cores : numas[n].cores_per_l3) {
            for (int c = 0; c < cores; ++c, ++core) {
                for (int t = 0; t < numas[n].threads; ++t) {
                    RawCpu r;
                    r.cpu_id = sibling_stride ? core + t * sibling_stride : next;
                    ++next;
                    r.core_id = core;
                    r.socket_id = numas[n].socket;
                    r.numa_id = static_cast<int32_t>(n);
                    r.l3_id = l3;
                    r.device = "cpudev" + std::to_string(raw.size());
                    r.pcie_root = numas[n].pcie_root;
                    raw.push_back(r);
                }
            }
            ++l3;
        }
    }
    std::string err;
    NodeTopology t;
    t.node = name;
    t.cpu = make_cpu_topology(raw, &err);
    for (size_t i = 0; i < gpus.size(); ++i) {
        GpuInfo g;
        g.driver = kNvidiaDriver;
        g.device = "gpu-" + std::to_string(i);
        g.minor = static_cast<int64_t>(i);
        g.uuid = "GPU-" + std::to_string(i);
        g.numa_id = gpus[i].numa;
        g.pcie_root = gpus[i].pcie_root;
        t.gpus.push_back(g);
    }
    attach_gpus(t, GresOrder::Minor);
    return t;
}

inline Device cpu_device(const std::string &name, int64_t cpu, int64_t core,
                         int64_t socket, int64_t numa, int64_t l3, bool smt) {
    Device d;
    d.name = name;
    d.attributes["dra.cpu/cpuID"] = cpu;
    d.attributes["dra.cpu/coreID"] = core;
    d.attributes["dra.cpu/socketID"] = socket;
    d.attributes["dra.cpu/cacheL3ID"] = l3;
    d.attributes["dra.cpu/coreType"] = std::string("standard");
    d.attributes["dra.cpu/smtEnabled"] = smt;
    d.attributes["resource.kubernetes.io/numaNode"] = numa;
    return d;
}

inline Device nvidia_gpu(int minor, int64_t numa, const std::string &bus) {
    Device d;
    d.name = "gpu-" + std::to_string(minor);
    d.attributes["gpu.nvidia.com/type"] = std::string("gpu");
    d.attributes["gpu.nvidia.com/uuid"] = "GPU-" + std::to_string(minor);
    d.attributes["gpu.nvidia.com/productName"] = std::string("NVIDIA A100");
    d.attributes["resource.kubernetes.io/pciBusID"] = bus;
    d.attributes["resource.kubernetes.io/pcieRoot"] = "pci0000:" + bus.substr(5, 2);
    d.attributes["resource.kubernetes.io/numaNode"] = numa;
    d.capacity["gpu.nvidia.com/memory"] = "40Gi";
    return d;
}

inline ResourceSlice slice(const std::string &node, const std::string &driver,
                           std::vector<Device> devices, int64_t gen = 1,
                           int64_t count = 1, const std::string &suffix = "a") {
    ResourceSlice s;
    s.name = node + "-" + driver + "-" + suffix;
    s.driver = driver;
    s.nodeName = node;
    s.pool = {node, gen, count};
    s.devices = std::move(devices);
    return s;
}

// 2 sockets x 2 cores x 2 threads, one NUMA node and L3 per socket,
// Linux-style ids (siblings 0/4, 1/5, ...).
inline std::vector<Device> small_smt_cpus() {
    std::vector<Device> out;
    int n = 0;
    for (int s = 0; s < 2; ++s)
        for (int c = 0; c < 2; ++c)
            for (int t = 0; t < 2; ++t) {
                char name[32];
                std::snprintf(name, sizeof name, "cpudev%03d", n++);
                out.push_back(cpu_device(name, s * 2 + c + t * 4, c, s, s, s, true));
            }
    return out;
}

}  // namespace k8s_cons_tres::test
