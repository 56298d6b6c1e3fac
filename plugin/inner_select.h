/*
 * inner_select.h - the wrapped select/cons_tres, reached through its own
 * symbol table (the other_select pattern of select/cray_aries).
 *
 * Each ABI family adapter lays out one table: k8s_inner_shared_t (the entry
 * points the shared code calls through k8s_inner) followed by that family's
 * own (whatever else the family has), with one name each in its syms list,
 * K8S_INNER_SHARED_SYMS first.
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

#if !K8S_SLURM_AT_LEAST(25, 5, 0)
/*
 * What 22.05 through 24.11 have alike and 25.05 dropped: state save and
 * restore, job_init, steps, the node and job info records (field by field
 * as K8S_INNER_PRE25_SYMS; the types are 22.05's slurm_select_ops_t's and
 * those of 24.11.5's, which src/interfaces/select.c keeps private).
 */
typedef struct {
	int (*state_save)(char *dir_name);
	int (*state_restore)(char *dir_name);
	int (*job_init)(list_t *job_list);
	bitstr_t *(*step_pick_nodes)(job_record_t *job_ptr,
				     select_jobinfo_t *jobinfo,
				     uint32_t node_count, bitstr_t **avail_nodes);
	int (*step_start)(step_record_t *step_ptr);
	int (*step_finish)(step_record_t *step_ptr, bool killing_step);
	int (*nodeinfo_pack)(select_nodeinfo_t *nodeinfo, buf_t *buffer,
			     uint16_t protocol_version);
	int (*nodeinfo_unpack)(select_nodeinfo_t **nodeinfo, buf_t *buffer,
			       uint16_t protocol_version);
	select_nodeinfo_t *(*nodeinfo_alloc)(void);
	int (*nodeinfo_free)(select_nodeinfo_t *nodeinfo);
	int (*nodeinfo_get)(select_nodeinfo_t *nodeinfo,
			    enum select_nodedata_type dinfo,
			    enum node_states state, void *data);
	select_jobinfo_t *(*jobinfo_alloc)(void);
	int (*jobinfo_free)(select_jobinfo_t *jobinfo);
	int (*jobinfo_set)(select_jobinfo_t *jobinfo,
			   enum select_jobdata_type data_type, void *data);
	int (*jobinfo_get)(select_jobinfo_t *jobinfo,
			   enum select_jobdata_type data_type, void *data);
	select_jobinfo_t *(*jobinfo_copy)(select_jobinfo_t *jobinfo);
	int (*jobinfo_pack)(select_jobinfo_t *jobinfo, buf_t *buffer,
			    uint16_t protocol_version);
	int (*jobinfo_unpack)(select_jobinfo_t **jobinfo, buf_t *buffer,
			      uint16_t protocol_version);
	int (*get_info_from_plugin)(enum select_plugindata_info info,
				    job_record_t *job_ptr, void *data);
} k8s_inner_pre25_t;

#define K8S_INNER_PRE25_SYMS \
	"select_p_state_save", "select_p_state_restore", "select_p_job_init", \
	"select_p_step_pick_nodes", "select_p_step_start", \
	"select_p_step_finish", \
	"select_p_select_nodeinfo_pack", "select_p_select_nodeinfo_unpack", \
	"select_p_select_nodeinfo_alloc", "select_p_select_nodeinfo_free", \
	"select_p_select_nodeinfo_get", \
	"select_p_select_jobinfo_alloc", "select_p_select_jobinfo_free", \
	"select_p_select_jobinfo_set", "select_p_select_jobinfo_get", \
	"select_p_select_jobinfo_copy", "select_p_select_jobinfo_pack", \
	"select_p_select_jobinfo_unpack", "select_p_get_info_from_plugin"
#endif

/*
 * The start of every adapter's table: what the shared code (select_common.c)
 * calls. Every release: k8s_inner_common_t. 23.11 on: job_test, with
 * slurmctld's exclusions as a resv_exc_t and backfill's will_run_data_t
 * (24.11.5, 25.11.7, 26.05.3 alike; cons_tres's select_p_job_test).
 * Before 25.05: k8s_inner_pre25_t.
 */
typedef struct {
	k8s_inner_common_t common;
#if K8S_SLURM_AT_LEAST(23, 11, 0)
	int (*job_test)(job_record_t *job_ptr, bitstr_t *bitmap,
			uint32_t min_nodes, uint32_t max_nodes,
			uint32_t req_nodes, uint16_t mode,
			list_t *preemptee_candidates,
			list_t **preemptee_job_list, resv_exc_t *resv_exc_ptr,
			will_run_data_t *will_run_ptr);
#endif
#if !K8S_SLURM_AT_LEAST(25, 5, 0)
	k8s_inner_pre25_t pre25;
#endif
} k8s_inner_shared_t;

/* Field by field as k8s_inner_shared_t. */
#if K8S_SLURM_AT_LEAST(25, 5, 0)
#define K8S_INNER_SHARED_SYMS K8S_INNER_COMMON_SYMS, "select_p_job_test"
#elif K8S_SLURM_AT_LEAST(23, 11, 0)
#define K8S_INNER_SHARED_SYMS K8S_INNER_COMMON_SYMS, "select_p_job_test", \
	K8S_INNER_PRE25_SYMS
#else
#define K8S_INNER_SHARED_SYMS K8S_INNER_COMMON_SYMS, K8S_INNER_PRE25_SYMS
#endif

/* cons_tres's shared entry points; valid after the adapter's
 * k8s_adapter_init(). */
extern k8s_inner_shared_t *k8s_inner;

/*
 * Loads cons_tres into `table` (which starts with a k8s_inner_shared_t):
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
