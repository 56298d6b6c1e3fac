/*
 * select_k8s_cons_tres.c - the Slurm 22.05 face of select/k8s_cons_tres.
 *
 * Every select_p_* entry point is here and forwards to select/cons_tres; the
 * ones that will carry Kubernetes logic (job_test, job_begin, job_fini,
 * node_init, reconfigure, ...) do so through the core's C ABI. Nothing else in
 * the tree includes Slurm headers.
 *
 * The name contains "cons_tres" on purpose: Slurm 22.05 tests SelectType for
 * that substring to enable GRES, dynamic node and MaxNodeCount handling.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "src/common/slurm_xlator.h"
#include "src/common/select.h"
#include "src/slurmctld/slurmctld.h"

#include "core/k8sdra.h"
#include "core_bridge.h"
#include "k8s_agent.h"
#include "inner_select.h"
#include "k8s_gpu.h"
#include "k8s_jobs.h"
#include "k8s_steer.h"
#include "k8s_view.h"

const char plugin_name[] = "Kubernetes DRA aware TRES selection (wraps cons_tres)";
const char plugin_type[] = "select/k8s_cons_tres";
/* Unused by Slurm (101-110 are taken); "k8" in ASCII. */
const uint32_t plugin_id = 0x6b38;
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/*
 * Data symbols that exist only in slurmctld. Tentative definitions let this
 * .so load into slurmd and the client commands too; inside slurmctld, which is
 * linked -export-dynamic, its own copies take precedence because the version
 * script keeps these global.
 */
List job_list;
time_t last_node_update;
slurmctld_config_t slurmctld_config;

extern int init(void)
{
	if (inner_select_init() != SLURM_SUCCESS)
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

extern int select_p_state_save(char *dir_name)
{
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

extern int select_p_node_init(void)
{
	/*
	 * cons_tres wipes every node's GRES allocations here. Only forget our
	 * phantoms; claiming again waits for reconfigure/update_node_config,
	 * after the running jobs are back.
	 */
	k8s_gpu_forget();
	k8s_view_reset();
	k8s_steer_reset();
	return inner.node_init();
}

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
			     uint32_t min_nodes, uint32_t max_nodes,
			     uint32_t req_nodes, uint16_t mode,
			     List preemptee_candidates,
			     List *preemptee_job_list,
			     bitstr_t *exc_core_bitmap)
{
	/*
	 * What Kubernetes holds is kept out when the job is to run now or
	 * later (backfill), never in TEST_ONLY: a job that fits the node once
	 * the pods are gone must stay pending, not be rejected.
	 */
	bitstr_t *k8s_exc = NULL, *steer_exc = NULL, *saved = NULL;
	bitstr_t *base = exc_core_bitmap;
	int rc;

	if (mode != SELECT_MODE_TEST_ONLY) {
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
	saved = mode == SELECT_MODE_RUN_NOW ? bit_copy(node_bitmap) : NULL;
	rc = inner.job_test(job_ptr, node_bitmap, min_nodes, max_nodes,
			    req_nodes, mode, preemptee_candidates,
			    preemptee_job_list, base);
	/*
	 * ... then, for a job to start now on those very nodes, the engine
	 * picks the cores and GPUs inside them (narrower exclusion). Only
	 * RUN_NOW: backfill's WILL_RUN asks when, not which cores. Narrowing
	 * before the node choice would change cons_tres's best fit.
	 */
	if (rc == SLURM_SUCCESS && saved &&
	    !(preemptee_job_list && *preemptee_job_list &&
	      list_count(*preemptee_job_list)) &&
	    (steer_exc = k8s_steer_prepare(job_ptr, node_bitmap, base))) {
		bitstr_t *chosen = bit_copy(node_bitmap);
		rc = inner.job_test(job_ptr, node_bitmap, min_nodes, max_nodes,
				    req_nodes, mode, preemptee_candidates,
				    preemptee_job_list, steer_exc);
		if (rc == SLURM_SUCCESS && bit_equal(node_bitmap, chosen)) {
			k8s_steer_chosen(job_ptr);
		} else {
			/* cons_tres's own choice stands */
			debug2("select/k8s_cons_tres: %pJ: topology choice refused by cons_tres, keeping its own",
			       job_ptr);
			bit_copybits(node_bitmap, saved);
			if (preemptee_job_list)
				FREE_NULL_LIST(*preemptee_job_list);
			rc = inner.job_test(job_ptr, node_bitmap, min_nodes,
					    max_nodes, req_nodes, mode,
					    preemptee_candidates,
					    preemptee_job_list, base);
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
	rc = inner.job_begin(job_ptr);
	/* Claims only for what Slurm really allocated. */
	if (rc == SLURM_SUCCESS)
		k8s_jobs_begin(job_ptr);
	return rc;
}

extern int select_p_job_ready(job_record_t *job_ptr)
{
	return inner.job_ready(job_ptr);
}

extern int select_p_job_expand(job_record_t *from_job_ptr,
			       job_record_t *to_job_ptr)
{
	int rc = inner.job_expand(from_job_ptr, to_job_ptr);

	/* from's devices are to's now: its claims go, to's cover them all */
	if (rc == SLURM_SUCCESS) {
		k8s_jobs_end(from_job_ptr);
		k8s_jobs_resized(to_job_ptr);
	}
	return rc;
}

extern int select_p_job_resized(job_record_t *job_ptr, node_record_t *node_ptr)
{
	int rc = inner.job_resized(job_ptr, node_ptr);

	k8s_jobs_resized(job_ptr);
	return rc;
}

extern int select_p_job_signal(job_record_t *job_ptr, int signal)
{
	return inner.job_signal(job_ptr, signal);
}

extern int select_p_job_fini(job_record_t *job_ptr)
{
	int rc = inner.job_fini(job_ptr);

	k8s_jobs_end(job_ptr);
	k8s_steer_job_fini(job_ptr);
	/* GPUs pods took while this job held them are claimable now. */
	k8s_gpu_sync_pending();
	return rc;
}

extern int select_p_job_suspend(job_record_t *job_ptr, bool indf_susp)
{
	return inner.job_suspend(job_ptr, indf_susp);
}

extern int select_p_job_resume(job_record_t *job_ptr, bool indf_susp)
{
	return inner.job_resume(job_ptr, indf_susp);
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

extern int select_p_select_nodeinfo_set_all(void)
{
	return inner.nodeinfo_set_all();
}

extern int select_p_select_nodeinfo_set(job_record_t *job_ptr)
{
	return inner.nodeinfo_set(job_ptr);
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

extern int select_p_reconfigure(void)
{
	int rc;

	/* cons_tres rebuilds GRES state and re-adds running jobs ... */
	k8s_gpu_forget();
	k8s_view_reset();
	k8s_steer_reset();
	rc = inner.reconfigure();
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

extern bitstr_t *select_p_resv_test(resv_desc_msg_t *resv_desc_ptr,
				    uint32_t node_cnt,
				    bitstr_t *avail_bitmap,
				    bitstr_t **core_bitmap)
{
	return inner.resv_test(resv_desc_ptr, node_cnt, avail_bitmap,
			       core_bitmap);
}
