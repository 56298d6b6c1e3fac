/*
 * select_25_05.c - the adapter of the Slurm 25.05-26.05 ABI family (built
 * and tested: 25.11.7, 26.05.3): plugin_id and the entry points of that
 * family that are not shared. Its loader wants 12 select_p_* (26.05: 13);
 * select_common.c has the 11 that every supported release has (node_init,
 * job_begin, job_ready, job_expand, job_resized, job_fini, job_suspend,
 * job_resume, nodeinfo_set_all, nodeinfo_set, reconfigure) and job_test
 * (as 23.11-24.11 have it), this file 26.05's job_mem_reduce.
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
	k8s_inner_shared_t shared;
#if K8S_SLURM_AT_LEAST(26, 5, 0)
	void (*job_mem_reduce)(job_record_t *job_ptr);
#endif
} inner;

static const char *inner_syms[] = {
	K8S_INNER_SHARED_SYMS,
#if K8S_SLURM_AT_LEAST(26, 5, 0)
	"select_p_job_mem_reduce",
#endif
};
K8S_INNER_TABLE_CHECK(inner, inner_syms);

extern int k8s_adapter_init(void)
{
	return inner_select_init(&inner, inner_syms, sizeof(inner_syms));
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

#if K8S_SLURM_AT_LEAST(26, 5, 0)
K8S_SAME_TYPE(select_p_job_mem_reduce, inner.job_mem_reduce);
#endif
