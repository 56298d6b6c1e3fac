/*
 * k8s_gate.h - the launch gate (LaunchGate=): a job placed on Kubernetes
 * nodes stays CONFIGURING, its tasks not started, until Kubernetes shows
 * its claims allocated. Slurm holds the job through an asynchronous PrEp
 * prolog_slurmctld (prep_k8s_cons_tres.so arms the gate through
 * k8s_gate_api.h); the agent thread calls slurmctld's callback once the
 * core's answer (k8s_cons_tres_job_gate) is in, or the job timed out. See
 * doc/launch-gate.md.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_GATE_H
#define K8S_GATE_H

#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

/* At init, in slurmctld: a gate without its PrEp plugin is fatal. */
extern void k8s_gate_check_config(void);

/* select_p_job_fini: a job that leaves while gated is let go. */
extern void k8s_gate_job_fini(job_record_t *job_ptr);

/* The agent's tick, with no slurmctld lock and no mutex of ours held. */
extern void k8s_gate_tick(void);

#endif
