/*
 * k8s_view.c - the core's per-node answers turned into Slurm bitmaps once
 * per view generation, so that each job_test pays one bit_or.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <inttypes.h>

#include "slurm_compat.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "core/k8s_cons_tres_ctld.h"
#include "k8s_nodes.h"
#include "k8s_view.h"
#include "k8s_log.h"

#define MAX_GPUS 64

static bitstr_t *excl_cores;	/* cores Slurm must not use now */
static bool excl_any;		/* any bit set in excl_cores */
static bitstr_t **pod_gpus;	/* per node index: GPUs pods hold */
static bitstr_t *ready;		/* per node index: Kubernetes node, ready */
static bitstr_t *is_k8s;	/* per node index: a Kubernetes node */
static char **mismatch;		/* per node index: why slices disagree */
static int cached_node_cnt = -1;
static uint64_t cached_gen;

static void _free_pod_gpus(void)
{
	for (int i = 0; pod_gpus && i < cached_node_cnt; i++)
		FREE_NULL_BITMAP(pod_gpus[i]);
	xfree(pod_gpus);
	for (int i = 0; mismatch && i < cached_node_cnt; i++)
		xfree(mismatch[i]);
	xfree(mismatch);
}

extern void k8s_view_reset(void)
{
	FREE_NULL_BITMAP(excl_cores);
	FREE_NULL_BITMAP(ready);
	FREE_NULL_BITMAP(is_k8s);
	_free_pod_gpus();
	cached_node_cnt = -1;
}

static void _exclude_all(node_record_t *node_ptr, uint32_t off)
{
	bit_nset(excl_cores, off, off + node_ptr->tot_cores - 1);
	excl_any = true;
}

static void _view_node(node_record_t *node_ptr, int index, bool is_k8s)
{
	uint64_t gpus = gres_node_config_cnt(node_ptr->gres_list, "gpu");
	struct k8s_cons_tres_slurm_node def = {
		.sockets = node_ptr->tot_sockets,
		.cores_per_socket = node_ptr->cores,
		.threads_per_core = node_ptr->threads,
		.gpus = gpus,
	};
	uint32_t cores[1024], gres[MAX_GPUS];
	size_t ncores = 0, ngres = 0;
	char reason[256];
	int state = K8S_CONS_TRES_VIEW_NOT_K8S;
	uint32_t off = cr_get_coremap_offset(index);

	if (k8s_cons_tres_view_node(node_ptr->name, &def, is_k8s, &state, cores,
			     ARRAY_SIZE(cores), &ncores, gres, ARRAY_SIZE(gres),
			     &ngres, reason, sizeof(reason)) != K8S_CONS_TRES_OK &&
	    state != K8S_CONS_TRES_VIEW_UNAVAILABLE && state != K8S_CONS_TRES_VIEW_MISMATCH) {
		state = K8S_CONS_TRES_VIEW_UNAVAILABLE;
		snprintf(reason, sizeof(reason),
			 "view too large (%zu cores, %zu GPUs)", ncores, ngres);
	}
	if (state == K8S_CONS_TRES_VIEW_NOT_K8S)
		return;
	if (state == K8S_CONS_TRES_VIEW_MISMATCH)
		mismatch[index] = xstrdup(reason);
	if (state == K8S_CONS_TRES_VIEW_UNAVAILABLE || state == K8S_CONS_TRES_VIEW_MISMATCH) {
		debug(PREFIX "node %s unavailable to Slurm jobs: %s",
		      node_ptr->name, reason);
		_exclude_all(node_ptr, off);
		return;
	}
	bit_set(ready, index);
	for (size_t i = 0; i < ncores; i++) {
		if (cores[i] >= node_ptr->tot_cores) {
			error(PREFIX "node %s: Kubernetes-held core %u beyond its %u cores; keeping the node out",
			      node_ptr->name, cores[i], node_ptr->tot_cores);
			bit_clear(ready, index);
			_exclude_all(node_ptr, off);
			return;
		}
		bit_set(excl_cores, off + cores[i]);
		excl_any = true;
	}
	for (size_t i = 0; i < ngres; i++) {
		if (gres[i] >= gpus) {
			error(PREFIX "node %s: Kubernetes-held GPU %u beyond its %"PRIu64" GPUs; keeping the node out",
			      node_ptr->name, gres[i], gpus);
			bit_clear(ready, index);
			_exclude_all(node_ptr, off);
			return;
		}
		if (!pod_gpus[index])
			pod_gpus[index] = bit_alloc(gpus);
		bit_set(pod_gpus[index], gres[i]);
	}
	if (ncores || ngres)
		debug2(PREFIX "node %s: %zu cores and %zu GPUs held by Kubernetes",
		       node_ptr->name, ncores, ngres);
}

static void _rebuild(uint64_t gen)
{
	const char *expr = k8s_cons_tres_view_kubernetes_nodes();
	bool all = !xstrcasecmp(expr, "ALL");
	k8s_hostlist_t *k8s_nodes = NULL;
	node_record_t *node_ptr;

	if (!all && expr[0])
		k8s_nodes = hostlist_create(expr);
	k8s_view_reset();
	excl_cores = bit_alloc(cr_get_coremap_offset(node_record_count));
	pod_gpus = xcalloc(node_record_count, sizeof(bitstr_t *));
	mismatch = xcalloc(node_record_count, sizeof(char *));
	ready = bit_alloc(node_record_count);
	is_k8s = bit_alloc(node_record_count);
	cached_node_cnt = node_record_count;
	excl_any = false;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		/* a node discovery made is Kubernetes' whatever the list says */
		if (all || (k8s_nodes &&
			    hostlist_find(k8s_nodes, node_ptr->name) >= 0) ||
		    k8s_node_discovered(node_ptr))
			bit_set(is_k8s, i);
		_view_node(node_ptr, i, bit_test(is_k8s, i));
	}
	FREE_NULL_HOSTLIST(k8s_nodes);
	cached_gen = gen;
}

/* Only the nodes whose answers changed since the cached generation. */
static void _update(uint64_t gen)
{
	uint64_t since = cached_gen / 2;
	node_record_t *node_ptr;
	int changed = 0;

	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		uint32_t off = cr_get_coremap_offset(i);
		if (k8s_cons_tres_view_node_stamp(node_ptr->name) <= since)
			continue;
		if (node_ptr->tot_cores)
			bit_nclear(excl_cores, off, off + node_ptr->tot_cores - 1);
		FREE_NULL_BITMAP(pod_gpus[i]);
		xfree(mismatch[i]);
		bit_clear(ready, i);
		_view_node(node_ptr, i, bit_test(is_k8s, i));
		changed++;
	}
	excl_any = bit_ffs(excl_cores) >= 0;
	debug2(PREFIX "view %"PRIu64": %d nodes changed", gen, changed);
	cached_gen = gen;
}

extern bool k8s_view_refresh(void)
{
	uint64_t gen = k8s_cons_tres_view_generation();

	if (excl_cores && gen == cached_gen && cached_node_cnt == node_record_count &&
	    bit_size(excl_cores) == cr_get_coremap_offset(node_record_count))
		return false;
	/*
	 * A change of staleness (the low bit), of every node at once, or of
	 * the node table itself needs every node; otherwise only the nodes
	 * stamped since: at 15,000 nodes one pod's claim costs one node.
	 */
	if (!excl_cores || cached_node_cnt != node_record_count ||
	    bit_size(excl_cores) != cr_get_coremap_offset(node_record_count) ||
	    (gen & 1) != (cached_gen & 1) ||
	    k8s_cons_tres_view_full_stamp() > cached_gen / 2)
		_rebuild(gen);
	else
		_update(gen);
	return true;
}

extern bitstr_t *k8s_view_exclude_cores(bitstr_t *exc_core_bitmap)
{
	bitstr_t *out;

	k8s_view_refresh();
	if (!excl_any)
		return NULL;
	out = bit_copy(excl_cores);
	if (exc_core_bitmap) {
		if (bit_size(exc_core_bitmap) == bit_size(out))
			bit_or(out, exc_core_bitmap);
		else	/* never seen; keep Kubernetes safe, and say so */
			error(PREFIX "exclusion bitmap has %"PRId64" bits, expected %"PRId64"; reservation core exclusions ignored for this test",
			      (int64_t) bit_size(exc_core_bitmap), (int64_t) bit_size(out));
	}
	return out;
}

extern bitstr_t *k8s_view_pod_gpus(int index)
{
	if (!pod_gpus || index < 0 || index >= cached_node_cnt)
		return NULL;
	return pod_gpus[index];
}

extern bool k8s_view_node_ready(int index)
{
	return ready && index >= 0 && index < bit_size(ready) && bit_test(ready, index);
}

extern bool k8s_view_known(void)
{
	return is_k8s && cached_node_cnt == node_record_count;
}

extern bool k8s_view_node_is_k8s(int index)
{
	return (is_k8s && index >= 0 && index < bit_size(is_k8s) && bit_test(is_k8s, index)) ||
	       k8s_view_node_ready(index);
}

extern const char *k8s_view_mismatch(int index)
{
	if (!mismatch || index < 0 || index >= cached_node_cnt)
		return NULL;
	return mismatch[index];
}
