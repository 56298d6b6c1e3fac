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

#include "core_bridge.h"
#include "inner_select.h"

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

extern int init(void)
{
	if (inner_select_init() != SLURM_SUCCESS)
		return SLURM_ERROR;
	if (core_bridge_start() != SLURM_SUCCESS) {
		inner_select_fini();
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	core_bridge_stop();
	inner_select_fini();
	return SLURM_SUCCESS;
}

extern int select_p_state_save(char *dir_name)
{
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
	return inner.node_init();
}

extern int select_p_job_test(job_record_t *job_ptr, bitstr_t *node_bitmap,
			     uint32_t min_nodes, uint32_t max_nodes,
			     uint32_t req_nodes, uint16_t mode,
			     List preemptee_candidates,
			     List *preemptee_job_list,
			     bitstr_t *exc_core_bitmap)
{
	return inner.job_test(job_ptr, node_bitmap, min_nodes, max_nodes,
			      req_nodes, mode, preemptee_candidates,
			      preemptee_job_list, exc_core_bitmap);
}

extern int select_p_job_begin(job_record_t *job_ptr)
{
	return inner.job_begin(job_ptr);
}

extern int select_p_job_ready(job_record_t *job_ptr)
{
	return inner.job_ready(job_ptr);
}

extern int select_p_job_expand(job_record_t *from_job_ptr,
			       job_record_t *to_job_ptr)
{
	return inner.job_expand(from_job_ptr, to_job_ptr);
}

extern int select_p_job_resized(job_record_t *job_ptr, node_record_t *node_ptr)
{
	return inner.job_resized(job_ptr, node_ptr);
}

extern int select_p_job_signal(job_record_t *job_ptr, int signal)
{
	return inner.job_signal(job_ptr, signal);
}

extern int select_p_job_fini(job_record_t *job_ptr)
{
	return inner.job_fini(job_ptr);
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
	return inner.update_node_config(index);
}

extern int select_p_reconfigure(void)
{
	return inner.reconfigure();
}

extern bitstr_t *select_p_resv_test(resv_desc_msg_t *resv_desc_ptr,
				    uint32_t node_cnt,
				    bitstr_t *avail_bitmap,
				    bitstr_t **core_bitmap)
{
	return inner.resv_test(resv_desc_ptr, node_cnt, avail_bitmap,
			       core_bitmap);
}
