/*
 * select_common.c - select/k8s_cons_tres over select/cons_tres, shared by
 * every Slurm release it is built for: the plugin's identity (but its id),
 * init/fini, the entry points every supported release has with the same
 * arguments, those that several ABI families have alike (job_test with a
 * resv_exc_t from 23.11 on, and what 25.05 dropped: state save, steps, node
 * and job info). Each only forwards: the job_test logic every family's
 * select_p_job_test comes to is k8s_steer.c's (k8s_select_job_test). The
 * entry points only one family has, and plugin_id, are in that family's
 * adapter (select_22_05.c, select_23_11.c, select_25_05.c).
 *
 * The name contains "cons_tres" on purpose: Slurm tests SelectType for that
 * substring to enable GRES, dynamic node and MaxNodeCount handling (22.05
 * through 26.05).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#if K8S_SLURM_AT_LEAST(23, 11, 0)
#include "src/common/core_array.h"	/* resv_exc_t's exc_cores */
#endif
#include "src/slurmctld/slurmctld.h"

#include "core/k8s_cons_tres.h"
#include "core_bridge.h"
#include "inner_select.h"
#include "k8s_agent.h"
#include "k8s_gate.h"
#include "k8s_ending.h"
#include "k8s_gpu.h"
#include "k8s_jobs.h"
#include "k8s_registered.h"
#include "k8s_steer.h"
#include "k8s_view.h"
#include "select_common.h"

const char plugin_name[] = "Kubernetes DRA aware TRES selection (wraps cons_tres)";
const char plugin_type[] = "select/k8s_cons_tres";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/*
 * Data symbols that exist only in slurmctld. Tentative definitions let this
 * .so load where slurmctld is not (before 25.05: slurmd and the client
 * commands, 24.11's slurmstepd too); inside slurmctld, which is linked
 * -export-dynamic, its own copies take precedence because the version
 * script keeps these global.
 */
list_t *job_list;
time_t last_job_update;
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
	if (k8s_cons_tres_running()) {	/* slurmctld with our SelectType */
		k8s_gate_check_config();
		k8s_agent_start();
	}
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
	return k8s_inner->common.node_init();
}

#if K8S_SLURM_AT_LEAST(23, 11, 0)
/*
 * From 23.11 slurmctld passes what job_test must keep out as a resv_exc_t.
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
} job_test_resv_t;

static int _inner_job_test_resv(k8s_job_test_t *t, bitstr_t *exc)
{
	job_test_resv_t *abi = t->abi;
	resv_exc_t *resv_exc = abi->resv_exc;
	bitstr_t *core_bitmap = resv_exc->core_bitmap;
	bitstr_t **exc_cores = resv_exc->exc_cores;
	int rc;

	if (exc != core_bitmap) {
		resv_exc->core_bitmap = exc;
		resv_exc->exc_cores = core_bitmap_to_array(exc);
	}
	rc = k8s_inner->job_test(t->job_ptr, t->node_bitmap, t->min_nodes,
				 t->max_nodes, t->req_nodes, t->mode,
				 t->preemptee_candidates,
				 t->preemptee_job_list, resv_exc,
				 abi->will_run);
	if (exc != core_bitmap) {
		free_core_array(&resv_exc->exc_cores);
		resv_exc->core_bitmap = core_bitmap;
		resv_exc->exc_cores = exc_cores;
	}
	return rc;
}

typedef struct {
	int node_inx;
	uint64_t mask;
} resv_gpus_t;

static int _resv_gpus_add(void *x, void *arg)
{
	gres_state_t *gs = x;
	gres_job_state_t *gjs = gs->gres_data;
	resv_gpus_t *r = arg;
	bitstr_t *bits;

	if (!k8s_gpu_is_gpu(gs) || !gjs || !gjs->gres_bit_alloc ||
	    r->node_inx >= (int) gjs->node_cnt ||
	    !(bits = gjs->gres_bit_alloc[r->node_inx]))
		return 0;
	for (int64_t g = 0; g < bit_size(bits) && g < 64; g++)
		if (bit_test(bits, g))
			r->mask |= (uint64_t) 1 << g;
	return 0;
}

/*
 * The GPUs reservations keep from the job on node_inx, as cons_tres reads
 * them (gres_sock_list.c): outside a reservation every reserved GPU
 * (gres_list_exc, all types), inside one every GPU it does not hold
 * (gres_list_inc).
 */
static uint64_t _resv_gpus_off(k8s_job_test_t *t, int node_inx)
{
	resv_exc_t *resv_exc = ((job_test_resv_t *) t->abi)->resv_exc;
	resv_gpus_t r = { node_inx, 0 };

	if (resv_exc->gres_list_exc) {
		list_for_each(resv_exc->gres_list_exc, _resv_gpus_add, &r);
		return r.mask;
	}
	if (resv_exc->gres_list_inc) {
		list_for_each(resv_exc->gres_list_inc, _resv_gpus_add, &r);
		return ~r.mask;
	}
	return 0;
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
	job_test_resv_t abi = { resv_exc_ptr ? resv_exc_ptr : &none,
				will_run_ptr };
	k8s_job_test_t t = {
		job_ptr, node_bitmap, min_nodes, max_nodes, req_nodes, mode,
		preemptee_candidates, preemptee_job_list, _inner_job_test_resv,
		_resv_gpus_off, &abi
	};

	return k8s_select_job_test(&t, abi.resv_exc->core_bitmap);
}
#endif

extern int select_p_job_begin(job_record_t *job_ptr)
{
	int rc;

	k8s_steer_begin(job_ptr);	/* GPU choice, before cons_tres allocates */
	rc = k8s_inner->common.job_begin(job_ptr);
	/* Claims only for what Slurm really allocated. */
	if (rc == SLURM_SUCCESS)
		k8s_jobs_begin(job_ptr);
	return rc;
}

extern int select_p_job_ready(job_record_t *job_ptr)
{
	return k8s_inner->common.job_ready(job_ptr);
}

extern int select_p_job_expand(job_record_t *from_job_ptr,
			       job_record_t *to_job_ptr)
{
	int rc = k8s_inner->common.job_expand(from_job_ptr, to_job_ptr);

	/* from's devices are to's now: its claims go, to's cover them all */
	if (rc == SLURM_SUCCESS) {
		k8s_jobs_end(from_job_ptr);
		k8s_jobs_resized(to_job_ptr);
	}
	return rc;
}

extern int select_p_job_resized(job_record_t *job_ptr, node_record_t *node_ptr)
{
	int rc = k8s_inner->common.job_resized(job_ptr, node_ptr);

	k8s_jobs_resized(job_ptr);
	return rc;
}

extern int select_p_job_fini(job_record_t *job_ptr)
{
	int rc = k8s_inner->common.job_fini(job_ptr);

	k8s_gate_job_fini(job_ptr);
	k8s_jobs_end(job_ptr);
	k8s_steer_job_fini(job_ptr);
	/* GPUs pods took while this job held them are claimable now. */
	k8s_gpu_sync_pending();
	return rc;
}

extern int select_p_job_suspend(job_record_t *job_ptr, bool indf_susp)
{
	return k8s_inner->common.job_suspend(job_ptr, indf_susp);
}

extern int select_p_job_resume(job_record_t *job_ptr, bool indf_susp)
{
	return k8s_inner->common.job_resume(job_ptr, indf_susp);
}

extern int select_p_select_nodeinfo_set_all(void)
{
	return k8s_inner->common.nodeinfo_set_all();
}

extern int select_p_select_nodeinfo_set(job_record_t *job_ptr)
{
	return k8s_inner->common.nodeinfo_set(job_ptr);
}

extern int select_p_reconfigure(void)
{
	int rc;

	/* cons_tres rebuilds GRES state and re-adds running jobs ... */
	k8s_gpu_forget();
	k8s_view_reset();
	k8s_steer_reset();
	rc = k8s_inner->common.reconfigure();
	/* ... after which the pods' GPUs are claimed again. */
	k8s_gpu_sync();
	/*
	 * Running jobs' node and core bitmaps are valid again only now (not
	 * yet in job_init after a restart): the claims are reconciled with
	 * exactly these jobs.
	 */
	k8s_registered_reset();	/* every node registers anew, from now */
	k8s_ending_reset();	/* what ending jobs left is reconciled now */
	k8s_jobs_known(job_list);
	k8s_agent_ready();
	return rc;
}

#if !K8S_SLURM_AT_LEAST(25, 5, 0)
/* What 22.05 through 24.11 have alike and 25.05 dropped. */
extern int select_p_state_save(char *dir_name)
{
	/* slurmctld saves its state when it leaves control, too. */
	k8s_agent_check_control();
	return k8s_inner->pre25.state_save(dir_name);
}

extern int select_p_state_restore(char *dir_name)
{
	return k8s_inner->pre25.state_restore(dir_name);
}

extern int select_p_job_init(list_t *jobs)
{
	return k8s_inner->pre25.job_init(jobs);
}

extern bitstr_t *select_p_step_pick_nodes(job_record_t *job_ptr,
					  select_jobinfo_t *jobinfo,
					  uint32_t node_count,
					  bitstr_t **avail_nodes)
{
	return k8s_inner->pre25.step_pick_nodes(job_ptr, jobinfo, node_count,
						avail_nodes);
}

extern int select_p_step_start(step_record_t *step_ptr)
{
	return k8s_inner->pre25.step_start(step_ptr);
}

extern int select_p_step_finish(step_record_t *step_ptr, bool killing_step)
{
	return k8s_inner->pre25.step_finish(step_ptr, killing_step);
}

extern int select_p_select_nodeinfo_pack(select_nodeinfo_t *nodeinfo,
					 buf_t *buffer,
					 uint16_t protocol_version)
{
	return k8s_inner->pre25.nodeinfo_pack(nodeinfo, buffer,
					      protocol_version);
}

extern int select_p_select_nodeinfo_unpack(select_nodeinfo_t **nodeinfo,
					   buf_t *buffer,
					   uint16_t protocol_version)
{
	return k8s_inner->pre25.nodeinfo_unpack(nodeinfo, buffer,
						protocol_version);
}

extern select_nodeinfo_t *select_p_select_nodeinfo_alloc(void)
{
	return k8s_inner->pre25.nodeinfo_alloc();
}

extern int select_p_select_nodeinfo_free(select_nodeinfo_t *nodeinfo)
{
	return k8s_inner->pre25.nodeinfo_free(nodeinfo);
}

extern int select_p_select_nodeinfo_get(select_nodeinfo_t *nodeinfo,
					enum select_nodedata_type dinfo,
					enum node_states state, void *data)
{
	return k8s_inner->pre25.nodeinfo_get(nodeinfo, dinfo, state, data);
}

extern select_jobinfo_t *select_p_select_jobinfo_alloc(void)
{
	return k8s_inner->pre25.jobinfo_alloc();
}

extern int select_p_select_jobinfo_free(select_jobinfo_t *jobinfo)
{
	return k8s_inner->pre25.jobinfo_free(jobinfo);
}

extern int select_p_select_jobinfo_set(select_jobinfo_t *jobinfo,
				       enum select_jobdata_type data_type,
				       void *data)
{
	return k8s_inner->pre25.jobinfo_set(jobinfo, data_type, data);
}

extern int select_p_select_jobinfo_get(select_jobinfo_t *jobinfo,
				       enum select_jobdata_type data_type,
				       void *data)
{
	return k8s_inner->pre25.jobinfo_get(jobinfo, data_type, data);
}

extern select_jobinfo_t *select_p_select_jobinfo_copy(select_jobinfo_t *jobinfo)
{
	return k8s_inner->pre25.jobinfo_copy(jobinfo);
}

extern int select_p_select_jobinfo_pack(select_jobinfo_t *jobinfo,
					buf_t *buffer,
					uint16_t protocol_version)
{
	return k8s_inner->pre25.jobinfo_pack(jobinfo, buffer,
					     protocol_version);
}

extern int select_p_select_jobinfo_unpack(select_jobinfo_t **jobinfo,
					  buf_t *buffer,
					  uint16_t protocol_version)
{
	return k8s_inner->pre25.jobinfo_unpack(jobinfo, buffer,
					       protocol_version);
}

extern int select_p_get_info_from_plugin(enum select_plugindata_info info,
					 job_record_t *job_ptr, void *data)
{
	return k8s_inner->pre25.get_info_from_plugin(info, job_ptr, data);
}
#endif

/* The types k8s_inner_shared_t gives: the adapters check them against the
 * release where it declares its ops struct. */
K8S_SAME_TYPE(select_p_node_init, k8s_inner->common.node_init);
K8S_SAME_TYPE(select_p_job_begin, k8s_inner->common.job_begin);
K8S_SAME_TYPE(select_p_job_ready, k8s_inner->common.job_ready);
K8S_SAME_TYPE(select_p_job_expand, k8s_inner->common.job_expand);
K8S_SAME_TYPE(select_p_job_resized, k8s_inner->common.job_resized);
K8S_SAME_TYPE(select_p_job_fini, k8s_inner->common.job_fini);
K8S_SAME_TYPE(select_p_job_suspend, k8s_inner->common.job_suspend);
K8S_SAME_TYPE(select_p_job_resume, k8s_inner->common.job_resume);
K8S_SAME_TYPE(select_p_select_nodeinfo_set_all, k8s_inner->common.nodeinfo_set_all);
K8S_SAME_TYPE(select_p_select_nodeinfo_set, k8s_inner->common.nodeinfo_set);
K8S_SAME_TYPE(select_p_reconfigure, k8s_inner->common.reconfigure);
#if K8S_SLURM_AT_LEAST(23, 11, 0)
K8S_SAME_TYPE(select_p_job_test, k8s_inner->job_test);
#endif
#if !K8S_SLURM_AT_LEAST(25, 5, 0)
K8S_SAME_TYPE(select_p_state_save, k8s_inner->pre25.state_save);
K8S_SAME_TYPE(select_p_state_restore, k8s_inner->pre25.state_restore);
K8S_SAME_TYPE(select_p_job_init, k8s_inner->pre25.job_init);
K8S_SAME_TYPE(select_p_step_pick_nodes, k8s_inner->pre25.step_pick_nodes);
K8S_SAME_TYPE(select_p_step_start, k8s_inner->pre25.step_start);
K8S_SAME_TYPE(select_p_step_finish, k8s_inner->pre25.step_finish);
K8S_SAME_TYPE(select_p_select_nodeinfo_pack, k8s_inner->pre25.nodeinfo_pack);
K8S_SAME_TYPE(select_p_select_nodeinfo_unpack, k8s_inner->pre25.nodeinfo_unpack);
K8S_SAME_TYPE(select_p_select_nodeinfo_alloc, k8s_inner->pre25.nodeinfo_alloc);
K8S_SAME_TYPE(select_p_select_nodeinfo_free, k8s_inner->pre25.nodeinfo_free);
K8S_SAME_TYPE(select_p_select_nodeinfo_get, k8s_inner->pre25.nodeinfo_get);
K8S_SAME_TYPE(select_p_select_jobinfo_alloc, k8s_inner->pre25.jobinfo_alloc);
K8S_SAME_TYPE(select_p_select_jobinfo_free, k8s_inner->pre25.jobinfo_free);
K8S_SAME_TYPE(select_p_select_jobinfo_set, k8s_inner->pre25.jobinfo_set);
K8S_SAME_TYPE(select_p_select_jobinfo_get, k8s_inner->pre25.jobinfo_get);
K8S_SAME_TYPE(select_p_select_jobinfo_copy, k8s_inner->pre25.jobinfo_copy);
K8S_SAME_TYPE(select_p_select_jobinfo_pack, k8s_inner->pre25.jobinfo_pack);
K8S_SAME_TYPE(select_p_select_jobinfo_unpack, k8s_inner->pre25.jobinfo_unpack);
K8S_SAME_TYPE(select_p_get_info_from_plugin, k8s_inner->pre25.get_info_from_plugin);
#endif
