/*
 * inner_select.c - load select/cons_tres and keep its entry points.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "src/common/slurm_xlator.h"
#include "src/common/plugin.h"
#include "src/common/log.h"

#include "inner_select.h"

slurm_select_ops_t inner;

/* Must follow slurm_select_ops_t in src/common/select.h field by field. */
static const char *inner_syms[] = {
	"plugin_id",
	"select_p_state_save",
	"select_p_state_restore",
	"select_p_job_init",
	"select_p_node_init",
	"select_p_job_test",
	"select_p_job_begin",
	"select_p_job_ready",
	"select_p_job_expand",
	"select_p_job_resized",
	"select_p_job_signal",
	"select_p_job_fini",
	"select_p_job_suspend",
	"select_p_job_resume",
	"select_p_step_pick_nodes",
	"select_p_step_start",
	"select_p_step_finish",
	"select_p_select_nodeinfo_pack",
	"select_p_select_nodeinfo_unpack",
	"select_p_select_nodeinfo_alloc",
	"select_p_select_nodeinfo_free",
	"select_p_select_nodeinfo_set_all",
	"select_p_select_nodeinfo_set",
	"select_p_select_nodeinfo_get",
	"select_p_select_jobinfo_alloc",
	"select_p_select_jobinfo_free",
	"select_p_select_jobinfo_set",
	"select_p_select_jobinfo_get",
	"select_p_select_jobinfo_copy",
	"select_p_select_jobinfo_pack",
	"select_p_select_jobinfo_unpack",
	"select_p_select_jobinfo_sprint",
	"select_p_select_jobinfo_xstrdup",
	"select_p_get_info_from_plugin",
	"select_p_update_node_config",
	"select_p_reconfigure",
	"select_p_resv_test",
};

_Static_assert(sizeof(inner_syms) / sizeof(inner_syms[0]) ==
	       sizeof(slurm_select_ops_t) / sizeof(void *),
	       "inner_syms must list every field of slurm_select_ops_t");

static plugin_context_t *inner_context;

extern int inner_select_init(void)
{
	if (inner_context)
		return SLURM_SUCCESS;
	/*
	 * dlopen of an already loaded select_cons_tres.so returns the same
	 * handle; its init() runs once more, which it tolerates.
	 */
	inner_context = plugin_context_create("select", K8S_INNER_TYPE,
					      (void **) &inner, inner_syms,
					      sizeof(inner_syms));
	if (!inner_context) {
		error("select/k8s_cons_tres: cannot load %s, which this plugin wraps",
		      K8S_INNER_TYPE);
		return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

extern void inner_select_fini(void)
{
	if (inner_context) {
		plugin_context_destroy(inner_context);
		inner_context = NULL;
	}
}
