/*
 * select_common.c - select/k8s_cons_tres over select/cons_tres, shared by
 * every Slurm release it is built for: the plugin's identity (but its id),
 * init/fini, the entry points every supported release has with the same
 * arguments, and the job_test logic that the adapters' select_p_job_test
 * forwards to. The entry points that differ per ABI family, and plugin_id,
 * are in that family's adapter (select_22_05.c, select_25_05.c).
 *
 * The name contains "cons_tres" on purpose: Slurm tests SelectType for that
 * substring to enable GRES, dynamic node and MaxNodeCount handling (22.05
 * through 26.05).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/slurmctld/slurmctld.h"

#include "core/k8sdra.h"
#include "core_bridge.h"
#include "inner_select.h"
#include "k8s_agent.h"
#include "k8s_gpu.h"
#include "k8s_jobs.h"
#include "k8s_steer.h"
#include "k8s_view.h"
#include "select_common.h"

const char plugin_name[] = "Kubernetes DRA aware TRES selection (wraps cons_tres)";
const char plugin_type[] = "select/k8s_cons_tres";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/*
 * Data symbols that exist only in slurmctld. Tentative definitions let this
 * .so load where slurmctld is not (22.05: slurmd and the client commands);
 * inside slurmctld, which is linked -export-dynamic, its own copies take
 * precedence because the version script keeps these global.
 */
list_t *job_list;
time_t last_node_update;
slurmctld_config_t slurmctld_config;

extern int init(void)
{
	if (k8s_adapter_init() != SLURM_SUCCESS)
		return SLURM_ERROR;
	if (core_bridge_start() != SLURM_SUCCESS) {
		inner_select_fini();
		return SLURM_ERROR;
	}
	if (k8sdra_running())	/* slurmctld with our SelectType */
		k8s_agent_start();
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	k8s_agent_stop();
	core_bridge_stop();
	inner_select_fini();
	return SLURM_SUCCESS;
}

extern int select_p_node_init(void)
{
	/*
	 * cons_tres wipes every node's GRES allocations here. Only forget our
	 * phantoms; claiming again waits for reconfigure (and, on 22.05,
	 * update_node_config), after the running jobs are back.
	 */
	k8s_gpu_forget();
	k8s_view_reset();
	k8s_steer_reset();
	return k8s_inner->node_init();
}

extern int k8s_select_job_test(k8s_job_test_t *t, bitstr_t *exc_core_bitmap)
{
	/*
	 * What Kubernetes holds is kept out when the job is to run now or
	 * later (backfill), never in TEST_ONLY: a job that fits the node once
	 * the pods are gone must stay pending, not be rejected.
	 */
	job_record_t *job_ptr = t->job_ptr;
	bitstr_t *node_bitmap = t->node_bitmap;
	list_t **preemptees = t->preemptee_job_list;
	bitstr_t *k8s_exc = NULL, *steer_exc = NULL, *saved = NULL;
	bitstr_t *base = exc_core_bitmap;
	int rc;

	if (t->mode != SELECT_MODE_TEST_ONLY) {
		bitstr_t *unmarked;
		if (k8s_view_refresh())
			k8s_gpu_sync();
		else
			k8s_gpu_sync_pending();
		/* Fail closed: pod GPUs we cannot mark keep GPU jobs away. */
		if ((unmarked = k8s_gpu_unmarked()) &&
		    k8s_gpu_gres(job_ptr->gres_list_req) &&
		    bit_size(unmarked) == bit_size(node_bitmap))
			bit_and_not(node_bitmap, unmarked);
		if ((k8s_exc = k8s_view_exclude_cores(exc_core_bitmap)))
			base = k8s_exc;
	}
	/*
	 * cons_tres chooses the nodes by its own policy (weights, order,
	 * best fit, ranges), with Kubernetes' devices kept out ...
	 */
	saved = t->mode == SELECT_MODE_RUN_NOW ? bit_copy(node_bitmap) : NULL;
	rc = t->inner(t, base);
	/*
	 * ... then, for a job to start now on those very nodes, the engine
	 * picks the cores and GPUs inside them (narrower exclusion). Only
	 * RUN_NOW: backfill's WILL_RUN asks when, not which cores. Narrowing
	 * before the node choice would change cons_tres's best fit.
	 */
	if (rc == SLURM_SUCCESS && saved &&
	    !(preemptees && *preemptees && list_count(*preemptees)) &&
	    (steer_exc = k8s_steer_prepare(job_ptr, node_bitmap, base))) {
		bitstr_t *chosen = bit_copy(node_bitmap);
		rc = t->inner(t, steer_exc);
		if (rc == SLURM_SUCCESS && bit_equal(node_bitmap, chosen)) {
			k8s_steer_chosen(job_ptr);
		} else {
			/* cons_tres's own choice stands */
			debug2("select/k8s_cons_tres: %pJ: topology choice refused by cons_tres, keeping its own",
			       job_ptr);
			bit_copybits(node_bitmap, saved);
			if (preemptees)
				FREE_NULL_LIST(*preemptees);
			rc = t->inner(t, base);
		}
		FREE_NULL_BITMAP(chosen);
	}
	FREE_NULL_BITMAP(saved);
	FREE_NULL_BITMAP(steer_exc);
	FREE_NULL_BITMAP(k8s_exc);
	return rc;
}

extern int select_p_job_begin(job_record_t *job_ptr)
{
	int rc;

	k8s_steer_begin(job_ptr);	/* GPU choice, before cons_tres allocates */
	rc = k8s_inner->job_begin(job_ptr);
	/* Claims only for what Slurm really allocated. */
	if (rc == SLURM_SUCCESS)
		k8s_jobs_begin(job_ptr);
	return rc;
}

extern int select_p_job_ready(job_record_t *job_ptr)
{
	return k8s_inner->job_ready(job_ptr);
}

extern int select_p_job_expand(job_record_t *from_job_ptr,
			       job_record_t *to_job_ptr)
{
	int rc = k8s_inner->job_expand(from_job_ptr, to_job_ptr);

	/* from's devices are to's now: its claims go, to's cover them all */
	if (rc == SLURM_SUCCESS) {
		k8s_jobs_end(from_job_ptr);
		k8s_jobs_resized(to_job_ptr);
	}
	return rc;
}

extern int select_p_job_resized(job_record_t *job_ptr, node_record_t *node_ptr)
{
	int rc = k8s_inner->job_resized(job_ptr, node_ptr);

	k8s_jobs_resized(job_ptr);
	return rc;
}

extern int select_p_job_fini(job_record_t *job_ptr)
{
	int rc = k8s_inner->job_fini(job_ptr);

	k8s_jobs_end(job_ptr);
	k8s_steer_job_fini(job_ptr);
	/* GPUs pods took while this job held them are claimable now. */
	k8s_gpu_sync_pending();
	return rc;
}

extern int select_p_job_suspend(job_record_t *job_ptr, bool indf_susp)
{
	return k8s_inner->job_suspend(job_ptr, indf_susp);
}

extern int select_p_job_resume(job_record_t *job_ptr, bool indf_susp)
{
	return k8s_inner->job_resume(job_ptr, indf_susp);
}

extern int select_p_select_nodeinfo_set_all(void)
{
	return k8s_inner->nodeinfo_set_all();
}

extern int select_p_select_nodeinfo_set(job_record_t *job_ptr)
{
	return k8s_inner->nodeinfo_set(job_ptr);
}

extern int select_p_reconfigure(void)
{
	int rc;

	/* cons_tres rebuilds GRES state and re-adds running jobs ... */
	k8s_gpu_forget();
	k8s_view_reset();
	k8s_steer_reset();
	rc = k8s_inner->reconfigure();
	/* ... after which the pods' GPUs are claimed again. */
	k8s_gpu_sync();
	/*
	 * Running jobs' node and core bitmaps are valid again only now (not
	 * yet in job_init after a restart): the claims are reconciled with
	 * exactly these jobs.
	 */
	k8s_jobs_known(job_list);
	k8s_agent_ready();
	return rc;
}

/* The types k8s_inner_common_t gives: the adapters check them against the
 * release where it declares its ops struct. */
K8S_SAME_TYPE(select_p_node_init, k8s_inner->node_init);
K8S_SAME_TYPE(select_p_job_begin, k8s_inner->job_begin);
K8S_SAME_TYPE(select_p_job_ready, k8s_inner->job_ready);
K8S_SAME_TYPE(select_p_job_expand, k8s_inner->job_expand);
K8S_SAME_TYPE(select_p_job_resized, k8s_inner->job_resized);
K8S_SAME_TYPE(select_p_job_fini, k8s_inner->job_fini);
K8S_SAME_TYPE(select_p_job_suspend, k8s_inner->job_suspend);
K8S_SAME_TYPE(select_p_job_resume, k8s_inner->job_resume);
K8S_SAME_TYPE(select_p_select_nodeinfo_set_all, k8s_inner->nodeinfo_set_all);
K8S_SAME_TYPE(select_p_select_nodeinfo_set, k8s_inner->nodeinfo_set);
K8S_SAME_TYPE(select_p_reconfigure, k8s_inner->reconfigure);
