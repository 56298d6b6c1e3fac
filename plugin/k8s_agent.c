/*
 * k8s_agent.c - see k8s_agent.h. Lock order: slurmctld's locks first, our
 * state only inside them, as in every select_p_* call.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <pthread.h>
#include <time.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "core/k8sdra_ctld.h"
#include "k8s_agent.h"
#include "k8s_gpu.h"
#include "k8s_view.h"

#define POLL_MS 250

static pthread_t agent;
static bool running, stopping, ready;
static pthread_mutex_t agent_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t agent_cv = PTHREAD_COND_INITIALIZER;

/* Nodes whose slices disagree with slurm.conf are drained, saying why. */
static void _drain_mismatched(void)
{
	node_record_t *node_ptr;

	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		const char *why = k8s_view_mismatch(i);
		char *reason = NULL;
		if (!why || IS_NODE_DRAIN(node_ptr))
			continue;
		xstrfmtcat(reason, "k8s_cons_tres: %s", why);
		error("select/k8s_cons_tres: draining %s: %s", node_ptr->name, why);
		drain_nodes(node_ptr->name, reason, slurm_conf.slurm_user_id);
		xfree(reason);
	}
}

static void _sync_now(void)
{
	slurmctld_lock_t locks = { .conf = READ_LOCK, .job = READ_LOCK,
				   .node = WRITE_LOCK };

	lock_slurmctld(locks);
	if (k8s_view_refresh())
		k8s_gpu_sync();
	else
		k8s_gpu_sync_pending();
	_drain_mismatched();
	unlock_slurmctld(locks);
}

static void *_agent(void *arg)
{
	uint64_t seen = 0;

	slurm_mutex_lock(&agent_mu);
	while (!stopping) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += POLL_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&agent_cv, &agent_mu, &until);
		if (stopping || !ready)
			continue;
		if (k8sdra_view_generation() == seen)
			continue;
		seen = k8sdra_view_generation();
		slurm_mutex_unlock(&agent_mu);
		_sync_now();
		slurm_mutex_lock(&agent_mu);
	}
	slurm_mutex_unlock(&agent_mu);
	return NULL;
}

extern void k8s_agent_start(void)
{
	slurm_mutex_lock(&agent_mu);
	if (!running) {
		stopping = false;
		slurm_thread_create(&agent, _agent, NULL);
		running = true;
	}
	slurm_mutex_unlock(&agent_mu);
}

extern void k8s_agent_ready(void)
{
	slurm_mutex_lock(&agent_mu);
	ready = true;
	slurm_mutex_unlock(&agent_mu);
}

extern void k8s_agent_stop(void)
{
	slurm_mutex_lock(&agent_mu);
	if (!running) {
		slurm_mutex_unlock(&agent_mu);
		return;
	}
	stopping = true;
	slurm_cond_signal(&agent_cv);
	slurm_mutex_unlock(&agent_mu);
	pthread_join(agent, NULL);
	running = false;
}
