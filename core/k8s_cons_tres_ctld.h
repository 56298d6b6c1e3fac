/*
 * k8s_cons_tres_ctld.h - what slurmctld's scheduling path asks the running core:
 * which Slurm nodes are Kubernetes nodes and what on them Slurm must keep
 * out of. Answers come from the current in-memory snapshot only: no I/O, no
 * waiting, safe under slurmctld's locks. Nothing throws across this ABI.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_CONS_TRES_CTLD_H
#define K8S_CONS_TRES_CTLD_H

#include "core/k8s_cons_tres.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Changes whenever any answer below may change (a new snapshot arrived, the
 * inventory became stale or fresh again). Cheap enough for every job_test.
 */
K8S_CONS_TRES_API uint64_t k8s_cons_tres_view_generation(void);

/*
 * generation / 2 at which this Slurm node's answers last changed (0: never),
 * and at which every node's did: a cache built at generation G rebuilds
 * only nodes stamped after G / 2 unless the full stamp is, or the low bit
 * (staleness) of the generation changed.
 */
K8S_CONS_TRES_API uint64_t k8s_cons_tres_view_node_stamp(const char *node);
K8S_CONS_TRES_API uint64_t k8s_cons_tres_view_full_stamp(void);

/* The KubernetesNodes= Slurm hostlist expression, "" when unset. */
K8S_CONS_TRES_API const char *k8s_cons_tres_view_kubernetes_nodes(void);

/*
 * Seconds a node's slices may disagree with slurm.conf before the node is
 * drained (StaleAfter=): a driver restart republishes well within it.
 */
K8S_CONS_TRES_API uint32_t k8s_cons_tres_view_drain_after(void);

enum k8s_cons_tres_view_state {
	K8S_CONS_TRES_VIEW_NOT_K8S = 0,     /* not a Kubernetes node: plain cons_tres */
	K8S_CONS_TRES_VIEW_READY = 1,       /* keep out exactly the cores/GPUs returned */
	K8S_CONS_TRES_VIEW_UNAVAILABLE = 2, /* a Kubernetes node Slurm must not use now */
	K8S_CONS_TRES_VIEW_MISMATCH = 3     /* its slices disagree with slurm.conf: drain it */
};

/*
 * What Slurm must keep out of one node now. is_k8s: the plugin's answer
 * from KubernetesNodes= (a node with slices is a Kubernetes node anyway).
 * cores: Slurm core indices with a thread held by a pod; gres: GPU GRES
 * indices held by pods. On UNAVAILABLE and MISMATCH, reason says why. Capacities too small
 * give K8S_CONS_TRES_EINVAL (counts still set).
 */
K8S_CONS_TRES_API int k8s_cons_tres_view_node(const char *node,
				const struct k8s_cons_tres_slurm_node *slurm,
				int is_k8s, int *state,
				uint32_t *cores, size_t core_cap, size_t *ncores,
				uint32_t *gres, size_t gres_cap, size_t *ngres,
				char *reason, size_t reasonlen);

/*
 * The engine's topology-aware choice for a job on one ready Kubernetes node:
 * exactly which Slurm cores and GPUs, leaving out what pods hold and what
 * Slurm jobs use (busy_cores, busy_gres bit i = GRES index i). cpus counts
 * CPUs (threads); whole cores are taken. Arrays in out are caller-owned.
 */
struct k8s_cons_tres_choice {
	int fits;
	char reason[160];
	struct k8s_cons_tres_score score;
	uint32_t *cores;
	size_t core_cap, ncores;
	uint32_t *gres;
	size_t gres_cap, ngres;
};

K8S_CONS_TRES_API int k8s_cons_tres_choose(const char *node, uint32_t cpus,
			     uint32_t threads_per_core, uint32_t gpus,
			     const uint32_t *busy_cores, size_t nbusy,
			     uint64_t busy_gres, struct k8s_cons_tres_choice *out);

/* One node of a job: Slurm core indices (all their threads are the job's),
 * GPU GRES indices and the memory (MB) Slurm gives the job there. */
struct k8s_cons_tres_job_node {
	const char *node;
	const uint32_t *cores;
	size_t ncores;
	const uint32_t *gres;
	size_t ngres;
	uint64_t mem_mb;
};

/* A job started (or is running, for k8s_cons_tres_jobs_known): its claims are
 * queued for writing. external_comment: the AdminComment of an external job
 * (EXTERNAL_JOB, Slurm 25.05+; "" when it has none), NULL for any other job:
 * with ExternalJobClaims=bridge slurm-bridge writes the claims of an external
 * job whose AdminComment names its pods. user: NULL, and the claims' user
 * label is looked up from uid on the writer's threads (a name lookup is NSS,
 * maybe LDAP: never under slurmctld's locks); a name given is used as is. */
K8S_CONS_TRES_API int k8s_cons_tres_job_started(uint32_t job_id, uint32_t uid, const char *user,
				  const char *external_comment,
				  const struct k8s_cons_tres_job_node *nodes,
				  size_t nnodes, char *err, size_t errlen);

/* A job ended, was requeued or lost its nodes: its claims are queued for
 * deletion. */
K8S_CONS_TRES_API int k8s_cons_tres_job_ended(uint32_t job_id);

/*
 * slurmctld released the job (select's job_fini), but its nodes have yet to
 * kill its steps and run its epilog: its claims and holder pods stay on
 * each node until k8s_cons_tres_job_released() names that node (NULL:
 * every node of the job). Only queues; callable under slurmctld's locks.
 */
K8S_CONS_TRES_API int k8s_cons_tres_job_finishing(uint32_t job_id);
K8S_CONS_TRES_API void k8s_cons_tres_job_released(uint32_t job_id, const char *node);

/*
 * The launch gate (LaunchGate=): may job_id's tasks start? NONE: it has
 * nothing to wait for (no claim on a Kubernetes node, the gate is off, or
 * the job is unknown); WAIT: not yet (why says what for); OPEN: Kubernetes
 * shows all its claims allocated and no pod claim shares their devices;
 * OVERLAP: a pod's claim holds one of its devices (why names both), so it
 * must not start here. From memory only: safe under slurmctld's locks.
 */
enum k8s_cons_tres_gate_kind {
	K8S_CONS_TRES_GATE_NONE = 0,
	K8S_CONS_TRES_GATE_WAIT = 1,
	K8S_CONS_TRES_GATE_OPEN = 2,
	K8S_CONS_TRES_GATE_OVERLAP = 3
};
struct k8s_cons_tres_gate {
	int kind;
	unsigned ready, total;	/* its claims (and holder pods) there / wanted */
	char why[320];
};
K8S_CONS_TRES_API int k8s_cons_tres_job_gate(uint32_t job_id, struct k8s_cons_tres_gate *out);
/* LaunchGate=: 0 off, 1 claims, 2 prepared; LaunchGateTimeout= (s);
 * LaunchGateRequeues=. */
K8S_CONS_TRES_API int k8s_cons_tres_gate_mode(void);
K8S_CONS_TRES_API uint32_t k8s_cons_tres_gate_timeout(void);
K8S_CONS_TRES_API uint32_t k8s_cons_tres_gate_requeues(void);
/*
 * Called, from the client's thread and with no lock of the core's held,
 * when a job's gate has an answer (open, overlap, or nothing to wait for):
 * the caller asks k8s_cons_tres_job_gate() at once instead of at its next poll.
 * It must only wake a thread, never block. NULL: no call.
 */
K8S_CONS_TRES_API void k8s_cons_tres_set_gate_notify(void (*notify)(void));

/*
 * The full list of running jobs, as slurmctld knows it after (re)starting:
 * begin a list with k8s_cons_tres_jobs_known_begin(), add each job with
 * k8s_cons_tres_jobs_known_add(), end with k8s_cons_tres_jobs_known_end(). Claims of jobs
 * not in the list are then deleted, and missing claims of listed jobs are
 * written.
 */
K8S_CONS_TRES_API void k8s_cons_tres_jobs_known_begin(void);
K8S_CONS_TRES_API int k8s_cons_tres_jobs_known_add(uint32_t job_id, uint32_t uid, const char *user,
				     const char *external_comment,
				     const struct k8s_cons_tres_job_node *nodes,
				     size_t nnodes);
K8S_CONS_TRES_API void k8s_cons_tres_jobs_known_end(void);

/*
 * Node `node`'s slurmd has registered with this slurmctld since the last
 * k8s_cons_tres_jobs_known_end() (or the node runs no slurmd). slurmctld
 * kills the steps of jobs it does not know at a node's registration; until
 * then the claims and holder pods of such jobs (a restart that lost its job
 * state) stay on that node, and they go `settle_seconds` after it.
 * Only queues; callable under slurmctld's locks.
 */
K8S_CONS_TRES_API void k8s_cons_tres_node_registered(const char *node, uint32_t settle_seconds);

/*
 * This slurmctld is no longer the controller in charge (a backup returning
 * to standby, or shutting down): no claim is written or reconciled from its
 * now frozen job list until the next k8s_cons_tres_jobs_known_end().
 */
K8S_CONS_TRES_API void k8s_cons_tres_standby(void);

/*
 * Node discovery (NodeDiscovery=external, Slurm 25.05+): Kubernetes nodes
 * become Slurm EXTERNAL nodes. Called from the plugin's own thread with a
 * copy of slurmctld's nodes taken under its locks; the actions are then
 * carried out with no lock held (creating a node takes slurmctld's locks).
 */
K8S_CONS_TRES_API int k8s_cons_tres_node_discovery(void);	/* 1 when configured */

/* Changes whenever the Kubernetes side of the plan may have changed (Nodes,
 * slices, freshness): a round with the same version and nothing done in the
 * last one has nothing new to act on from Kubernetes. */
K8S_CONS_TRES_API uint64_t k8s_cons_tres_discovery_version(void);

/* 1 when node discovery made this node (EXTERNAL with its marker feature,
 * core/external_nodes.h): a Kubernetes node whatever KubernetesNodes says,
 * unavailable while it has no slices, never plain. Needs no engine. */
K8S_CONS_TRES_API int k8s_cons_tres_node_is_discovered(int external, const char *features);

struct k8s_cons_tres_slurm_node_state {
	const char *name;
	uint32_t cpus, sockets, cores_per_socket, threads_per_core;
	uint64_t real_memory;
	const char *gres;	/* as configured, NULL for none */
	const char *features;	/* comma separated, NULL for none */
	int external, drained, drained_by_us, idle;
};

enum k8s_cons_tres_ext_kind {
	K8S_CONS_TRES_EXT_CREATE = 0,	/* text: the node line (scontrol create) */
	K8S_CONS_TRES_EXT_DRAIN = 1,	/* text: the reason */
	K8S_CONS_TRES_EXT_RESUME = 2,
	K8S_CONS_TRES_EXT_DELETE = 3,	/* text: why */
	K8S_CONS_TRES_EXT_NOTE = 4	/* text: why a Kubernetes node cannot be a Slurm node */
};

struct k8s_cons_tres_ext_action {
	int kind;
	char node[128];
	char text[4096];
};

/* Fills out[0..*nout); nothing while the view is stale or Node objects are
 * not listed yet (then why says so). with_gres_conf: the release takes
 * GresConf= (25.11+). Never more than cap actions. */
K8S_CONS_TRES_API int k8s_cons_tres_external_plan(const struct k8s_cons_tres_slurm_node_state *have, size_t nhave,
				    int with_gres_conf, struct k8s_cons_tres_ext_action *out,
				    size_t cap, size_t *nout, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif

#endif /* K8S_CONS_TRES_CTLD_H */
