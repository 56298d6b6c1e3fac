/*
 * slurm_compat.h - the Slurm release differences that are only a type, a
 * name or a header's place, so that the shared plugin sources read the same
 * against every release they are built for. Include it first, instead of
 * src/common/slurm_xlator.h.
 *
 * Entry points (which select_p_* the loader looks up, with which arguments,
 * and the plugin_id) are not here: they are the ABI family adapters'
 * (select_22_05.c, select_23_11.c, select_25_05.c) and, where families
 * share them, select_common.c's. configure builds only for releases that
 * have an adapter, so the releases between the families (22.06-23.02) are
 * never seen here.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_SLURM_COMPAT_H
#define K8S_SLURM_COMPAT_H

#include "src/common/slurm_xlator.h"
#include "slurm/slurm_version.h"
#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/list.h"

#define K8S_SLURM_AT_LEAST(a, b, c) \
	(SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(a, b, c))

/* 23.02 moved the plugin interfaces from src/common to src/interfaces. */
#if K8S_SLURM_AT_LEAST(23, 2, 0)
#include "src/interfaces/gres.h"
#include "src/interfaces/select.h"
#else
#include "src/common/gres.h"
#include "src/common/select.h"
#endif

/*
 * 24.11 names the list, iterator and job details structs list_t,
 * list_itr_t and job_details_t (pointers written out); 22.05 has only the
 * pointer typedefs List and ListIterator and the tag struct job_details.
 */
#if !K8S_SLURM_AT_LEAST(24, 11, 0)
typedef struct xlist list_t;
typedef struct listIterator list_itr_t;
typedef struct job_details job_details_t;
#endif

/*
 * A hostlist object: 24.11's hostlist_t is the struct, 22.05's the pointer
 * to it. Shared code holds a `k8s_hostlist_t *`.
 */
typedef struct hostlist k8s_hostlist_t;

/*
 * 26.05 starts threads through its threadpool (a name first) and wants them
 * joined through it; 22.05, 24.11 and 25.11 create a plain pthread.
 */
#if K8S_SLURM_AT_LEAST(26, 5, 0)
#include "src/common/threadpool.h"
#define k8s_thread_create(name, id, func, arg) \
	slurm_thread_create(name, id, func, arg)
#define k8s_thread_join(id) slurm_thread_join(id)
#else
#include <pthread.h>
#define k8s_thread_create(name, id, func, arg) \
	slurm_thread_create(id, func, arg)
#define k8s_thread_join(id) pthread_join(id, NULL)
#endif

#endif
