/*
 * select_22_05.c - the Slurm 22.05 ABI family's adapter (22.05.8, Debian
 * 12's): plugin_id and the entry points of 22.05's 36 that are not shared
 * (select_common.c has node_init, job_begin, job_ready, job_expand,
 * job_resized, job_fini, job_suspend, job_resume, nodeinfo_set_all,
 * nodeinfo_set, reconfigure). Each forwards to select/cons_tres, through
 * the shared code where the plugin adds anything.
 *
 * 22.05 loads every select plugin in PluginDir in slurmctld, srun and the
 * client commands (slurmd: SelectType only) and refuses two with one id,
 * so this id is not cons_tres's 109. The price: scontrol refuses CoreCnt=
 * reservations (state_control_corecnt_supported checks the id).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

#include "inner_select.h"
#include "k8s_agent.h"
#include "k8s_gpu.h"
#include "select_common.h"

/* Unused by Slurm (101-110 are taken); "k8" in ASCII. */
const uint32_t plugin_id = 0x6b38;

/* The type 22.05's loader gives entry point f (src/common/select.h). */
#define OPS_T(f) __typeof__(((slurm_select_ops_t *) 0)->f)

/* cons_tres's entry points: the shared ones, then 22.05's own. */
static struct {
	k8s_inner_common_t common;
	OPS_T(state_save) state_save;
	OPS_T(state_restore) state_restore;
	OPS_T(job_init) job_init;
	OPS_T(job_test) job_test;
	OPS_T(job_signal) job_signal;
	OPS_T(step_pick_nodes) step_pick_nodes;
	OPS_T(step_start) step_start;
	OPS_T(step_finish) step_finish;
	OPS_T(nodeinfo_pack) nodeinfo_pack;
	OPS_T(nodeinfo_unpack) nodeinfo_unpack;
	OPS_T(nodeinfo_alloc) nodeinfo_alloc;
	OPS_T(nodeinfo_free) nodeinfo_free;
	OPS_T(nodeinfo_get) nodeinfo_get;
	OPS_T(jobinfo_alloc) jobinfo_alloc;
	OPS_T(jobinfo_free) jobinfo_free;
	OPS_T(jobinfo_set) jobinfo_set;
	OPS_T(jobinfo_get) jobinfo_get;
	OPS_T(jobinfo_copy) jobinfo_copy;
	OPS_T(jobinfo_pack) jobinfo_pack;
	OPS_T(jobinfo_unpack) jobinfo_unpack;
	OPS_T(jobinfo_sprint) jobinfo_sprint;
	OPS_T(jobinfo_xstrdup) jobinfo_xstrdup;
	OPS_T(get_info_from_plugin) get_info_from_plugin;
	OPS_T(update_node_config) update_node_config;
	OPS_T(resv_test) resv_test;
} inner;

static const char *inner_syms[] = {
	K8S_INNER_COMMON_SYMS,
	"select_p_state_save", "select_p_state_restore", "select_p_job_init",
	"select_p_job_test", "select_p_job_signal",
	"select_p_step_pick_nodes", "select_p_step_start",
	"select_p_step_finish",
	"select_p_select_nodeinfo_pack", "select_p_select_nodeinfo_unpack",
	"select_p_select_nodeinfo_alloc", "select_p_select_nodeinfo_free",
	"select_p_select_nodeinfo_get",
	"select_p_select_jobinfo_alloc", "select_p_select_jobinfo_free",
	"select_p_select_jobinfo_set", "select_p_select_jobinfo_get",
	"select_p_select_jobinfo_copy", "select_p_select_jobinfo_pack",
	"select_p_select_jobinfo_unpack", "select_p_select_jobinfo_sprint",
	"select_p_select_jobinfo_xstrdup",
	"select_p_get_info_from_plugin", "select_p_update_node_config",
	"select_p_resv_test",
};
K8S_INNER_TABLE_CHECK(inner, inner_syms);
/* every entry point of slurm_select_ops_t, plugin_id aside */
_Static_assert(sizeof(inner) == sizeof(slurm_select_ops_t) - sizeof(void *),
	       "inner must hold every entry point 22.05's loader knows");

/* The shared entry points have in 22.05 the types the shared code uses. */
#define COMMON_AS_RELEASE(f) \
	_Static_assert(__builtin_types_compatible_p( \
			       OPS_T(f), __typeof__(inner.common.f)), \
		       #f " differs in 22.05")
COMMON_AS_RELEASE(node_init);
COMMON_AS_RELEASE(job_begin);
COMMON_AS_RELEASE(job_ready);
COMMON_AS_RELEASE(job_expand);
COMMON_AS_RELEASE(job_resized);
COMMON_AS_RELEASE(job_fini);
COMMON_AS_RELEASE(job_suspend);
COMMON_AS_RELEASE(job_resume);
COMMON_AS_RELEASE(nodeinfo_set_all);
COMMON_AS_RELEASE(nodeinfo_set);
COMMON_AS_RELEASE(reconfigure);

extern int k8s_adapter_init(void)
{
	return inner_select_init(&inner, inner_syms, sizeof(inner_syms));
}

extern int select_p_state_save(char *dir_name)
{
	/* slurmctld saves its state when it leaves control, too. */
	k8s_agent_check_control();
	return inner.state_save(dir_name);
}

extern int select_p_state_restore(char *dir_name)
{
	return inner.state_restore(dir_name);
}

extern int select_p_job_init(List jobs)
{
	return inner.job_init(jobs);
}

static int _inner_job_test(k8s_job_test_t *t, bitstr_t *exc)
{
	return inner.job_test(t->job_ptr, t->node_bitmap, t->min_nodes,
			      t->max_nodes, t->req_nodes, t->mode,
			      t->preemptee_candidates, t->preemptee_job_list,
			      exc);
}

/* 22.05 passes the cores reservations exclude as one cluster-wide bitmap. */
extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
			     uint32_t min_nodes, uint32_t max_nodes,
			     uint32_t req_nodes, uint16_t mode,
			     List preemptee_candidates,
			     List *preemptee_job_list,
			     bitstr_t *exc_core_bitmap)
{
	k8s_job_test_t t = {
		.job_ptr = job_ptr, .node_bitmap = node_bitmap,
		.min_nodes = min_nodes, .max_nodes = max_nodes,
		.req_nodes = req_nodes, .mode = mode,
		.preemptee_candidates = preemptee_candidates,
		.preemptee_job_list = preemptee_job_list,
		.inner = _inner_job_test,
	};

	return k8s_select_job_test(&t, exc_core_bitmap);
}

extern int select_p_job_signal(job_record_t *job_ptr, int signal)
{
	return inner.job_signal(job_ptr, signal);
}

extern bitstr_t *select_p_step_pick_nodes(job_record_t *job_ptr,
					  select_jobinfo_t *jobinfo,
					  uint32_t node_count,
					  bitstr_t **avail_nodes)
{
	return inner.step_pick_nodes(job_ptr, jobinfo, node_count, avail_nodes);
}

extern int select_p_step_start(step_record_t *step_ptr)
{
	return inner.step_start(step_ptr);
}

extern int select_p_step_finish(step_record_t *step_ptr, bool killing_step)
{
	return inner.step_finish(step_ptr, killing_step);
}

extern int select_p_select_nodeinfo_pack(select_nodeinfo_t *nodeinfo,
					 buf_t *buffer,
					 uint16_t protocol_version)
{
	return inner.nodeinfo_pack(nodeinfo, buffer, protocol_version);
}

extern int select_p_select_nodeinfo_unpack(select_nodeinfo_t **nodeinfo,
					   buf_t *buffer,
					   uint16_t protocol_version)
{
	return inner.nodeinfo_unpack(nodeinfo, buffer, protocol_version);
}

extern select_nodeinfo_t *select_p_select_nodeinfo_alloc(void)
{
	return inner.nodeinfo_alloc();
}

extern int select_p_select_nodeinfo_free(select_nodeinfo_t *nodeinfo)
{
	return inner.nodeinfo_free(nodeinfo);
}

extern int select_p_select_nodeinfo_get(select_nodeinfo_t *nodeinfo,
					enum select_nodedata_type dinfo,
					enum node_states state, void *data)
{
	return inner.nodeinfo_get(nodeinfo, dinfo, state, data);
}

extern select_jobinfo_t *select_p_select_jobinfo_alloc(void)
{
	return inner.jobinfo_alloc();
}

extern int select_p_select_jobinfo_free(select_jobinfo_t *jobinfo)
{
	return inner.jobinfo_free(jobinfo);
}

extern int select_p_select_jobinfo_set(select_jobinfo_t *jobinfo,
				       enum select_jobdata_type data_type,
				       void *data)
{
	return inner.jobinfo_set(jobinfo, data_type, data);
}

extern int select_p_select_jobinfo_get(select_jobinfo_t *jobinfo,
				       enum select_jobdata_type data_type,
				       void *data)
{
	return inner.jobinfo_get(jobinfo, data_type, data);
}

extern select_jobinfo_t *select_p_select_jobinfo_copy(select_jobinfo_t *jobinfo)
{
	return inner.jobinfo_copy(jobinfo);
}

extern int select_p_select_jobinfo_pack(select_jobinfo_t *jobinfo,
					buf_t *buffer,
					uint16_t protocol_version)
{
	return inner.jobinfo_pack(jobinfo, buffer, protocol_version);
}

extern int select_p_select_jobinfo_unpack(select_jobinfo_t **jobinfo,
					  buf_t *buffer,
					  uint16_t protocol_version)
{
	return inner.jobinfo_unpack(jobinfo, buffer, protocol_version);
}

extern char *select_p_select_jobinfo_sprint(select_jobinfo_t *jobinfo,
					    char *buf, size_t size, int mode)
{
	return inner.jobinfo_sprint(jobinfo, buf, size, mode);
}

extern char *select_p_select_jobinfo_xstrdup(select_jobinfo_t *jobinfo,
					     int mode)
{
	return inner.jobinfo_xstrdup(jobinfo, mode);
}

extern int select_p_get_info_from_plugin(enum select_plugindata_info info,
					 job_record_t *job_ptr, void *data)
{
	return inner.get_info_from_plugin(info, job_ptr, data);
}

extern int select_p_update_node_config(int index)
{
	int rc = inner.update_node_config(index);

	/* A slurmd registered: its GRES state is (re)validated now. */
	k8s_gpu_sync_node(index);
	return rc;
}

extern bitstr_t *select_p_resv_test(resv_desc_msg_t *resv_desc_ptr,
				    uint32_t node_cnt,
				    bitstr_t *avail_bitmap,
				    bitstr_t **core_bitmap)
{
	return inner.resv_test(resv_desc_ptr, node_cnt, avail_bitmap,
			       core_bitmap);
}

K8S_SAME_TYPE(select_p_state_save, inner.state_save);
K8S_SAME_TYPE(select_p_state_restore, inner.state_restore);
K8S_SAME_TYPE(select_p_job_init, inner.job_init);
K8S_SAME_TYPE(select_p_job_test, inner.job_test);
K8S_SAME_TYPE(select_p_job_signal, inner.job_signal);
K8S_SAME_TYPE(select_p_step_pick_nodes, inner.step_pick_nodes);
K8S_SAME_TYPE(select_p_step_start, inner.step_start);
K8S_SAME_TYPE(select_p_step_finish, inner.step_finish);
K8S_SAME_TYPE(select_p_select_nodeinfo_pack, inner.nodeinfo_pack);
K8S_SAME_TYPE(select_p_select_nodeinfo_unpack, inner.nodeinfo_unpack);
K8S_SAME_TYPE(select_p_select_nodeinfo_alloc, inner.nodeinfo_alloc);
K8S_SAME_TYPE(select_p_select_nodeinfo_free, inner.nodeinfo_free);
K8S_SAME_TYPE(select_p_select_nodeinfo_get, inner.nodeinfo_get);
K8S_SAME_TYPE(select_p_select_jobinfo_alloc, inner.jobinfo_alloc);
K8S_SAME_TYPE(select_p_select_jobinfo_free, inner.jobinfo_free);
K8S_SAME_TYPE(select_p_select_jobinfo_set, inner.jobinfo_set);
K8S_SAME_TYPE(select_p_select_jobinfo_get, inner.jobinfo_get);
K8S_SAME_TYPE(select_p_select_jobinfo_copy, inner.jobinfo_copy);
K8S_SAME_TYPE(select_p_select_jobinfo_pack, inner.jobinfo_pack);
K8S_SAME_TYPE(select_p_select_jobinfo_unpack, inner.jobinfo_unpack);
K8S_SAME_TYPE(select_p_select_jobinfo_sprint, inner.jobinfo_sprint);
K8S_SAME_TYPE(select_p_select_jobinfo_xstrdup, inner.jobinfo_xstrdup);
K8S_SAME_TYPE(select_p_get_info_from_plugin, inner.get_info_from_plugin);
K8S_SAME_TYPE(select_p_update_node_config, inner.update_node_config);
K8S_SAME_TYPE(select_p_resv_test, inner.resv_test);
