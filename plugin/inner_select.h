/*
 * inner_select.h - the wrapped select/cons_tres, reached through its own
 * symbol table (the other_select pattern of select/cray_aries).
 *
 * Each ABI family adapter lays out one table: k8s_inner_common_t (the entry
 * points every supported release has with the same arguments, which the
 * shared code calls through k8s_inner) followed by that family's own
 * (job_test and whatever else the family has), with one name each in its
 * syms list, K8S_INNER_COMMON_SYMS first.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef K8S_INNER_SELECT_H
#define K8S_INNER_SELECT_H

#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

#define K8S_INNER_TYPE "select/cons_tres"

/* Field by field as K8S_INNER_COMMON_SYMS. */
typedef struct {
	int (*node_init)(void);
	int (*job_begin)(job_record_t *job_ptr);
	int (*job_ready)(job_record_t *job_ptr);
	int (*job_expand)(job_record_t *from_job_ptr, job_record_t *to_job_ptr);
	int (*job_resized)(job_record_t *job_ptr, node_record_t *node_ptr);
	int (*job_fini)(job_record_t *job_ptr);
	int (*job_suspend)(job_record_t *job_ptr, bool indf_susp);
	int (*job_resume)(job_record_t *job_ptr, bool indf_susp);
	int (*nodeinfo_set_all)(void);
	int (*nodeinfo_set)(job_record_t *job_ptr);
	int (*reconfigure)(void);
} k8s_inner_common_t;

#define K8S_INNER_COMMON_SYMS \
	"select_p_node_init", "select_p_job_begin", "select_p_job_ready", \
	"select_p_job_expand", "select_p_job_resized", "select_p_job_fini", \
	"select_p_job_suspend", "select_p_job_resume", \
	"select_p_select_nodeinfo_set_all", "select_p_select_nodeinfo_set", \
	"select_p_reconfigure"

/* cons_tres's common entry points; valid after the adapter's
 * k8s_adapter_init(). */
extern k8s_inner_common_t *k8s_inner;

/*
 * Loads cons_tres into `table` (which starts with a k8s_inner_common_t):
 * one function pointer per name of `syms` (syms_size bytes), in order.
 */
extern int inner_select_init(void *table, const char **syms, size_t syms_size);
extern void inner_select_fini(void);

/*
 * `table` has one function pointer per name of `syms` (for the adapter,
 * after the definitions).
 */
#define K8S_INNER_TABLE_CHECK(table, syms) \
	_Static_assert(sizeof(table) == \
		       sizeof(syms) / sizeof((syms)[0]) * sizeof(void *), \
		       #syms " must name every entry point of " #table)

/*
 * Our entry point fn has exactly the type `field` has: the loader finds
 * entry points by name, so only this tells the compiler what they will be
 * called with.
 */
#define K8S_SAME_TYPE(fn, field) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&(fn)), \
						    __typeof__(field)), \
		       #fn " must take what this release passes")

#endif
