/*
 * k8s_gpu.h - GPUs that pods hold, kept allocated in each node's GRES state
 * ("phantom" allocations): Slurm 22.05's job_test has no argument to exclude
 * GPUs, but cons_tres never picks a GPU whose gres_bit_alloc bit is set, and
 * backfill's copies of the node state keep those bits too.
 * Call everything with slurmctld's node write lock held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_GPU_H
#define K8S_GPU_H

#include "slurm_compat.h"
#include "src/common/node_conf.h"

/* The "gpu" entry of a GRES list (a job's or a node's), or NULL. */
extern gres_state_t *k8s_gpu_gres(list_t *gres_list);
/* A GRES state (of a node, job or reservation) is the gpu GRES. */
extern bool k8s_gpu_is_gpu(const gres_state_t *gs);
/* A node's GPU state, or NULL when it has no GPUs. */
extern gres_node_state_t *k8s_gpu_node_state(node_record_t *node_ptr);

/*
 * Make every node's phantom GPUs equal to what pods hold now, as far as
 * possible: a GPU a Slurm job still holds is claimed at a later sync (after
 * that job's end). Only nodes whose slurmd has registered are touched.
 */
extern void k8s_gpu_sync(void);
/* The same for one node, after its GRES state was (re)validated. */
extern void k8s_gpu_sync_node(int index);
/* Slurm rebuilt every node's GRES state: our phantom bits are gone. */
extern void k8s_gpu_forget(void);
/* True while some pod-held GPU could not be claimed yet. */
extern bool k8s_gpu_pending(void);
/* Sync only the nodes that wait for that (cheap when none does). */
extern void k8s_gpu_sync_pending(void);
/*
 * Per node index: nodes where pods hold GPUs that cannot be marked by
 * index yet; they must take no job that asks for GPUs. NULL when none.
 */
extern bitstr_t *k8s_gpu_unmarked(void);
/*
 * The same as a hint that needs no lock: true while some node waits to be
 * marked (its slurmd has not registered yet), as of the last sync.
 */
extern bool k8s_gpu_waiting(void);

#endif
