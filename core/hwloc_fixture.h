// SPDX-License-Identifier: GPL-2.0-or-later
// Fixture generator: turns an hwloc topology (synthetic string, XML file or
// this machine) into ResourceSlices as the dra.cpu driver publishes them
// (individual or grouped mode) plus gpu.nvidia.com slices for fake GPUs.
#pragma once

#include "core/dra_types.h"

#include <string>
#include <vector>

namespace k8sdra {

enum class CpuMode { Individual, GroupNuma, GroupSocket, GroupMachine };

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
};

struct FixtureResult {
    bool ok = false;
    std::string error;
    std::vector<ResourceSlice> slices;
};

FixtureResult fixture_from_synthetic(const std::string &description, const FixtureOptions &o);
FixtureResult fixture_from_xml(const std::string &path, const FixtureOptions &o);
FixtureResult fixture_from_this_machine(const FixtureOptions &o);

}  // namespace k8sdra
