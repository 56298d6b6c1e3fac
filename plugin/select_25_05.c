/*
 * select_25_05.c - the adapter of the Slurm 25.05-26.05 ABI family (built
 * and tested: 25.11.7, 26.05.3): plugin_id and the entry points of that
 * family that are not shared. Its loader wants 12 select_p_* (26.05: 13);
 * select_common.c has the 11 that every supported release has (node_init,
 * job_begin, job_ready, job_expand, job_resized, job_fini, job_suspend,
 * job_resume, nodeinfo_set_all, nodeinfo_set, reconfigure), this file
 * job_test and 26.05's job_mem_reduce.
 *
 * What this family lacks that the plugin used on 22.05:
 * - state_save (gone in 25.05): the control check (a backup handing
 *   control back, a controller shutting down) is the agent's own poll of
 *   slurmctld_config.shutdown_time, within 250 ms, no longer also at the
 *   state save.
 * - update_node_config (gone in 23.02), where 22.05 marks the GPUs pods
 *   hold as soon as a node's slurmd registers: the agent retries the nodes
 *   that wait for that once a second, and every job_test first (until
 *   then such a node takes no GPU job).
 * - state_restore, job_init, step_*, nodeinfo/jobinfo pack/unpack,
 *   get_info_from_plugin, job_signal, resv_test: cons_tres had nothing of
 *   ours there; reservations now go through job_test (WILL_RUN), so they
 *   too keep off what Kubernetes holds.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/common/core_array.h"
#include "src/slurmctld/slurmctld.h"

#include "inner_select.h"
#include "select_common.h"

/*
 * cons_tres's id. From 25.05 slurmctld's running_cons_tres() compares the
 * SelectType plugin's id with 109 and otherwise refuses CR_Core (and GRES
 * sharing, --gpus, CoreCnt= reservations, ...). Only SelectType's plugin is
 * loaded (select_g_init(void), one context), so no other select plugin's id
 * is compared with ours; the cons_tres we load ourselves is a context of our
 * own. slurmd and the commands no longer load a select plugin at all.
 */
const uint32_t plugin_id = SELECT_PLUGIN_CONS_TRES;

/*
 * cons_tres's entry points: the shared ones, then this family's own.
 * (src/interfaces/select.c keeps its slurm_select_ops_t private: these
 * types are the ones it has there.)
 */
static struct {
	k8s_inner_common_t common;
	int (*job_test)(job_record_t *job_ptr, bitstr_t *bitmap,
			uint32_t min_nodes, uint32_t max_nodes,
			uint32_t req_nodes, uint16_t mode,
			list_t *preeemptee_candidates,
			list_t **preemptee_job_list, resv_exc_t *resv_exc_ptr,
			will_run_data_t *will_run_ptr);
#if K8S_SLURM_AT_LEAST(26, 5, 0)
	void (*job_mem_reduce)(job_record_t *job_ptr);
#endif
} inner;

static const char *inner_syms[] = {
	K8S_INNER_COMMON_SYMS,
	"select_p_job_test",
#if K8S_SLURM_AT_LEAST(26, 5, 0)
	"select_p_job_mem_reduce",
#endif
};
K8S_INNER_TABLE_CHECK(inner, inner_syms);

extern int k8s_adapter_init(void)
{
	return inner_select_init(&inner, inner_syms, sizeof(inner_syms));
}

/*
 * cons_tres reads the cores to keep out per node (resv_exc->exc_cores);
 * slurmctld keeps the cluster-wide core_bitmap beside it. For the call,
 * both are our exclusion; the rest of resv_exc (the GRES reservations
 * include or exclude, which cons_tres fills in as it goes) is slurmctld's.
 * The GPUs pods hold are not passed here: they stay phantom allocations
 * in the nodes' GRES state (k8s_gpu.c), because a job inside a reservation
 * gets gres_list_inc instead of any exclusion, backfill and --exclusive
 * read the node state, and scontrol shows them as GresUsed.
 */
typedef struct {
	resv_exc_t *resv_exc;
	will_run_data_t *will_run;
} job_test_abi_t;

static int _inner_job_test(k8s_job_test_t *t, bitstr_t *exc)
{
	job_test_abi_t *abi = t->abi;
	resv_exc_t *resv_exc = abi->resv_exc;
	bitstr_t *core_bitmap = resv_exc->core_bitmap;
	bitstr_t **exc_cores = resv_exc->exc_cores;
	int rc;

	if (exc != core_bitmap) {
		resv_exc->core_bitmap = exc;
		resv_exc->exc_cores = core_bitmap_to_array(exc);
	}
	rc = inner.job_test(t->job_ptr, t->node_bitmap, t->min_nodes,
			    t->max_nodes, t->req_nodes, t->mode,
			    t->preemptee_candidates, t->preemptee_job_list,
			    resv_exc, abi->will_run);
	if (exc != core_bitmap) {
		free_core_array(&resv_exc->exc_cores);
		resv_exc->core_bitmap = core_bitmap;
		resv_exc->exc_cores = exc_cores;
	}
	return rc;
}

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
			     uint32_t min_nodes, uint32_t max_nodes,
			     uint32_t req_nodes, uint16_t mode,
			     list_t *preemptee_candidates,
			     list_t **preemptee_job_list,
			     resv_exc_t *resv_exc_ptr,
			     will_run_data_t *will_run_ptr)
{
	resv_exc_t none = { 0 };
	job_test_abi_t abi = { resv_exc_ptr ? resv_exc_ptr : &none, will_run_ptr };
	k8s_job_test_t t = {
		job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes, mode,
		preemptee_candidates, preemptee_job_list, _inner_job_test, &abi
	};

	return k8s_select_job_test(&t, abi.resv_exc->core_bitmap);
}

#if K8S_SLURM_AT_LEAST(26, 5, 0)
/*
 * A running job's memory limit lowered (26.05): cons_tres books less
 * memory on its nodes. Its claims hold devices only; its holder pods keep
 * the memory they asked for until the job ends.
 */
extern void select_p_job_mem_reduce(job_record_t *job_ptr)
{
	inner.job_mem_reduce(job_ptr);
}
#endif

K8S_SAME_TYPE(select_p_job_test, inner.job_test);
#if K8S_SLURM_AT_LEAST(26, 5, 0)
K8S_SAME_TYPE(select_p_job_mem_reduce, inner.job_mem_reduce);
#endif
