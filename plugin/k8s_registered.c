/*
 * k8s_registered.c - see k8s_registered.h.
 *
 * A node counts as registered once its last_response is at or after the
 * time control began and it is not flagged NO_RESPOND: after a start
 * slurmctld asks every node to register (ping_nodes), and registration
 * sets last_response while validate_jobs_on_node aborts the unknown jobs
 * it reports, both under the node write lock, so a reader sees both or
 * neither. Nodes that run no slurmd (EXTERNAL, powered down) have no steps
 * to kill and count at once.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <time.h>

#include "slurm_compat.h"
#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_registered.h"

/* Lock order: slurmctld's locks, then reg_mu (reset runs under them). */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static time_t since;		/* control began */
static bitstr_t *told;		/* node index: told to the core */
static time_t next_scan;	/* scan again then */

/*
 * While a node has not registered (a DOWN node may never), the node table
 * is walked once a second, not at every agent tick; once all have, every
 * 10 s for nodes created later.
 */
#define PENDING_SECONDS 1
#define RESCAN_SECONDS 10

extern void k8s_registered_reset(void)
{
	slurm_mutex_lock(&reg_mu);
	since = time(NULL);
	FREE_NULL_BITMAP(told);
	next_scan = 0;
	slurm_mutex_unlock(&reg_mu);
}

extern bool k8s_registered_pending(void)
{
	bool p;

	slurm_mutex_lock(&reg_mu);
	p = since && time(NULL) >= next_scan;
	slurm_mutex_unlock(&reg_mu);
	return p;
}

/* node READ lock held */
static bool _registered(node_record_t *node_ptr, time_t from)
{
#if K8S_SLURM_AT_LEAST(25, 5, 0)
	if (IS_NODE_EXTERNAL(node_ptr))
		return true;
#endif
	if (IS_NODE_POWERED_DOWN(node_ptr))
		return true;
	return node_ptr->last_response >= from &&
	       !IS_NODE_NO_RESPOND(node_ptr);
}

extern void k8s_registered_scan(void)
{
	slurmctld_lock_t locks = { .conf = READ_LOCK, .node = READ_LOCK };
	node_record_t *node_ptr;
	char **names = NULL;
	int n = 0, left = 0;
	uint32_t settle;

	lock_slurmctld(locks);
	slurm_mutex_lock(&reg_mu);
	settle = slurm_conf.kill_wait;
	if (!told)
		told = bit_alloc(node_record_count);
	else if (bit_size(told) < node_record_count)
		bit_realloc(told, node_record_count);
	for (int i = 0; since && (node_ptr = next_node(&i)); i++) {
		if (bit_test(told, node_ptr->index))
			continue;
		if (!_registered(node_ptr, since)) {
			left++;
			continue;
		}
		bit_set(told, node_ptr->index);
		/* one allocation: at a start every node registers within seconds */
		if (!names)
			names = xcalloc(node_record_count, sizeof(char *));
		names[n++] = xstrdup(node_ptr->name);
	}
	/* nodes created later (dynamic, discovered) are looked for now and then */
	next_scan = time(NULL) + (left ? PENDING_SECONDS : RESCAN_SECONDS);
	slurm_mutex_unlock(&reg_mu);
	unlock_slurmctld(locks);

	/* only queues in the core; nothing of ours or slurmctld's held */
	for (int i = 0; i < n; i++) {
		k8s_cons_tres_node_registered(names[i], settle);
		xfree(names[i]);
	}
	xfree(names);
}

extern void k8s_registered_fini(void)
{
	slurm_mutex_lock(&reg_mu);
	FREE_NULL_BITMAP(told);
	since = 0;
	next_scan = 0;
	slurm_mutex_unlock(&reg_mu);
}
