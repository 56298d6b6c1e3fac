/*
 * k8s_gate_api.h - what the launch gate's PrEp plugin (prep_k8s_cons_tres.so)
 * finds in the select plugin: one exported table, looked up by name in the
 * already loaded select_k8s_cons_tres.so (dlopen RTLD_NOLOAD), so the two
 * objects share the gate's state without either loading the other. Both are
 * built for the same release: slurm_version must match.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_GATE_API_H
#define K8S_GATE_API_H

#include <stdbool.h>
#include <stdint.h>

#define K8S_GATE_SYMBOL "k8s_cons_tres_gate_v1"
#define K8S_GATE_SELECT_SO "select_k8s_cons_tres.so"

/* slurmctld's prep_prolog_slurmctld_callback: rc is a wait() status. */
typedef void (*k8s_gate_callback_t)(int rc, uint32_t job_id, bool timed_out);

struct job_record;

typedef struct {
	uint32_t slurm_version;	/* SLURM_VERSION_NUMBER built for */
	/* LaunchGate= is not off (asked once, at prep_g_init). */
	bool (*wanted)(void);
	/* slurmctld's prolog callback, or NULL (none registered). */
	void (*set_callback)(k8s_gate_callback_t cb);
	/*
	 * Under slurmctld's job and node write locks: true when the job waits
	 * at the gate (the callback follows from the plugin's own thread,
	 * exactly once), false when it may start now.
	 */
	bool (*arm)(struct job_record *job_ptr);
} k8s_gate_api_t;

#endif
