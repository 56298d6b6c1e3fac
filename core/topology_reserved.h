// SPDX-License-Identifier: GPL-2.0-or-later
// CPUs the dra.cpu driver reserves (--reserved-cpus) are missing from its
// slices: no device in individual mode, less capacity than numCPUs in
// grouped mode. slurm.conf still defines the whole machine and Slurm's core
// indices count every core, so the model gets a placeholder for each
// reserved CPU; placeholders are held by the driver and never go to a job.
#pragma once

#include "core/topology_build.h"

#include <vector>

namespace k8s_cons_tres {

inline constexpr const char *kReservedReason = "reserved by the dra.cpu driver (not published)";

// Individual mode: adds placeholders (cpu_id < 0, no device) for the cores
// a socket lacks compared with the others (same core_id on another socket)
// and for the threads a core lacks compared with the node's widest core.
// Returns how many were added.
size_t add_reserved_placeholders(std::vector<RawCpu> &cpus);

// The model indices of placeholders: CPUs with a negative id.
std::vector<uint32_t> reserved_cpu_indices(const CpuTopology &t);

}  // namespace k8s_cons_tres
