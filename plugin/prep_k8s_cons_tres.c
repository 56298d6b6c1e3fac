/*
 * prep_k8s_cons_tres.c - prep/k8s_cons_tres, the launch gate's PrEp plugin
 * (PrEpPlugins=script,k8s_cons_tres). slurmctld holds a job CONFIGURING
 * while an asynchronous prolog_slurmctld is pending: this plugin arms that
 * for jobs the select plugin gates and hands it slurmctld's callback. All
 * the gate's logic is the select plugin's (k8s_gate.c); this object only
 * forwards, so slurmd and slurmstepd, which load every PrEp plugin too,
 * load nothing heavy and do nothing. Built per release beside the select
 * plugin: the loader wants plugin_version to match exactly.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <dlfcn.h>

#include "slurm_compat.h"
#include "src/common/log.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"
#if K8S_SLURM_AT_LEAST(23, 2, 0)
#include "src/interfaces/prep.h"
#else
#include "src/common/prep.h"
#endif

#include "k8s_gate_api.h"

#define PREFIX "prep/k8s_cons_tres: "
#include "k8s_log.h"

const char plugin_name[] = "Launch gate of select/k8s_cons_tres";
const char plugin_type[] = "prep/k8s_cons_tres";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static const k8s_gate_api_t *api;	/* slurmctld with our SelectType only */
static bool have_callback;

/* The select plugin's table, if slurmctld has loaded it from PluginDir. */
static const k8s_gate_api_t *_find_api(void)
{
	char *dirs = xstrdup(slurm_conf.plugindir), *save = NULL, *dir;
	const k8s_gate_api_t *found = NULL;

	for (dir = strtok_r(dirs, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char *path = xstrdup_printf("%s/%s", dir, K8S_GATE_SELECT_SO);
		/* never loads a second copy: the loaded one, or nothing */
		void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
		xfree(path);
		if (!h)
			continue;
		found = dlsym(h, K8S_GATE_SYMBOL);
		dlclose(h);	/* slurmctld's own handle keeps it loaded */
	}
	xfree(dirs);
	return found;
}

extern int init(void)
{
	if (!running_in_slurmctld())
		return SLURM_SUCCESS;
	if (!(api = _find_api())) {
		error(PREFIX "SelectType is not select/k8s_cons_tres (or it has no launch gate): no job is held");
		return SLURM_SUCCESS;	/* failing init would stop slurmctld */
	}
	if (api->slurm_version != SLURM_VERSION_NUMBER) {
		error(PREFIX "select_k8s_cons_tres.so is built for another Slurm release: no job is held");
		api = NULL;
	}
	return SLURM_SUCCESS;
}

extern void fini(void)
{
	if (api)
		api->set_callback(NULL);
	api = NULL;
}

extern void prep_p_register_callbacks(prep_callbacks_t *callbacks)
{
	/* 22.05 reloads PrEp plugins on reconfigure without callbacks */
	have_callback = callbacks && callbacks->prolog_slurmctld;
	if (api)
		api->set_callback(have_callback ? callbacks->prolog_slurmctld : NULL);
}

extern int prep_p_prolog(job_env_t *job_env, slurm_cred_t *cred)
{
	return SLURM_SUCCESS;
}

extern int prep_p_epilog(job_env_t *job_env, slurm_cred_t *cred)
{
	return SLURM_SUCCESS;
}

/* Under slurmctld's job and node write locks: arm only, never wait. */
extern int prep_p_prolog_slurmctld(job_record_t *job_ptr, bool *async)
{
	*async = api && have_callback && api->arm(job_ptr);
	return SLURM_SUCCESS;	/* slurmctld does not fail a job on it */
}

extern int prep_p_epilog_slurmctld(job_record_t *job_ptr, bool *async)
{
	*async = false;
	return SLURM_SUCCESS;
}

extern void prep_p_required(prep_call_type_t type, bool *required)
{
	*required = type == PREP_PROLOG_SLURMCTLD && api && have_callback &&
		    api->wanted();
}
