/*
 * k8s_cons_tres.h - the C ABI of the k8s_cons_tres core.
 *
 * This is the only header plugin/ includes from the C++ side. Plain C structs
 * in, plain C structs out, error codes and messages; no C++ exception ever
 * crosses it (every entry point catches everything).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_CONS_TRES_H
#define K8S_CONS_TRES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define K8S_CONS_TRES_API __attribute__((visibility("default")))
#else
#define K8S_CONS_TRES_API
#endif

/* Return codes of every entry point. */
enum k8s_cons_tres_rc {
	K8S_CONS_TRES_OK = 0,
	K8S_CONS_TRES_EINVAL = 1,   /* bad argument or bad configuration */
	K8S_CONS_TRES_ESTATE = 2,   /* called in the wrong state (e.g. start twice) */
	K8S_CONS_TRES_EINTERNAL = 3 /* unexpected failure, caught at the boundary */
};

/* Log levels the core uses; the plugin maps them to Slurm's log calls. */
enum k8s_cons_tres_log_level {
	K8S_CONS_TRES_LOG_ERROR = 0,
	K8S_CONS_TRES_LOG_INFO = 1,
	K8S_CONS_TRES_LOG_VERBOSE = 2,
	K8S_CONS_TRES_LOG_DEBUG = 3
};

/* Called from any thread, including the core's own; must be thread-safe. */
typedef void (*k8s_cons_tres_log_fn)(int level, const char *msg);

/* ---- lifecycle (slurmctld only) ---------------------------------------- */

struct k8s_cons_tres_start_args {
	const char *conf_path;    /* k8s_cons_tres.conf; may be NULL */
	k8s_cons_tres_log_fn log;        /* may be NULL: then the core is silent */
	const char *cluster_name; /* Slurm's ClusterName, labels our claims */
	const char *state_dir;    /* StateSaveLocation: the view file goes there */
	long replaced_pid;        /* slurmctld replaced by reconfigure, or 0 */
};

/*
 * Starts the core and its background thread. On failure returns non-zero and
 * writes a one-line reason into err (always NUL-terminated when errlen > 0).
 */
K8S_CONS_TRES_API int k8s_cons_tres_start(const struct k8s_cons_tres_start_args *args, char *err,
			    size_t errlen);

/* Stops the background thread and frees everything. Safe to call twice. */
K8S_CONS_TRES_API void k8s_cons_tres_stop(void);

/* 1 while the core is started, else 0. */
K8S_CONS_TRES_API int k8s_cons_tres_running(void);

/* Version string of the core, for the init log line. */
K8S_CONS_TRES_API const char *k8s_cons_tres_version(void);

/* ---- vocabulary shared with k8s_cons_tres_ctld.h ------------------------------ */

/* What slurm.conf / gres.conf say about a node. */
struct k8s_cons_tres_slurm_node {
	uint32_t sockets;
	uint32_t cores_per_socket;
	uint32_t threads_per_core;
	uint32_t gpus;
};

/* Lexicographic; smaller is better. See core/placement.h. */
struct k8s_cons_tres_score {
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

#endif /* K8S_CONS_TRES_H */
