/*
 * k8s_view.h - the core's view of the Kubernetes nodes, cached in Slurm's
 * terms: a cluster-wide core exclusion bitmap for job_test and, per node,
 * the GPUs pods hold. Rebuilt only when the view's generation or the node
 * table changes. Call everything with slurmctld's node lock held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_VIEW_H
#define K8S_VIEW_H

#include <stdbool.h>

#include "slurm_compat.h"

/* Brings the cache up to date; true when it changed since the last call. */
extern bool k8s_view_refresh(void);

/*
 * For job_test: a new bitmap of exc_core_bitmap (may be NULL) plus every
 * core that Kubernetes holds or that sits on a Kubernetes node Slurm must not
 * use now; NULL when Kubernetes adds nothing (use the caller's bitmap).
 * The caller frees the result.
 */
extern bitstr_t *k8s_view_exclude_cores(bitstr_t *exc_core_bitmap);

/* True when node `index` is a Kubernetes node ready for Slurm jobs. */
extern bool k8s_view_node_ready(int index);

/* The cache is built for the current node table. */
extern bool k8s_view_known(void);

/* True when node `index` is a Kubernetes node (ready or not). */
extern bool k8s_view_node_is_k8s(int index);

/* Why node `index`'s slices disagree with its Slurm definition, or NULL. */
extern const char *k8s_view_mismatch(int index);

/* GRES indices of the GPUs pods hold on node `index`, or NULL for none. */
extern bitstr_t *k8s_view_pod_gpus(int index);

/* Forget everything (node table rebuilt). */
extern void k8s_view_reset(void);

#endif
