/*
 * select_22_05.c - the Slurm 22.05 ABI family's adapter (22.05.8, Debian
 * 12's): plugin_id and the entry points of 22.05's 36 that no other family
 * has alike: job_test with one cluster-wide core bitmap, job_signal,
 * jobinfo_sprint and _xstrdup, update_node_config, resv_test. select_common.c
 * has the 11 every release has and the 19 that 22.05 through 24.11 share.
 * Each forwards to select/cons_tres, through the shared code where the
 * plugin adds anything.
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
#include "k8s_gpu.h"
#include "select_common.h"

const uint32_t plugin_id = K8S_OWN_PLUGIN_ID;

/* The type 22.05's loader gives entry point f (src/common/select.h). */
#define OPS_T(f) __typeof__(((slurm_select_ops_t *) 0)->f)

/* cons_tres's entry points: the shared ones, then 22.05's own. */
static struct {
	k8s_inner_shared_t shared;
	OPS_T(job_test) job_test;
	OPS_T(job_signal) job_signal;
	OPS_T(jobinfo_sprint) jobinfo_sprint;
	OPS_T(jobinfo_xstrdup) jobinfo_xstrdup;
	OPS_T(update_node_config) update_node_config;
	OPS_T(resv_test) resv_test;
} inner;

static const char *inner_syms[] = {
	K8S_INNER_SHARED_SYMS,
	"select_p_job_test", "select_p_job_signal",
	"select_p_select_jobinfo_sprint", "select_p_select_jobinfo_xstrdup",
	"select_p_update_node_config", "select_p_resv_test",
};
K8S_INNER_TABLE_CHECK(inner, inner_syms);
/* every entry point of slurm_select_ops_t, plugin_id aside */
_Static_assert(sizeof(inner) == sizeof(slurm_select_ops_t) - sizeof(void *),
	       "inner must hold every entry point 22.05's loader knows");

/* The shared entry points have in 22.05 the types the shared code uses. */
#define SHARED_AS_RELEASE(part, f) \
	_Static_assert(__builtin_types_compatible_p( \
			       OPS_T(f), __typeof__(inner.shared.part.f)), \
		       #f " differs in 22.05")
SHARED_AS_RELEASE(common, node_init);
SHARED_AS_RELEASE(common, job_begin);
SHARED_AS_RELEASE(common, job_ready);
SHARED_AS_RELEASE(common, job_expand);
SHARED_AS_RELEASE(common, job_resized);
SHARED_AS_RELEASE(common, job_fini);
SHARED_AS_RELEASE(common, job_suspend);
SHARED_AS_RELEASE(common, job_resume);
SHARED_AS_RELEASE(common, nodeinfo_set_all);
SHARED_AS_RELEASE(common, nodeinfo_set);
SHARED_AS_RELEASE(common, reconfigure);
SHARED_AS_RELEASE(pre25, state_save);
SHARED_AS_RELEASE(pre25, state_restore);
SHARED_AS_RELEASE(pre25, job_init);
SHARED_AS_RELEASE(pre25, step_pick_nodes);
SHARED_AS_RELEASE(pre25, step_start);
SHARED_AS_RELEASE(pre25, step_finish);
SHARED_AS_RELEASE(pre25, nodeinfo_pack);
SHARED_AS_RELEASE(pre25, nodeinfo_unpack);
SHARED_AS_RELEASE(pre25, nodeinfo_alloc);
SHARED_AS_RELEASE(pre25, nodeinfo_free);
SHARED_AS_RELEASE(pre25, nodeinfo_get);
SHARED_AS_RELEASE(pre25, jobinfo_alloc);
SHARED_AS_RELEASE(pre25, jobinfo_free);
SHARED_AS_RELEASE(pre25, jobinfo_set);
SHARED_AS_RELEASE(pre25, jobinfo_get);
SHARED_AS_RELEASE(pre25, jobinfo_copy);
SHARED_AS_RELEASE(pre25, jobinfo_pack);
SHARED_AS_RELEASE(pre25, jobinfo_unpack);
SHARED_AS_RELEASE(pre25, get_info_from_plugin);

extern int k8s_adapter_init(void)
{
	return inner_select_init(&inner, inner_syms, sizeof(inner_syms));
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

K8S_SAME_TYPE(select_p_job_test, inner.job_test);
K8S_SAME_TYPE(select_p_job_signal, inner.job_signal);
K8S_SAME_TYPE(select_p_select_jobinfo_sprint, inner.jobinfo_sprint);
K8S_SAME_TYPE(select_p_select_jobinfo_xstrdup, inner.jobinfo_xstrdup);
K8S_SAME_TYPE(select_p_update_node_config, inner.update_node_config);
K8S_SAME_TYPE(select_p_resv_test, inner.resv_test);
