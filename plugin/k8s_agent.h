/*
 * k8s_agent.h - the plugin's own slurmctld thread: when the Kubernetes view
 * changes, it takes slurmctld's node lock and brings the GPUs pods hold into
 * the node's GRES state at once, instead of at the next job_test, so that
 * `scontrol show node` and backfill see it; while pods' GPUs wait for their
 * node's slurmd to register, it retries those nodes once a second (on
 * releases without update_node_config, the only early way). It also drains
 * and resumes nodes whose slices disagree, tells the core which nodes'
 * slurmd registered (k8s_registered.h) and which nodes ended a job
 * (k8s_ending.h), and notices that slurmctld leaves control. It never
 * does I/O.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_AGENT_H
#define K8S_AGENT_H

extern void k8s_agent_start(void);
extern void k8s_agent_stop(void);
/* slurmctld finished (re)reading its configuration and jobs. */
extern void k8s_agent_ready(void);
extern void k8s_agent_check_control(void);

#endif
