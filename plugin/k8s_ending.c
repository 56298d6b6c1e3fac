/*
 * k8s_ending.c - see k8s_ending.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_ending.h"
#include "k8s_log.h"

typedef struct {
	uint32_t job_id;
	int nnodes;
	int *index;	/* node table index, -1 once ended there */
	char **name;	/* the node's name when the job was released */
} ending_t;

/* Lock order: slurmctld's locks, then ending_mu (add runs under them). */
static pthread_mutex_t ending_mu = PTHREAD_MUTEX_INITIALIZER;
static ending_t *ending;
static int ending_cnt;

typedef struct {
	uint32_t job_id;
	char *node;
} release_t;

static void _free_one(ending_t *e)
{
	for (int n = 0; n < e->nnodes; n++)
		xfree(e->name[n]);
	xfree(e->name);
	xfree(e->index);
}

/* ending_mu held */
static void _remove(int i)
{
	_free_one(&ending[i]);
	ending[i] = ending[--ending_cnt];
}

/* ending_mu held */
static int _find(uint32_t job_id)
{
	for (int i = 0; i < ending_cnt; i++)
		if (ending[i].job_id == job_id)
			return i;
	return -1;
}

extern void k8s_ending_add(job_record_t *job_ptr)
{
	node_record_t *node_ptr;
	ending_t e = { .job_id = job_ptr->job_id };
	int last;

	if (k8s_cons_tres_job_finishing(job_ptr->job_id) != K8S_CONS_TRES_OK) {
		/* the core could not take it: the old way, at once */
		k8s_cons_tres_job_ended(job_ptr->job_id);
		return;
	}
	if (!job_ptr->node_bitmap) {
		k8s_cons_tres_job_released(job_ptr->job_id, NULL);
		return;
	}
	/* under slurmctld's write locks: one allocation, however many nodes */
	e.index = xcalloc(bit_set_count(job_ptr->node_bitmap), sizeof(int));
	e.name = xcalloc(bit_set_count(job_ptr->node_bitmap), sizeof(char *));
	last = bit_fls(job_ptr->node_bitmap);
	for (int i = bit_ffs(job_ptr->node_bitmap); i >= 0 && i <= last; i++) {
		if (!bit_test(job_ptr->node_bitmap, i) ||
		    !(node_ptr = node_record_table_ptr[i]))
			continue;
		e.index[e.nnodes] = node_ptr->index;
		e.name[e.nnodes++] = xstrdup(node_ptr->name);
	}
	slurm_mutex_lock(&ending_mu);
	int old = _find(e.job_id);
	if (old >= 0)
		_remove(old);
	xrecalloc(ending, ending_cnt + 1, sizeof(ending_t));
	ending[ending_cnt++] = e;
	slurm_mutex_unlock(&ending_mu);
}

extern void k8s_ending_forget(uint32_t job_id)
{
	slurm_mutex_lock(&ending_mu);
	int i = _find(job_id);
	if (i >= 0)
		_remove(i);
	slurm_mutex_unlock(&ending_mu);
}

extern bool k8s_ending_pending(void)
{
	bool p;

	slurm_mutex_lock(&ending_mu);
	p = ending_cnt > 0;
	slurm_mutex_unlock(&ending_mu);
	return p;
}

/* job READ lock held: whether the job is over on node index `i` (its record
 * gone, not COMPLETING any more, or the node no longer completing it) */
static bool _ended_on(job_record_t *job_ptr, int i)
{
	if (!job_ptr || !IS_JOB_COMPLETING(job_ptr) || !job_ptr->node_bitmap_cg)
		return true;
	return i >= bit_size(job_ptr->node_bitmap_cg) ||
	       !bit_test(job_ptr->node_bitmap_cg, i);
}

extern void k8s_ending_scan(void)
{
	slurmctld_lock_t locks = { .job = READ_LOCK, .node = READ_LOCK };
	release_t *out = NULL;
	int nout = 0, cap = 0;

	lock_slurmctld(locks);
	slurm_mutex_lock(&ending_mu);
	/* at most every node of every ending job: one allocation */
	for (int i = 0; i < ending_cnt; i++)
		cap += ending[i].nnodes;
	if (cap)
		out = xcalloc(cap, sizeof(release_t));
	for (int i = 0; i < ending_cnt; i++) {
		ending_t *e = &ending[i];
		job_record_t *job_ptr = find_job_record(e->job_id);
		int left = 0;

		for (int n = 0; n < e->nnodes; n++) {
			if (e->index[n] < 0)
				continue;
			if (!_ended_on(job_ptr, e->index[n])) {
				left++;
				continue;
			}
			e->index[n] = -1;
			out[nout].job_id = e->job_id;
			out[nout++].node = e->name[n];
			e->name[n] = NULL;
		}
		if (!left)
			_remove(i--);
	}
	slurm_mutex_unlock(&ending_mu);
	unlock_slurmctld(locks);

	/* only queues in the core; nothing of ours or slurmctld's held */
	for (int i = 0; i < nout; i++) {
		k8s_cons_tres_job_released(out[i].job_id, out[i].node);
		xfree(out[i].node);
	}
	xfree(out);
}

extern void k8s_ending_reset(void)
{
	slurm_mutex_lock(&ending_mu);
	while (ending_cnt)
		_remove(ending_cnt - 1);
	xfree(ending);
	slurm_mutex_unlock(&ending_mu);
}
