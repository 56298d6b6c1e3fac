// SPDX-License-Identifier: GPL-2.0-or-later
// Fixture generator: turns an hwloc topology (synthetic string, XML file or
// this machine) into ResourceSlices as the dra.cpu driver publishes them
// (individual or grouped mode) plus gpu.nvidia.com or gpu.example.com
// slices for fake GPUs, imitating a chosen release of each driver.
#pragma once

#include "core/dra_types.h"

#include <string>
#include <vector>

namespace k8s_cons_tres {

enum class CpuMode { Individual, GroupNuma, GroupSocket, GroupMachine };

// dra.cpu: releases v0.1.0 and v0.2.0 publish NUMA as dra.cpu/numaNodeID and
// dra.net/numaNode only (they do not differ in what this models); main adds
// resource.kubernetes.io/numaNode.
enum class CpuDriverVariant { V0_1, V0_2, Main };
// gpu.nvidia.com: v25.3 (index, minor, bare pcieBusID), v25.8 (bare
// pcieBusID), v25.12 (resource.kubernetes.io/pciBusID), none with NUMA; main
// adds resource.kubernetes.io/numaNode. Example: dra-example-driver.
enum class GpuDriverVariant { V25_3, V25_8, V25_12, Main, Example };

// A taint put on one published device ("gpu-1", "cpudev003").
struct FixtureTaint {
    std::string device;
    DeviceTaint taint;
};

// One fake GPU placed by hand.
struct FixtureGpu {
    int64_t numa = -1;      // NUMA node os index; -1: no numaNode attribute
    std::string pcie_root;  // "" : derived from the GPU index
};

struct FixtureOptions {
    std::string node = "node1";
    CpuMode mode = CpuMode::Individual;
    uint32_t gpus = 0;              // spread evenly over the NUMA nodes
    std::vector<FixtureGpu> gpu_list;  // if set: these GPUs instead of `gpus`
    int64_t generation = 1;
    size_t max_devices_per_slice = 128;
    std::string gpu_product = "NVIDIA A100-SXM4-80GB";
    // Default: main of both drivers, whose attributes the harness relies on.
    CpuDriverVariant cpu_driver = CpuDriverVariant::Main;
    GpuDriverVariant gpu_driver = GpuDriverVariant::Main;
    bool expose_pcie_roots = false;  // dra.cpu --expose-pcie-roots: pcieRoot lists, 64 per slice
    bool list_attributes = false;    // DRAListTypeAttributes on: NVIDIA main numaNode as ints
    bool shuffle_gpus = false;       // NVIDIA lists its devices in no particular order
    std::vector<int64_t> reserved_cpus;  // dra.cpu --reserved-cpus
    std::vector<FixtureTaint> taints;
    // Per GPU: NVIDIA DynamicMIG devices, or example-driver partitions, all
    // consuming the GPU's shared counter set (published in its own slice).
    uint32_t partitions_per_gpu = 0;
};

struct FixtureResult {
    bool ok = false;
    std::string error;
    std::vector<ResourceSlice> slices;
};

FixtureResult fixture_from_synthetic(const std::string &description, const FixtureOptions &o);
FixtureResult fixture_from_xml(const std::string &path, const FixtureOptions &o);
FixtureResult fixture_from_this_machine(const FixtureOptions &o);

}  // namespace k8s_cons_tres
