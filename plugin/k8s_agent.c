/*
 * k8s_agent.c - see k8s_agent.h. Lock order: slurmctld's locks first, our
 * state only inside them, as in every select_p_* call.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "slurm_compat.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_agent.h"
#include "k8s_ending.h"
#include "k8s_gate.h"
#include "k8s_gpu.h"
#include "k8s_nodes.h"
#include "k8s_registered.h"
#include "k8s_view.h"
#include "k8s_log.h"

#define POLL_MS 250

static pthread_t agent;
static bool running, stopping, ready;
static bool in_control;	/* since the last reconfigure, until shutdown_time */
static pthread_mutex_t agent_mu = PTHREAD_MUTEX_INITIALIZER;
/*
 * Wakes the agent before its poll: stop, and the core's word that a job's
 * launch gate has an answer (k8s_cons_tres_set_gate_notify). A pipe, not a
 * condition variable: the core calls from its own thread, which must not
 * take agent_mu (the agent calls into the core with it held). Made once and
 * kept for the life of slurmctld, so a late call never writes to a closed
 * descriptor.
 */
static int wake_fd[2] = { -1, -1 };


static time_t *mismatch_since;	/* per node index: 0, or first seen */
static int since_cnt;
static time_t next_check;	/* when a grace period ends, 0 if none */
static time_t next_retry;	/* when nodes that wait to be marked are retried */

/* Rare: with the locks slurmctld's own node updates take. */
static void _resume(char *nodes)
{
	slurmctld_lock_t locks = { .job = WRITE_LOCK, .node = WRITE_LOCK,
				   .part = WRITE_LOCK, .fed = READ_LOCK };
	update_node_msg_t msg;

	slurm_init_update_node_msg(&msg);
	msg.node_names = nodes;
	msg.node_state = NODE_RESUME;
	info(PREFIX "resuming %s: slices agree with slurm.conf again", nodes);
	lock_slurmctld(locks);
	(void) update_node(&msg, slurm_conf.slurm_user_id);
	unlock_slurmctld(locks);
}

/*
 * A node whose slices disagree with slurm.conf is unavailable at once (the
 * view keeps it out) but drained only when the disagreement outlasts the
 * grace period: a driver restart that republishes its slices is no reason
 * to drain. A node the plugin drained is resumed when they agree again.
 */
static void _drain_mismatched(char **resume)
{
	node_record_t *node_ptr;
	time_t now = time(NULL), grace = k8s_cons_tres_view_drain_after();

	if (since_cnt != node_record_count) {
		xfree(mismatch_since);
		mismatch_since = xcalloc(node_record_count, sizeof(time_t));
		since_cnt = node_record_count;
	}
	next_check = 0;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		const char *why = k8s_view_mismatch(i);
		char *reason = NULL;
		if (!why) {
			mismatch_since[i] = 0;
			if (IS_NODE_DRAIN(node_ptr) && node_ptr->reason &&
			    !xstrncmp(node_ptr->reason, REASON_PREFIX,
				      strlen(REASON_PREFIX)) &&
			    k8s_view_node_ready(i))
				xstrfmtcat(*resume, "%s%s", *resume ? "," : "",
					   node_ptr->name);
			continue;
		}
		if (!mismatch_since[i]) {
			mismatch_since[i] = now;
			info(PREFIX "%s unavailable: %s (drained if it lasts %lds)",
			     node_ptr->name, why, (long) grace);
		}
		if (now - mismatch_since[i] < grace) {
			time_t due = mismatch_since[i] + grace;
			if (!next_check || due < next_check)
				next_check = due;
			continue;
		}
		if (IS_NODE_DRAIN(node_ptr))
			continue;
		xstrfmtcat(reason, REASON_PREFIX "%s", why);
		error(PREFIX "draining %s: %s", node_ptr->name, why);
		drain_nodes(node_ptr->name, reason, slurm_conf.slurm_user_id);
		xfree(reason);
	}
}

static void _sync_now(void)
{
	slurmctld_lock_t locks = { .conf = READ_LOCK, .job = READ_LOCK,
				   .node = WRITE_LOCK };
	char *resume = NULL;

	lock_slurmctld(locks);
	if (k8s_view_refresh())
		k8s_gpu_sync();
	else
		k8s_gpu_sync_pending();
	_drain_mismatched(&resume);
	unlock_slurmctld(locks);
	if (resume)
		_resume(resume);
	xfree(resume);
}

/* agent_mu held */
static bool _leave_control_locked(void)
{
	if (!in_control || !slurmctld_config.shutdown_time)
		return false;
	in_control = false;
	info(PREFIX "slurmctld leaves control; claims are left to the controller in charge");
	k8s_cons_tres_standby();
	return true;
}

extern void k8s_agent_check_control(void)
{
	slurm_mutex_lock(&agent_mu);
	(void) _leave_control_locked();
	slurm_mutex_unlock(&agent_mu);
}

/* On failure wake_fd stays { -1, -1 }: the agent then only polls. */
static bool _make_wake_pipe(void)
{
	if (pipe(wake_fd))
		return false;
	for (int i = 0; i < 2; i++)
		if (fcntl(wake_fd[i], F_SETFD, FD_CLOEXEC) ||
		    fcntl(wake_fd[i], F_SETFL, O_NONBLOCK)) {
			close(wake_fd[0]);
			close(wake_fd[1]);
			wake_fd[0] = wake_fd[1] = -1;
			return false;
		}
	return true;
}

/* Never blocks: a full pipe already wakes the agent. */
static void _wake(void)
{
	char c = 1;

	if (wake_fd[1] >= 0 && write(wake_fd[1], &c, 1) < 0) {
		/* EAGAIN: a wake is pending anyway */
	}
}

/* Until woken or POLL_MS passed; takes every pending wake. */
static void _wait_wake(void)
{
	struct pollfd p = { .fd = wake_fd[0], .events = POLLIN };
	char buf[64];

	if (poll(&p, 1, POLL_MS) > 0)
		while (read(wake_fd[0], buf, sizeof(buf)) > 0)
			;
}

static void *_agent(void *arg)
{
	uint64_t seen = 0;
	bool retry;

	slurm_mutex_lock(&agent_mu);
	while (!stopping) {
		slurm_mutex_unlock(&agent_mu);
		_wait_wake();
		slurm_mutex_lock(&agent_mu);
		if (stopping || !ready)
			continue;
		/*
		 * A backup handing control back (REQUEST_CONTROL) or a
		 * controller shutting down sets shutdown_time: its job list
		 * is frozen from here on, so it must write nothing more.
		 */
		if (_leave_control_locked())
			continue;
		/* Node discovery talks to slurmctld by RPC: no lock of ours held */
		if (in_control && k8s_nodes_due()) {
			slurm_mutex_unlock(&agent_mu);
			k8s_nodes_sync();
			slurm_mutex_lock(&agent_mu);
			if (stopping)
				break;
		}
		/* the launch gate calls slurmctld back: nothing of ours held */
		slurm_mutex_unlock(&agent_mu);
		k8s_gate_tick();
		if (k8s_registered_pending())
			k8s_registered_scan();
		if (k8s_ending_pending())
			k8s_ending_scan();
		slurm_mutex_lock(&agent_mu);
		if (stopping)
			break;
		/* pods' GPUs on nodes whose slurmd had not registered */
		retry = k8s_gpu_waiting() && time(NULL) >= next_retry;
		if (k8s_cons_tres_view_generation() == seen && !retry &&
		    !(next_check && time(NULL) >= next_check))
			continue;
		if (retry)
			next_retry = time(NULL) + 1;
		seen = k8s_cons_tres_view_generation();
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
	if (wake_fd[0] < 0 && !_make_wake_pipe()) {
		error(PREFIX "cannot make the agent's wake pipe: %m; the launch gate answers at its %d ms poll",
		      POLL_MS);
	}
	if (!running) {
		stopping = false;
		k8s_cons_tres_set_gate_notify(_wake);
		k8s_thread_create("k8s_agent", &agent, _agent, NULL);
		running = true;
	}
	slurm_mutex_unlock(&agent_mu);
}

extern void k8s_agent_ready(void)
{
	slurm_mutex_lock(&agent_mu);
	ready = true;
	in_control = true;	/* reconfigure runs only in the controller in charge */
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
	k8s_cons_tres_set_gate_notify(NULL);
	_wake();
	slurm_mutex_unlock(&agent_mu);
	k8s_thread_join(agent);
	running = false;
	xfree(mismatch_since);
	since_cnt = 0;
	k8s_registered_fini();
	k8s_ending_reset();
}
