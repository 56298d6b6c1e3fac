/*
 * core_bridge.h - start and stop the C++ core from slurmctld, with its log
 * lines routed into Slurm's log.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_CORE_BRIDGE_H
#define K8S_CORE_BRIDGE_H

/* Starts the core when this process is slurmctld running our SelectType. */
extern int core_bridge_start(void);
extern void core_bridge_stop(void);

#endif
