/*
 * k8s_nodes.c - see k8s_nodes.h. Which nodes discovery made is decided by
 * the core (core/external_nodes.h: EXTERNAL with its marker feature); this
 * file only copies slurmctld's nodes out and carries out the plan.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <time.h>

#include "slurm_compat.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_nodes.h"
#include "k8s_log.h"

/*
 * Per round (once a second): at most MAX_ACTIONS, and none begun after
 * ROUND_BUDGET_MS. Each create or delete takes slurmctld's write locks and
 * rebuilds its partitions and the select plugins' state (O(nodes)), so a
 * burst of new nodes spreads over rounds that leave slurmctld at least half
 * of each second; at 2,000 nodes a create costs about 1-2 ms.
 */
#define MAX_ACTIONS 256	/* 4 KiB each */
#define ROUND_BUDGET_MS 500
/*
 * A round copies every node under the node read lock and plans over all of
 * them (at 15,000 nodes about 4% of slurmctld's CPU once a second). It is
 * skipped while Kubernetes' side is unchanged and the last round did
 * nothing, but for one every QUIET_ROUND_S: what changed in slurmctld alone
 * (an admin's resume or delete, a busy node waiting to go becoming idle) is
 * acted on within that.
 */
#define QUIET_ROUND_S 10

static time_t last_round;

#if K8S_SLURM_AT_LEAST(25, 5, 0)

static uint64_t seen_version;	/* k8s_cons_tres_discovery_version() of last_round */
static bool acted;		/* last_round changed something in slurmctld */

extern bool k8s_nodes_due(void)
{
	time_t now = time(NULL);
	uint64_t version;

	if (now == last_round || !k8s_cons_tres_node_discovery())
		return false;
	version = k8s_cons_tres_discovery_version();
	if (!acted && version == seen_version && now - last_round < QUIET_ROUND_S)
		return false;
	last_round = now;
	seen_version = version;
	return true;
}

/* Its features as slurm.conf or the create gave them. */
static const char *_features(node_record_t *node_ptr)
{
	config_record_t *c = node_ptr->config_ptr;

	return c && c->feature ? c->feature : node_ptr->features;
}

extern bool k8s_node_discovered(node_record_t *node_ptr)
{
	return IS_NODE_EXTERNAL(node_ptr) &&
	       k8s_cons_tres_node_is_discovered(1, _features(node_ptr));
}

/* node READ lock held; strings[3 * i + 0..2] own node i's strings */
static void _copy_nodes(struct k8s_cons_tres_slurm_node_state **out, char ***strings, int *n)
{
	node_record_t *node_ptr;
	int cap = node_record_count ? node_record_count : 1;

	*out = xcalloc(cap, sizeof(**out));
	*strings = xcalloc(3 * cap, sizeof(char *));
	*n = 0;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		struct k8s_cons_tres_slurm_node_state *s = &(*out)[*n];
		config_record_t *c = node_ptr->config_ptr;
		char **own = &(*strings)[3 * (*n)++];

		s->name = own[0] = xstrdup(node_ptr->name);
		s->cpus = node_ptr->cpus;
		s->sockets = node_ptr->tot_sockets;
		s->cores_per_socket = node_ptr->cores;
		s->threads_per_core = node_ptr->threads;
		s->real_memory = node_ptr->real_memory;
		s->gres = own[1] = xstrdup(c && c->gres ? c->gres : node_ptr->gres);
		s->features = own[2] = xstrdup(_features(node_ptr));
		s->external = IS_NODE_EXTERNAL(node_ptr) ? 1 : 0;
		s->drained = IS_NODE_DRAIN(node_ptr) ? 1 : 0;
		s->drained_by_us = s->drained && node_ptr->reason &&
			!xstrncmp(node_ptr->reason, REASON_PREFIX, strlen(REASON_PREFIX));
		s->idle = !node_ptr->run_job_cnt && !node_ptr->comp_job_cnt &&
			  !IS_NODE_ALLOCATED(node_ptr) && !IS_NODE_MIXED(node_ptr) &&
			  !IS_NODE_COMPLETING(node_ptr);
	}
}

static void _free_nodes(struct k8s_cons_tres_slurm_node_state *nodes, char **strings, int n)
{
	for (int i = 0; i < 3 * n; i++)
		xfree(strings[i]);
	xfree(strings);
	xfree(nodes);
}

/* Returns true when it asked slurmctld to change something. */
static bool _act(const struct k8s_cons_tres_ext_action *a)
{
	update_node_msg_t msg;
	int rc = SLURM_SUCCESS;
	const char *what = "";

	slurm_init_update_node_msg(&msg);
	msg.node_names = (char *) a->node;
	switch (a->kind) {
	case K8S_CONS_TRES_EXT_NOTE:
		info(PREFIX "Kubernetes node %s", a->text);
		return false;
	case K8S_CONS_TRES_EXT_CREATE:
		what = "creating EXTERNAL node";
		msg.node_names = NULL;
		msg.extra = (char *) a->text;
		info(PREFIX "%s %s: %s", what, a->node, a->text);
		rc = slurm_create_node(&msg);
		break;
	case K8S_CONS_TRES_EXT_DRAIN:
		what = "draining";
		msg.node_state = NODE_STATE_DRAIN;
		msg.reason = (char *) a->text;
		info(PREFIX "draining %s: %s", a->node, a->text);
		rc = slurm_update_node(&msg);
		break;
	case K8S_CONS_TRES_EXT_RESUME:
		what = "resuming";
		msg.node_state = NODE_RESUME;
		info(PREFIX "resuming %s: Kubernetes offers it again", a->node);
		rc = slurm_update_node(&msg);
		break;
	case K8S_CONS_TRES_EXT_DELETE:
		what = "deleting";
		info(PREFIX "deleting EXTERNAL node %s: %s", a->node, a->text);
		rc = slurm_delete_node(&msg);
		break;
	default:
		return false;
	}
	if (rc != SLURM_SUCCESS)
		error(PREFIX "%s %s failed: %s", what, a->node,
		      slurm_strerror(errno));
	return true;
}

extern void k8s_nodes_sync(void)
{
	slurmctld_lock_t locks = { .node = READ_LOCK };
	struct k8s_cons_tres_slurm_node_state *nodes;
	char **strings;
	struct k8s_cons_tres_ext_action *plan;
	char why[256] = "";
	size_t nplan = 0;
	struct timespec start;
	int n;

	lock_slurmctld(locks);
	_copy_nodes(&nodes, &strings, &n);
	unlock_slurmctld(locks);

	plan = xcalloc(MAX_ACTIONS, sizeof(*plan));
	if (k8s_cons_tres_external_plan(nodes, n,
				 K8S_SLURM_AT_LEAST(25, 11, 0) ? 1 : 0,
				 plan, MAX_ACTIONS, &nplan, why, sizeof(why)))
		error(PREFIX "node discovery: %s", why);
	else if (why[0])
		debug(PREFIX "node discovery waits: %s", why);
	_free_nodes(nodes, strings, n);
	acted = false;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (size_t i = 0; i < nplan; i++) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 +
		    (now.tv_nsec - start.tv_nsec) / 1000000 >= ROUND_BUDGET_MS) {
			debug(PREFIX "node discovery: %zu of %zu actions left for the next round",
			      nplan - i, nplan);
			break;
		}
		acted |= _act(&plan[i]);
	}
	xfree(plan);
}

#else	/* before 25.05: no EXTERNAL nodes */

extern bool k8s_node_discovered(node_record_t *node_ptr)
{
	(void) node_ptr;
	return false;
}

extern bool k8s_nodes_due(void)
{
	if (!last_round && k8s_cons_tres_node_discovery()) {
		last_round = time(NULL);
		error(PREFIX "NodeDiscovery=external needs Slurm 25.05 or later (EXTERNAL nodes); this slurmctld is %s: no node is discovered",
		      SLURM_VERSION_STRING);
	}
	return false;
}

extern void k8s_nodes_sync(void)
{
}

#endif
