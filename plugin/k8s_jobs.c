/*
 * k8s_jobs.c - read a job's per-node cores and GPUs out of Slurm's records
 * and hand them to the core as plain arrays.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/common/job_resources.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_ending.h"
#include "k8s_gpu.h"
#include "k8s_jobs.h"
#include "k8s_log.h"


typedef struct {
	struct k8s_cons_tres_job_node *nodes;	/* per job node */
	uint32_t **cores, **gres;	/* storage behind nodes[] */
	size_t nnodes;
} job_nodes_t;

static void _free_job_nodes(job_nodes_t *jn)
{
	for (size_t n = 0; n < jn->nnodes; n++) {
		xfree(jn->cores[n]);
		xfree(jn->gres[n]);
	}
	xfree(jn->cores);
	xfree(jn->gres);
	xfree(jn->nodes);
}

static void _add_bits(bitstr_t *b, uint32_t **arr, size_t *cnt)
{
	int64_t size;

	if (!b)
		return;
	size = bit_size(b);
	for (int64_t i = 0; i < size; i++) {
		if (!bit_test(b, i))
			continue;
		xrecalloc(*arr, *cnt + 1, sizeof(uint32_t));
		(*arr)[(*cnt)++] = i;
	}
}

/*
 * GPUs of job node n (cluster node index i): at job_begin they are in the
 * selection made by job_test (gres_bit_select, per cluster node); once
 * allocated, in gres_bit_alloc (per job node).
 */
static void _job_gpus(job_record_t *job_ptr, bool selected, int i, int n,
		      uint32_t **arr, size_t *cnt)
{
	list_t *gres = selected ? job_ptr->gres_list_req : job_ptr->gres_list_alloc;
	list_itr_t *it;
	gres_state_t *gs;

	if (!gres)
		return;
	it = list_iterator_create(gres);
	while ((gs = list_next(it))) {
		gres_job_state_t *gjs = gs->gres_data;
		if (!k8s_gpu_is_gpu(gs) || !gjs)
			continue;
		if (selected && gjs->gres_bit_select && i < (int) gjs->total_node_cnt)
			_add_bits(gjs->gres_bit_select[i], arr, cnt);
		else if (!selected && gjs->gres_bit_alloc && n < (int) gjs->node_cnt)
			_add_bits(gjs->gres_bit_alloc[n], arr, cnt);
	}
	list_iterator_destroy(it);
}

/* false when the job has no resources on record (nothing to tell). */
static bool _collect(job_record_t *job_ptr, bool selected, job_nodes_t *jn)
{
	job_resources_t *jr = job_ptr->job_resrcs;
	node_record_t *node_ptr;
	int n = 0, last;

	memset(jn, 0, sizeof(*jn));
	if (!jr || !jr->node_bitmap || !jr->core_bitmap)
		return false;
	jn->nnodes = bit_set_count(jr->node_bitmap);
	jn->nodes = xcalloc(jn->nnodes, sizeof(*jn->nodes));
	jn->cores = xcalloc(jn->nnodes, sizeof(uint32_t *));
	jn->gres = xcalloc(jn->nnodes, sizeof(uint32_t *));
	last = bit_fls(jr->node_bitmap);
	for (int i = bit_ffs(jr->node_bitmap); i >= 0 && i <= last; i++) {
		bitstr_t *cores;
		if (!bit_test(jr->node_bitmap, i) ||
		    !(node_ptr = node_record_table_ptr[i]))
			continue;
		if (n >= (int) jn->nnodes)
			break;
		jn->nodes[n].node = node_ptr->name;
		cores = copy_job_resources_node(jr, n);
		_add_bits(cores, &jn->cores[n], &jn->nodes[n].ncores);
		FREE_NULL_BITMAP(cores);
		_job_gpus(job_ptr, selected, i, n, &jn->gres[n], &jn->nodes[n].ngres);
		if (jr->memory_allocated)
			jn->nodes[n].mem_mb = jr->memory_allocated[n];
		jn->nodes[n].cores = jn->cores[n];
		jn->nodes[n].gres = jn->gres[n];
		n++;
	}
	jn->nnodes = n;
	return true;
}

/* An external job's AdminComment ("" for none), NULL for any other job. */
static const char *_external_comment(job_record_t *job_ptr)
{
#ifdef EXTERNAL_JOB	/* Slurm 25.05+ */
	if (job_ptr->bit_flags & EXTERNAL_JOB)
		return job_ptr->admin_comment ? job_ptr->admin_comment : "";
#endif
	(void) job_ptr;
	return NULL;
}

static void _started(job_record_t *job_ptr, bool selected)
{
	job_nodes_t jn;
	char err[256];

	if (!_collect(job_ptr, selected, &jn))
		return;
	if (k8s_cons_tres_job_started(job_ptr->job_id, job_ptr->user_id, NULL,
			       _external_comment(job_ptr), jn.nodes,
			       jn.nnodes, err, sizeof(err)) != K8S_CONS_TRES_OK)
		error(PREFIX "%pJ: %s", job_ptr, err);
	_free_job_nodes(&jn);
}

extern void k8s_jobs_begin(job_record_t *job_ptr)
{
	k8s_ending_forget(job_ptr->job_id);	/* a requeued run's: over */
	_started(job_ptr, true);
}

extern void k8s_jobs_end(job_record_t *job_ptr)
{
	k8s_ending_add(job_ptr);
}

/* A running job told again: its claims and pods follow the new allocation
 * (those of nodes it left go; the others stay as they are). */
extern void k8s_jobs_resized(job_record_t *job_ptr)
{
	_started(job_ptr, false);
}

static int _known_one(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	job_nodes_t jn;

	if (!IS_JOB_RUNNING(job_ptr) && !IS_JOB_SUSPENDED(job_ptr))
		return 0;
	if (!_collect(job_ptr, false, &jn))
		return 0;
	k8s_cons_tres_jobs_known_add(job_ptr->job_id, job_ptr->user_id, NULL,
			      _external_comment(job_ptr), jn.nodes,
			      jn.nnodes);
	_free_job_nodes(&jn);
	return 0;
}

extern void k8s_jobs_known(list_t *jobs)
{
	k8s_cons_tres_jobs_known_begin();
	if (jobs)
		list_for_each(jobs, _known_one, NULL);
	k8s_cons_tres_jobs_known_end();
}
