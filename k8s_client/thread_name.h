// SPDX-License-Identifier: GPL-2.0-or-later
// Names the calling thread (at most 15 characters): inside slurmctld,
// top -H, perf and gdb then tell the plugin's threads from Slurm's.
#pragma once

#include <pthread.h>

#include <string>

namespace k8s_cons_tres::k8s {

inline void name_this_thread(const std::string &name) {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace k8s_cons_tres::k8s
