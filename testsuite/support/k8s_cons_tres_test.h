/*
 * k8s_cons_tres_test.h - a C ABI over the core's inventory, ledger and placement,
 * for the tests and benchmarks that drive the engine from C-shaped inputs
 * (testsuite/support/c_api.cc). slurmctld never calls it: the plugin's own
 * calls are core/k8s_cons_tres.h and core/k8s_cons_tres_ctld.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_CONS_TRES_TEST_H
#define K8S_CONS_TRES_TEST_H

#include "core/k8s_cons_tres.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An inventory is one consistent snapshot of the Kubernetes nodes (topology
 * from ResourceSlices, holdings from ResourceClaims) plus the Slurm jobs
 * recorded since. Calls on one inventory are serialized internally. CPU
 * sets cross this boundary as Slurm core indices (socket * cores_per_socket
 * + core) and Linux CPU ids; GPUs as GRES indices.
 */
struct k8s_cons_tres_inventory;

enum k8s_cons_tres_gres_order {
	K8S_CONS_TRES_GRES_BY_MINOR = 0,  /* /dev/nvidiaN order (default) */
	K8S_CONS_TRES_GRES_BY_PCI_BUS = 1 /* resource.kubernetes.io/pciBusID order */
};

/*
 * Builds an inventory of identical nodes from an hwloc synthetic topology
 * (e.g. "pack:2 numa:4 core:8 pu:2") with gpus_per_node fake NVIDIA GPUs,
 * as the fixture generator publishes them. For tests and previews.
 */
K8S_CONS_TRES_API int k8s_cons_tres_inventory_from_synthetic(const char *synthetic,
					       const char *const *nodes,
					       size_t nnodes,
					       uint32_t gpus_per_node,
					       struct k8s_cons_tres_inventory **out,
					       char *err, size_t errlen);

/* Frees an inventory; NULL is ignored. */
K8S_CONS_TRES_API void k8s_cons_tres_inventory_free(struct k8s_cons_tres_inventory *inv);

enum k8s_cons_tres_node_state {
	K8S_CONS_TRES_NODE_OK = 0,       /* slices complete and agree with Slurm */
	K8S_CONS_TRES_NODE_UNKNOWN = 1,  /* no slices for this node */
	K8S_CONS_TRES_NODE_INVALID = 2,  /* slices unusable; reason says why */
	K8S_CONS_TRES_NODE_MISMATCH = 3  /* slices disagree with Slurm; reason has the difference */
};

/* Sets *state and, unless OK, a one-line reason. slurm may be NULL (no comparison). */
K8S_CONS_TRES_API int k8s_cons_tres_node_check(struct k8s_cons_tres_inventory *inv, const char *node,
				 const struct k8s_cons_tres_slurm_node *slurm,
				 int *state, char *reason, size_t reasonlen);

struct k8s_cons_tres_free_counts {
	uint32_t cpus;  /* free logical CPUs */
	uint32_t cores; /* cores whose every thread is free */
	uint32_t gpus;
};

K8S_CONS_TRES_API int k8s_cons_tres_node_free(struct k8s_cons_tres_inventory *inv, const char *node,
				struct k8s_cons_tres_free_counts *out, char *err,
				size_t errlen);

/*
 * Slurm core indices with at least one thread held by a Kubernetes claim,
 * and GRES indices of GPUs held by claims (what Slurm must not use). Arrays
 * are caller-owned; *ncores / *ngres receive the counts. K8S_CONS_TRES_EINVAL when
 * a capacity is too small (the counts are still set).
 */
K8S_CONS_TRES_API int k8s_cons_tres_k8s_held(struct k8s_cons_tres_inventory *inv, const char *node,
			       uint32_t *cores, size_t core_cap, size_t *ncores,
			       uint32_t *gres, size_t gres_cap, size_t *ngres,
			       char *err, size_t errlen);

struct k8s_cons_tres_request {
	uint32_t cpus;             /* CPUs wanted */
	uint32_t whole_cores;      /* non-zero: hold whole free cores */
	uint32_t threads_per_core; /* threads used per core; 0: all */
	uint32_t gpus;
	uint32_t cpus_per_gpu;     /* CPUs wanted = max(cpus, gpus * cpus_per_gpu) */
};

/* Output of k8s_cons_tres_place; the arrays are caller-owned, with capacities. */
struct k8s_cons_tres_placement {
	int fits;
	char reason[160];           /* why not, when !fits */
	struct k8s_cons_tres_score score;
	uint32_t *cpu_ids;          /* Linux CPU ids held */
	size_t cpu_cap, ncpus;
	uint32_t *cores;            /* Slurm core indices touched, ascending */
	size_t core_cap, ncores;
	uint32_t *gres;             /* GRES indices, ascending */
	size_t gres_cap, ngres;
};

/* K8S_CONS_TRES_OK with fits == 0 when the request does not fit. */
K8S_CONS_TRES_API int k8s_cons_tres_place(struct k8s_cons_tres_inventory *inv, const char *node,
			    const struct k8s_cons_tres_request *req,
			    struct k8s_cons_tres_placement *out, char *err,
			    size_t errlen);

/*
 * Ranks nodes by the best placement each offers: order[i] is the index into
 * nodes of the i-th best; fits and scores (may be NULL) are per order entry.
 * The inventory keeps the ranking between calls and searches again only the
 * nodes changed since (the answer is the same as searching every node).
 */
K8S_CONS_TRES_API int k8s_cons_tres_rank(struct k8s_cons_tres_inventory *inv,
			   const char *const *nodes, size_t nnodes,
			   const struct k8s_cons_tres_request *req, size_t *order,
			   int *fits, struct k8s_cons_tres_score *scores, char *err,
			   size_t errlen);

/*
 * Same as k8s_cons_tres_rank, from per-NUMA free counts only: about 20x cheaper,
 * exact on the NUMA count when no GPUs are asked for, best fit on free CPUs
 * after that (scores carry numa_nodes and free_in_numa only).
 */
K8S_CONS_TRES_API int k8s_cons_tres_rank_coarse(struct k8s_cons_tres_inventory *inv,
				  const char *const *nodes, size_t nnodes,
				  const struct k8s_cons_tres_request *req, size_t *order,
				  int *fits, struct k8s_cons_tres_score *scores,
				  char *err, size_t errlen);

/* Records that job_id holds these whole Slurm cores and GRES indices. */
K8S_CONS_TRES_API int k8s_cons_tres_job_begin(struct k8s_cons_tres_inventory *inv, const char *node,
				uint32_t job_id, const uint32_t *cores,
				size_t ncores, const uint32_t *gres,
				size_t ngres, char *err, size_t errlen);

/* Frees everything job_id holds; *nodes (may be NULL) receives how many nodes. */
K8S_CONS_TRES_API int k8s_cons_tres_job_end(struct k8s_cons_tres_inventory *inv, uint32_t job_id,
			      size_t *nodes);

#ifdef __cplusplus
}
#endif

#endif /* K8S_CONS_TRES_TEST_H */
