// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/slurm_map.h"

namespace k8s_cons_tres {

SlurmNodeDef slurm_view(const NodeTopology &t) {
    SlurmNodeDef v;
    v.gpus = static_cast<uint32_t>(t.gpus.size());
    if (!t.cpu)
        return v;
    const CpuTopology &c = *t.cpu;
    v.sockets = static_cast<uint32_t>(c.sockets.size());
    if (!c.sockets.empty())
        v.cores_per_socket = c.sockets.front().ncores;
    for (const SocketInfo &s : c.sockets)
        if (s.ncores != v.cores_per_socket)
            v.cores_per_socket = 0;
    if (!c.cores.empty())
        v.threads_per_core = c.cores.front().nthreads;
    for (const CoreInfo &k : c.cores)
        if (k.nthreads != v.threads_per_core)
            v.threads_per_core = 0;
    return v;
}

namespace {
void compare(std::string &out, const char *what, uint32_t slurm, uint32_t slices,
             const char *note) {
    if (slurm == slices)
        return;
    if (!out.empty())
        out += "; ";
    out += std::string(what) + ": slurm " + std::to_string(slurm) + ", slices " +
           (slices ? std::to_string(slices) : std::string(note));
}
}  // namespace

std::string slurm_mismatch(const NodeTopology &t, const SlurmNodeDef &slurm) {
    const SlurmNodeDef v = slurm_view(t);
    std::string out;
    compare(out, "sockets", slurm.sockets, v.sockets, "0");
    compare(out, "cores per socket", slurm.cores_per_socket, v.cores_per_socket,
            "not uniform");
    compare(out, "threads per core", slurm.threads_per_core, v.threads_per_core,
            "not uniform");
    compare(out, "gpus", slurm.gpus, v.gpus, "0");
    return out;
}

std::optional<uint32_t> cpu_of_slurm_core(const CpuTopology &t, uint32_t core,
                                          uint32_t thread) {
    if (core >= t.cores.size() || thread >= t.cores[core].nthreads)
        return std::nullopt;
    return t.cores[core].first_cpu + thread;
}

}  // namespace k8s_cons_tres
