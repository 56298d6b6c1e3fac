/*
 * k8s_jobs.h - Slurm jobs on Kubernetes nodes, told to the core so that
 * their ResourceClaims are written and removed (by the core's own thread).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_JOBS_H
#define K8S_JOBS_H

#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

/* After a successful job_begin: the cores chosen and GPUs selected (cons_tres
 * allocates them right after, in select_p_select_nodeinfo_set). */
extern void k8s_jobs_begin(job_record_t *job_ptr);
/* The job's resources are released (end, cancel, requeue, node failure):
 * its claims go node by node as its nodes end it (k8s_ending.h). */
extern void k8s_jobs_end(job_record_t *job_ptr);
/* The job's allocation changed (resize): its claims follow. */
extern void k8s_jobs_resized(job_record_t *job_ptr);
/* After a (re)start: every running or suspended job, as recovered. */
extern void k8s_jobs_known(list_t *jobs);

#endif
