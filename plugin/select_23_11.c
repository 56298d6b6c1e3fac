/*
 * select_23_11.c - the adapter of the Slurm 23.11-24.11 ABI family (built
 * and tested: 24.11.5): plugin_id and cons_tres's table. Its loader wants
 * 31 select_p_* (node_select_syms[] of src/interfaces/select.c), and every
 * one of them is shared: select_common.c has the 11 that every supported
 * release has, job_test (resv_exc_t and will_run_data_t, as 25.05 on have
 * it) and the 19 that 22.05 has alike (state_save, state_restore,
 * job_init, step_*, nodeinfo/jobinfo records, get_info_from_plugin). So
 * state_save still notices that slurmctld leaves control, as on 22.05.
 *
 * What this family lacks that the plugin used on 22.05:
 * - update_node_config (gone in 23.02), where 22.05 marks the GPUs pods
 *   hold as soon as a node's slurmd registers: the agent retries the nodes
 *   that wait for that once a second, and every job_test first (until
 *   then such a node takes no GPU job).
 * - job_signal, jobinfo_sprint/_xstrdup: cons_tres had nothing of ours
 *   there. resv_test: reservations now go through job_test (WILL_RUN,
 *   slurmctld/reservation.c), so they too keep off what Kubernetes holds.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

#include "inner_select.h"
#include "select_common.h"

/*
 * Not cons_tres's 109: slurmctld (select_g_init(0) in controller.c),
 * slurmstepd and the node info API of the commands load every select
 * plugin in PluginDir, cons_tres too, and select_g_init stops with
 * "Duplicate plugin_id" when two have one id (slurmd: SelectType only).
 * Nothing needs 109 in this family: there is no running_cons_tres() yet;
 * what slurmctld keeps for cons_tres (CoreCnt= reservations, shared and
 * per-node GRES) asks slurm_select_cr_type(), which is cons_tres's answer
 * to get_info_from_plugin(SELECT_CR_PLUGIN) through us, or looks for
 * "cons_tres" in SelectType; scontrol no longer checks the id for CoreCnt=.
 */
const uint32_t plugin_id = K8S_OWN_PLUGIN_ID;

/* cons_tres's entry points: all shared in this family. */
static struct {
	k8s_inner_shared_t shared;
} inner;

static const char *inner_syms[] = { K8S_INNER_SHARED_SYMS };
K8S_INNER_TABLE_CHECK(inner, inner_syms);
_Static_assert(sizeof(inner) == 31 * sizeof(void *),
	       "inner must hold every select_p_* 24.11's loader knows");

extern int k8s_adapter_init(void)
{
	return inner_select_init(&inner, inner_syms, sizeof(inner_syms));
}
