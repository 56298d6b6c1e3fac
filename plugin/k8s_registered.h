/*
 * k8s_registered.h - which nodes' slurmd registered with this slurmctld
 * since it took control, told to the core once per node. slurmctld kills
 * the steps of jobs it does not know (a restart that lost its job state)
 * when a node registers; until then the core keeps those jobs' claims and
 * holder pods on that node.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_REGISTERED_H
#define K8S_REGISTERED_H

#include <stdbool.h>

/* slurmctld took control (its job list was just told): every node
 * registers anew. */
extern void k8s_registered_reset(void);
/* Some node has not registered since. */
extern bool k8s_registered_pending(void);
/* Takes the node read lock; tells the core the nodes registered since. */
extern void k8s_registered_scan(void);
extern void k8s_registered_fini(void);

#endif
