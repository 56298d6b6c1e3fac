// SPDX-License-Identifier: GPL-2.0-or-later
// The mapping between the DRA model and Slurm's view of a node: CPUs <->
// Slurm core indices (socket * cores_per_socket + core, threads within a
// core), GPUs <-> GRES indices, and the check that both views agree.
#pragma once

#include "core/topology.h"

#include <optional>
#include <string>

namespace k8s_cons_tres {

// What slurm.conf / gres.conf say about the node.
struct SlurmNodeDef {
    uint32_t sockets = 0;
    uint32_t cores_per_socket = 0;
    uint32_t threads_per_core = 0;
    uint32_t gpus = 0;
};

// The node as the slices describe it, in Slurm terms. cores_per_socket and
// threads_per_core are 0 when they differ between sockets or cores.
SlurmNodeDef slurm_view(const NodeTopology &t);

// "" when they agree, else every difference, e.g.
// "sockets: slurm 2, slices 1; gpus: slurm 8, slices 4".
std::string slurm_mismatch(const NodeTopology &t, const SlurmNodeDef &slurm);

// Slurm core index of a CPU (by model index) and back.
inline uint32_t slurm_core_of(const CpuTopology &t, uint32_t cpu) { return t.cpus[cpu].core; }
// CPU index of thread `thread` of Slurm core `core`, if it exists.
std::optional<uint32_t> cpu_of_slurm_core(const CpuTopology &t, uint32_t core,
                                          uint32_t thread);

}  // namespace k8s_cons_tres
