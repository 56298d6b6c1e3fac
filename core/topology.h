// SPDX-License-Identifier: GPL-2.0-or-later
// The topology model of one node as seen through its DRA devices:
// socket -> NUMA node -> L3 group -> core -> CPU, and GPUs with their NUMA
// node and PCIe root. CPUs are indexed in Slurm order (socket, core, thread),
// so a CPU's index is also its bit in every ledger mask.
#pragma once

#include "core/cpu_mask.h"
#include "core/interned.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace k8s_cons_tres {

inline constexpr int32_t kUnknown = -1;

struct CpuInfo {
    int32_t cpu_id = 0;   // Linux CPU id (dra.cpu/cpuID)
    uint32_t core = 0;    // Slurm core index
    uint32_t thread = 0;  // thread within the core, in cpuID order
    std::string device;   // "cpudevNNN" in individual mode, else ""
};

struct CoreInfo {
    uint32_t first_cpu = 0;   // CPUs of a core are contiguous indices
    uint32_t nthreads = 0;
    uint32_t socket = 0;      // index into sockets
    uint32_t numa = 0;        // index into numas
    uint32_t cell = 0;        // index into cells
    int32_t core_id = 0;      // dra.cpu/coreID
    std::string core_type;    // "standard", "p-core", "e-core"
};

struct SocketInfo {
    int32_t id = 0;           // dra.cpu/socketID
    uint32_t first_core = 0;  // cores of a socket are contiguous indices
    uint32_t ncores = 0;
};

struct NumaInfo {
    int32_t id = 0;                       // resource.kubernetes.io/numaNode
    uint32_t socket = 0;                  // index into sockets
    uint32_t ncpus = 0;
    Words mask;                           // its CPUs
    std::vector<std::string> pcie_roots;  // roots local to its CPUs, if published
};

// An L3 group inside one NUMA node (the L3 "cell" that placement counts).
struct CellInfo {
    uint32_t numa = 0;      // index into numas
    int32_t l3_id = 0;      // dra.cpu/cacheL3ID
    std::vector<uint32_t> cores;
    Words mask;
};

// A grouped-mode dra.cpu device (one per NUMA node, socket or machine).
struct CpuGroup {
    std::string device;
    Words mask;
};

// CPU side of a node. Immutable once built, so identical nodes share one.
struct CpuTopology {
    bool grouped = false;  // from grouped devices: CPU ids are ours to choose
    std::vector<CpuInfo> cpus;
    std::vector<CoreInfo> cores;
    std::vector<SocketInfo> sockets;
    std::vector<NumaInfo> numas;
    std::vector<CellInfo> cells;
    std::vector<CpuGroup> groups;
    uint32_t max_threads_per_core = 0;
    // Threads of every core when all cores have the same power of two, else 0.
    uint32_t uniform_threads = 0;
    Words core_leads;  // bit at the first CPU of each core
    size_t words = 0;  // words per CPU mask
    std::unordered_map<int32_t, uint32_t> by_cpu_id;
    std::unordered_map<std::string, uint32_t> by_device;  // CPU or group index

    // Index of the CPU with this Linux id, or -1.
    int64_t cpu_index(int32_t cpu_id) const;
    // Does the driver pin a claim's opaque cpuset? dra.cpu does only in
    // groupBy: machine (one group of every CPU); in numa/socket grouping it
    // picks a share's CPUs itself and the cpuset is ignored.
    bool cpuset_honoured() const;
    // Canonical text of the whole model, used to share identical topologies.
    std::string fingerprint() const;
};

// Where a GPU's NUMA node came from, in the order it is looked for.
enum class AffinitySource : uint8_t {
    Unknown,        // neither: placement treats the GPU as near no NUMA node
    NumaAttribute,  // resource.kubernetes.io/numaNode on the GPU (int or ints)
    PcieRoot,       // its pcieRoot is in a CPU device's or NUMA group's pcieRoot list
};
// "unknown", "numa-attribute", "pcie-root" (for logs and inspect output).
const char *affinity_source_name(AffinitySource s);

// Values shared by many nodes are interned to keep a node small.
struct GpuInfo {
    IStr driver;             // gpu.nvidia.com or gpu.example.com
    std::string device;      // gpu-<minor>
    std::string uuid;
    IStr model;              // productName or model
    IStr pci_bus_id;         // "" when not published
    IStr pcie_root;          // "" when not published
    IStr memory;             // capacity "memory", "" when absent
    int64_t minor = 0;       // from the device name (NVIDIA) or index attribute
    int32_t numa_id = kUnknown;
    int32_t numa = kUnknown;    // index into the CPU topology's numas, or -1
    int32_t socket = kUnknown;  // index into sockets (through numa), or -1
    AffinitySource affinity_source = AffinitySource::Unknown;
    // Why new Slurm jobs must not get this GPU ("taint gpu.nvidia.com/xid=
    // NoSchedule"), "" when it may be used.
    std::string unavailable;
    // MIG / partition devices carved from this GPU: a claim on any of them
    // takes the whole GPU away from Slurm.
    std::vector<std::string> children;
    // allowMultipleAllocations: a claim's result must then say what it
    // consumes (shareID, consumedCapacity); a Slurm job consumes all of it.
    bool shared = false;
    std::map<std::string, std::string> capacity;  // only when shared
};

// CPUs that must not get new Slurm jobs, and why (a device taint).
struct UnavailableCpus {
    std::vector<uint32_t> cpus;  // CPU indices
    std::string reason;
};

// Free counts of one NUMA node, kept by the ledger for fast ranking.
struct NumaCounts {
    uint16_t free_cpus = 0;
    uint16_t whole_cores = 0;  // cores with every thread free
    uint16_t any_cores = 0;    // cores with at least one thread free
};

// Everything placement needs to know about one node.
struct NodeTopology {
    std::string node;
    std::shared_ptr<const CpuTopology> cpu;
    std::vector<GpuInfo> gpus;  // in Slurm GRES index order, physical GPUs only
    std::vector<UnavailableCpus> unavailable_cpus;
};

// GRES index of the physical GPU that `device` of `driver` is, or is a MIG /
// partition of; -1 when the node has no such device.
int gpu_index_of(const NodeTopology &t, const std::string &driver, const std::string &device);

}  // namespace k8s_cons_tres
