/*
 * k8s_nodes.h - node discovery (NodeDiscovery=external): Kubernetes nodes
 * as Slurm EXTERNAL nodes on Slurm 25.05 and later. Run by the agent
 * thread, never under slurmctld's locks: creating, draining and deleting a
 * node goes through slurmctld's own RPCs, as scontrol does.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_NODES_H
#define K8S_NODES_H

#include <stdbool.h>

struct node_record;
/* A node discovery made (EXTERNAL with its marker feature): a Kubernetes
 * node whatever KubernetesNodes says. Always false before 25.05. */
extern bool k8s_node_discovered(struct node_record *node_ptr);

/* Whether a round is due (at most one a second, only when configured). */
extern bool k8s_nodes_due(void);
/* One round: read slurmctld's nodes, ask the core, carry out its plan. */
extern void k8s_nodes_sync(void);

#endif
