/*
 * k8s_gpu.c - phantom GPU allocations for the GPUs pods hold.
 *
 * A phantom is a bit we set in a node's gres_bit_alloc with no job behind it.
 * After any change the node's counters are recomputed from the bitmaps
 * (gres_cnt_alloc, per-topo and per-type counts), which also repairs
 * 22.05's type_cnt_alloc drift after a restart.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <time.h>

#include "slurm_compat.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "k8s_gpu.h"
#include "k8s_view.h"
#include "k8s_log.h"


extern time_t last_node_update;	/* slurmctld's; defined tentatively in the plugin */

static bitstr_t **held;		/* per node index: our phantom bits */
static int held_cnt;
/* per node index: pod GPUs not marked yet (a Slurm job still has them) */
static bitstr_t *pending;
/* per node index: pods hold GPUs that cannot be marked at all yet */
static bitstr_t *unmarked;
/* unmarked has a bit set; read without slurmctld's locks */
static bool waiting;

static void _set_waiting(void)
{
	__atomic_store_n(&waiting, unmarked && bit_ffs(unmarked) >= 0,
			 __ATOMIC_RELAXED);
}

extern bool k8s_gpu_waiting(void)
{
	return __atomic_load_n(&waiting, __ATOMIC_RELAXED);
}

static void _ensure_table(void)
{
	if (held_cnt == node_record_count)
		return;
	k8s_gpu_forget();
	held = xcalloc(node_record_count, sizeof(bitstr_t *));
	held_cnt = node_record_count;
	pending = bit_alloc(node_record_count);
	unmarked = bit_alloc(node_record_count);
}

extern void k8s_gpu_forget(void)
{
	for (int i = 0; held && i < held_cnt; i++)
		FREE_NULL_BITMAP(held[i]);
	xfree(held);
	FREE_NULL_BITMAP(pending);
	FREE_NULL_BITMAP(unmarked);
	held_cnt = 0;
	_set_waiting();
}

extern bool k8s_gpu_pending(void)
{
	return pending && bit_ffs(pending) >= 0;
}

extern bitstr_t *k8s_gpu_unmarked(void)
{
	return unmarked && bit_ffs(unmarked) >= 0 ? unmarked : NULL;
}

extern bool k8s_gpu_is_gpu(const gres_state_t *gs)
{
	return !xstrcmp(gs->gres_name, "gpu");
}

static int _is_gpu(void *x, void *key)
{
	return k8s_gpu_is_gpu(x);
}

extern gres_state_t *k8s_gpu_gres(list_t *gres_list)
{
	return gres_list ? list_find_first(gres_list, _is_gpu, NULL) : NULL;
}

extern gres_node_state_t *k8s_gpu_node_state(node_record_t *node_ptr)
{
	gres_state_t *gs = k8s_gpu_gres(node_ptr->gres_list);
	return gs ? gs->gres_data : NULL;
}

/* Counters from bitmaps: what is allocated is exactly what is set. */
static void _recount(gres_node_state_t *ns)
{
	int64_t n = bit_size(ns->gres_bit_alloc);

	ns->gres_cnt_alloc = bit_set_count(ns->gres_bit_alloc);
	for (int t = 0; t < ns->topo_cnt; t++) {
		if (ns->topo_gres_bitmap && ns->topo_gres_bitmap[t] &&
		    ns->topo_gres_cnt_alloc &&
		    bit_size(ns->topo_gres_bitmap[t]) == n)
			ns->topo_gres_cnt_alloc[t] =
				bit_overlap(ns->topo_gres_bitmap[t],
					    ns->gres_bit_alloc);
	}
	for (int j = 0; j < ns->type_cnt; j++) {
		uint64_t sum = 0;
		for (int t = 0; t < ns->topo_cnt; t++)
			if (ns->topo_type_id && ns->topo_gres_cnt_alloc &&
			    ns->topo_type_id[t] == ns->type_id[j])
				sum += ns->topo_gres_cnt_alloc[t];
		ns->type_cnt_alloc[j] = sum;
	}
	xfree(ns->gres_used);	/* cached GresUsed string */
}

/* Returns true when the node's GRES state changed. */
static bool _sync_node(node_record_t *node_ptr, int index)
{
	gres_node_state_t *ns = k8s_gpu_node_state(node_ptr);
	bitstr_t *want = k8s_view_pod_gpus(index);
	bitstr_t *mine;
	int64_t n;
	bool changed = false;

	bit_clear(pending, index);
	if (!ns || !ns->gres_bit_alloc || !ns->topo_cnt) {
		/*
		 * Not registered yet (or gres.conf without File=): nothing to
		 * hold by index. The node then takes no GPU job at all
		 * (k8s_gpu_unmarked) until the pods' GPUs can be marked.
		 */
		FREE_NULL_BITMAP(held[index]);
		if (want && bit_ffs(want) >= 0) {
			if (!bit_test(unmarked, index))
				error(PREFIX "node %s: pods hold GPUs but its GPUs cannot be marked by index yet (slurmd not registered, or gres.conf without File=); no GPU job goes there until they can",
				      node_ptr->name);
			bit_set(unmarked, index);
			bit_set(pending, index);
		} else {
			bit_clear(unmarked, index);
		}
		return false;
	}
	if (bit_test(unmarked, index)) {
		info(PREFIX "node %s: the GPUs pods hold are marked now; it takes GPU jobs again",
		     node_ptr->name);
		bit_clear(unmarked, index);
	}
	n = bit_size(ns->gres_bit_alloc);
	if (held[index] && bit_size(held[index]) != n)
		FREE_NULL_BITMAP(held[index]);	/* resized: Slurm rebuilt it */
	if (!held[index])
		held[index] = bit_alloc(n);
	mine = held[index];
	/* Bits Slurm cleared behind our back are no longer ours. */
	bit_and(mine, ns->gres_bit_alloc);

	for (int64_t g = 0; g < n; g++) {
		bool wanted = want && g < bit_size(want) && bit_test(want, g);
		if (bit_test(mine, g) && !wanted) {
			bit_clear(mine, g);
			bit_clear(ns->gres_bit_alloc, g);
			changed = true;
			debug(PREFIX "node %s: GPU %"PRId64" released by Kubernetes",
			      node_ptr->name, g);
		} else if (wanted && !bit_test(mine, g)) {
			if (bit_test(ns->gres_bit_alloc, g)) {
				/* a Slurm job still has it; retry after it ends */
				bit_set(pending, index);
				debug(PREFIX "node %s: GPU %"PRId64" held by Kubernetes is still allocated to a Slurm job",
				      node_ptr->name, g);
				continue;
			}
			bit_set(mine, g);
			bit_set(ns->gres_bit_alloc, g);
			changed = true;
			debug(PREFIX "node %s: GPU %"PRId64" held by Kubernetes kept from Slurm jobs",
			      node_ptr->name, g);
		}
	}
	if (changed)
		_recount(ns);
	return changed;
}

extern void k8s_gpu_sync(void)
{
	node_record_t *node_ptr;
	bool changed = false;

	k8s_view_refresh();
	_ensure_table();
	for (int i = 0; (node_ptr = next_node(&i)); i++)
		changed |= _sync_node(node_ptr, i);
	if (changed)
		last_node_update = time(NULL);
	_set_waiting();
}

extern void k8s_gpu_sync_pending(void)
{
	bool changed = false;

	if (!k8s_gpu_pending())
		return;
	/* only the nodes that wait, not every node of the cluster */
	for (int i = bit_ffs(pending); i >= 0 && i < held_cnt; i++) {
		if (bit_test(pending, i) && node_record_table_ptr[i])
			changed |= _sync_node(node_record_table_ptr[i], i);
	}
	if (changed)
		last_node_update = time(NULL);
	_set_waiting();
}

extern void k8s_gpu_sync_node(int index)
{
	node_record_t *node_ptr;
	gres_node_state_t *ns;

	if (index < 0 || index >= node_record_count ||
	    !(node_ptr = node_record_table_ptr[index]))
		return;
	k8s_view_refresh();
	_ensure_table();
	ns = k8s_gpu_node_state(node_ptr);
	/*
	 * Registration may have left the counters stale (22.05 refills
	 * type_cnt_alloc only when 0); only nodes where pods hold GPUs are
	 * ours to repair, the others stay exactly as cons_tres keeps them.
	 */
	if (ns && ns->gres_bit_alloc &&
	    ((held[index] && bit_set_count(held[index])) || k8s_view_pod_gpus(index)))
		_recount(ns);
	if (_sync_node(node_ptr, index))
		last_node_update = time(NULL);
	_set_waiting();
}
