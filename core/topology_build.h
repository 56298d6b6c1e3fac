// SPDX-License-Identifier: GPL-2.0-or-later
// Builds the topology model of a node from its DRA devices (dra.cpu in
// individual or grouped mode, gpu.nvidia.com, gpu.example.com).
#pragma once

#include "core/build_notes.h"
#include "core/dra_types.h"
#include "core/slice_devices.h"
#include "core/topology.h"

#include <memory>
#include <string>
#include <vector>

namespace k8s_cons_tres {

inline constexpr const char *kCpuDriver = "dra.cpu";
inline constexpr const char *kNvidiaDriver = "gpu.nvidia.com";
inline constexpr const char *kExampleGpuDriver = "gpu.example.com";

// How DRA GPUs map to Slurm GRES indices.
enum class GresOrder {
    Minor,     // order of the minor number (/dev/nvidiaN, the gpu-N name)
    PciBusId,  // order of resource.kubernetes.io/pciBusID
};

// One CPU before indexing; also the way tests describe hand-made topologies.
struct RawCpu {
    int32_t cpu_id = 0;
    int32_t core_id = 0;
    int32_t socket_id = 0;
    int32_t numa_id = 0;
    int32_t l3_id = 0;
    std::string core_type = "standard";
    std::string device;
    std::string pcie_root;                // "" when not published
    std::vector<std::string> pcie_roots;  // the list form (dra.cpu --expose-pcie-roots)
};

// Indexes raw CPUs into the Slurm-ordered model. Returns nullptr and sets
// *err when the CPUs do not form a tree (a core across NUMA nodes, ...).
std::shared_ptr<CpuTopology> make_cpu_topology(std::vector<RawCpu> raw,
                                               std::string *err);

// Which drivers describe the node: CPUDriver= / GPUDrivers= of
// k8s_cons_tres.conf. Slices of other drivers do not shape placement.
struct BuildOptions {
    GresOrder gres_order = GresOrder::Minor;
    std::string cpu_driver = kCpuDriver;
    std::vector<std::string> gpu_drivers = {kNvidiaDriver, kExampleGpuDriver};
};

struct BuildResult {
    bool ok = false;
    std::string error;  // names the device and attribute when ok is false
    NodeTopology topology;
    // Published values the model could not use (wrong type, list of several
    // values, attributes that disagree), GPUs of unknown affinity: for a
    // debug log. The same note on many devices is one line.
    std::vector<std::string> warnings;
};

// slices: the complete pools of one node (see pool_select.h), any drivers.
BuildResult build_node_topology(const std::string &node,
                                const std::vector<const ResourceSlice *> &slices,
                                const BuildOptions &opts = {});

// What a node's CPU devices alone make of it, before its GPUs are read. It
// is the same for every node publishing the same CPU devices (most nodes of
// a cluster), so such nodes can share one, and one CPU model.
struct CpuPart {
    std::string error;        // reading the CPU devices failed: nothing else counts
    std::string model_error;  // they do not form a tree (reported after GPU errors)
    detail::Notes notes;      // what reading them noted
    std::shared_ptr<const CpuTopology> cpu;    // null: no CPUs, or an error
    std::vector<UnavailableCpus> unavailable;  // reserved and tainted CPUs
};

// The CPU part of a node from its complete slices (any drivers; only
// opts.cpu_driver's are read).
CpuPart build_cpu_part(const std::vector<const SliceDevices *> &slices, const BuildOptions &opts);

// The same as above from any form of slices, with the node's CPU part built
// already (by build_cpu_part with the same options on the same slices).
BuildResult build_node_topology(const std::string &node, const CpuPart &cpu,
                                const std::vector<const SliceDevices *> &slices,
                                const BuildOptions &opts);

// Places GPUs on the CPU topology (NUMA index, socket) from numa_id and
// sorts them into GRES order. Shared by the builder and by tests.
void attach_gpus(NodeTopology &t, GresOrder order);

}  // namespace k8s_cons_tres
