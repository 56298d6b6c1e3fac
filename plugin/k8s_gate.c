/*
 * k8s_gate.c - see k8s_gate.h. Lock order, as everywhere in the plugin:
 * slurmctld's locks first, gate_mu only inside them or alone; slurmctld's
 * callback is called with neither held (it takes the job and node write
 * locks itself, and on failure requeues the job, which comes back through
 * select_p_job_fini and so k8s_gate_job_fini).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "slurm_compat.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_gate.h"
#include "k8s_gate_api.h"
#include "k8s_view.h"
#include "k8s_log.h"


typedef struct {
	uint32_t job_id;
	time_t deadline;
	bool aborted;		/* left while gated: let go, nothing to check */
	unsigned ready, total;	/* as last shown in the job's reason */
} gate_entry_t;

typedef struct {
	uint32_t job_id;
	int rc;			/* for slurmctld's callback: a wait() status */
	bool timed_out;
	bool show;		/* only a new reason to show, no callback */
	bool hold;		/* sent back once too often: hold it after */
	unsigned failures;	/* in a row, this one included */
	char desc[400];		/* the job's reason: state_desc, "" to clear */
	char why[320];		/* why it failed, for the hold's reason */
} gate_out_t;

/* Jobs the gate sent back, and how many times in a row (bounded: at most
 * FAILS_MAX jobs remembered, the oldest entry forgotten first). */
typedef struct {
	uint32_t job_id;
	unsigned failures;
} gate_fail_t;
#define FAILS_MAX 4096

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static gate_entry_t *gates;		/* gate_mu */
static int gate_cnt, gate_cap;		/* gate_mu */
static k8s_gate_callback_t callback;	/* gate_mu */
static gate_fail_t fails[FAILS_MAX];	/* gate_mu */
static int fail_cnt;			/* gate_mu */

/* gate_mu held: one more failure of the job (0: passed, forget it). */
static unsigned _count_failure(uint32_t job_id, bool failed)
{
	int i;

	for (i = 0; i < fail_cnt && fails[i].job_id != job_id; i++)
		;
	if (!failed) {
		if (i < fail_cnt)
			fails[i] = fails[--fail_cnt];
		return 0;
	}
	if (i == fail_cnt) {
		if (fail_cnt == FAILS_MAX) {	/* forget the oldest */
			memmove(fails, fails + 1, (FAILS_MAX - 1) * sizeof(*fails));
			i = --fail_cnt;
		}
		fails[i].job_id = job_id;
		fails[i].failures = 0;
		fail_cnt++;
	}
	return ++fails[i].failures;
}

extern void k8s_gate_check_config(void)
{
	if (!k8s_cons_tres_running() || !k8s_cons_tres_gate_mode())
		return;
	if (!xstrcasestr(slurm_conf.prep_plugins, "k8s_cons_tres"))
		fatal(PREFIX "LaunchGate=%s needs the plugin's PrEp plugin: add k8s_cons_tres to PrEpPlugins in slurm.conf (e.g. PrEpPlugins=script,k8s_cons_tres) and install prep_k8s_cons_tres.so on every node, or set LaunchGate=off in k8s_cons_tres.conf",
		      k8s_cons_tres_gate_mode() == 2 ? "prepared" : "claims");
}

static bool _wanted(void)
{
	return k8s_cons_tres_running() && k8s_cons_tres_gate_mode() != 0;
}

static void _set_callback(k8s_gate_callback_t cb)
{
	slurm_mutex_lock(&gate_mu);
	callback = cb;
	slurm_mutex_unlock(&gate_mu);
	if (!cb && _wanted())
		error(PREFIX "PrEp plugins reloaded without a callback: jobs are no longer held at the launch gate until slurmctld restarts");
}

/* The job has a node that is a Kubernetes node; before the first view (a
 * restart) every job may be, and the core's answer decides. */
static bool _on_kubernetes(job_record_t *job_ptr)
{
	bitstr_t *b = job_ptr->node_bitmap;
	int last;

	if (!k8s_view_known())
		return true;
	if (!b || (last = bit_fls(b)) < 0)
		return false;
	for (int i = bit_ffs(b); i >= 0 && i <= last; i++)
		if (bit_test(b, i) && k8s_view_node_is_k8s(i))
			return true;
	return false;
}

static char *_desc(const struct k8s_cons_tres_gate *g)
{
	return xstrdup_printf(REASON_PREFIX "waiting for Kubernetes to show its devices allocated (%u/%u): %s",
			      g->ready, g->total, g->why[0] ? g->why : "claims not written yet");
}

static bool _arm(job_record_t *job_ptr)
{
	struct k8s_cons_tres_gate g;
	gate_entry_t *e;

	if (!_on_kubernetes(job_ptr))
		return false;
	(void) k8s_cons_tres_job_gate(job_ptr->job_id, &g);
	if (g.kind != K8S_CONS_TRES_GATE_WAIT && g.kind != K8S_CONS_TRES_GATE_OVERLAP)
		return false;	/* nothing to wait for, or there already */
	slurm_mutex_lock(&gate_mu);
	if (!callback) {
		slurm_mutex_unlock(&gate_mu);
		return false;
	}
	for (int i = 0; i < gate_cnt; i++)
		if (gates[i].job_id == job_ptr->job_id) {	/* armed twice: one callback */
			slurm_mutex_unlock(&gate_mu);
			return false;
		}
	if (gate_cnt == gate_cap) {
		gate_cap = gate_cap ? 2 * gate_cap : 64;
		xrecalloc(gates, gate_cap, sizeof(*gates));
	}
	e = &gates[gate_cnt++];
	memset(e, 0, sizeof(*e));
	e->job_id = job_ptr->job_id;
	e->deadline = time(NULL) + k8s_cons_tres_gate_timeout();
	e->ready = g.ready;
	e->total = g.total;
	slurm_mutex_unlock(&gate_mu);
	/* select_nodes has cleared the reason by now: ours shows while gated */
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = _desc(&g);
	debug(PREFIX "%pJ held at the launch gate (%u/%u there)", job_ptr, g.ready, g.total);
	return true;
}

extern void k8s_gate_job_fini(job_record_t *job_ptr)
{
	slurm_mutex_lock(&gate_mu);
	for (int i = 0; i < gate_cnt; i++)
		if (gates[i].job_id == job_ptr->job_id)
			gates[i].aborted = true;
	slurm_mutex_unlock(&gate_mu);
}

/* gate_mu held: the job fails the gate once more; held after too many. */
static void _failed(gate_out_t *out, const char *why)
{
	out->failures = _count_failure(out->job_id, true);
	out->hold = out->failures > k8s_cons_tres_gate_requeues();
	snprintf(out->why, sizeof(out->why), "%s", why);
}

/* gate_mu held: entry i settled (taken out) or shown anew. */
static bool _settle(int i, time_t now, gate_out_t *out)
{
	gate_entry_t *e = &gates[i];
	struct k8s_cons_tres_gate g;
	char *desc;

	memset(out, 0, sizeof(*out));
	out->job_id = e->job_id;
	if (e->aborted)
		return true;
	(void) k8s_cons_tres_job_gate(e->job_id, &g);
	switch (g.kind) {
	case K8S_CONS_TRES_GATE_NONE:	/* the job is no longer ours to hold */
	case K8S_CONS_TRES_GATE_OPEN:
		info(PREFIX "JobId=%u: Kubernetes shows its devices allocated (%u/%u): starting",
		     e->job_id, g.ready, g.total);
		(void) _count_failure(e->job_id, false);
		return true;
	case K8S_CONS_TRES_GATE_OVERLAP:
		error(PREFIX "JobId=%u must not start: %s; requeued (or cancelled where Slurm cannot requeue it)",
		      e->job_id, g.why);
		out->rc = 1 << 8;	/* exit code 1: Slurm requeues or cancels */
		snprintf(out->desc, sizeof(out->desc), REASON_PREFIX "%s", g.why);
		_failed(out, g.why);
		return true;
	default:
		break;
	}
	if (now >= e->deadline) {
		desc = xstrdup_printf("Kubernetes did not show its devices allocated within %us (%u/%u: %s)",
				      k8s_cons_tres_gate_timeout(), g.ready, g.total, g.why);
		error(PREFIX "JobId=%u: %s; requeued (or cancelled where Slurm cannot requeue it), its nodes and claims released",
		      e->job_id, desc);
		out->rc = SIGKILL;	/* with timed_out: "failed due to timing out" */
		out->timed_out = true;
		_failed(out, desc);
		xfree(desc);
		return true;
	}
	if (g.ready != e->ready || g.total != e->total) {
		e->ready = g.ready;
		e->total = g.total;
		desc = _desc(&g);
		snprintf(out->desc, sizeof(out->desc), "%s", desc);
		xfree(desc);
		out->show = true;
	}
	return false;
}

/*
 * After slurmctld's callback requeued them: jobs sent back once too often
 * wait, held, for an admin, as Slurm's own requeuehold leaves a job
 * (priority 0), so that a node Kubernetes keeps failing does not take the
 * same job again and again. A job Slurm cancelled instead is not pending.
 */
static void _hold(gate_out_t *outs, int n)
{
	slurmctld_lock_t locks = { .job = WRITE_LOCK };
	job_record_t *job_ptr;

	lock_slurmctld(locks);
	for (int i = 0; i < n; i++) {
		if (!outs[i].hold || !(job_ptr = find_job_record(outs[i].job_id)) ||
		    !IS_JOB_PENDING(job_ptr))
			continue;
		job_ptr->priority = 0;
		job_ptr->state_reason = WAIT_HELD;
		xfree(job_ptr->state_desc);
		job_ptr->state_desc = xstrdup_printf(REASON_PREFIX "held after %u launch gate failures: %s",
						     outs[i].failures, outs[i].why);
		error(PREFIX "%pJ held after %u launch gate failures in a row (LaunchGateRequeues=%u); scontrol release it once Kubernetes is fixed",
		      job_ptr, outs[i].failures, k8s_cons_tres_gate_requeues());
		last_job_update = time(NULL);
	}
	unlock_slurmctld(locks);
}

/* The job's reason, under the job write lock only. */
static void _show(gate_out_t *outs, int n)
{
	slurmctld_lock_t locks = { .job = WRITE_LOCK };
	job_record_t *job_ptr;

	lock_slurmctld(locks);
	for (int i = 0; i < n; i++) {
		if (!(job_ptr = find_job_record(outs[i].job_id)) ||
		    !IS_JOB_CONFIGURING(job_ptr))
			continue;
		if (job_ptr->state_desc &&
		    xstrncmp(job_ptr->state_desc, REASON_PREFIX, strlen(REASON_PREFIX)))
			continue;	/* someone else's reason */
		xfree(job_ptr->state_desc);
		if (outs[i].desc[0])
			job_ptr->state_desc = xstrdup(outs[i].desc);
	}
	unlock_slurmctld(locks);
}

extern void k8s_gate_tick(void)
{
	gate_out_t *outs = NULL;
	k8s_gate_callback_t cb;
	time_t now = time(NULL);
	int nout = 0, ncb = 0, nhold = 0;

	slurm_mutex_lock(&gate_mu);
	if (!gate_cnt) {
		slurm_mutex_unlock(&gate_mu);
		return;
	}
	cb = callback;
	outs = xcalloc(gate_cnt, sizeof(*outs));
	for (int i = 0; i < gate_cnt;) {
		if (_settle(i, now, &outs[nout])) {
			/* out of the table before calling back: exactly one callback */
			gates[i] = gates[--gate_cnt];
			nhold += outs[nout].hold;
			nout++;
			ncb++;
		} else {
			if (outs[nout].show)
				nout++;
			i++;
		}
	}
	slurm_mutex_unlock(&gate_mu);
	if (nout)
		_show(outs, nout);
	for (int i = 0; i < nout && cb; i++)
		if (!outs[i].show)
			cb(outs[i].rc, outs[i].job_id, outs[i].timed_out);
	if (nhold && cb)
		_hold(outs, nout);
	/*
	 * A job's configuration ended here, off the paths on which slurmctld
	 * saves job state, and nothing else may save it before a restart or
	 * a takeover: the controller would recover the job CONFIGURING from
	 * an older save, run the gate again and launch its batch script on
	 * top of the running one (launch failed, requeued held).
	 */
	if (ncb && cb)
		schedule_job_save();
	if (ncb && !cb)
		error(PREFIX "%d jobs left the launch gate with no callback to tell slurmctld", ncb);
	xfree(outs);
}

/* Exported (select_k8s_cons_tres.map) for prep_k8s_cons_tres.so. */
extern const k8s_gate_api_t k8s_cons_tres_gate_v1;
const k8s_gate_api_t k8s_cons_tres_gate_v1 = {
	.slurm_version = SLURM_VERSION_NUMBER,
	.wanted = _wanted,
	.set_callback = _set_callback,
	.arm = _arm,
};
