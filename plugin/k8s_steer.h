/*
 * k8s_steer.h - topology-aware choice on Kubernetes nodes, reached through
 * cons_tres by narrower exclusion: cons_tres first chooses the nodes by its
 * own policy; then, on each node it chose, the core engine picks the cores
 * (fewest NUMA nodes, L3 groups, sockets) and GPUs (aligned with them), and
 * every other core of that node is excluded for a second job_test on those
 * nodes only. If that one fails or picks other nodes, the caller keeps
 * cons_tres's first choice. At job_begin the GPUs cons_tres selected are
 * replaced by the engine's when they are truly free.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_STEER_H
#define K8S_STEER_H

#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

/* job_begin, before forwarding: apply the remembered GPU choice. */
extern void k8s_steer_begin(job_record_t *job_ptr);

/* Slurm jobs' cores, tracked for the engine's view of what is busy. */
extern void k8s_steer_job_fini(job_record_t *job_ptr);
extern void k8s_steer_reset(void);

#endif
