/*
 * k8s_steer.c - steer cons_tres to the core engine's choice on Kubernetes
 * nodes (see k8s_steer.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "slurm_compat.h"
#include "src/common/job_resources.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_gpu.h"
#include "k8s_steer.h"
#include "k8s_view.h"
#include "select_common.h"
#include "k8s_log.h"

/* Nodes scored per job: only the nodes cons_tres already chose for it (the
 * caller runs its job_test first), so the cost grows with the job's node
 * count, not the cluster's. Each is scored within the engine's search
 * budget, mostly from its kept choices; the per-node reading of Slurm's
 * bitmaps is linear (about 1 us a node). Nodes of a job past the first 1024
 * keep cons_tres's own cores, Kubernetes still kept out. */
#define STEER_MAX_NODES 1024
#define MAX_CORES 1024
#define MAX_GPUS 64

extern list_t *job_list;	/* slurmctld's; defined tentatively in the plugin */

static bitstr_t *busy;		/* cores of running Slurm jobs, cluster-wide */
static bool busy_valid;

/* The engine's GPU choices between job_test and job_begin. */
#define CHOSEN_NODES 16
typedef struct {
	int node;
	uint32_t gres[MAX_GPUS];
	size_t ngres;
} node_gpus_t;
typedef struct {
	uint32_t job_id;
	node_gpus_t nodes[CHOSEN_NODES];
	int nnodes;
} chosen_t;
static chosen_t chosen[16];
static int chosen_next;

extern void k8s_steer_reset(void)
{
	FREE_NULL_BITMAP(busy);
	busy_valid = false;
}

/* Sets (or clears) the job's cores in `busy`. */
static void _mark_job(job_record_t *job_ptr, bool set)
{
	job_resources_t *jr = job_ptr->job_resrcs;
	int n = 0, last;

	if (!busy || !jr || !jr->node_bitmap || !jr->core_bitmap)
		return;
	last = bit_fls(jr->node_bitmap);
	for (int i = bit_ffs(jr->node_bitmap); i >= 0 && i <= last; i++) {
		bitstr_t *cores;
		uint32_t off;
		if (!bit_test(jr->node_bitmap, i))
			continue;
		cores = copy_job_resources_node(jr, n++);
		if (!cores)
			continue;
		off = cr_get_coremap_offset(i);
		for (int64_t c = 0; c < bit_size(cores); c++) {
			if (!bit_test(cores, c) || off + c >= bit_size(busy))
				continue;
			if (set)
				bit_set(busy, off + c);
			else
				bit_clear(busy, off + c);
		}
		FREE_NULL_BITMAP(cores);
	}
}

static int _mark_running(void *x, void *arg)
{
	job_record_t *job_ptr = x;

	if (IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr))
		_mark_job(job_ptr, true);
	return 0;
}

static void _busy_refresh(void)
{
	uint32_t size = cr_get_coremap_offset(node_record_count);

	if (busy_valid && busy && bit_size(busy) == size)
		return;
	FREE_NULL_BITMAP(busy);
	busy = bit_alloc(size);
	if (job_list)
		list_for_each(job_list, _mark_running, NULL);
	busy_valid = true;
}

extern void k8s_steer_job_fini(job_record_t *job_ptr)
{
	if (busy_valid)
		_mark_job(job_ptr, false);
}

/* GPUs per node the job asks for; false when it cannot be told simply. */
static bool _job_gpus(job_record_t *job_ptr, uint32_t *gpus)
{
	gres_state_t *gs;
	gres_job_state_t *gjs;

	*gpus = 0;
	if (!job_ptr->gres_list_req)
		return true;
	if (list_count(job_ptr->gres_list_req) != 1)
		return false;	/* several GRES or typed mixes: leave to cons_tres */
	gs = k8s_gpu_gres(job_ptr->gres_list_req);
	if (!gs || !(gjs = gs->gres_data))
		return false;
	if (gjs->gres_per_socket)
		return false;
	/*
	 * CPUs per GPU, or binding enforced: cons_tres picks the CPUs next to
	 * each of the job's GPUs (gres.conf Cores=), spread over sockets
	 * when the GPUs are; the engine's one CPU block would not follow them.
	 */
	if (gjs->cpus_per_gres || gjs->def_cpus_per_gres ||
	    (job_ptr->bit_flags & GRES_ENFORCE_BIND))
		return false;
	if (gjs->gres_per_node)
		*gpus = gjs->gres_per_node;
	else if (gjs->gres_per_job)
		*gpus = gjs->gres_per_job;
	else if (gjs->gres_per_task && job_ptr->details)
		*gpus = gjs->gres_per_task * MAX(job_ptr->details->num_tasks, 1);
	return *gpus <= MAX_GPUS;
}

static uint32_t _job_gpus_per_node(job_record_t *job_ptr, uint16_t tasks);

/* What the job asks of each node, when that can be told simply. */
typedef struct {
	uint32_t cpus, gpus, tpc;
} node_req_t;

static bool _node_request(job_record_t *job_ptr, node_req_t *r)
{
	job_details_t *d = job_ptr->details;
	uint32_t gpus;

	memset(r, 0, sizeof(*r));
	if (!d || d->whole_node || job_ptr->het_job_id || !_job_gpus(job_ptr, &gpus))
		return false;
	if (d->mc_ptr && d->mc_ptr->threads_per_core != NO_VAL16)
		r->tpc = d->mc_ptr->threads_per_core;
	/* one node asked for, or one task, which cannot span nodes */
	if (d->min_nodes <= 1 && (d->max_nodes == 1 || d->num_tasks <= 1)) {
		r->cpus = MAX(d->min_cpus, 1);
		r->gpus = gpus;
		return true;
	}
	/* several nodes, each with the same share */
	if (!d->ntasks_per_node || d->ntasks_per_node == NO_VAL16)
		return false;
	r->cpus = MAX(d->pn_min_cpus, d->ntasks_per_node * MAX(d->cpus_per_task, 1));
	r->gpus = _job_gpus_per_node(job_ptr, d->ntasks_per_node);
	return r->gpus != NO_VAL;
}

/* GPUs per node of a multi-node job, NO_VAL when not per node or per task. */
static uint32_t _job_gpus_per_node(job_record_t *job_ptr, uint16_t tasks)
{
	gres_state_t *gs;
	gres_job_state_t *gjs;

	if (!job_ptr->gres_list_req)
		return 0;
	gs = k8s_gpu_gres(job_ptr->gres_list_req);
	if (!gs || !(gjs = gs->gres_data))
		return NO_VAL;
	if (gjs->gres_per_node)
		return gjs->gres_per_node;
	if (gjs->gres_per_task)
		return gjs->gres_per_task * tasks;
	return NO_VAL;
}

static uint64_t _busy_gpus(node_record_t *node_ptr)
{
	gres_node_state_t *ns = k8s_gpu_node_state(node_ptr);
	uint64_t mask = 0;

	if (!ns || !ns->gres_bit_alloc)
		return 0;
	for (int64_t g = 0; g < bit_size(ns->gres_bit_alloc) && g < 64; g++)
		if (bit_test(ns->gres_bit_alloc, g))
			mask |= (uint64_t) 1 << g;
	return mask;
}

/*
 * The engine's choice on node i, leaving out the busy cores and GPUs and
 * every core slurmctld excludes (reservations' cores among them).
 */
static bool _choose(k8s_job_test_t *t, node_record_t *node_ptr, int i,
		    uint32_t cpus, uint32_t tpc, uint32_t gpus, bitstr_t *exc,
		    struct k8s_cons_tres_choice *c)
{
	/* GPUs GRES reservations keep from the job count as busy too */
	uint64_t gpus_off = t->resv_gpus_off ? t->resv_gpus_off(t, i) : 0;
	uint32_t busy_cores[MAX_CORES];
	size_t nbusy = 0;
	uint32_t off = cr_get_coremap_offset(i);

	for (uint32_t core = 0; core < node_ptr->tot_cores && nbusy < MAX_CORES; core++)
		if (bit_test(busy, off + core) ||
		    (exc && bit_test(exc, off + core)))
			busy_cores[nbusy++] = core;
	return k8s_cons_tres_choose(node_ptr->name, cpus, tpc, gpus, busy_cores, nbusy,
			     _busy_gpus(node_ptr) | gpus_off, c) == K8S_CONS_TRES_OK &&
	       c->fits;
}

/* Whether the job's cores on its n-th node are exactly these. */
static bool _has_exactly(job_resources_t *jr, int n, const uint32_t *cores,
			 size_t ncores)
{
	bitstr_t *have;
	bool same;

	if (!jr || !jr->core_bitmap || n >= (int) jr->nhosts ||
	    !(have = copy_job_resources_node(jr, n)))
		return false;
	same = bit_set_count(have) == (int64_t) ncores;
	for (size_t k = 0; same && k < ncores; k++)
		same = cores[k] < bit_size(have) && bit_test(have, cores[k]);
	FREE_NULL_BITMAP(have);
	return same;
}

/*
 * A steered exclusion for job_test (base: the plain one, may be NULL; every
 * bit of it stays set); NULL when the job is not steered (a shape the
 * engine does not model, no ready Kubernetes candidate, ...). *same: the
 * cores cons_tres gave the job (its job_resrcs) are already the engine's
 * choice on every node that has one, so a second job_test would give the
 * same.
 */
static bitstr_t *_steer_prepare(k8s_job_test_t *t, bitstr_t *base, bool *same)
{
	job_record_t *job_ptr = t->job_ptr;
	bitstr_t *node_bitmap = t->node_bitmap;
	uint32_t cores[MAX_CORES], gres[MAX_GPUS];
	struct k8s_cons_tres_choice c = { .cores = cores, .core_cap = MAX_CORES,
				   .gres = gres, .gres_cap = MAX_GPUS };
	bitstr_t *exc = NULL;
	node_record_t *node_ptr;
	node_req_t r;
	int scored = 0, last, n = -1;

	*same = true;
	if (!_node_request(job_ptr, &r))
		return NULL;
	_busy_refresh();

	/*
	 * Which nodes the job gets stays cons_tres's policy (weights, order,
	 * topology, ranges): each candidate node keeps its place, only its
	 * cores are narrowed to the engine's choice. A node without a choice
	 * keeps the plain exclusion, so cons_tres's own choice stands there.
	 */
	last = bit_fls(node_bitmap);
	for (int i = bit_ffs(node_bitmap); i >= 0 && i <= last && scored < STEER_MAX_NODES; i++) {
		uint32_t off;
		if (!bit_test(node_bitmap, i))
			continue;
		n++;	/* the node's index in the job's job_resrcs */
		if (!k8s_view_node_ready(i) || !(node_ptr = node_record_table_ptr[i]))
			continue;
		scored++;
		if (!_choose(t, node_ptr, i, r.cpus, r.tpc, r.gpus, base, &c)) {
			debug2(PREFIX "%pJ: no topology choice on %s: %s",
			       job_ptr, node_ptr->name, c.reason);
			continue;
		}
		debug2(PREFIX "%pJ: on %s the engine chooses %zu cores over %u NUMA nodes, %zu GPUs",
		       job_ptr, node_ptr->name, c.ncores, c.score.numa_nodes, c.ngres);
		if (*same)
			*same = _has_exactly(job_ptr->job_resrcs, n, cores, c.ncores);
		if (!exc)
			exc = base ? bit_copy(base) :
				bit_alloc(cr_get_coremap_offset(node_record_count));
		off = cr_get_coremap_offset(i);
		/* only ever adds to slurmctld's exclusion, never clears it */
		bit_nset(exc, off, off + node_ptr->tot_cores - 1);
		for (size_t k = 0; k < c.ncores; k++)
			if (!base || !bit_test(base, off + cores[k]))
				bit_clear(exc, off + cores[k]);
	}
	return exc;
}

/* After a successful steered RUN_NOW job_test: remember the GPU choice,
 * made while t's reservations are known (k8s_steer_begin applies it). */
static void _steer_chosen(k8s_job_test_t *t)
{
	job_record_t *job_ptr = t->job_ptr;
	uint32_t cores[MAX_CORES];
	job_resources_t *jr = job_ptr->job_resrcs;
	struct k8s_cons_tres_choice c = { .cores = cores, .core_cap = MAX_CORES };
	chosen_t *slot;
	node_req_t r;
	int last;

	if (!jr || !jr->node_bitmap || !_node_request(job_ptr, &r) || !r.gpus)
		return;
	slot = &chosen[chosen_next++ % ARRAY_SIZE(chosen)];
	memset(slot, 0, sizeof(*slot));
	last = bit_fls(jr->node_bitmap);
	for (int i = bit_ffs(jr->node_bitmap); i >= 0 && i <= last; i++) {
		node_gpus_t *ng = &slot->nodes[slot->nnodes];
		if (!bit_test(jr->node_bitmap, i) || !k8s_view_node_ready(i))
			continue;
		if (slot->nnodes >= CHOSEN_NODES)
			break;
		c.gres = ng->gres;
		c.gres_cap = MAX_GPUS;
		if (!_choose(t, node_record_table_ptr[i], i, r.cpus, r.tpc, r.gpus, NULL, &c))
			continue;
		ng->node = i;
		ng->ngres = c.ngres;
		slot->nnodes++;
	}
	slot->job_id = job_ptr->job_id;
}

/* Replace the node's selected GPUs by the engine's, same count, all free. */
static void _apply_gpus(job_record_t *job_ptr, node_gpus_t *ng)
{
	gres_state_t *gs = k8s_gpu_gres(job_ptr->gres_list_req);
	gres_job_state_t *gjs = gs ? gs->gres_data : NULL;
	gres_node_state_t *ns;
	node_record_t *node_ptr = node_record_table_ptr[ng->node];
	bitstr_t *sel;

	if (!gjs || !gjs->gres_bit_select || ng->node >= (int) gjs->total_node_cnt ||
	    !(sel = gjs->gres_bit_select[ng->node]) ||
	    bit_set_count(sel) != (int64_t) ng->ngres || !node_ptr->gres_list)
		return;
	ns = k8s_gpu_node_state(node_ptr);
	if (!ns || !ns->gres_bit_alloc || ns->type_cnt > 1)
		return;	/* several GPU types on the node: keep cons_tres's */
	for (size_t k = 0; k < ng->ngres; k++)
		if (ng->gres[k] >= bit_size(sel) ||
		    bit_test(ns->gres_bit_alloc, ng->gres[k]))
			return;	/* not truly free: keep cons_tres's */
	bit_clear_all(sel);
	for (size_t k = 0; k < ng->ngres; k++)
		bit_set(sel, ng->gres[k]);
	debug(PREFIX "%pJ: GPUs on %s chosen by topology", job_ptr, node_ptr->name);
}

extern void k8s_steer_begin(job_record_t *job_ptr)
{
	job_resources_t *jr = job_ptr->job_resrcs;

	for (size_t k = 0; k < ARRAY_SIZE(chosen); k++) {
		if (chosen[k].job_id != job_ptr->job_id)
			continue;
		for (int n = 0; n < chosen[k].nnodes; n++)
			if (chosen[k].nodes[n].ngres && jr && jr->node_bitmap &&
			    bit_test(jr->node_bitmap, chosen[k].nodes[n].node))
				_apply_gpus(job_ptr, &chosen[k].nodes[n]);
		chosen[k].job_id = 0;
	}
	_busy_refresh();
	_mark_job(job_ptr, true);
}

extern int k8s_select_job_test(k8s_job_test_t *t, bitstr_t *exc_core_bitmap)
{
	/*
	 * What Kubernetes holds is kept out when the job is to run now or
	 * later (backfill), never in TEST_ONLY: a job that fits the node once
	 * the pods are gone must stay pending, not be rejected.
	 */
	job_record_t *job_ptr = t->job_ptr;
	bitstr_t *node_bitmap = t->node_bitmap;
	list_t **preemptees = t->preemptee_job_list;
	bitstr_t *k8s_exc = NULL, *steer_exc = NULL, *saved = NULL;
	bitstr_t *base = exc_core_bitmap;
	bool same = false;
	int rc;

	if (t->mode != SELECT_MODE_TEST_ONLY) {
		bitstr_t *unmarked;
		if (k8s_view_refresh())
			k8s_gpu_sync();
		else
			k8s_gpu_sync_pending();
		/* Fail closed: pod GPUs we cannot mark keep GPU jobs away. */
		if ((unmarked = k8s_gpu_unmarked()) &&
		    k8s_gpu_gres(job_ptr->gres_list_req) &&
		    bit_size(unmarked) == bit_size(node_bitmap))
			bit_and_not(node_bitmap, unmarked);
		if ((k8s_exc = k8s_view_exclude_cores(exc_core_bitmap)))
			base = k8s_exc;
	}
	/*
	 * cons_tres chooses the nodes by its own policy (weights, order,
	 * best fit, ranges), with Kubernetes' devices kept out ...
	 */
	saved = t->mode == SELECT_MODE_RUN_NOW ? bit_copy(node_bitmap) : NULL;
	rc = t->inner(t, base);
	/*
	 * ... then, for a job to start now on those very nodes, the engine
	 * picks the cores and GPUs inside them (narrower exclusion). Only
	 * RUN_NOW: backfill's WILL_RUN asks when, not which cores. Narrowing
	 * before the node choice would change cons_tres's best fit.
	 */
	if (rc == SLURM_SUCCESS && saved &&
	    !(preemptees && *preemptees && list_count(*preemptees)) &&
	    (steer_exc = _steer_prepare(t, base, &same)) &&
	    same) {
		/*
		 * cons_tres's cores are already the engine's: a second test
		 * would give them again, at the cost of one more walk over
		 * every node's cores in cons_tres (its partition rows).
		 */
		debug2(PREFIX "%pJ: cons_tres's cores are the topology choice",
		       job_ptr);
		_steer_chosen(t);
	} else if (steer_exc) {
		bitstr_t *chosen = bit_copy(node_bitmap);
		rc = t->inner(t, steer_exc);
		if (rc == SLURM_SUCCESS && bit_equal(node_bitmap, chosen)) {
			_steer_chosen(t);
		} else {
			/* cons_tres's own choice stands */
			debug2(PREFIX "%pJ: topology choice refused by cons_tres, keeping its own",
			       job_ptr);
			bit_copybits(node_bitmap, saved);
			if (preemptees)
				FREE_NULL_LIST(*preemptees);
			rc = t->inner(t, base);
		}
		FREE_NULL_BITMAP(chosen);
	}
	FREE_NULL_BITMAP(saved);
	FREE_NULL_BITMAP(steer_exc);
	FREE_NULL_BITMAP(k8s_exc);
	return rc;
}
