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

/* ---- vocabulary shared with k8sdra_ctld.h ------------------------------ */

/* What slurm.conf / gres.conf say about a node. */
struct k8sdra_slurm_node {
	uint32_t sockets;
	uint32_t cores_per_socket;
	uint32_t threads_per_core;
	uint32_t gpus;
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

#ifdef __cplusplus
}
#endif

#endif /* K8SDRA_H */
