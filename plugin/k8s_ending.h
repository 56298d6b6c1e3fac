/*
 * k8s_ending.h - a job's claims and holder pods on a node go once that node
 * has ended the job, not when slurmctld releases it.
 *
 * select's job_fini runs in deallocate_nodes() before slurmctld tells the
 * nodes to terminate the job: a cancelled job's steps may run on for up to
 * KillWait. Each node stays in the job's node_bitmap_cg (COMPLETING, where
 * Slurm places no new job) until it reports the job ended; the agent tells
 * the core node by node.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_ENDING_H
#define K8S_ENDING_H

#include <stdbool.h>
#include <stdint.h>

#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

/* job_fini (job write lock held): the job is ending on its nodes. */
extern void k8s_ending_add(job_record_t *job_ptr);
/* job_begin of a job still ending (a requeue): the core drops what its last
 * run left itself; forget it here. */
extern void k8s_ending_forget(uint32_t job_id);
extern bool k8s_ending_pending(void);
/* Takes the job and node read locks; tells the core the nodes that ended. */
extern void k8s_ending_scan(void);
/* slurmctld took control again (its job list was just told) or stops. */
extern void k8s_ending_reset(void);

#endif
