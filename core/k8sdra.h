/*
 * k8sdra.h - the C ABI of the k8s_cons_tres core.
 *
 * This is the only header plugin/ includes from the C++ side. Plain C structs
 * in, plain C structs out, error codes and messages; no C++ exception ever
 * crosses it (every entry point catches everything).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8SDRA_H
#define K8SDRA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define K8SDRA_API __attribute__((visibility("default")))
#else
#define K8SDRA_API
#endif

/* Return codes of every entry point. */
enum k8sdra_rc {
	K8SDRA_OK = 0,
	K8SDRA_EINVAL = 1,   /* bad argument or bad configuration */
	K8SDRA_ESTATE = 2,   /* called in the wrong state (e.g. start twice) */
	K8SDRA_EINTERNAL = 3 /* unexpected failure, caught at the boundary */
};

/* Log levels the core uses; the plugin maps them to Slurm's log calls. */
enum k8sdra_log_level {
	K8SDRA_LOG_ERROR = 0,
	K8SDRA_LOG_INFO = 1,
	K8SDRA_LOG_VERBOSE = 2,
	K8SDRA_LOG_DEBUG = 3
};

/* Called from any thread, including the core's own; must be thread-safe. */
typedef void (*k8sdra_log_fn)(int level, const char *msg);

/* ---- lifecycle (slurmctld only) ---------------------------------------- */

struct k8sdra_start_args {
	const char *conf_path;    /* k8s_cons_tres.conf; may be NULL */
	k8sdra_log_fn log;        /* may be NULL: then the core is silent */
	const char *cluster_name; /* Slurm's ClusterName, labels our claims */
	const char *state_dir;    /* StateSaveLocation: the view file goes there */
	long replaced_pid;        /* slurmctld replaced by reconfigure, or 0 */
};

/*
 * Starts the core and its background thread. On failure returns non-zero and
 * writes a one-line reason into err (always NUL-terminated when errlen > 0).
 */
K8SDRA_API int k8sdra_start(const struct k8sdra_start_args *args, char *err,
			    size_t errlen);

/* Stops the background thread and frees everything. Safe to call twice. */
K8SDRA_API void k8sdra_stop(void);

/* 1 while the core is started, else 0. */
K8SDRA_API int k8sdra_running(void);

/* Version string of the core, for the init log line. */
K8SDRA_API const char *k8sdra_version(void);

/* ---- inventory, ledger and placement (core/c_api.cc) -------------------- */
/*
 * An inventory is one consistent snapshot of the Kubernetes nodes (topology
 * from ResourceSlices, holdings from ResourceClaims) plus the Slurm jobs
 * recorded since. Calls on one inventory are serialized internally. CPU
 * sets cross this boundary as Slurm core indices (socket * cores_per_socket
 * + core) and Linux CPU ids; GPUs as GRES indices.
 */
struct k8sdra_inventory;

enum k8sdra_gres_order {
	K8SDRA_GRES_BY_MINOR = 0,  /* /dev/nvidiaN order (default) */
	K8SDRA_GRES_BY_PCI_BUS = 1 /* resource.kubernetes.io/pciBusID order */
};

/*
 * Builds an inventory of identical nodes from an hwloc synthetic topology
 * (e.g. "pack:2 numa:4 core:8 pu:2") with gpus_per_node fake NVIDIA GPUs,
 * as the fixture generator publishes them. For tests and previews.
 */
K8SDRA_API int k8sdra_inventory_from_synthetic(const char *synthetic,
					       const char *const *nodes,
					       size_t nnodes,
					       uint32_t gpus_per_node,
					       struct k8sdra_inventory **out,
					       char *err, size_t errlen);

/* Frees an inventory; NULL is ignored. */
K8SDRA_API void k8sdra_inventory_free(struct k8sdra_inventory *inv);

/* What slurm.conf / gres.conf say about a node. */
struct k8sdra_slurm_node {
	uint32_t sockets;
	uint32_t cores_per_socket;
	uint32_t threads_per_core;
	uint32_t gpus;
};

enum k8sdra_node_state {
	K8SDRA_NODE_OK = 0,       /* slices complete and agree with Slurm */
	K8SDRA_NODE_UNKNOWN = 1,  /* no slices for this node */
	K8SDRA_NODE_INVALID = 2,  /* slices unusable; reason says why */
	K8SDRA_NODE_MISMATCH = 3  /* slices disagree with Slurm; reason has the difference */
};

/* Sets *state and, unless OK, a one-line reason. slurm may be NULL (no comparison). */
K8SDRA_API int k8sdra_node_check(struct k8sdra_inventory *inv, const char *node,
				 const struct k8sdra_slurm_node *slurm,
				 int *state, char *reason, size_t reasonlen);

struct k8sdra_free_counts {
	uint32_t cpus;  /* free logical CPUs */
	uint32_t cores; /* cores whose every thread is free */
	uint32_t gpus;
};

K8SDRA_API int k8sdra_node_free(struct k8sdra_inventory *inv, const char *node,
				struct k8sdra_free_counts *out, char *err,
				size_t errlen);

/*
 * Slurm core indices with at least one thread held by a Kubernetes claim,
 * and GRES indices of GPUs held by claims (what Slurm must not use). Arrays
 * are caller-owned; *ncores / *ngres receive the counts. K8SDRA_EINVAL when
 * a capacity is too small (the counts are still set).
 */
K8SDRA_API int k8sdra_k8s_held(struct k8sdra_inventory *inv, const char *node,
			       uint32_t *cores, size_t core_cap, size_t *ncores,
			       uint32_t *gres, size_t gres_cap, size_t *ngres,
			       char *err, size_t errlen);

struct k8sdra_request {
	uint32_t cpus;             /* CPUs wanted */
	uint32_t whole_cores;      /* non-zero: hold whole free cores */
	uint32_t threads_per_core; /* threads used per core; 0: all */
	uint32_t gpus;
	uint32_t cpus_per_gpu;     /* CPUs wanted = max(cpus, gpus * cpus_per_gpu) */
};

/* Lexicographic; smaller is better. See core/placement.h. */
struct k8sdra_score {
	uint32_t numa_nodes;
	uint32_t l3_groups;
	uint32_t sockets;
	uint32_t cores;
	uint32_t gpu_distance;
	uint32_t free_in_numa;
	uint32_t free_in_l3;
};

/* Output of k8sdra_place; the arrays are caller-owned, with capacities. */
struct k8sdra_placement {
	int fits;
	char reason[160];           /* why not, when !fits */
	struct k8sdra_score score;
	uint32_t *cpu_ids;          /* Linux CPU ids held */
	size_t cpu_cap, ncpus;
	uint32_t *cores;            /* Slurm core indices touched, ascending */
	size_t core_cap, ncores;
	uint32_t *gres;             /* GRES indices, ascending */
	size_t gres_cap, ngres;
};

/* K8SDRA_OK with fits == 0 when the request does not fit. */
K8SDRA_API int k8sdra_place(struct k8sdra_inventory *inv, const char *node,
			    const struct k8sdra_request *req,
			    struct k8sdra_placement *out, char *err,
			    size_t errlen);

/*
 * Ranks nodes by the best placement each offers: order[i] is the index into
 * nodes of the i-th best; fits and scores (may be NULL) are per order entry.
 * The inventory keeps the ranking between calls and searches again only the
 * nodes changed since (the answer is the same as searching every node).
 */
K8SDRA_API int k8sdra_rank(struct k8sdra_inventory *inv,
			   const char *const *nodes, size_t nnodes,
			   const struct k8sdra_request *req, size_t *order,
			   int *fits, struct k8sdra_score *scores, char *err,
			   size_t errlen);

/*
 * Same as k8sdra_rank, from per-NUMA free counts only: about 20x cheaper,
 * exact on the NUMA count when no GPUs are asked for, best fit on free CPUs
 * after that (scores carry numa_nodes and free_in_numa only).
 */
K8SDRA_API int k8sdra_rank_coarse(struct k8sdra_inventory *inv,
				  const char *const *nodes, size_t nnodes,
				  const struct k8sdra_request *req, size_t *order,
				  int *fits, struct k8sdra_score *scores,
				  char *err, size_t errlen);

/* Records that job_id holds these whole Slurm cores and GRES indices. */
K8SDRA_API int k8sdra_job_begin(struct k8sdra_inventory *inv, const char *node,
				uint32_t job_id, const uint32_t *cores,
				size_t ncores, const uint32_t *gres,
				size_t ngres, char *err, size_t errlen);

/* Frees everything job_id holds; *nodes (may be NULL) receives how many nodes. */
K8SDRA_API int k8sdra_job_end(struct k8sdra_inventory *inv, uint32_t job_id,
			      size_t *nodes);

#ifdef __cplusplus
}
#endif

#endif /* K8SDRA_H */
