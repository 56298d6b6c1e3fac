/*
 * inner_select.c - load select/cons_tres and keep its entry points.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/common/plugin.h"
#include "src/common/log.h"

#include "inner_select.h"
#include "k8s_log.h"

k8s_inner_shared_t *k8s_inner;

static plugin_context_t *inner_context;

extern int inner_select_init(void *table, const char **syms, size_t syms_size)
{
	if (inner_context)
		return SLURM_SUCCESS;
	/*
	 * dlopen of an already loaded select_cons_tres.so returns the same
	 * handle; its init() runs once more, which it tolerates.
	 */
	inner_context = plugin_context_create("select", K8S_INNER_TYPE,
					      (void **) table, syms, syms_size);
	if (!inner_context) {
		error(PREFIX "cannot load %s, which this plugin wraps",
		      K8S_INNER_TYPE);
		return SLURM_ERROR;
	}
	k8s_inner = table;
	return SLURM_SUCCESS;
}

extern void inner_select_fini(void)
{
	if (inner_context) {
		plugin_context_destroy(inner_context);
		inner_context = NULL;
		k8s_inner = NULL;
	}
}
